"""The cost of ONO99_REDIS_WAIT_AOF: session actions acknowledged per second, and
acknowledged actions lost over five `kill -9` restarts of Redis, with and without it.

    python benchmarks/durability.py [--seconds 8]

Each mode runs `ono99 http` (2 workers) over an embedded Valkey with an append-only
file, loaded by four Python clients that play whole games (read the state, act with
expected_version). "on" pairs WAITAOF with appendfsync always (what `ono99 serve
--redis-data` and compose run); "off" is appendfsync everysec with no check. The last
line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_hostile_durability import play_and_crash  # noqa: E402

MODES = {"on": (True, "always"), "off": (False, "everysec")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each throughput run")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    for mode, (wait_aof, fsync) in MODES.items():
        with tempfile.TemporaryDirectory() as tmp:
            acked, _ = play_and_crash(Path(tmp), wait_aof, fsync, crashes=0, every=args.seconds)
        figures[f"actions_per_s_{mode}"] = round(acked / args.seconds, 1)
        with tempfile.TemporaryDirectory() as tmp:
            acked, lost = play_and_crash(Path(tmp), wait_aof, fsync, crashes=5)
        figures[f"crash_acknowledged_{mode}"], figures[f"crash_lost_{mode}"] = acked, lost
        print(f"WAITAOF {mode} (appendfsync {fsync}): {figures[f'actions_per_s_{mode}']} actions/s; "
              f"5 crashes: {acked} acknowledged, {lost} lost", flush=True)
    figures["cost_ratio"] = round(figures["actions_per_s_on"] / figures["actions_per_s_off"], 3)
    print(f"actions/s with WAITAOF on / off: {figures['cost_ratio']}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
