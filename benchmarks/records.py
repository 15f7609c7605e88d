"""What game records cost: the record keeping of one session action, session actions
against a commit without records, and ``ono99 verify`` on a 1,000-version record.

    python benchmarks/records.py [--baseline REV] [--seconds 3] [--rounds 3] [--clients 8] [--workers 2]

1. **Per action** (in this process): the work a record adds to an action, the chain hash
   of its version and its record entry (service.turns.entries), timed over the actions of
   real games, beside what the engine's apply and the state's encoding cost on the same
   actions.
2. **Session actions** (wrk, benchmarks/wrk_http.lua, as bench_http.py loads them): this
   checkout's service and ``--baseline``'s (default: main before sessions kept records),
   served from a git worktree by the same gunicorn settings over one embedded Valkey, in
   interleaved rounds (the best of each counts). Without wrk the figure is skipped.
3. **Verify**: a 1,000-version record (a long game of the 1980 edition, points scoring to 5,000), checked by
   engine.records.verify in this process and by the ``ono99 verify`` command.

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

import engine  # noqa: E402
from engine import records  # noqa: E402
from service.ports import free_port  # noqa: E402
from service.turns import Step, entries  # noqa: E402

BASELINE = "1a6a24b"  # main before sessions kept game records
SERVICE_KEY = "bench-service-key"


def games(actions: int) -> list[tuple[engine.GameState, engine.Action]]:
    """(state, action) pairs of random games, ``actions`` of them."""
    rng = random.Random(5)
    pairs: list[tuple[engine.GameState, engine.Action]] = []
    while len(pairs) < actions:
        state, _ = engine.new_game({"edition": "2022"}, ["ann", "bob", "cy", "dee"], seed=rng.randrange(2**31))
        while state.status == "playing" and len(pairs) < actions:
            action = rng.choice(engine.legal_actions(state))
            pairs.append((state, action))
            state = engine.apply(state, action)[0]
    return pairs


def per_action(actions: int = 3000) -> dict[str, float]:
    """Microseconds per action: the record's part of a write, and the engine's."""
    pairs = games(actions)
    applied = [engine.apply(state, action) for state, action in pairs]
    started = time.perf_counter()
    for state, action in pairs:
        engine.dumps_state(engine.apply(state, action)[0])
    engine_us = (time.perf_counter() - started) / actions * 1e6
    chain = "0" * 64
    started = time.perf_counter()
    for k, ((_, action), (_, events)) in enumerate(zip(pairs, applied, strict=True)):
        _, (chain,) = entries(chain, k + 1, [Step.move("person", action, events)], 1_790_000_000_000)
    record_us = (time.perf_counter() - started) / actions * 1e6
    return {"record_us_per_action": round(record_us, 1), "engine_apply_and_encode_us_per_action": round(engine_us, 1)}


def long_record(versions: int) -> dict:  # type: ignore[type-arg]
    """A record of ``versions`` versions of one long game (1980 points scoring, target 5,000)."""
    rng = random.Random(9)
    state, events = engine.new_game({"edition": "1980", "scoring": "points", "target": 5000},
                                    ["ann", "bob", "cy", "dee", "eve", "flo"], seed=4)
    header = {"engine": {"name": "ono99", "version": "bench"}, "rules": engine.encode_state(state)["rules"],
              "seats": [{"id": p.id, "bot": None} for p in state.players], "timer": None, "created_ms": 0,
              "fairness": None, "initial_state": engine.encode_state(state)}
    record = records.start(header, 0, events)
    while len(record["versions"]) < versions and state.status == "playing":
        action = rng.choice(engine.legal_actions(state))
        state, events = engine.apply(state, action)
        records.add_version(record, 0, "person", action.player, [engine.format_action(action)], events)
    record["outcome"] = records.outcome(state)
    record["signature"] = records.sign(record, Ed25519PrivateKey.generate())
    return record


def verify_times(versions: int = 1000) -> dict[str, float]:
    record = long_record(versions)
    assert len(record["versions"]) == versions, len(record["versions"])
    started = time.perf_counter()
    checks = records.verify(record)
    in_process = time.perf_counter() - started
    assert all(c.ok for c in checks), checks
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "record.json"
        path.write_text(json.dumps(record))
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "service.cli", "verify", str(path)], cwd=ROOT, check=True,
                       capture_output=True)
        command = time.perf_counter() - started
        size = path.stat().st_size
    return {"verify_versions": versions, "verify_ms": round(in_process * 1000, 1),
            "verify_command_ms": round(command * 1000, 1), "record_bytes": size}


def session_actions(baseline: str, seconds: float, rounds: int, clients: int, workers: int) -> dict[str, object]:
    """Session actions per second of this checkout and of ``baseline``, best of interleaved rounds."""
    from benchmarks.bench_http import gunicorn, prepare_moves, wrk_load
    from service.embedded_redis import start_embedded

    wrk = shutil.which("wrk")
    if wrk is None:
        print("note: wrk not found (Debian: apt-get install wrk): no session-action figures", flush=True)
        return {}
    work = Path(tempfile.mkdtemp(prefix="ono99-records-"))
    tree = work / "baseline"
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), baseline], cwd=ROOT, check=True,
                   capture_output=True)
    redis_server = start_embedded()
    env = {"REDIS_URL": redis_server.connection_url, "ONO99_SERVICE_KEY": SERVICE_KEY,
           "ONO99_LOG_LEVEL": "warning", "ONO99_ACTIONS_PER_SECOND": "0", "ONO99_CREATES_PER_MINUTE": "0"}
    servers, best = [], {"baseline": 0.0, "records": 0.0}
    p99 = {"baseline": 0.0, "records": 0.0}
    try:
        ports = {"baseline": free_port(), "records": free_port()}
        servers.append(gunicorn("service.wsgi:app", ports["baseline"], workers,
                                {**env, "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="ono99-bench-")},
                                root=tree))
        servers.append(gunicorn("service.wsgi:app", ports["records"], workers,
                                {**env, "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="ono99-bench-")}))
        for r in range(rounds):
            for name in ("baseline", "records"):
                # Per connection, twice the moves a round at the best rate so far would use (at
                # first a guess above what this machine serves).
                fastest = max(max(best.values()), 3000.0)
                moves = int(2 * fastest * max(1, round(seconds)) / clients) + 100
                moves_dir = work / f"moves-{name}-{r}"
                moves_dir.mkdir()
                with ThreadPoolExecutor(clients) as pool:
                    list(pool.map(prepare_moves, [ports[name]] * clients,
                                  [moves_dir / f"{n}.txt" for n in range(1, clients + 1)], [moves] * clients))
                got = wrk_load(wrk, ports[name], seconds, clients, ["actions", str(moves_dir)])
                if got["errors"]:
                    raise SystemExit(f"{name}: {got['errors']} errors")
                if got["requests_per_s"] > best[name]:
                    best[name], p99[name] = got["requests_per_s"], got["p99_ms"]
            print(f"round {r + 1}/{rounds}: baseline {best['baseline']:,.0f}, records {best['records']:,.0f} "
                  "session actions/s (best so far)", flush=True)
    finally:
        for server in servers:
            server.terminate()
            server.wait()
        redis_server.stop()
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    return {"baseline": baseline, "session_actions_per_s_baseline": best["baseline"],
            "session_actions_per_s_records": best["records"], "session_p99_ms_baseline": p99["baseline"],
            "session_p99_ms_records": p99["records"],
            "ratio_session_actions_vs_baseline": round(best["records"] / best["baseline"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help="the commit to hold session actions against")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    figures: dict[str, object] = {}
    figures.update(per_action())
    print(f"record keeping: {figures['record_us_per_action']} µs an action "
          f"(the engine's apply and encoding: {figures['engine_apply_and_encode_us_per_action']} µs)", flush=True)
    figures.update(verify_times())
    print(f"verify, {figures['verify_versions']} versions ({figures['record_bytes']:,} bytes): "
          f"{figures['verify_ms']} ms in process, {figures['verify_command_ms']} ms as ono99 verify", flush=True)
    figures.update(session_actions(args.baseline, args.seconds, args.rounds, args.clients, args.workers))
    if "ratio_session_actions_vs_baseline" in figures:
        print(f"session actions: {figures['session_actions_per_s_records']:,.0f}/s with records, "
              f"{figures['session_actions_per_s_baseline']:,.0f}/s at {args.baseline}: "
              f"{figures['ratio_session_actions_vs_baseline']}×", flush=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
