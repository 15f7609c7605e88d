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
    assert 0 <= figures["ci_low_patient_vs_heuristic"] <= figures["winrate_patient_vs_heuristic"] <= 1
    assert figures["ismcts_iterations_per_s"] > 0


def test_departures_benchmark_values_the_searchs_choices():
    """Each rule's gain over the patient player is printed with its interval; a rule
    departs from the patient move only where the most visited move does, the stricter
    the less often, and one that never departs gains nothing; the pairing of the bot's
    rule with the most visited move is the difference of their gains."""
    figures = run("benchmarks/departures.py", "--deals", "2", "--workers", "1", "--simulations", "60",
                  "--shuffles", "2")
    assert figures["deals"] == 2 and figures["shuffles"] == 2
    rules = ("most_visited", "z0.5", "z1.0", "z2.0", "z3.0")
    departures = [figures[f"departures_{rule}"] for rule in rules]
    assert departures == sorted(departures, reverse=True) and departures[0] > 0
    assert figures["departures_played"] <= figures["departures_most_visited"]
    for rule in (*rules, "played"):
        assert figures[f"ci_half_{rule}"] >= 0
        if figures[f"departures_{rule}"] == 0:
            assert figures[f"gain_{rule}"] == 0
    difference = figures["gain_played"] - figures["gain_most_visited"]
    assert abs(figures["gain_played_vs_most_visited"] - difference) <= 2e-4
