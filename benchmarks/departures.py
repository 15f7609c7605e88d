"""What the search's choices are worth against its rollout policy's, move by move.

    python benchmarks/departures.py [--deals 100] [--first 3000] [--workers 2] [--simulations 1000]
                                    [--shuffles 24] [--play played|most_visited|z<k>]

A game's win rate moves by about ±4 points over 480 games, more than any change to the
search is worth; this measures the same thing with far less noise. ISMCTS plays games
against three heuristic players (the deals of ``benchmarks/bots.py``, the lone bot in
every seat). At each of its choices among two or more moves, every legal move is valued
from the true state: the move played, then the game played out by the patient player for
the bot and the heuristic for the others (both deterministic), its share of the win
averaged over ``--shuffles`` orders of the draw pile (the same orders for every move;
the hands stay as they are: given what has been played, the pile's order is uniform, and
the reshuffles to come follow a fresh seed). A decision rule's gain over the patient
player is then the sum, over a game's choices, of its move's value less the patient
move's. For the rule the bot plays, by the performance difference lemma, its expected sum
over the bot's games is exactly how much more often the bot wins than the patient player
would; only the positions where it departs from the patient move add to it, so its
interval is a fraction of a game-level figure's over as many games. The other rules are
judged on the same positions, the bot's: for them it is an approximation (their own
games would pass through other positions), close for rules that rarely differ from the
bot's, and paired, so a small difference between two rules shows.

The rules compared, each from the same search (the root's visits and win rates):

- ``played``: the bot's answer (the most visited move, kept to the patient move
  unless it beats it by one standard error: engine/bots/ismcts.py), which the games
  follow unless ``--play`` names another rule;
- ``most_visited``: the root's most visited move (the search's choice before);
- ``z<k>``: the most visited move only when it beats the patient move by ``k`` errors
  (the engine's test, ``engine.bots.ismcts.departs``, on the visits and win rates the
  bot's answer gives, rounded to four places).

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bots import EDITIONS, PLAYERS, mean_half
from engine import Action, GameState, apply, legal_actions, new_game, view_doc
from engine.actions import parse_action
from engine.bots import choose, parse_bot, players_to_act
from engine.bots.heuristic import heuristic_action, patient_action
from engine.bots.ismcts import departs
from engine.state import PLAYING

RULES = ("played", "most_visited", "z0.5", "z1.0", "z2.0", "z3.0")
Estimates = dict[Action, tuple[int, float | None]]  # a root move's visits and win rate


def _moves(state: GameState) -> tuple[str, list[Action]]:
    actor = players_to_act(state)[0]
    return actor, [a for a in legal_actions(state) if a.player == actor]


def played_out(state: GameState, bot: str) -> float:
    """The bot's share of the win when ``bot`` plays on as the patient player and the
    others as the heuristic."""
    while state.status == PLAYING:
        actor, moves = _moves(state)
        state, _ = apply(state, (patient_action if actor == bot else heuristic_action)(state, moves))
    winners = [state.players[i].id for i in state.winners]
    return 1 / len(winners) if bot in winners else 0.0


def values(state: GameState, bot: str, moves: list[Action], shuffles: int,
           rng: random.Random) -> dict[Action, float]:
    """Each move's value (see the module's docstring)."""
    total = dict.fromkeys(moves, 0.0)
    for _ in range(shuffles):
        pile = list(state.draw_pile)
        rng.shuffle(pile)
        shuffled = state.but(draw_pile=tuple(pile), seed=rng.getrandbits(63))
        for move in moves:
            total[move] += played_out(apply(shuffled, move)[0], bot) / shuffles
    return total


def choices(rule: str, estimates: Estimates, patient: Action) -> Action:
    """A ``most_visited`` or ``z<k>`` rule's move from the search's root estimates."""
    most = max(estimates, key=lambda a: estimates[a][0])
    if rule == "most_visited":
        return most
    (n_most, rate_most), (n_patient, rate_patient) = estimates[most], estimates[patient]
    wins = (n_most * (rate_most or 0.0), n_patient * (rate_patient or 0.0))
    return most if departs(n_most, wins[0], n_patient, wins[1], errors=float(rule[1:])) else patient


def game(deal: int, seat: int, simulations: int, shuffles: int, play: str) -> dict[str, float]:
    """One game, the bot's moves chosen by rule ``play``: each rule's summed gain over the
    patient player; and positions where each departs from the patient move (keys
    ``n_<rule>``)."""
    rng = random.Random(deal * 4 + seat)
    bot = PLAYERS[seat]
    settings = parse_bot({"kind": "ismcts", "simulations": simulations, "seed": deal * 8 + seat * 2 + 1})
    state, _ = new_game({"edition": EDITIONS[deal % 2]}, PLAYERS, seed=deal)
    found = dict.fromkeys([*RULES, *(f"n_{r}" for r in RULES)], 0.0)
    while state.status == PLAYING:
        actor, moves = _moves(state)
        if actor != bot:
            state, _ = apply(state, heuristic_action(state, moves))
            continue
        suggestion = choose(view_doc(state, actor), settings)
        move = suggestion.action
        if suggestion.stats["iterations"]:
            value = values(state, bot, moves, shuffles, rng)
            patient = patient_action(state, moves)
            estimates = {parse_action(e.action): (e.visits, e.win_rate) for e in suggestion.stats["actions"]}
            for rule in RULES:
                chosen = suggestion.action if rule == "played" else choices(rule, estimates, patient)
                found[rule] += value[chosen] - value[patient]
                found[f"n_{rule}"] += chosen != patient
            if play != "played":
                move = choices(play, estimates, patient)
        state, _ = apply(state, move)
    return found


def _deals(args: tuple[range, int, int, str]) -> list[dict[str, float]]:
    deals, simulations, shuffles, play = args
    found = []
    for deal in deals:
        games = [game(deal, seat, simulations, shuffles, play) for seat in range(4)]
        found.append({k: sum(g[k] for g in games) / 4 for k in games[0]})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=100, help="deals, each played with the bot in every seat")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--simulations", type=int, default=1000, help="the search's iterations a move")
    parser.add_argument("--shuffles", type=int, default=24, help="draw-pile orders each move is valued over")
    parser.add_argument("--first", type=int, default=3000, help="the first deal's number")
    parser.add_argument("--play", default="played", choices=RULES,
                        help="the rule whose moves the games follow (its figure is then exact; by default the bot's)")
    args = parser.parse_args()
    if args.deals < 2:
        parser.error("--deals must be at least 2 (an interval needs two deals)")
    started = time.monotonic()
    step = max(1, args.deals // (args.workers * 8))
    end = args.first + args.deals
    chunks = [(range(i, min(i + step, end)), args.simulations, args.shuffles, args.play)
              for i in range(args.first, end, step)]
    with ProcessPoolExecutor(args.workers) as pool:
        deals = [d for chunk in pool.map(_deals, chunks) for d in chunk]
    print(f"{args.deals} deals ({4 * args.deals} games), ISMCTS at {args.simulations} iterations a move against "
          f"3 heuristic players, moves valued over {args.shuffles} draw-pile orders "
          f"({time.monotonic() - started:.0f} s); the games follow {args.play}'s moves")
    print(f"{'rule':14s} {'gain over patient (points a game)':>34s} {'departures a game':>18s}")
    figures: dict[str, Any] = {"deals": args.deals, "simulations": args.simulations, "shuffles": args.shuffles,
                               "play": args.play}
    for rule in RULES:
        mean, half = mean_half([d[rule] for d in deals])
        departures = sum(d[f"n_{rule}"] for d in deals) / len(deals)
        print(f"{rule:14s} {100 * mean:+27.2f} ± {100 * half:4.2f} {departures:18.2f}")
        figures[f"gain_{rule}"], figures[f"ci_half_{rule}"] = round(mean, 4), round(half, 4)
        figures[f"departures_{rule}"] = round(departures, 4)
    mean, half = mean_half([d["played"] - d["most_visited"] for d in deals])
    print(f"played against most_visited, paired by deal: {100 * mean:+.2f} ± {100 * half:.2f} points a game")
    figures["gain_played_vs_most_visited"], figures["ci_half_played_vs_most_visited"] = round(mean, 4), round(half, 4)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
