"""Fair shuffles (engine/fairness.py, docs/FAIRNESS.md): the construction is a uniform,
deterministic permutation; its master key separates every list of seeds; a game with a
fair seed is dealt and reshuffled by it; docs/FAIRNESS.md's worked example is what the
engine computes, and the page's standalone Python agrees with the engine."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import InvalidInputError, apply, decode_state, encode_state, legal_actions, new_game
from engine.cards import deck_cards
from engine.fairness import commitment, fair_shuffled, master_key
from engine.rules import resolve_rules
from engine.shuffle import fair_seed

PAGE = (Path(__file__).resolve().parent.parent / "docs" / "FAIRNESS.md").read_text()
SECRET = bytes(range(32))
SEEDS = [bytes.fromhex("00112233445566778899aabbccddeeff"), None]

secrets_ = st.binary(min_size=32, max_size=32)
seeds_ = st.lists(st.none() | st.binary(min_size=16, max_size=64), min_size=2, max_size=6)


@pytest.mark.rules("R-RNG-1")
@settings(max_examples=200, deadline=None)
@given(secrets_, seeds_, st.integers(0, 2**20), st.integers(0, 120))
def test_a_fair_shuffle_is_a_deterministic_permutation(secret, seeds, number, size):
    key = master_key(secret, seeds)
    items = list(range(size))
    order = fair_shuffled(items, key, number)
    assert sorted(order) == items
    assert fair_shuffled(items, key, number) == order


@pytest.mark.rules("R-RNG-1")
@settings(max_examples=200, deadline=None)
@given(secrets_, seeds_, seeds_)
def test_different_seed_lists_give_different_master_keys(secret, seeds, others):
    if seeds != others:
        assert master_key(secret, seeds) != master_key(secret, others)


@pytest.mark.rules("R-RNG-1")
def test_the_length_prefixes_keep_seed_lists_apart():
    """Two seeds joined into one, or a seed moved to another seat, change the key."""
    a, b = b"a" * 16, b"b" * 16
    keys = {master_key(SECRET, s) for s in ([a, b], [a + b, None], [None, a + b], [b, a], [a, b, None])}
    assert len(keys) == 5


@pytest.mark.rules("R-RNG-1")
@pytest.mark.parametrize("size", [3, 10])
def test_first_positions_are_uniform(size):
    """Chi-square over 6,000 shuffles of ``size`` distinct items: each item comes first
    as often as any other (df = size - 1, critical value at p = 0.001). Fixed key and
    shuffle numbers: the figure is the same on every run."""
    key = master_key(SECRET, SEEDS)
    runs = 6000
    counts = [0] * size
    for number in range(runs):
        counts[fair_shuffled(range(size), key, number)[0]] += 1
    expected = runs / size
    chi2 = sum((c - expected) ** 2 / expected for c in counts)
    critical = {2: 13.82, 9: 27.88}[size - 1]
    assert chi2 < critical, (counts, chi2)


@pytest.mark.rules("R-RNG-1", "R-TURN-4")
def test_a_game_with_a_fair_seed_is_dealt_and_reshuffled_by_the_construction():
    # A small deck of low cards: the draw pile runs out within a few turns.
    doc = {"edition": "1980", "deck": {"0": 6, "1": 6, "2": 6, "-10": 2, "reverse": 2}}
    rules = resolve_rules(doc)
    rng = random.Random(3)
    reshuffled = 0
    for n in range(40):  # games with fair seeds, played at random, until some reshuffle
        key = master_key(bytes([n]) * 32, SEEDS)
        state, _ = new_game(doc, ["ann", "bob"], seed=fair_seed(key))
        order = fair_shuffled(deck_cards(rules.deck_counts), key, 0)
        size = rules.hand_size * 2
        assert [list(p.hand) for p in state.players] == [list(order[k:size:2]) for k in range(2)]
        assert state.draw_pile == order[size:]
        for _ in range(200):
            if state.status != "playing":
                break
            before = state
            state, events = apply(state, rng.choice(legal_actions(state)))
            if any(e["type"] == "reshuffled" for e in events):
                # R-TURN-4: the whole discard pile, the card just played on top of it.
                played = tuple(e["card"] for e in events if e["type"] == "played")
                pile = fair_shuffled(before.discard_pile + played, key, before.shuffles)
                drawn = [e["card"] for e in events if e["type"] == "drew"]
                assert list(pile[:len(drawn)]) == drawn and state.draw_pile == pile[len(drawn):]
                assert decode_state(encode_state(state)) == state  # the seed survives the codec
                reshuffled += 1
        if reshuffled >= 3:
            return
    pytest.fail(f"{reshuffled} reshuffles in 40 games")


@pytest.mark.parametrize("seed", ["fair1:", "fair1:" + "0" * 63, "fair1:" + "A" * 64, "fair1:" + "g" * 64])
def test_a_malformed_fair_seed_is_refused_by_new_game_and_the_codec(seed):
    with pytest.raises(InvalidInputError) as refused:
        new_game({"edition": "2022"}, ["ann", "bob"], seed=seed)
    assert refused.value.path == "seed"
    doc = encode_state(new_game({"edition": "2022"}, ["ann", "bob"], seed=1)[0])
    with pytest.raises(InvalidInputError) as refused:
        decode_state({**doc, "seed": seed})
    assert refused.value.path == "state.seed"


def _example(label: str) -> str:
    match = re.search(rf"^{re.escape(label)}:\s+(.+)$", PAGE, re.M)
    assert match, label
    return match.group(1).strip()


def test_the_worked_example_is_what_the_engine_computes():
    key = master_key(SECRET, SEEDS)
    assert _example("secret") == SECRET.hex()
    assert _example("commitment") == commitment(SECRET)
    assert _example("master key") == key.hex()
    assert _example("shuffle 0 of [0, 1, …, 9]").split() == [str(i) for i in fair_shuffled(range(10), key, 0)]
    state, _ = new_game({"edition": "2022"}, ["ann", "bob"], seed=fair_seed(key))
    order = fair_shuffled(deck_cards(resolve_rules({"edition": "2022"}).deck_counts), key, 0)
    assert _example("deal, top 12").split() == list(order[:12])
    assert _example("first hand").split() == list(state.players[0].hand)
    assert _example("second hand").split() == list(state.players[1].hand)
    assert _example("draw pile").split()[:-1] == list(state.draw_pile[:3])


def test_the_pages_standalone_python_agrees_with_the_engine():
    block = re.search(r"^```python\n(.*?)^```", PAGE, re.M | re.S)
    assert block
    names: dict[str, object] = {}
    exec(compile(block.group(1).replace("print(", "_ = ("), "FAIRNESS.md", "exec"), names)
    key = master_key(SECRET, SEEDS)
    assert names["master_key"](SECRET, SEEDS) == key  # type: ignore[operator]
    deck = deck_cards(resolve_rules({"edition": "1980"}).deck_counts)
    for number in (0, 1, 7):
        assert names["shuffled"](deck, key, number) == list(fair_shuffled(deck, key, number))  # type: ignore[operator]
