"""Rules divergences found by probing the engine, each pinned by the rule it breaks."""

from __future__ import annotations

import random

import pytest

from engine import InvalidInputError, apply, decode_state, encode_state, legal_actions, new_game, resolve_rules


def roundtrip(state):
    """The state as a caller sends it back: it must decode to the same state."""
    again = decode_state(encode_state(state))
    assert again == state
    return again


@pytest.mark.rules("R-TOT-2", "R-TURN-4")
def test_a_1980_total_below_what_one_pass_of_the_deck_allows_decodes_after_reshuffles():
    """With no floor every -10 comes back after a reshuffle: a deck of eight -10s
    reaches -90 on the ninth play, and every state on the way decodes."""
    state, _ = new_game({"edition": "1980", "deck": {"-10": 8}}, ["ann", "bob"], seed=1)
    for _ in range(12):
        state = roundtrip(apply(state, legal_actions(state)[0])[0])
    assert state.total == -120 and state.shuffles > 0


@pytest.mark.rules("R-TOT-2")
@pytest.mark.parametrize("floor", [1, 5, 98])
def test_a_floor_above_zero_is_refused_where_the_rules_are_given(floor):
    with pytest.raises(InvalidInputError) as refused:
        resolve_rules({"edition": "2022", "total_floor": floor})
    assert refused.value.path == "rules.total_floor"


@pytest.mark.rules("R-TOT-2")
@pytest.mark.parametrize("floor", [0, -5, -10_000])
def test_a_floor_at_or_below_zero_holds_from_the_first_state_on(floor):
    state, _ = new_game({"edition": "2022", "total_floor": floor}, ["ann", "bob"], seed=2)
    rng = random.Random(floor)
    for _ in range(60):
        actions = legal_actions(state)
        if not actions:
            break
        state = roundtrip(apply(state, rng.choice(actions))[0])
        assert state.total >= floor


@pytest.mark.rules("R-P2-2", "R-P2-3", "R-P2-7")
@pytest.mark.parametrize(("first", "deflectors", "accepted"), [
    (True, ["reverse", "play2"], True),    # 2022: play2 first, deflecting
    (False, ["reverse", "hold"], True),    # 1980: play2 never first
    (True, ["reverse", "hold"], True),     # house rule: play2 first, adding 0 (R-P2-7)
    (False, ["reverse", "play2"], False),  # a deflector that may not be first: contradictory
])
def test_only_the_contradictory_play2_combination_is_refused_with_its_field(first, deflectors, accepted):
    doc = {"edition": "1980", "play2_as_first_card": first, "play2_deflectors": deflectors}
    if accepted:
        rules = resolve_rules(doc)
        assert rules.play2_as_first_card is first
    else:
        with pytest.raises(InvalidInputError) as refused:
            resolve_rules(doc)
        assert refused.value.path == "rules.play2_deflectors"


@pytest.mark.rules("R-P2-7", "R-P2-1")
def test_a_play2_first_but_not_deflecting_adds_0_and_the_player_plays_a_second_card():
    from tests.conftest import puzzle

    state = puzzle("1980", hands={"ann": ["play2", "3", "4", "5"], "bob": ["play2", "6", "7", "8"]}, total=20,
                   play2={"player": "ann", "cards_left": 2}, play2_as_first_card=True)
    after, _ = apply(state, {"player": "ann", "type": "play", "card": "play2"})
    assert after.total == 20 and after.players[after.current].id == "ann"
    assert after.turn.play2 is not None and after.turn.play2.cards_left == 1  # her second card is owed
    done, _ = apply(after, {"player": "ann", "type": "play", "card": "3"})
    assert done.players[done.current].id == "bob" and done.turn.play2 is None  # no one else is obligated
    roundtrip(done)


def _finished(rules, players=("ann", "bob", "cy"), seed=4):
    state, _ = new_game(rules, list(players), seed=seed)
    rng = random.Random(seed)
    while state.status == "playing":
        state, _ = apply(state, rng.choice(legal_actions(state)))
    return encode_state(state)


@pytest.mark.rules("R-WIN-1", "R-SCORE-TOK")
@pytest.mark.parametrize("scoring", ["elimination", "tokens"])
def test_a_finished_game_whose_winner_is_not_the_last_player_in_it_is_refused(scoring):
    doc = _finished({"edition": "1980", "scoring": scoring})
    decode_state(doc)  # as the engine made it
    winner = doc["winners"][0]
    loser = next(p for p in doc["players"] if p["id"] != winner)
    wrong_winner = {**doc, "winners": [loser["id"]]}  # out of the game, the last one active
    revived = {**doc, "players": [{**p, "status": "active"} for p in doc["players"]]}  # one winner, all active
    for inconsistent in (wrong_winner, revived):
        with pytest.raises(InvalidInputError) as refused:
            decode_state(inconsistent)
        assert refused.value.path == "state.winners"


@pytest.mark.rules("R-PTS-4", "R-PTS-5")
@pytest.mark.parametrize("end", ["last_standing", "lowest_score"])
def test_a_finished_points_game_names_exactly_the_winners_its_scores_make(end):
    doc = _finished({"edition": "2022", "scoring": "points", "target": 40, "end": end})
    decode_state(doc)
    others = [p["id"] for p in doc["players"] if p["id"] not in doc["winners"]]
    for winners in ([*doc["winners"], others[0]], [others[0]]):
        with pytest.raises(InvalidInputError) as refused:
            decode_state({**doc, "winners": winners})
        assert refused.value.path == "state.winners"


@pytest.mark.rules("R-PTS-1", "R-PTS-3", "R-DRAW-1")
def test_a_play_that_ends_a_manual_draw_round_draws_the_players_card_before_scoring():
    """With draw "manual" the player whose play ends the round never gets to send their
    draw: it is drawn for them, not charged 15 points as a missing card."""
    from engine.cards import HAND_POINTS

    checked = 0
    for seed in range(60):
        state, _ = new_game({"edition": "1980", "scoring": "points", "draw": "manual", "target": 60},
                            ["ann", "bob", "cy"], seed=seed)
        rng = random.Random(seed)
        while state.status == "playing":
            before = state
            state, events = apply(state, rng.choice(legal_actions(state)))
            kinds = [e["type"] for e in events]
            if events[0]["type"] != "played" or "round_over" not in kinds:
                continue
            player = events[0]["player"]
            seat = before.seat(player)
            end = kinds.index("round_over")
            drew = [e["card"] for e in events[:end] if e["type"] == "drew" and e["player"] == player]
            assert len(drew) == 1, kinds
            hand = list(before.players[seat].hand)
            hand.remove(events[0]["card"])
            busted = any(e["type"] == "out_of_round" and e["player"] == player for e in events[:end])
            # Draws lost earlier in the round (R-DRAW-1) are still charged, 15 each.
            missing = before.rules.hand_size - len(hand) - 1
            expected = sum(HAND_POINTS[c] for c in [*hand, *drew]) + 15 * missing + (25 if busted else 0)
            assert events[end]["points"][player] == expected
            checked += 1
    assert checked > 50


@pytest.mark.rules("R-P2-5", "R-PTS-1")
@pytest.mark.parametrize("card", ["reverse", "play2"])
def test_an_obligated_player_who_busts_with_a_deflector_clears_the_obligation(card):
    """After a bust the total stays past the limit, so the next player can only bust:
    the obligated one busting with a deflector leaves the round, and no one is obligated."""
    from tests.conftest import puzzle

    hands = {"ann": [card, "5", "7", "9"], "bob": ["2", "3", "4", "6"], "cy": ["2", "3", "4", "6"],
             "dee": ["2", "3", "4", "6"], "eve": ["2", "3", "4", "6"]}
    doc = encode_state(puzzle("2022", hands=hands, total=90, scoring="points",
                              statuses={"bob": "out_of_round"}, play2={"player": "ann", "cards_left": 2}))
    doc["total"] = 104  # bob busted to 104 (R-PTS-1)
    doc["players"][1]["busted"] = True
    state = decode_state(doc)
    assert [a.card for a in legal_actions(state)] == [card, "5", "7", "9"]  # only busts are left
    after, events = apply(state, {"player": "ann", "type": "play", "card": card})
    assert {"type": "out_of_round", "player": "ann", "reason": "busted"} in events
    assert after.turn.play2 is None and "play2_pending" not in [e["type"] for e in events]
    roundtrip(after)
