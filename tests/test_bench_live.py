"""benchmarks/live.py runs end to end (a few moves, a hundred idle streams) and prints
its figures."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def test_bench_live_prints_its_figures():
    result = subprocess.run([sys.executable, "benchmarks/live.py", "--moves", "10", "--idle", "100"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    for reader in ("sse", "long_poll", "grpc_stream", "webhook"):
        assert 0 < figures[f"{reader}_p50_ms"] <= figures[f"{reader}_p99_ms"]
    assert figures["idle_streams"] == 100 and figures["healthz_p99_ms_with_idle_streams"] > 0
