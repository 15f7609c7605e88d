"""Bots (engine.bots): every choice legal, chosen from one seat's view only, and
repeatable with a seed and a number of simulations."""

from __future__ import annotations

import random

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine import GameState, IllegalActionError, InvalidInputError, apply, legal_actions, new_game, view_doc
from engine.bots import DEFAULT_BUDGET_MS, cautious, choose, parse_bot, players_to_act
from engine.bots.heuristic import heuristic_action, patient_action
from tests.conftest import puzzle
from tests.test_random_play import CONFIGS

BOTS = [{"kind": "random"}, {"kind": "heuristic"}, {"kind": "patient"}, {"kind": "ismcts", "simulations": 12},
        {"kind": "ismcts", "simulations": 12, "rollout": "random"},
        {"kind": "ismcts", "simulations": 12, "rollout": "heuristic"}]


def positions(config: str, players: int, games: int, seed: int):
    """Every position of ``games`` random games, with who may act in it."""
    ids = [f"p{i}" for i in range(players)]
    for n in range(games):
        rng = random.Random(f"{seed}/{n}")
        state, _ = new_game(CONFIGS[config], ids, seed=f"{config}/{seed}/{n}")
        while state.status == "playing":
            yield state
            state, _ = apply(state, rng.choice(legal_actions(state)))


@pytest.mark.slow
@pytest.mark.rules("R-TURN-1", "R-TURN-2", "R-DRAW-1", "R-99-2", "R-PTS-1")
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_every_bot_chooses_a_legal_action_in_every_position(config):
    checked = 0
    for i, state in enumerate(positions(config, players=2 + (len(config) % 5), games=6, seed=1)):
        legal = legal_actions(state)
        for actor in players_to_act(state):
            view = view_doc(state, actor)
            assert cautious(view) in legal  # what a turn timer plays for an absent player
            kinds = BOTS if i % 8 == 0 else BOTS[:3]  # ISMCTS on one position in eight: it is slower
            for bot in kinds:
                found = choose(view, parse_bot({**bot, "seed": i}))
                assert found.action in legal, (config, bot, found.action)
                assert found.action.player == actor
                checked += 1
    assert checked > 300  # twelve configurations: thousands of positions in all


@pytest.mark.rules("R-SET-3")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=st.sampled_from(sorted(CONFIGS)), seed=st.integers(0, 10**6), steps=st.integers(0, 30),
       shuffle=st.randoms(use_true_random=False))
def test_bots_choose_the_same_from_states_that_look_the_same_to_the_seat(config, seed, steps, shuffle):
    """Two states whose view for the seat is identical, but whose hidden cards (other
    hands, the draw pile's order) differ: every bot, given the same seed and
    simulations, chooses the same action in both."""
    rng = random.Random(seed)
    state, _ = new_game(CONFIGS[config], ["a", "b", "c"], seed=seed)
    for _ in range(steps):
        if state.status != "playing":
            break
        state, _ = apply(state, rng.choice(legal_actions(state)))
    if state.status != "playing":
        return
    actor = players_to_act(state)[0]
    other = _hidden_cards_dealt_again(state, actor, shuffle)
    assume(other != state)  # hidden cards that differ, or the test says nothing
    assert view_doc(other, actor) == view_doc(state, actor)
    for bot in BOTS:
        settings_ = parse_bot({**bot, "seed": seed})
        assert choose(view_doc(state, actor), settings_).action == choose(view_doc(other, actor), settings_).action


def _hidden_cards_dealt_again(state: GameState, actor: str, rng: random.Random) -> GameState:
    """The same state with the cards ``actor`` cannot see dealt again at random."""
    me = state.seat(actor)
    hidden = [i for i, p in enumerate(state.players) if i != me and p.status != "out"]
    pool = [c for i in hidden for c in state.players[i].hand] + list(state.draw_pile)
    rng.shuffle(pool)
    players = list(state.players)
    for i in hidden:
        n = len(players[i].hand)
        players[i] = players[i].replace(hand=tuple(pool[:n]))
        pool = pool[n:]
    return state.but(players=tuple(players), draw_pile=tuple(pool))


@pytest.mark.rules("R-SET-3")
def test_a_determinization_deals_the_unseen_cards_uniformly():
    """Every card the seat cannot see is as likely in each hidden place (another hand or
    any depth of the draw pile) as its share of the unseen cards: over 4,000 deals, each
    card's frequency in each place is within 0.03 of that share (about six standard
    deviations; the deals are seeded, so the test gives the same figures every run). A
    deal that left the unseen cards in their order fails it (0.95), and so does a
    shuffle that drew each swap's partner from the whole list (0.31)."""
    from collections import Counter

    from engine.bots.seat import Seat

    state, _ = new_game({"edition": "2022"}, ["ann", "bob", "cid"], seed=5)
    seat = Seat(view_doc(state, "ann"))
    share = {card: n / len(seat.unseen) for card, n in Counter(seat.unseen).items()}
    rng = random.Random(11)
    deals = 4000
    places: list[Counter[str]] = []
    for _ in range(deals):
        dealt = seat.deal(rng)
        hidden = [*dealt.players[1].hand, *dealt.players[2].hand, *dealt.draw_pile]
        places += [Counter() for _ in range(len(hidden) - len(places))]
        for place, card in zip(places, hidden, strict=False):
            place[card] += 1
    assert len(places) == len(seat.unseen)
    worst = max(abs(place[card] / deals - p) for place in places for card, p in share.items())
    assert worst < 0.03, worst


def test_a_seed_and_a_number_of_simulations_give_the_same_choice():
    state, _ = new_game({"edition": "2022"}, ["a", "b", "c", "d"], seed=5)
    view = view_doc(state, "a")
    bot = parse_bot({"kind": "ismcts", "simulations": 60, "seed": 11})
    first = choose(view, bot)
    assert first.stats["iterations"] == 60
    assert all(choose(view, bot).action == first.action for _ in range(3))


def test_settings_are_resolved_and_checked():
    resolved = parse_bot({"kind": "ismcts"})
    assert resolved.budget_ms == DEFAULT_BUDGET_MS and resolved.simulations is None
    assert isinstance(resolved.seed, int)
    assert parse_bot({"kind": "ismcts", "simulations": 50}).budget_ms is None
    for doc, field in [({"kind": "smart"}, "bot.kind"), ({}, "bot"),
                       ({"kind": "random", "simulations": 5}, "bot.simulations"),
                       ({"kind": "ismcts", "simulations": 5, "budget_ms": 5}, "bot.budget_ms"),
                       ({"kind": "ismcts", "simulations": 0}, "bot.simulations"),
                       ({"kind": "ismcts", "uct_c": -1}, "bot.uct_c"),
                       ({"kind": "heuristic", "extra": 1}, "bot")]:
        with pytest.raises(InvalidInputError) as caught:
            parse_bot(doc)
        assert caught.value.path == field, (doc, caught.value.path)


def test_an_ismcts_bots_resolved_settings_name_its_rollouts():
    """The patient player rolls out unless another policy is named, and resolved
    settings say so: settings a client or a session keeps play the same if the default
    changes (it was the heuristic)."""
    from engine.bots import DEFAULT_ROLLOUT, LEVELS, ROLLOUTS, BotSettings, bot_to_dict
    from engine.bots.ismcts import heuristic_policy, patient_policy, random_policy

    assert DEFAULT_ROLLOUT == "patient"
    assert {"patient": patient_policy, "heuristic": heuristic_policy, "random": random_policy} == ROLLOUTS
    assert bot_to_dict(parse_bot({"kind": "ismcts", "seed": 1}))["rollout"] == "patient"
    assert bot_to_dict(parse_bot({"kind": "ismcts", "rollout": "heuristic", "seed": 1}))["rollout"] == "heuristic"
    assert bot_to_dict(parse_bot({"level": "hard", "seed": 1}))["rollout"] == "patient" == LEVELS["hard"].rollout
    assert "rollout" not in bot_to_dict(parse_bot({"kind": "patient", "seed": 1}))
    # The policy named is the one that rolls out: with the same seed and iterations the
    # search's estimates differ between policies.
    state, _ = new_game({"edition": "2022"}, ["a", "b", "c", "d"], seed=5)
    view = view_doc(state, state.players[state.current].id)
    search = {"kind": "ismcts", "simulations": 200, "seed": 3}
    found = {r: choose(view, parse_bot({**search, "rollout": r})).stats["actions"] for r in ROLLOUTS}
    assert found["patient"] == choose(view, parse_bot(search)).stats["actions"]
    # Settings that name no rollouts (a bot seat stored before resolved settings named
    # them) roll out with the default.
    assert found["patient"] == choose(view, BotSettings(kind="ismcts", simulations=200, seed=3)).stats["actions"]
    assert found["patient"] != found["heuristic"] and found["patient"] != found["random"]
    assert found["heuristic"] != found["random"]


def test_a_budget_bounds_the_search():
    state, _ = new_game({"edition": "1980"}, ["a", "b", "c", "d"], seed=3)
    found = choose(view_doc(state, state.players[state.current].id), parse_bot({"kind": "ismcts", "budget_ms": 40}))
    assert found.stats["iterations"] > 0
    assert found.stats["elapsed_ms"] < 40 + 200  # a loaded machine: the budget is checked every iteration


@pytest.mark.rules("R-TURN-1")
def test_a_seat_with_nothing_to_do_gets_no_suggestion():
    state, _ = new_game({"edition": "2022"}, ["a", "b"], seed=1)
    idle = next(p.id for i, p in enumerate(state.players) if i != state.current)
    with pytest.raises(IllegalActionError) as caught:
        choose(view_doc(state, idle), parse_bot({"kind": "random"}))
    assert caught.value.reason == "not_your_turn"
    with pytest.raises(InvalidInputError):
        choose(view_doc(state, None), parse_bot({"kind": "random"}))


@pytest.mark.rules("R-P2-2")
def test_heuristic_deflects_a_play2():
    state = puzzle(hands={"a": ["5", "reverse", "9", "3"], "b": ["1", "2", "3", "4"], "c": ["1", "2", "3", "4"]},
                   total=40, play2={"player": "a", "cards_left": 2})
    actions = [a for a in legal_actions(state) if a.player == "a"]
    assert heuristic_action(state, actions).card == "reverse"


@pytest.mark.rules("R-TURN-2")
def test_heuristic_plays_its_highest_number_card_and_keeps_the_safe_ones():
    state = puzzle(hands={"a": ["-10", "3", "9", "0"], "b": ["1", "2", "3", "4"]}, total=50)
    actions = [a for a in legal_actions(state) if a.player == "a"]
    assert heuristic_action(state, actions).card == "9"
    state = puzzle(hands={"a": ["-10", "3", "9", "0"], "b": ["1", "2", "3", "4"]}, total=95)
    actions = [a for a in legal_actions(state) if a.player == "a"]
    assert heuristic_action(state, actions).card == "3"


@pytest.mark.rules("R-P2-2", "R-P2-1")
def test_the_patient_player_keeps_its_reverse_under_a_play2_while_a_number_card_may_be_played():
    hands = {"a": ["5", "reverse", "9", "3"], "b": ["1", "2", "3", "4"], "c": ["1", "2", "3", "4"]}
    state = puzzle(hands=hands, total=40, play2={"player": "a", "cards_left": 2})
    actions = [a for a in legal_actions(state) if a.player == "a"]
    assert heuristic_action(state, actions).card == "reverse"  # R-P2-2: it deflects
    assert patient_action(state, actions).card == "9"  # two number cards, the reverse kept
    # With only safe cards left it plays them as the heuristic does: a card that adds
    # nothing before a -10, the reverse (which here deflects) before a play2.
    hands["a"] = ["-10", "play2", "reverse", "-10"]
    state = puzzle(hands=hands, total=40, play2={"player": "a", "cards_left": 2})
    actions = [a for a in legal_actions(state) if a.player == "a"]
    assert patient_action(state, actions).card == heuristic_action(state, actions).card == "reverse"


@pytest.mark.rules("R-P2-1")
def test_the_patient_player_does_not_attack_with_a_play2_while_a_number_card_may_be_played():
    state = puzzle(hands={"a": ["play2", "3", "4", "0"], "b": ["1", "2", "3", "4"]}, total=90)
    actions = [a for a in legal_actions(state) if a.player == "a"]
    assert heuristic_action(state, actions).card == "play2"
    assert patient_action(state, actions).card == "4"
    state = puzzle(hands={"a": ["-10", "3", "9", "0"], "b": ["1", "2", "3", "4"]}, total=95)
    actions = [a for a in legal_actions(state) if a.player == "a"]
    assert patient_action(state, actions).card == "3"  # the highest number card that may be played


@pytest.mark.rules("R-99-2")
def test_heuristic_swaps_four_ono99():
    state = puzzle(hands={"a": ["ono99"] * 4, "b": ["1", "2", "3", "4"]}, total=10)
    actions = [a for a in legal_actions(state) if a.player == "a"]
    assert heuristic_action(state, actions).type == "swap_ono99"


@pytest.mark.rules("R-TURN-2")
def test_the_cautious_choice_raises_the_total_least_and_keeps_the_safe_cards():
    state = puzzle(hands={"a": ["-10", "7", "3", "reverse"], "b": ["1", "2", "3", "4"]}, total=50)
    assert cautious(view_doc(state, "a")).card == "3"
    state = puzzle(hands={"a": ["-10", "reverse", "9", "9"], "b": ["1", "2", "3", "4"]}, total=95)
    assert cautious(view_doc(state, "a")).card == "reverse"  # a card that adds nothing before the -10


def test_the_bots_under_test_cover_every_kind():
    """A bot kind added to BotSettings is tested by this file's legality and view-only
    tests once it is in BOTS."""
    import typing

    from engine.bots import BotSettings

    kinds = set(typing.get_args(typing.get_type_hints(BotSettings)["kind"]))
    assert {bot["kind"] for bot in BOTS} == kinds


@pytest.mark.rules("R-TURN-1")
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_every_level_chooses_a_legal_action(config):
    from engine.bots import LEVELS

    checked = 0
    for i, state in enumerate(positions(config, players=2 + (len(config) % 5), games=2, seed=2)):
        if i % 15:
            continue  # hard searches for a quarter of a second: a sample of the positions
        for actor in players_to_act(state):
            for level in LEVELS:
                found = choose(view_doc(state, actor), parse_bot({"level": level, "seed": i}))
                assert found.action in legal_actions(state) and found.action.player == actor
                assert found.bot.level == level
                checked += 1
    assert checked > 6


def test_a_level_is_its_preset_and_is_read_back():
    from engine.bots import LEVELS, bot_to_dict

    for level, preset in LEVELS.items():
        resolved = parse_bot({"level": level, "seed": 4})
        assert resolved == msgspec.structs.replace(preset, seed=4)
        assert parse_bot(bot_to_dict(resolved)) == resolved  # an answer's settings sent back
        assert isinstance(parse_bot({"level": level}).seed, int)
    for doc, field in [({"level": "expert"}, "bot.level"), ({"level": "hard", "simulations": 5}, "bot.level"),
                       ({"level": "easy", "uct_c": 1.0}, "bot.level"),
                       ({"kind": "ismcts", "level": "hard", "simulations": 5}, "bot.level"),
                       ({"kind": "random", "level": "hard"}, "bot.level")]:
        with pytest.raises(InvalidInputError) as caught:
            parse_bot(doc)
        assert (caught.value.path or "").startswith(field), (doc, caught.value.path)


@pytest.mark.parametrize("bot", [*BOTS, {"level": "hard"}], ids=lambda b: "-".join(map(str, b.values())))
def test_a_suggestion_estimates_exactly_the_legal_actions(bot):
    from engine.actions import format_action

    state, _ = new_game({"edition": "2022"}, ["a", "b", "c", "d"], seed=8)
    actor = state.players[state.current].id
    found = choose(view_doc(state, actor), parse_bot({**bot, "seed": 1}))
    legal = [format_action(a) for a in legal_actions(state) if a.player == actor]
    estimates = msgspec.to_builtins(found.stats["actions"])
    assert [e["action"] for e in estimates] == legal
    searched = found.bot.kind == "ismcts"
    for e in estimates:
        assert e["visits"] >= 0 and (e["win_rate"] is None or 0 <= e["win_rate"] <= 1)
        assert (e["win_rate"] is not None) == (searched and e["visits"] > 0)
    if searched:  # the most visited, or the rollouts' policy's move; the visits add up to the root's
        most = max(estimates, key=lambda e: e["visits"])["action"]
        policy = {"patient": patient_action, "heuristic": heuristic_action}.get(found.bot.rollout or "")
        kept = None if policy is None else format_action(policy(state, [a for a in legal_actions(state)
                                                                        if a.player == actor]))
        assert format_action(found.action) in (most, kept)
        assert sum(e["visits"] for e in estimates) == found.stats["iterations"]


def test_the_search_departs_from_its_policys_move_only_on_evidence():
    """The most visited move replaces the rollouts' policy's own move only when its share
    of wins beats the policy move's by more than one standard error of the difference."""
    from engine.actions import action_doc
    from engine.bots.ismcts import departs

    assert departs(400, 240, 300, 150)  # 60 % against 50 %: 2.6 errors
    assert departs(400, 220, 300, 150)  # 55 % against 50 %: 1.3 errors
    assert departs(400, 216, 300, 150)  # 54 % against 50 %: 1.05 errors
    assert not departs(400, 215, 300, 150)  # 53.75 % against 50 %: 0.98 errors
    assert not departs(400, 200, 300, 150)  # level
    assert departs(400, 220, 300, 150, errors=1.25) and not departs(400, 220, 300, 150, errors=1.35)
    # An untried move is no evidence either way: the default is kept.
    assert not departs(400, 400, 0, 0) and not departs(0, 0, 3, 0)
    assert not departs(400, 400, 400, 400) and not departs(5, 0, 5, 0)  # no spread
    # A search of one iteration, or of none, plays its policy's move.
    state, _ = new_game({"edition": "2022"}, ["a", "b", "c", "d"], seed=3)
    actor = players_to_act(state)[0]
    view, mine = view_doc(state, actor), [a for a in legal_actions(state) if a.player == actor]
    assert len(mine) > 2
    for seed in range(8):  # one iteration tries one move, at random
        for budget, limit_ms in (({"simulations": 1}, None), ({"simulations": 50}, 0)):
            found = choose(view, parse_bot({"kind": "ismcts", "seed": seed, **budget}), limit_ms=limit_ms)
            assert found.action == patient_action(state, mine), (seed, budget, limit_ms)
    # Over many positions the search keeps its policy's move where the most visited
    # does not beat it clearly, and departs from it elsewhere.
    kept = departed = 0
    for seed in range(40):
        state, _ = new_game({"edition": ("2022", "1980")[seed % 2]}, ["a", "b", "c", "d"], seed=seed)
        for _ in range(seed % 25):  # into the game a little, by the patient player
            if state.status != "playing":
                break
            state, _ = apply(state, patient_action(state, legal_actions(state)))
        if state.status != "playing":
            continue
        actor = players_to_act(state)[0]
        mine = [a for a in legal_actions(state) if a.player == actor]
        if len(mine) < 2:
            continue
        found = choose(view_doc(state, actor), parse_bot({"kind": "ismcts", "simulations": 300, "seed": seed}))
        most = max(found.stats["actions"], key=lambda e: e.visits).action
        if action_doc(found.action) != most:
            assert found.action == patient_action(state, mine)
            kept += 1
        elif found.action != patient_action(state, mine):
            departed += 1
    assert kept and departed, (kept, departed)
