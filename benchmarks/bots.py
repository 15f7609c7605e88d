"""Bot strength: win rates of four-player games, with 95 % confidence intervals.

    python benchmarks/bots.py [--games 2000] [--simulations 200] [--workers 2]

Each pairing plays ``--games`` games (half of them in each edition, 2022 and 1980, on
their default rules): one bot of the first kind against three of the second, the lone
bot's seat rotating over the four seats. Every bot sees only its seat's view (the
service's ``engine.bots.choose``). A game won jointly counts as a share. Intervals
are Wilson score intervals; parity in a four-player game is 25 %. Then ISMCTS
iterations per second, on one core, from the opening position of each edition. The
last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import apply, new_game, view_doc
from engine.bots import choose, parse_bot, players_to_act

PLAYERS = ["p0", "p1", "p2", "p3"]
EDITIONS = ("2022", "1980")


def play(game: int, lone: dict[str, Any], others: dict[str, Any]) -> float:
    """One game: the lone bot's share of the win (seat and edition from ``game``)."""
    seat = game % 4
    edition = EDITIONS[(game // 4) % 2]
    bots = [parse_bot({**(lone if i == seat else others), "seed": game * 4 + i}) for i in range(4)]
    state, _ = new_game({"edition": edition}, PLAYERS, seed=game)
    while state.status == "playing":
        actor = players_to_act(state)[0]
        state, _ = apply(state, choose(view_doc(state, actor), bots[PLAYERS.index(actor)]).action)
    winners = [state.players[i].id for i in state.winners]
    return 1 / len(winners) if PLAYERS[seat] in winners else 0.0


def wilson(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion."""
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _chunk(args: tuple[range, dict[str, Any], dict[str, Any]]) -> float:
    games, lone, others = args
    return sum(play(g, lone, others) for g in games)


def pairing(pool: ProcessPoolExecutor, workers: int, games: int, lone: dict[str, Any],
            others: dict[str, Any]) -> tuple[float, float, float]:
    """(win rate, CI low, CI high) of ``lone`` against three ``others``."""
    step = max(1, games // (workers * 8))
    chunks = [(range(i, min(i + step, games)), lone, others) for i in range(0, games, step)]
    wins = sum(pool.map(_chunk, chunks))
    low, high = wilson(wins, games)
    return wins / games, low, high


def iterations_per_second(simulations: int) -> float:
    """ISMCTS iterations per second from the opening position: each edition's best of
    three searches, and the slower edition's figure."""
    rates = []
    for edition in EDITIONS:
        state, _ = new_game({"edition": edition}, PLAYERS, seed=1)
        view = view_doc(state, PLAYERS[state.current or 0])
        best = 0.0
        for attempt in range(3):
            started = time.perf_counter()
            found = choose(view, parse_bot({"kind": "ismcts", "simulations": simulations, "seed": attempt}))
            best = max(best, found.stats["iterations"] / (time.perf_counter() - started))
        rates.append(best)
    return min(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2000, help="games per pairing (default 2000)")
    parser.add_argument("--simulations", type=int, default=200, help="ISMCTS iterations per move (default 200)")
    parser.add_argument("--workers", type=int, default=2, help="processes playing games (default 2)")
    args = parser.parse_args()
    ismcts = {"kind": "ismcts", "simulations": args.simulations}
    pairings = [("heuristic", {"kind": "heuristic"}, "random", {"kind": "random"}),
                ("ismcts", ismcts, "heuristic", {"kind": "heuristic"}),
                ("ismcts", ismcts, "random", {"kind": "random"})]
    figures: dict[str, Any] = {"games_per_pairing": args.games, "ismcts_simulations": args.simulations}
    print(f"{args.games} four-player games per pairing, half 2022 and half 1980; "
          f"ISMCTS at {args.simulations} iterations a move", flush=True)
    print(f"{'pairing':<28}{'win rate':>10}{'95 % CI':>20}{'seconds':>10}", flush=True)
    with ProcessPoolExecutor(args.workers) as pool:
        for a, lone, b, others in pairings:
            started = time.perf_counter()
            rate, low, high = pairing(pool, args.workers, args.games, lone, others)
            name = f"{a}_vs_{b}"
            figures |= {f"winrate_{name}": round(rate, 4), f"ci_low_{name}": round(low, 4),
                        f"ci_high_{name}": round(high, 4)}
            print(f"{a + ' vs 3 ' + b:<28}{rate:>10.1%}{f'{low:.1%} – {high:.1%}':>20}"
                  f"{time.perf_counter() - started:>10.0f}", flush=True)
    figures["ismcts_iterations_per_s"] = round(iterations_per_second(args.simulations))
    print(f"ISMCTS iterations per second (one core, opening position, slower edition): "
          f"{figures['ismcts_iterations_per_s']}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
