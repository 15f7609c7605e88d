"""Scoring modes and rounds (RULES.md §6), randomness (§8)."""

from __future__ import annotations

import random

import pytest

from engine import IllegalActionError, InvalidInputError, apply, decode_state, encode_state, legal_actions, new_game
from engine.scoring import hand_points
from engine.state import Action
from tests.conftest import puzzle, types


def play(state, player, card):
    return apply(state, Action(player, "play", card))


@pytest.mark.rules("R-SCORE-ELIM")
def test_elimination_scoring_is_one_round():
    state, _ = new_game({"edition": "2022"}, ["a", "b"], seed=9)
    assert state.rules.scoring == "elimination"
    rng = random.Random(9)
    while state.status == "playing":
        state, events = apply(state, rng.choice(legal_actions(state)))
        assert "round_over" not in types(events)
    assert state.round == 1 and len(state.winners) == 1


TOKENS = {"scoring": "tokens"}


@pytest.mark.rules("R-SCORE-TOK", "R-ROUND")
def test_tokens_a_player_without_a_play_loses_a_token_and_a_new_round_is_dealt():
    hands = {"a": ["2", "3", "4", "5"], "b": ["9", "9", "9", "10"], "c": ["6", "7", "8", "2"]}
    state = puzzle("1980", hands=hands, total=88, **TOKENS)
    after, events = play(state, "a", "2")  # 90: b cannot play
    assert types(events)[:5] == ["played", "drew", "token_lost", "round_over", "round_started"]
    assert events[2] == {"type": "token_lost", "player": "b", "tokens": 2}
    assert events[4] == {"type": "round_started", "round": 2, "player": "b"}
    assert after.round == 2 and after.total == 0 and after.direction == 1 and after.discard_pile == ()
    assert [len(p.hand) for p in after.players] == [4, 4, 4]
    assert after.current == 1 and after.round_starter == 1  # the seat after round 1's starter


@pytest.mark.rules("R-SCORE-TOK")
def test_tokens_a_player_with_none_left_leaves_the_game_and_the_last_one_wins():
    hands = {"a": ["2", "3", "4", "5"], "b": ["9", "9", "9", "10"]}
    state = puzzle("1980", hands=hands, total=88, **TOKENS)
    d = encode_state(state)
    d["players"][1]["tokens"] = 0
    after, events = play(decode_state(d), "a", "2")
    assert {"type": "eliminated", "player": "b", "reason": "no_tokens"} in events
    assert events[-1] == {"type": "game_over", "winners": ["a"]} and after.status == "over"


POINTS = {"scoring": "points"}


@pytest.mark.rules("R-PTS-3")
def test_hand_points_follow_the_published_example():
    assert hand_points(("ono99", "play2", "4", "5"), 4, False) == 44
    assert hand_points(("10", "hold", "reverse", "-10"), 4, False) == 55
    assert hand_points(("2", "3"), 4, True) == 5 + 30 + 25


@pytest.mark.rules("R-SCORE-PTS", "R-PTS-1")
def test_points_without_a_legal_play_the_player_busts_with_a_card_of_their_choice():
    hands = {"a": ["2", "3", "4", "5"], "b": ["9", "9", "10", "10"], "c": ["6", "7", "8", "2"]}
    state = puzzle("1980", hands=hands, total=90, current="b", top=["3"], **POINTS)
    assert sorted(a.card for a in legal_actions(state)) == ["10", "9"]
    after, events = play(state, "b", "10")
    assert after.total == 100
    assert types(events) == ["played", "drew", "out_of_round"]
    b = after.players[1]
    assert b.status == "out_of_round" and b.busted and sorted(b.hand) == ["10", "3", "9", "9"]
    assert after.current == 2


@pytest.mark.rules("R-PTS-1")
def test_points_going_over_is_refused_while_a_legal_play_exists():
    hands = {"a": ["2", "3", "4", "10"], "b": ["9", "9", "10", "10"]}
    state = puzzle("1980", hands=hands, total=90, **POINTS)
    with pytest.raises(IllegalActionError) as exc:
        play(state, "a", "10")
    assert (exc.value.rule, exc.value.reason) == ("R-PTS-1", "total_would_reach_limit")


@pytest.mark.rules("R-PTS-2", "R-PTS-3", "R-PTS-4")
def test_points_round_scores_everyone_and_who_reaches_the_target_leaves():
    hands = {"a": ["2", "3", "4", "5"], "b": ["ono99"] * 4, "c": ["10", "10", "9", "8"]}
    state = puzzle("1980", hands=hands, total=80, top=["6", "10", "7", "9"], target=60, **POINTS)
    after, events = play(state, "a", "2")  # 82: b holds no playable card → out at once (R-PTS-2)
    assert {"type": "out_of_round", "player": "b", "reason": "no_playable_card"} in events
    assert after.current == 2 and not after.players[1].busted
    after, _ = play(after, "c", "10")  # 92; c holds 10, 9, 8, 10
    after, _ = play(after, "a", "3")  # 95; a holds 4, 5, 6, 7
    assert sorted(a.card for a in legal_actions(after)) == ["10", "8", "9"]  # all bust
    after, events = play(after, "c", "10")  # c busts and draws 9; a is alone in the round
    over = next(e for e in events if e["type"] == "round_over")
    assert over["points"] == {"a": 4 + 5 + 6 + 7, "b": 80, "c": 9 + 8 + 10 + 9 + 25}
    assert {"type": "eliminated", "player": "b", "reason": "reached_target"} in events
    assert {"type": "eliminated", "player": "c", "reason": "reached_target"} in events
    assert events[-1] == {"type": "game_over", "winners": ["a"]}


@pytest.mark.rules("R-PTS-4")
def test_last_standing_when_everyone_left_reaches_the_target_the_lowest_wins():
    hands = {"a": ["10", "10", "9", "9"], "b": ["10", "10", "10", "10"]}
    state = puzzle("1980", hands=hands, total=95, top=["8", "8"], target=10, **POINTS)
    after, events = play(state, "a", "10")  # a busts; b alone → round over
    over = next(e for e in events if e["type"] == "round_over")
    assert over["points"] == {"a": 10 + 9 + 9 + 8 + 25, "b": 40}
    assert after.status == "over" and events[-1] == {"type": "game_over", "winners": ["b"]}


@pytest.mark.rules("R-PTS-5")
def test_lowest_score_ends_the_game_after_the_round_and_ties_share_the_win():
    hands = {"a": ["10", "10", "9", "9"], "b": ["10", "10", "10", "10"], "c": ["10", "10", "8", "7"]}
    state = puzzle("1980", hands=hands, total=95, top=["6", "6"], target=50, end="lowest_score", **POINTS)
    after, events = play(state, "a", "10")  # a busts: 10 + 9 + 9 + 6 + 25
    after, events = play(after, "b", "10")  # b busts: 30 + 6 + 25; c is alone
    over = next(e for e in events if e["type"] == "round_over")
    assert over["scores"] == {"a": 59, "b": 61, "c": 35}
    assert events[-1] == {"type": "game_over", "winners": ["c"]}
    # Equal lowest scores share the win.
    d = encode_state(state)
    d["players"][2]["score"] = 24  # c ends on 59, like a
    d["players"][1]["score"] = 0
    after, _ = play(decode_state(d), "a", "10")
    after, events = play(after, "b", "10")
    assert after.status == "over" and events[-1]["winners"] == ["a", "c"]


@pytest.mark.rules("R-ROUND")
def test_a_new_round_skips_players_out_of_the_game_and_resets_the_table():
    hands = {"a": ["2", "3", "4", "5"], "b": ["9", "9", "9", "10"], "c": ["6", "7", "8", "2"]}
    state = puzzle("1980", hands=hands, total=88, statuses={}, direction=-1, current="c", **TOKENS)
    d = encode_state(state)
    d["round_starter"] = "a"
    d["players"][1]["tokens"] = 0
    state = decode_state(d)
    after, _ = play(state, "c", "2")  # direction -1: b is next and cannot play, has no token
    assert after.players[1].status == "out" and after.players[1].hand == ()
    assert after.round_starter == 2  # b was out, so c (after a) starts
    assert after.direction == 1 and after.total == 0


@pytest.mark.rules("R-RNG-1")
def test_same_seed_and_actions_give_identical_states_and_events():
    def run(seed):
        state, events = new_game({"edition": "1980", "scoring": "tokens"}, ["a", "b", "c"], seed=seed)
        rng = random.Random(0)
        log = [events]
        while state.status == "playing":
            actions = legal_actions(state)
            state, events = apply(state, actions[rng.randrange(len(actions))])
            log.append(events)
        return state, log

    first, second = run("same"), run("same")
    assert first == second
    assert run("other")[1] != first[1]


@pytest.mark.rules("R-RNG-1")
def test_the_same_state_and_action_always_give_the_same_next_state():
    state, _ = new_game({"edition": "2022"}, ["a", "b", "c"], seed=11)
    d = encode_state(state)
    action = legal_actions(state)[0]
    given = decode_state(d)
    one = apply(given, action)
    two = apply(decode_state(d), action)
    assert one == two and encode_state(given) == d  # the state passed in was not changed


@pytest.mark.rules("R-RNG-2")
def test_an_explicit_deck_is_dealt_one_card_at_a_time_and_becomes_the_deck_option():
    deck = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "0", "10", "-10"]
    state, _ = new_game({"edition": "2022"}, ["a", "b"], deck=deck)
    assert state.players[0].hand == ("1", "3", "5", "7") and state.players[1].hand == ("2", "4", "6", "8")
    assert state.draw_pile == ("9", "0", "10", "-10")
    assert dict(state.rules.deck) == {c: 1 for c in deck} and state.shuffles == 0
    # Without a seed the reshuffles get a random one, never a default a seat could guess.
    assert isinstance(state.seed, int) and state.seed != new_game({"edition": "2022"}, ["a", "b"], deck=deck)[0].seed
    with pytest.raises(InvalidInputError) as exc:
        new_game({"edition": "2022"}, ["a", "b"], deck=["1", "2"])
    assert exc.value.path == "deck" and "need" in str(exc.value)
    state, _ = new_game({"edition": "2022"}, ["a", "b"], deck=deck, seed="re")
    assert state.seed == "re"


def test_every_scoring_mode_has_its_behaviour():
    """engine/scoring.py's MODES holds one Mode for each Scoring value (a new value with no
    Mode would fail every game of it)."""
    from engine.rules import Scoring
    from engine.scoring import MODES

    assert set(MODES) == set(Scoring)
