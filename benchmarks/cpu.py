"""A server's CPU time, read from Linux's /proc: what a request costs the server, a second
view beside requests a second. It moves too (by 5 to 10 % between rounds on a 2-core
machine: how many requests one wake-up of the event loop serves depends on the load),
so the benchmarks report the median of their rounds."""

from __future__ import annotations

import os
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cpu_s(pid: int, children: bool = False) -> float | None:
    """User and system CPU seconds used so far by process ``pid`` (all its threads) or,
    with ``children``, by its child processes (a gunicorn master's workers); None where
    /proc cannot tell."""
    try:
        pids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split() if children else [str(pid)]
        ticks = 0
        for p in pids:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    except OSError:
        return None
    return ticks / os.sysconf("SC_CLK_TCK")


def with_cpu(server: subprocess.Popen[bytes], children: bool, count: str, run: Callable[..., dict[str, Any]],
             *args: Any) -> dict[str, Any]:
    """The figures of ``run(*args)`` (a load of ``server``), with ``cpu_us``: the server's
    CPU (its workers' with ``children``) over the run, in µs for each of the figures'
    ``count`` (the requests or calls answered); None where it cannot be read."""
    before = cpu_s(server.pid, children)
    figures = run(*args)
    after = cpu_s(server.pid, children)
    figures["cpu_us"] = (None if before is None or after is None or not figures[count]
                         else round((after - before) / figures[count] * 1e6, 1))
    return figures


def median_cpu(rounds: list[dict[str, Any]]) -> float | None:
    """The median ``cpu_us`` of the rounds, or None."""
    found = [r["cpu_us"] for r in rounds if r.get("cpu_us") is not None]
    return round(statistics.median(found), 1) if found else None


def cpu_ratio(target: float | None, floor: float | None) -> float | None:
    """The floor's CPU a request over the target's: like a ratio of requests a second,
    higher is better, 1 at the floor's cost."""
    return None if target is None or floor is None else round(floor / target, 3)
