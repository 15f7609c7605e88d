"""HTTP latency tails: the service's gevent worker against gunicorn's sync worker (the floor).

    python benchmarks/tails.py [--seconds 5] [--rounds 3] [--connections 8,64] [--workers 2] [--baseline CHECKOUT]

Both run the service app (``service.wsgi:app``, sessions off) with the service's gunicorn
settings; only the worker class differs. wrk loads ``GET /healthz`` and a stateless
``POST /v1/games/apply`` (benchmarks/bench_http.py's mid-game body) at each connection
count, one connection per wrk thread. The sync worker serves one request at a time per
process and closes each connection, so its tail is that of requests queued fairly;
the gevent worker keeps connections open and must share the process between them
fairly too (service/http_server.py, ``Worker.handle_request``). Rounds alternate
between the two servers; each figure is the round with the lowest p99. A last case
mixes the two kinds of client on the gevent worker: one kept-alive connection asking
``/healthz`` while 32 others open a new connection for every request (its requests/s
and p99: a worker that waited for an idle loop without bound answered it about once).
With ``--baseline CHECKOUT`` (another checkout of this repository, a worktree of an
earlier commit, say), that checkout's service under its own worker is a third server in
the same rounds (``baseline``): ``ratio_p99_baseline_<target>_<n>`` is its p99 against
the sync floor's.

The last line is one JSON object: p50 and p99 per worker, target and connection count,
``ratio_p99_<target>_<n>`` = gevent p99 / sync p99, and the mixed case's figures.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_http import checkout, gunicorn, mid_game_body, wrk_load  # noqa: E402
from service.ports import free_port  # noqa: E402

TARGETS = {"healthz": lambda body: ["get", "/healthz"], "apply": lambda body: ["post", "/v1/games/apply", body]}


def _ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return round(float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit], 2)


def mixed(wrk: str, port: int, seconds: float) -> dict[str, float]:
    """One kept-alive connection's requests/s and p99 while 32 connections are opened
    and closed for one request each."""
    url = f"http://127.0.0.1:{port}/healthz"
    duration = f"{max(1, round(seconds))}s"
    flood = subprocess.Popen([wrk, "-t4", "-c32", "-d", f"{max(1, round(seconds)) + 2}s", "-H", "Connection: close",
                              url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        out = subprocess.run([wrk, "-t1", "-c1", "-d", duration, "--latency", "--timeout", "30s", url],
                             capture_output=True, text=True, check=True).stdout
    finally:
        flood.wait()
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M)
    if rate is None or p99 is None:
        raise SystemExit(f"wrk printed no figures:\n{out}")
    return {"requests_per_s": float(rate.group(1)), "p99_ms": _ms(p99.group(1))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of one measuring round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per figure, alternating servers")
    parser.add_argument("--connections", default="8,64", help="comma-separated connection counts")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="another checkout whose service is measured in the same rounds")
    args = parser.parse_args()
    if args.baseline:
        checkout(args.baseline)  # before any server starts
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk not found (Debian: apt-get install wrk): a Python client would share the cores "
                         "and hide the tails")
    counts = [int(n) for n in args.connections.split(",")]
    work = Path(tempfile.mkdtemp(prefix="ono99-tails-"))
    body = work / "body.json"
    body.write_bytes(mid_game_body())
    env = {"ONO99_SESSIONS": "false", "ONO99_LOG_LEVEL": "warning", "ONO99_HTTP_CONNECTIONS_PER_PEER": "0",
           "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="ono99-tails-")}
    ports = {"gevent": free_port(), "sync": free_port()}
    servers = [gunicorn("service.wsgi:app", ports["gevent"], args.workers, env),
               gunicorn("service.wsgi:app", ports["sync"], args.workers, env, worker_class="sync")]
    if args.baseline:
        ports["baseline"] = free_port()
        servers.append(gunicorn("service.wsgi:app", ports["baseline"], args.workers, env,
                                root=args.baseline.resolve()))
    figures: dict[str, float] = {}
    try:
        for target, script in TARGETS.items():
            for n in counts:
                best: dict[str, dict[str, float]] = {}
                for _ in range(args.rounds):
                    for worker, port in ports.items():
                        got = wrk_load(wrk, port, args.seconds, n, script(str(body)))
                        if got["errors"]:
                            print(f"note: {worker} {target} at {n} connections: {got['errors']} errors", flush=True)
                        if worker not in best or got["p99_ms"] < best[worker]["p99_ms"]:
                            best[worker] = got
                for worker, got in best.items():
                    figures[f"{worker}_{target}_{n}_p50_ms"] = got["p50_ms"]
                    figures[f"{worker}_{target}_{n}_p99_ms"] = got["p99_ms"]
                    figures[f"{worker}_{target}_{n}_requests_per_s"] = got["requests_per_s"]
                ratio = round(best["gevent"]["p99_ms"] / best["sync"]["p99_ms"], 2)
                figures[f"ratio_p99_{target}_{n}"] = ratio
                print(f"{target} at {n} connections: p99 gevent {best['gevent']['p99_ms']} ms, "
                      f"sync {best['sync']['p99_ms']} ms ({ratio}x); req/s {best['gevent']['requests_per_s']:,.0f} "
                      f"and {best['sync']['requests_per_s']:,.0f}", flush=True)
                if "baseline" in best:
                    before = figures[f"ratio_p99_baseline_{target}_{n}"] = round(
                        best["baseline"]["p99_ms"] / best["sync"]["p99_ms"], 2)
                    print(f"  baseline {args.baseline}: p99 {best['baseline']['p99_ms']} ms ({before}x the sync "
                          f"floor), req/s {best['baseline']['requests_per_s']:,.0f}", flush=True)
        kept = mixed(wrk, ports["gevent"], args.seconds)
        figures["mixed_kept_alive_requests_per_s"] = kept["requests_per_s"]
        figures["mixed_kept_alive_p99_ms"] = kept["p99_ms"]
        print(f"one kept-alive client among 32 closing ones: {kept['requests_per_s']:,.0f} req/s, "
              f"p99 {kept['p99_ms']} ms", flush=True)
    finally:
        for server in servers:
            server.terminate()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
