"""Engine speed: random playouts against OpenSpiel's crazy_eights, and codec cost.

    python benchmarks/engine.py [--seconds 1.0] [--rounds 5]

It measures the engine build this checkout has (engine.BUILD: mypyc's compiled modules,
or the source interpreted); run it once with each to compare.

A step is what a random bot does: legal actions, choose one, apply. Each measurement
runs in rounds that alternate between the engines (the machine is noisy); the best
round counts. OpenSpiel deals and draws through chance nodes, which our ``apply``
does inside a step: its steps/s counts decision nodes over the whole playout time
(``ratio``), and all nodes as a second figure (``ratio_all_nodes``). The last line
printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import BUILD, apply, decode_state, dumps_state, encode_state, legal_actions, loads_state, new_game

PLAYERS = ["p0", "p1", "p2", "p3"]


def ono99_round(edition: str, seconds: float, seed: int) -> tuple[float, float]:
    """Random playouts for ``seconds``: (steps/s, games/s), game creation included."""
    rng = random.Random(seed)
    rules = {"edition": edition}
    steps = games = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        state, _ = new_game(rules, PLAYERS, seed=seed + games)
        while state.status == "playing":
            state, _ = apply(state, rng.choice(legal_actions(state)))
            steps += 1
        games += 1
        now = time.perf_counter()
        if now >= deadline:
            return steps / (now - start), games / (now - start)


def spiel_round(game: object, seconds: float, seed: int) -> tuple[float, float, float]:
    """crazy_eights random playouts: (decision steps/s, all nodes/s, games/s)."""
    rng = random.Random(seed)
    decisions = nodes = games = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        state = game.new_initial_state()  # type: ignore[attr-defined]
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(rng.choice(state.chance_outcomes())[0])
            else:
                state.apply_action(rng.choice(state.legal_actions()))
                decisions += 1
            nodes += 1
        games += 1
        now = time.perf_counter()
        if now >= deadline:
            elapsed = now - start
            return decisions / elapsed, nodes / elapsed, games / elapsed


def mid_game_states(count: int) -> list:
    """States a third of the way into random 4-player 2022 games."""
    rng = random.Random(7)
    states = []
    for n in range(count):
        state, _ = new_game({"edition": "2022"}, PLAYERS, seed=1000 + n)
        for _ in range(15):
            if state.status != "playing":
                break
            state, _ = apply(state, rng.choice(legal_actions(state)))
        states.append(state)
    return states


def codec_us(states: list, repeat: int) -> dict[str, float]:
    """Best µs per state for JSON bytes and for plain objects, encode + decode with validation."""
    docs = [dumps_state(s) for s in states]
    best_json = best_obj = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for s in states:
            loads_state(dumps_state(s))
        best_json = min(best_json, (time.perf_counter() - t) / len(states) * 1e6)
        t = time.perf_counter()
        for s in states:
            decode_state(encode_state(s))
        best_obj = min(best_obj, (time.perf_counter() - t) / len(states) * 1e6)
    return {"json_encode_decode_us": round(best_json, 2), "doc_encode_decode_us": round(best_obj, 2),
            "state_json_bytes": round(sum(map(len, docs)) / len(docs))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one measuring round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per engine; the best counts")
    args = parser.parse_args()
    try:
        import pyspiel
    except ImportError:
        sys.exit("pyspiel is missing: pip install -e '.[bench]'")
    spiel_game = pyspiel.load_game("crazy_eights", {"players": 4})
    print(f"engine build: {BUILD} (python3 dev.py build-engine; ONO99_ENGINE_BUILD=interpreted for the other)",
          flush=True)

    best: dict[str, list[float]] = {"2022": [0, 0], "1980": [0, 0]}
    spiel = [0.0, 0.0, 0.0]
    for r in range(args.rounds):
        for edition in ("2022", "1980"):
            steps, games = ono99_round(edition, args.seconds, seed=r * 100_000)
            best[edition] = [max(best[edition][0], steps), max(best[edition][1], games)]
        spiel = [max(a, b) for a, b in zip(spiel, spiel_round(spiel_game, args.seconds, seed=r), strict=True)]
        print(f"round {r + 1}/{args.rounds}: 2022 {best['2022'][0]:,.0f} steps/s, 1980 {best['1980'][0]:,.0f} "
              f"steps/s, crazy_eights {spiel[0]:,.0f} decision steps/s (best so far)", flush=True)

    codec = codec_us(mid_game_states(200), repeat=args.rounds)
    ours = min(best["2022"][0], best["1980"][0])
    figures = {
        "engine_build": BUILD,
        "steps_per_s_2022": round(best["2022"][0]), "games_per_s_2022": round(best["2022"][1], 1),
        "steps_per_s_1980": round(best["1980"][0]), "games_per_s_1980": round(best["1980"][1], 1),
        "crazy_eights_decision_steps_per_s": round(spiel[0]),
        "crazy_eights_all_nodes_per_s": round(spiel[1]),
        "crazy_eights_games_per_s": round(spiel[2], 1),
        **codec,
        "ratio": round(ours / spiel[0], 3),
        "ratio_all_nodes": round(ours / spiel[1], 3),
    }
    print(f"ONO 99 2022: {figures['steps_per_s_2022']:,} steps/s, {figures['games_per_s_2022']:,} games/s")
    print(f"ONO 99 1980: {figures['steps_per_s_1980']:,} steps/s, {figures['games_per_s_1980']:,} games/s")
    print(f"crazy_eights: {figures['crazy_eights_decision_steps_per_s']:,} decision steps/s "
          f"({figures['crazy_eights_all_nodes_per_s']:,} nodes/s), {figures['crazy_eights_games_per_s']:,} games/s")
    print(f"state encode+decode with validation: {codec['json_encode_decode_us']} µs as JSON bytes, "
          f"{codec['doc_encode_decode_us']} µs as objects ({codec['state_json_bytes']} bytes)")
    print(f"ratio (slower ONO 99 edition / crazy_eights decision steps): {figures['ratio']}  "
          f"(all nodes: {figures['ratio_all_nodes']})")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
