"""benchmarks/bench_http.py runs end to end (one short round): with wrk driving the load,
where wrk is installed, and with the Python client it falls back to where it is not; its
last line is the JSON object of figures, and every request was answered without error
(so the session moves wrk sends were legal and in order)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.cpu import sample

ROOT = Path(__file__).resolve().parent.parent

# Whether Linux's /proc tells a process's CPU time and a gunicorn master's workers.
HAS_PROC = sample(os.getpid(), children=True) is not None
TARGETS = ("bare", "apply", "session_action", "floor")


def bench(*args: str, env: dict[str, str] | None = None) -> tuple[list[str], dict]:
    result = subprocess.run([sys.executable, "benchmarks/bench_http.py", "--seconds", "1", "--rounds", "1",
                             "--clients", "4", *args], cwd=ROOT, capture_output=True, text=True, timeout=240,
                            env={**os.environ, **(env or {})})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    return lines, json.loads(lines[-1])


def check_figures(figures: dict) -> None:
    for target in TARGETS:
        assert figures[f"{target}_requests"] > 0, figures
        assert figures[f"{target}_errors"] == 0, figures
        assert figures[f"{target}_requests_per_s"] > 0, figures
        assert 0 < figures[f"{target}_p50_ms"] <= figures[f"{target}_p99_ms"], figures
    assert figures["ratio_apply"] == round(figures["apply_requests_per_s"] / figures["bare_requests_per_s"], 3)
    assert figures["ratio_session_action"] == round(
        figures["session_action_requests_per_s"] / figures["bare_requests_per_s"], 3)
    assert figures["ratio_session_action_vs_redis_floor"] == round(
        figures["session_action_requests_per_s"] / figures["floor_requests_per_s"], 3)
    # One round: the round-by-round ratios are that round's, the best-of-rounds ones.
    for key in ("ratio_apply", "ratio_session_action_vs_redis_floor"):
        assert figures[f"{key}_by_round"] == [figures[key]], figures
        assert figures[f"{key}_median_round"] == figures[key], figures
    # Each target's worker CPU a request and the same ratios by it, where Linux's /proc
    # tells; none under the Python client for session actions (its client makes its
    # sessions within the round), and none at all without /proc.
    measured = list(TARGETS) if figures["client"] == "wrk" else ["bare", "apply", "floor"]
    for target in TARGETS:
        if HAS_PROC and target in measured:
            assert figures[f"{target}_worker_cpu_us"] > 0, figures
        else:
            assert figures[f"{target}_worker_cpu_us"] is None, figures
    assert figures["cpu_ratio_apply"] == (round(figures["bare_worker_cpu_us"] / figures["apply_worker_cpu_us"], 3)
                                          if HAS_PROC else None)
    assert figures["cpu_ratio_session_action_vs_redis_floor"] == (round(
        figures["floor_worker_cpu_us"] / figures["session_action_worker_cpu_us"], 3)
        if HAS_PROC and "session_action" in measured else None)


def test_bench_http_under_wrk():
    if shutil.which("wrk") is None:
        pytest.skip("wrk is not installed (Debian: apt-get install wrk); "
                    "test_bench_http_falls_back_to_the_python_client covers the benchmark without it")
    lines, figures = bench("--client", "wrk")
    assert figures["client"] == "wrk"
    assert not any(line.startswith("note:") for line in lines), lines
    check_figures(figures)


def test_bench_http_falls_back_to_the_python_client(tmp_path):
    # A PATH on which there is no wrk (the benchmark runs its servers with sys.executable).
    (tmp_path / "bin").mkdir()
    lines, figures = bench(env={"PATH": str(tmp_path / "bin")})
    assert figures["client"] == "python"
    assert "note: wrk not found (Debian: apt-get install wrk); loading with the Python client instead" in lines
    check_figures(figures)


def test_tails_measures_both_workers_and_a_baseline_checkout():
    """benchmarks/tails.py, one short round: the service's worker, the sync floor and a
    baseline checkout (this one) each answer every request, and the ratios are theirs."""
    if shutil.which("wrk") is None:
        pytest.skip("wrk is not installed (Debian: apt-get install wrk): tails.py needs it")
    result = subprocess.run([sys.executable, "benchmarks/tails.py", "--seconds", "1", "--rounds", "1",
                             "--connections", "4", "--workers", "1", "--baseline", str(ROOT)],
                            cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert not any(line.startswith("note:") for line in lines), lines  # no errors on any server
    figures = json.loads(lines[-1])
    for target in ("healthz", "apply"):
        for worker in ("gevent", "sync", "baseline"):
            assert 0 < figures[f"{worker}_{target}_4_p50_ms"] <= figures[f"{worker}_{target}_4_p99_ms"], figures
            assert figures[f"{worker}_{target}_4_requests_per_s"] > 0, figures
        for ratio, worker in ((f"ratio_p99_{target}_4", "gevent"), (f"ratio_p99_baseline_{target}_4", "baseline")):
            assert figures[ratio] == round(figures[f"{worker}_{target}_4_p99_ms"]
                                           / figures[f"sync_{target}_4_p99_ms"], 2), figures
    assert figures["mixed_kept_alive_requests_per_s"] > 0


def test_a_baseline_that_is_no_checkout_is_refused(tmp_path):
    """A --baseline folder without the project's code would be served this checkout's
    code by the environment's editable install, and measured as if it were the baseline."""
    for script in ("tails.py", "bench_http.py", "bench_grpc.py"):
        result = subprocess.run([sys.executable, f"benchmarks/{script}", "--seconds", "1", "--rounds", "1",
                                 "--baseline", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=240)
        assert result.returncode != 0, script
        assert f"{tmp_path}: not a checkout of this project" in result.stderr, (script, result.stderr[-2000:])


def test_bench_grpc_runs_end_to_end():
    """benchmarks/bench_grpc.py, one short round: every target answered, its ratios those of
    its figures, the warm target checked (in the server's metrics) to recall the state it
    sends; under h2load too where h2load is installed."""
    result = subprocess.run([sys.executable, "benchmarks/bench_grpc.py", "--seconds", "1", "--rounds", "1",
                             "--clients", "4"], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    clients = ["", "h2load_"] if shutil.which("h2load") else [""]
    assert figures["load_generator"] == "python asyncio client" + (" and h2load" if len(clients) == 2 else "")
    for client in clients:
        for target in ("echo", "apply_cold", "apply_warm"):
            assert figures[f"{client}{target}_calls"] > 0, figures
            assert 0 < figures[f"{client}{target}_p50_ms"] <= figures[f"{client}{target}_p99_ms"], figures
        for target in ("apply_cold", "apply_warm"):
            assert figures[f"{client}ratio_{target}"] == round(
                figures[f"{client}{target}_calls_per_s"] / figures[f"{client}echo_calls_per_s"], 3), figures
            # The server's CPU a call and the same ratio by it, where Linux's /proc tells.
            if HAS_PROC:
                assert figures[f"{client}{target}_server_cpu_us"] > 0, figures
                assert figures[f"{client}cpu_ratio_{target}"] == round(
                    figures[f"{client}echo_server_cpu_us"] / figures[f"{client}{target}_server_cpu_us"], 3), figures
            else:
                assert figures[f"{client}{target}_server_cpu_us"] is None, figures
                assert figures[f"{client}cpu_ratio_{target}"] is None, figures
    assert figures["ratio_apply"] == round(figures["apply_calls_per_s"] / figures["echo_calls_per_s"], 3)


@pytest.mark.skipif(not HAS_PROC, reason="Linux's /proc cannot tell a process's CPU time here")
def test_a_cpu_figure_is_left_out_when_it_cannot_hold(capsys):
    """benchmarks/cpu.py: a run in which the processes measured changed (a worker
    replaced) has no CPU figure, and says so; nor has one that answered nothing; a ratio
    with an unknown or zero side is None, not a crash."""
    from benchmarks.cpu import cpu_ratio, with_cpu

    spawned: list[subprocess.Popen[bytes]] = []

    def a_child_appears() -> dict[str, int]:
        spawned.append(subprocess.Popen(["sleep", "30"]))
        return {"requests": 100}

    try:
        figures = with_cpu(os.getpid(), a_child_appears, children=True, count="requests")
    finally:
        for child in spawned:
            child.kill()
            child.wait()
    assert figures["cpu_us"] is None
    assert "changed during a round; its CPU figure is left out" in capsys.readouterr().out
    assert with_cpu(os.getpid(), lambda: {"calls": 0}, children=False, count="calls")["cpu_us"] is None
    busy = with_cpu(os.getpid(), lambda: {"calls": 10, "spun": sum(range(10_000_000))}, children=False, count="calls")
    assert busy["cpu_us"] > 0
    assert cpu_ratio(None, 5.0) is None and cpu_ratio(0.0, 5.0) is None and cpu_ratio(5.0, None) is None
    assert cpu_ratio(4.0, 5.0) == 1.25
