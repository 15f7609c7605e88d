"""Replay the golden playthroughs line by line: states, legal actions and events must match."""

from __future__ import annotations

import pytest

from engine import apply, encode_state, format_action, legal_actions, new_game, parse_action
from tests.golden.transcript import GAMES, read


@pytest.mark.rules("R-SCORE-ELIM", "R-SCORE-TOK", "R-PTS-4", "R-PTS-5", "R-DRAW-1", "R-RNG-1")
@pytest.mark.parametrize("name", sorted(GAMES))
def test_golden_playthrough_replays_exactly(name):
    game, records = read(name)
    assert game == GAMES[name]
    state, events = new_game(game["rules"], game["players"], seed=game["seed"])
    kind, expected = records[0]
    assert kind == "events" and events == expected
    steps = 0
    for kind, value in records[1:]:
        if kind == "state":
            assert encode_state(state) == value, f"state differs at step {steps}"
        elif kind == "legal":
            assert [format_action(a) for a in legal_actions(state)] == value, f"legal actions differ at step {steps}"
        elif kind == "action":
            state, events = apply(state, parse_action(value))
            steps += 1
        elif kind == "events":
            assert events == value, f"events differ at step {steps}"
    assert state.status == "over" and steps > 10
