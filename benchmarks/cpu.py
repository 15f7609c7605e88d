"""A server's CPU time, read from Linux's /proc: what a request costs the server, a second
view beside requests a second. It moves too (by 5 to 10 % between rounds on a 2-core
machine: how many requests one wake-up of the event loop serves depends on the load),
so the benchmarks report the median of their rounds.

What is counted: the user and system time of the server's processes (all their threads),
their own side of the socket work included; not the load generator's, Redis's or the
other servers'. The kernel keeps it in ticks of 10 ms a process, against seconds of CPU
a round: about 1 % at most.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any


def sample(pid: int, children: bool) -> tuple[frozenset[int], float] | None:
    """The processes measured and their user and system CPU seconds so far: process
    ``pid`` or, with ``children``, its child processes (a gunicorn master's workers);
    None where /proc cannot tell."""
    try:
        pids = (frozenset(int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
                if children else frozenset({pid}))
        ticks = 0
        for p in pids:
            fields = Path(f"/proc/{p}/stat").read_bytes().rsplit(b")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime (after the command's name)
    except (OSError, ValueError):
        return None
    return pids, ticks / os.sysconf("SC_CLK_TCK")


def with_cpu(pid: int, run: Callable[..., dict[str, Any]], *args: Any, children: bool,
             count: str) -> dict[str, Any]:
    """The figures of ``run(*args)`` (a load of the server ``pid``), with ``cpu_us``: the
    server's CPU (its workers' with ``children``) over the run, in µs for each of the
    figures' ``count`` (the requests or calls answered). None where it cannot be read,
    and for a run in which the processes measured changed (a worker died and another
    took its place: its CPU would be lost and the new one's start-up counted), with a
    printed note."""
    before = sample(pid, children)
    figures = run(*args)
    after = sample(pid, children)
    figures["cpu_us"] = None
    if before is None or after is None or not figures[count]:
        return figures
    if before[0] != after[0]:
        print(f"note: the processes of server {pid} changed during a round; its CPU figure is left out", flush=True)
        return figures
    if after[1] > before[1]:
        figures["cpu_us"] = round((after[1] - before[1]) / figures[count] * 1e6, 1)
    return figures


def best(rounds: list[dict[str, Any]], rate: str) -> dict[str, Any]:
    """The round with the highest ``rate`` (the machine is noisy: its best is the
    server's), with the median ``cpu_us`` of the rounds that have one (None if none)."""
    found = [r["cpu_us"] for r in rounds if r.get("cpu_us") is not None]
    return {**max(rounds, key=lambda r: r[rate]), "cpu_us": round(statistics.median(found), 1) if found else None}


def cpu_ratio(target: float | None, floor: float | None) -> float | None:
    """The floor's CPU a request over the target's: like a ratio of requests a second,
    higher is better, 1 at the floor's cost. None when either is unknown."""
    return None if not target or not floor else round(floor / target, 3)
