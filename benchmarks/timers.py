"""Turn timers under load: lateness of forced moves and the timekeeper's CPU.

    python benchmarks/timers.py [--sessions 1000] [--turn-seconds 5] [--seconds 30] [--timekeepers 1]

Creates ``--sessions`` timed sessions (two players, nobody ever acts, ``on_timeout:
"draw"``, no escalation) on an embedded Redis-protocol server, spread over one turn so
their deadlines spread too, runs ``--timekeepers`` ``ono99 timers`` processes for
``--seconds`` and then reads every session's log. A forced move's lateness is the time
from its deadline to its commit (the commit starts the next turn, whose
``turn_started`` deadline is the commit time plus the turn). The timekeepers' CPU
(user + system, from /proc) is divided by the forced moves they made. The last line
printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from service.admission import Caller  # noqa: E402
from service.application import Application  # noqa: E402
from service.config import Settings  # noqa: E402
from service.embedded_redis import start_embedded  # noqa: E402
from service.requests import NewGame, NewSession  # noqa: E402

SERVICE_KEY = "benchmark-service-key"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turn-seconds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--timekeepers", type=int, default=1)
    args = parser.parse_args()
    redis = start_embedded()
    settings = Settings(redis_url=redis.connection_url, creates_per_minute=0, log_level="warning",
                        service_key=SERVICE_KEY)
    app = Application.from_settings(settings)
    turn_ms = args.turn_seconds * 1000
    env = {**os.environ, "REDIS_URL": redis.connection_url, "ONO99_METRICS_PORT": "0", "ONO99_LOG_LEVEL": "warning",
           "PYTHONPATH": str(ROOT)}
    keepers = [subprocess.Popen([sys.executable, "-m", "service.cli", "timers"], env=env)
               for _ in range(args.timekeepers)]
    try:
        time.sleep(1.0)  # the timekeepers start
        started_cpu = sum(cpu_seconds(k.pid) for k in keepers)
        gap = args.turn_seconds / args.sessions
        ids = []
        timer = app.turn_timer({"turn_seconds": args.turn_seconds, "on_timeout": "draw", "timeouts_to_bot": 0})
        for i in range(args.sessions):
            game = NewGame(app.rules({"edition": "2022"}), ["ann", "bob"], seed=i)
            made = app.create_session(Caller("benchmark"), lambda game=game: NewSession(game, {}, timer)).done()
            ids.append(made.session_id)
            time.sleep(max(0.0, gap - 0.0005))
        print(f"{args.sessions} timed sessions created; running {args.seconds:.0f} s with "
              f"{args.timekeepers} timekeeper(s)", flush=True)
        time.sleep(args.seconds)
        cpu = sum(cpu_seconds(k.pid) for k in keepers) - started_cpu
    finally:
        for keeper in keepers:
            keeper.terminate()
        for keeper in keepers:
            keeper.wait(timeout=30)
    lateness = []
    for session_id in ids:
        log = app.events(session_id, SERVICE_KEY).read()
        starts = {e["version"]: e["deadline_ms"] for e in log.events if e["type"] == "turn_started"}
        for event in log.events:
            if event["type"] == "turn_timed_out" and event["version"] + 1 in starts:
                committed = starts[event["version"] + 1] - turn_ms
                lateness.append((committed - event["deadline_ms"]) / 1000)
    redis.stop()
    lateness.sort()
    figures = {
        "sessions": args.sessions, "turn_seconds": args.turn_seconds, "seconds": args.seconds,
        "timekeepers": args.timekeepers, "forced_moves": len(lateness),
        "forced_moves_per_s": round(len(lateness) / args.seconds, 1),
        "lateness_p50_ms": round(statistics.median(lateness) * 1000, 1),
        "lateness_p99_ms": round(lateness[int(len(lateness) * 0.99) - 1] * 1000, 1),
        "lateness_max_ms": round(lateness[-1] * 1000, 1),
        "timekeeper_cpu_ms_per_forced_move": round(cpu / max(1, len(lateness)) * 1000, 3),
    }
    print(f"forced moves: {figures['forced_moves']} ({figures['forced_moves_per_s']}/s); lateness p50 "
          f"{figures['lateness_p50_ms']} ms, p99 {figures['lateness_p99_ms']} ms, max {figures['lateness_max_ms']} ms; "
          f"timekeeper CPU {figures['timekeeper_cpu_ms_per_forced_move']} ms per forced move")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
