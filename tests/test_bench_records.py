"""benchmarks/records.py runs end to end (one short round) and prints its figures, the
session actions against a worktree of the baseline commit included when wrk is there."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def test_bench_records_prints_its_figures():
    result = subprocess.run([sys.executable, "benchmarks/records.py", "--seconds", "1", "--rounds", "1",
                             "--clients", "2", "--workers", "1"], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["record_us_per_action"] > 0 and figures["verify_versions"] == 1000
    assert figures["verify_ms"] > 0 and figures["record_bytes"] > 100_000
    if shutil.which("wrk"):
        assert figures["session_actions_per_s_baseline"] > 0 and figures["session_actions_per_s_records"] > 0
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "ono99-records-" not in worktrees  # the baseline's worktree is removed
