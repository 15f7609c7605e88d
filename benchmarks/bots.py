"""Bot strength: win rates over duplicate deals of four-player games, with 95 % intervals.

    python benchmarks/bots.py [--games 120] [--workers 2] [--only a_vs_b[,c_vs_d]]

A pairing ``a_vs_b`` puts one bot ``a`` against three ``b``. It plays ``--games`` deals
(alternately 2022 and 1980, on their default rules), and each deal four times, with the
lone bot in each seat in turn: the same cards, the same reshuffles, so the luck of the
deal cancels. A game won jointly counts as a share; parity is 25 %.

The interval is over deals (each deal's mean over its four seatings is one sample), the
unit that is independent: a normal interval around the mean of the deal means. Every
bot sees only its seat's view (the service's ``engine.bots.choose``), except ``oracle``
(benchmarks/oracle.py), which sees the whole state: its edge over parity is the
ceiling, and the share of it that ISMCTS closes is printed; ``hands_1000`` sees every
hand but not the draw pile, what knowing the others' hands alone is worth.

Then ISMCTS iterations per second on one core, from the opening position of each edition
at 200 iterations a move. The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.oracle import oracle_action
from engine import Action, GameState, apply, new_game, view_doc
from engine.bots import DEFAULT_BUDGET_MS, DEFAULT_ROLLOUT, Rollout, choose, parse_bot, players_to_act
from engine.state import PLAYING

PLAYERS = ["p0", "p1", "p2", "p3"]
EDITIONS = ("2022", "1980")
RATE_SIMULATIONS = 200  # iterations a move when measuring ISMCTS iterations per second

# The players a pairing may name: bot settings as the service takes them, or the oracle.
PLAYERS_BY_NAME: dict[str, dict[str, Any]] = {
    "random": {"kind": "random"},
    "heuristic": {"kind": "heuristic"},
    "patient": {"kind": "patient"},
    "ismcts": {"kind": "ismcts"},  # its default settings: DEFAULT_BUDGET_MS a move
    "oracle": {"oracle": DEFAULT_BUDGET_MS},  # ISMCTS' default time a move, the whole state seen
    "oracle_heuristic_rollouts": {"oracle": DEFAULT_BUDGET_MS, "rollout": "heuristic"},
    # At 1,000 iterations a move with the heuristic's rollouts, as docs/BOTS.md reports them.
    "oracle_1000": {"oracle": None, "simulations": 1000, "rollout": "heuristic"},
    "hands_1000": {"oracle": None, "simulations": 1000, "sees": "hands", "rollout": "heuristic"},  # not the draw pile
    "ismcts_50": {"kind": "ismcts", "simulations": 50},
    "ismcts_200": {"kind": "ismcts", "simulations": 200},
    "ismcts_1000": {"kind": "ismcts", "simulations": 1000},
    "ismcts_1000_heuristic_rollouts": {"kind": "ismcts", "simulations": 1000, "rollout": "heuristic"},
    "easy": {"level": "easy"},
    "medium": {"level": "medium"},
    "hard": {"level": "hard"},
}
PAIRINGS = ["heuristic_vs_random", "patient_vs_heuristic", "patient_vs_random",
            "ismcts_vs_heuristic", "ismcts_vs_random", "ismcts_vs_ismcts", "oracle_vs_heuristic",
            "ismcts_50_vs_heuristic", "ismcts_200_vs_heuristic", "ismcts_1000_vs_heuristic",
            "medium_vs_easy", "hard_vs_medium", "hard_vs_easy"]

Player = Callable[[GameState, str], Action]


def oracle_settings(spec: dict[str, Any]) -> tuple[int | None, int | None, str, Rollout]:
    """An oracle's budget, iterations, sight and rollouts, defaults filled in."""
    return spec["oracle"], spec.get("simulations"), spec.get("sees", "all"), spec.get("rollout", DEFAULT_ROLLOUT)


def same_play(spec: dict[str, Any]) -> str:
    """What decides how a player plays: a level and the kind it is a preset of, or two
    names of the same settings, play the very same games (the seeds are the seat's)."""
    if "oracle" in spec:
        return f"oracle {oracle_settings(spec)}"
    return json.dumps(msgspec.to_builtins(msgspec.structs.replace(parse_bot({**spec, "seed": 0}), level=None,
                                                                  seed=None)), sort_keys=True)


def player(spec: dict[str, Any], seed: int) -> Player:
    """How one seat plays: the oracle from the state, every bot from its seat's view."""
    if "oracle" in spec:
        budget_ms, simulations, sees, rollout = oracle_settings(spec)
        return lambda state, actor: oracle_action(state, actor, budget_ms, seed, simulations, sees, rollout)
    settings = parse_bot({**spec, "seed": seed})
    return lambda state, actor: choose(view_doc(state, actor), settings).action


def play(deal: int, seat: int, lone: dict[str, Any], others: dict[str, Any]) -> float:
    """One game of a deal, the lone bot in ``seat``: its share of the win. A seat's seed
    is the deal's, its seat's and its role's, so that a bot against copies of itself
    plays a game of its own."""
    seats = [player(lone if i == seat else others, deal * 8 + i * 2 + (i == seat)) for i in range(4)]
    state, _ = new_game({"edition": EDITIONS[deal % 2]}, PLAYERS, seed=deal)
    while state.status == PLAYING:
        actor = players_to_act(state)[0]
        state, _ = apply(state, seats[PLAYERS.index(actor)](state, actor))
    winners = [state.players[i].id for i in state.winners]
    return 1 / len(winners) if PLAYERS[seat] in winners else 0.0


def _deals(args: tuple[range, dict[str, Any], dict[str, Any]]) -> list[float]:
    deals, lone, others = args
    return [sum(play(deal, seat, lone, others) for seat in range(4)) / 4 for deal in deals]


def mean_half(scores: list[float], z: float = 1.96) -> tuple[float, float]:
    """The mean of the deals' scores and the half-width of its normal 95 % interval."""
    mean = statistics.fmean(scores)
    return mean, z * statistics.stdev(scores) / math.sqrt(len(scores)) if len(scores) > 1 else math.inf


def interval(scores: list[float]) -> tuple[float, float, float]:
    """The mean of the deals' win rates and its normal 95 % interval (within 0 and 1)."""
    mean, half = mean_half(scores)
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def pairing(pool: ProcessPoolExecutor, workers: int, deals: int, lone: dict[str, Any],
            others: dict[str, Any], first: int = 0) -> tuple[float, float, float]:
    """(win rate, CI low, CI high) of ``lone`` against three ``others`` over ``deals``
    deals from deal number ``first``."""
    step = max(1, deals // (workers * 8))
    end = first + deals
    chunks = [(range(i, min(i + step, end)), lone, others) for i in range(first, end, step)]
    return interval([score for chunk in pool.map(_deals, chunks) for score in chunk])


def iterations_per_second() -> float:
    """ISMCTS iterations per second from the opening position: each edition's best of
    three searches, and the slower edition's figure."""
    rates = []
    for edition in EDITIONS:
        state, _ = new_game({"edition": edition}, PLAYERS, seed=1)
        view = view_doc(state, PLAYERS[state.current or 0])
        best = 0.0
        for attempt in range(3):
            started = time.perf_counter()
            found = choose(view, parse_bot({"kind": "ismcts", "simulations": RATE_SIMULATIONS, "seed": attempt}))
            best = max(best, found.stats["iterations"] / (time.perf_counter() - started))
        rates.append(best)
    return min(rates)


def _pairings(only: str | None) -> list[tuple[str, str]]:
    names = PAIRINGS if only is None else [name.strip() for name in only.split(",") if name.strip()]
    sides = []
    for name in names:
        a, sep, b = name.partition("_vs_")
        if not sep or a not in PLAYERS_BY_NAME or b not in PLAYERS_BY_NAME:
            raise SystemExit(f"unknown pairing {name!r}: a_vs_b of {', '.join(PLAYERS_BY_NAME)}")
        sides.append((a, b))
    return sides


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=120, help="deals per pairing, each played 4 times (default 120)")
    parser.add_argument("--workers", type=int, default=2, help="processes playing games (default 2)")
    parser.add_argument("--only", help="the pairings to play, a_vs_b[,c_vs_d] (default: all)")
    parser.add_argument("--first-deal", type=int, default=0,
                        help="number of the first deal (default 0): tune settings on other deals than those reported")
    args = parser.parse_args()
    sides = _pairings(args.only)
    figures: dict[str, Any] = {"deals_per_pairing": args.games, "games_per_pairing": 4 * args.games,
                               "first_deal": args.first_deal, "ismcts_default_budget_ms": DEFAULT_BUDGET_MS}
    print(f"{args.games} deals per pairing, each played with the lone bot in every seat "
          f"({4 * args.games} games), alternately 2022 and 1980", flush=True)
    print(f"{'pairing':<34}{'win rate':>10}{'95 % CI':>20}{'seconds':>10}", flush=True)
    played: dict[tuple[str, str], tuple[str, tuple[float, float, float]]] = {}
    with ProcessPoolExecutor(args.workers) as pool:
        for a, b in sides:
            started = time.perf_counter()
            name = f"{a}_vs_{b}"
            key = same_play(PLAYERS_BY_NAME[a]), same_play(PLAYERS_BY_NAME[b])
            note = ""
            if key in played:  # the same games: not played twice
                first, (rate, low, high) = played[key]
                note = f"  (the games of {first})"
            else:
                rate, low, high = pairing(pool, args.workers, args.games, PLAYERS_BY_NAME[a], PLAYERS_BY_NAME[b],
                                          args.first_deal)
                played[key] = name, (rate, low, high)
            figures |= {f"winrate_{name}": round(rate, 4), f"ci_low_{name}": round(low, 4),
                        f"ci_high_{name}": round(high, 4)}
            print(f"{a + ' vs 3 ' + b:<34}{rate:>10.1%}{f'{low:.1%} – {high:.1%}':>20}"
                  f"{time.perf_counter() - started:>10.0f}{note}", flush=True)
    ceiling, reached = figures.get("winrate_oracle_vs_heuristic"), figures.get("winrate_ismcts_vs_heuristic")
    if ceiling is not None and reached is not None and ceiling > 0.25:
        figures["ismcts_share_of_oracle_edge"] = round((reached - 0.25) / (ceiling - 0.25), 3)
        print(f"ISMCTS closes {figures['ismcts_share_of_oracle_edge']:.0%} of the oracle's edge over parity "
              f"against three heuristic players")
    figures["ismcts_iterations_per_s"] = round(iterations_per_second())
    print(f"ISMCTS iterations per second (one core, opening position, {RATE_SIMULATIONS} a move, "
          f"slower edition): {figures['ismcts_iterations_per_s']}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
