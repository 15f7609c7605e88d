"""Random-play invariant checker over both editions, 2–6 players and the rule options.

2,040 complete games in the default suite; every step is checked (tests/invariants.py).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import apply, decode_state, encode_state, legal_actions, new_game
from tests.invariants import check_state, play_random_game

CONFIGS = {
    "2022": {"edition": "2022"},
    "1980": {"edition": "1980"},
    "1980-tokens": {"edition": "1980", "scoring": "tokens"},
    "1980-points": {"edition": "1980", "scoring": "points", "target": 60},
    "1980-points-lowest": {"edition": "1980", "scoring": "points", "end": "lowest_score"},
    "1980-manual-draw": {"edition": "1980", "draw": "manual"},
    "1980-on-zero": {"edition": "1980", "ono99_on_zero": True},
    "2022-swap-open-turn": {"edition": "2022", "ono99_swap_ends_turn": False},
    "2022-limit-100": {"edition": "2022", "limit": 100},
    "2022-no-reverse-deflect": {"edition": "2022", "reverse_deflects_in_two_player": False},
    "2022-tokens-manual-on-zero": {"edition": "2022", "scoring": "tokens", "tokens": 1, "draw": "manual",
                                   "ono99_on_zero": True},
    "2022-points-manual": {"edition": "2022", "scoring": "points", "draw": "manual", "target": 80},
}
GAMES_PER_CASE = 34  # 12 configurations × 5 player counts × 34 = 2,040 games


@pytest.mark.slow
@pytest.mark.rules("R-ELIM-2", "R-WIN-1", "R-TURN-2", "R-TOT-2", "R-SET-3", "R-RNG-1")
@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_random_games_keep_every_invariant(config, players):
    rules = CONFIGS[config]
    ids = [f"p{i}" for i in range(players)]
    for n in range(GAMES_PER_CASE):
        rng = random.Random(f"{config}/{players}/{n}")
        state, events = new_game(rules, ids, seed=f"{config}/{players}/{n}")
        final, steps = play_random_game(state, events, rng)
        assert final.status == "over" and steps > 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=st.sampled_from(sorted(CONFIGS)), players=st.integers(2, 6),
       seed=st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(min_size=1, max_size=20)),
       choices=st.lists(st.integers(0, 50), min_size=1, max_size=400))
@pytest.mark.rules("R-RNG-1")
def test_any_sequence_of_legal_actions_keeps_the_invariants_and_replays_identically(config, players, seed,
                                                                                     choices):
    ids = [f"p{i}" for i in range(players)]
    state, events = new_game(CONFIGS[config], ids, seed=seed)
    trail = [encode_state(state)]
    picked = []
    for choice in choices:
        actions = check_state(state, events)
        if not actions:
            break
        action = actions[choice % len(actions)]
        picked.append(action)
        state, events = apply(state, action)
        trail.append(encode_state(state))
    # Replaying the same actions from the same seed gives the same documents.
    again, _ = new_game(CONFIGS[config], ids, seed=seed)
    replay = [encode_state(again)]
    for action in picked:
        again, _ = apply(again, action)
        replay.append(encode_state(again))
    assert replay == trail
    # Replaying from any decoded intermediate document gives the same next state.
    k = len(picked) // 2
    if picked:
        mid = decode_state(trail[k])
        assert encode_state(apply(mid, picked[k])[0]) == trail[k + 1]
        assert picked[k] in legal_actions(mid)
