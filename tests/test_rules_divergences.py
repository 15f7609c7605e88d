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
