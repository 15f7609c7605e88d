"""The bots' benchmarks run end to end on a few deals and print their figures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def run(*args: str) -> dict:
    result = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_bots_benchmark_plays_duplicate_deals():
    figures = run("benchmarks/bots.py", "--games", "2", "--workers", "1", "--only", "patient_vs_heuristic")
    assert figures["deals_per_pairing"] == 2 and figures["games_per_pairing"] == 8  # every deal in four seatings
    assert 0 <= figures["ci_low_patient_vs_heuristic"] <= figures["winrate_patient_vs_heuristic"] <= 1
    assert figures["ismcts_iterations_per_s"] > 0


def test_departures_benchmark_values_the_searchs_choices():
    """Each rule's gain over the patient player is printed with its interval; a rule
    departs from the patient move only where the most visited move does, the stricter
    the less often; the bot's own answers are the one-error rule's (recomputed from the
    win rates it answers); ``--play`` makes the games follow another rule."""
    short = ("benchmarks/departures.py", "--deals", "2", "--workers", "1", "--simulations", "60",
             "--shuffles", "2")
    runs = {}
    for play in ("played", "most_visited"):
        figures = runs[play] = run(*short, "--play", play)
        assert figures["deals"] == 2 and figures["shuffles"] == 2 and figures["play"] == play
        rules = ("most_visited", "z0.5", "z1.0", "z2.0", "z3.0")
        departures = [figures[f"departures_{rule}"] for rule in rules]
        assert departures == sorted(departures, reverse=True) and departures[0] > departures[-1]
        assert figures["departures_played"] == figures["departures_z1.0"] < figures["departures_most_visited"]
        assert figures["gain_played"] == figures["gain_z1.0"]
        assert any(figures[f"gain_{rule}"] != 0 for rule in rules)  # the moves' values differ somewhere
    # Games that follow the most visited move pass through other positions.
    assert runs["played"]["departures_most_visited"] != runs["most_visited"]["departures_most_visited"]


def test_departures_rules_choose_by_their_margin():
    from benchmarks.departures import choices

    # The most visited move "a" at 55 % over 400 games, the patient move "b" at 50 % over
    # 300: 1.3 errors apart.
    estimates = {"a": (400, 0.55), "b": (300, 0.5), "c": (0, None)}
    assert choices("most_visited", estimates, "b") == "a"
    assert choices("z1.0", estimates, "b") == "a" and choices("z0.5", estimates, "b") == "a"
    assert choices("z2.0", estimates, "b") == "b" and choices("z3.0", estimates, "b") == "b"
    assert choices("z1.0", estimates, "c") == "c"  # the patient move untried: kept
    assert choices("z1.0", estimates, "a") == "a"


def test_departures_needs_two_deals():
    result = subprocess.run([sys.executable, "benchmarks/departures.py", "--deals", "1"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--deals must be at least 2" in result.stderr
