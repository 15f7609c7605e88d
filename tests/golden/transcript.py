"""Write and read golden playthrough transcripts.

A transcript has a ``game:`` line (rules, players, seed) and, per step, a readable
summary (lines starting with ``#``) and the exact ``state:``, ``legal:``, ``action:``
and ``events:`` lines as JSON.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from engine import apply, encode_state, format_action, legal_actions, new_game

HERE = Path(__file__).resolve().parent

GAMES: dict[str, dict[str, Any]] = {
    "2022-elimination": {"rules": {"edition": "2022"}, "players": ["ann", "bob", "cy", "dee"], "seed": "g-2022"},
    "1980-elimination": {"rules": {"edition": "1980"}, "players": ["ann", "bob", "cy"], "seed": "g-1980"},
    "1980-tokens": {"rules": {"edition": "1980", "scoring": "tokens", "tokens": 1},
                    "players": ["ann", "bob", "cy"], "seed": "g-tokens"},
    "1980-points-last-standing": {"rules": {"edition": "1980", "scoring": "points", "target": 40},
                                  "players": ["ann", "bob", "cy"], "seed": "g-points"},
    "1980-points-lowest-score": {"rules": {"edition": "1980", "scoring": "points", "end": "lowest_score",
                                           "target": 50}, "players": ["ann", "bob"], "seed": "g-lowest"},
    "1980-manual-draw": {"rules": {"edition": "1980", "draw": "manual", "ono99_on_zero": True},
                         "players": ["ann", "bob", "cy"], "seed": "g-manual"},
}


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _summary(doc: dict[str, Any]) -> list[str]:
    play2 = doc["play2"]
    owed = f"{play2['player']} x{play2['cards_left']}" if play2 else "-"
    lines = [f"# total {doc['total']}  direction {doc['direction']:+d}  round {doc['round']}  "
             f"to act: {doc['current'] or '-'}  play2: {owed}"
             f"  draw pile {len(doc['draw_pile'])}  discard {len(doc['discard_pile'])}"]
    for p in doc["players"]:
        extra = f"  score {p['score']}" if doc["rules"]["scoring"] == "points" else (
            f"  tokens {p['tokens']}" if doc["rules"]["scoring"] == "tokens" else "")
        lines.append(f"#   {p['id']:<5} {p['status']:<12} {' '.join(p['hand']) or '-'}{extra}")
    return lines


def write(name: str) -> Path:
    """Play the named game with a seeded random bot and write its transcript."""
    game = GAMES[name]
    state, events = new_game(game["rules"], game["players"], seed=game["seed"])
    rng = random.Random(name)
    lines = [f"# Golden playthrough: {name}", f"game: {_dump(game)}", f"events: {_dump(events)}"]
    step = 0
    while True:
        doc = encode_state(state)
        actions = legal_actions(state)
        lines += ["", f"# --- step {step} ---", *_summary(doc), f"state: {_dump(doc)}",
                  f"legal: {_dump([format_action(a) for a in actions])}"]
        if not actions:
            lines.append(f"# game over, winners: {', '.join(doc['winners'])}")
            break
        action = rng.choice(actions)
        state, events = apply(state, action)
        lines += [f"action: {_dump(format_action(action))}", f"events: {_dump(events)}"]
        step += 1
    path = HERE / f"{name}.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def read(name: str) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """The game line and the (kind, value) records of a transcript."""
    game: dict[str, Any] | None = None
    records: list[tuple[str, Any]] = []
    for line in (HERE / f"{name}.txt").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        kind, _, payload = line.partition(": ")
        value = json.loads(payload)
        if kind == "game":
            game = value
        else:
            records.append((kind, value))
    assert game is not None
    return game, records
