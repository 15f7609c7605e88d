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
    """Each rule's gain over the patient player is printed with its interval, and the
    bot's own choices are those of the one-error rule recomputed from its estimates."""
    figures = run("benchmarks/departures.py", "--deals", "2", "--workers", "1", "--simulations", "60",
                  "--shuffles", "2")
    assert figures["deals"] == 2 and figures["shuffles"] == 2
    for rule in ("played", "most_visited", "z1.0", "z3.0"):
        assert abs(figures[f"gain_{rule}"]) <= 15 and figures[f"ci_half_{rule}"] >= 0
    assert figures["gain_played"] == figures["gain_z1.0"]  # the bot's rule, recomputed from its estimates
