"""R-TIME-1: a player who forfeits leaves the game; every invariant still holds."""

from __future__ import annotations

import random

import pytest

from engine import IllegalActionError, apply, legal_actions, new_game
from engine.leaving import forfeit
from tests.conftest import puzzle, types
from tests.invariants import check_state
from tests.test_random_play import CONFIGS


@pytest.mark.rules("R-TIME-1", "R-WIN-1", "R-PTS-3", "R-P2-5")
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_forfeits_at_random_moments_keep_every_invariant(config):
    forfeits = 0
    for game in range(30):
        rng = random.Random(game)
        state, events = new_game(CONFIGS[config], [f"p{i}" for i in range(3 + game % 4)], seed=game)
        while state.status == "playing":
            if rng.random() < 0.05:
                who = rng.choice([p.id for p in state.players if p.status != "out"])
                state, events = forfeit(state, who)
                assert events[0] == {"type": "eliminated", "player": who, "reason": "forfeit"}
                forfeits += 1
            else:
                state, events = apply(state, rng.choice(legal_actions(state)))
            check_state(state, events)  # decodes, conserves cards, a live game has a player who can act
    assert forfeits > 20


@pytest.mark.rules("R-TIME-1", "R-WIN-1")
def test_the_last_player_left_wins():
    state = puzzle(hands={"a": ["1", "2", "3", "4"], "b": ["5", "6", "7", "8"]}, total=10)
    after, events = forfeit(state, "a")
    assert after.status == "over" and [after.players[i].id for i in after.winners] == ["b"]
    assert types(events) == ["eliminated", "game_over"]
    with pytest.raises(IllegalActionError):
        forfeit(after, "b")


@pytest.mark.rules("R-TIME-1", "R-P2-5")
def test_the_player_to_act_forfeiting_passes_the_turn_and_clears_a_play2():
    state = puzzle(hands={"a": ["1", "2", "3", "4"], "b": ["5", "6", "7", "8"], "c": ["1", "2", "3", "4"]},
                   total=10, play2={"player": "a", "cards_left": 2})
    after, _ = forfeit(state, "a")
    assert after.players[after.current].id == "b" and after.turn.play2 is None
    assert after.players[0].status == "out" and after.players[0].hand == state.players[0].hand  # face up
    # A player who is not to act leaves the turn where it is.
    other, _ = forfeit(state, "c")
    assert other.current == state.current and other.turn.play2 == state.turn.play2
    with pytest.raises(IllegalActionError) as caught:
        forfeit(other, "c")
    assert caught.value.reason == "already_out"
