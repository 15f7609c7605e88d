"""Prometheus metrics, correct under several gunicorn workers (prometheus-client's
multiprocess mode: PROMETHEUS_MULTIPROC_DIR, set by ``ono99 serve``/``ono99 http``).

The application layer counts actions, finished games and Redis errors once for both
transports; each transport counts its own requests.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from engine.state import GameStatus

REQUESTS = Counter("ono99_requests_total", "Requests answered", ["transport", "route", "status"])
LATENCY = Histogram("ono99_request_duration_seconds", "Time to answer a request", ["transport", "route"],
                    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
ACTIONS = Counter("ono99_actions_total", "Actions applied or rejected",
                  ["mode", "outcome", "reason"])  # mode: stateless|session; reason: engine reason or ""
GAMES_FINISHED = Counter("ono99_games_finished_total", "Games that reached game over", ["edition"])
REDIS_ERRORS = Counter("ono99_redis_errors_total", "Session store calls that failed", ["operation"])
GRPC_STATES = Counter("ono99_grpc_states_total",
                          "States sent to stateless gRPC calls: recognized as returned here, or decoded",
                          ["source"])  # source: recalled|decoded
RATE_LIMITED = Counter("ono99_rate_limited_total", "Requests refused by a rate limit", ["limit"])  # create|act
BOT_WORK = Gauge("ono99_bot_work", "Searches (over gRPC: bot calls) handed to the bots' threads and not yet answered: "
                 "running, or waiting for a thread", multiprocess_mode="livesum")
GRPC_STREAMS = Gauge("ono99_grpc_event_streams", "Event streams (WatchEvents) open now", multiprocess_mode="livesum")


_ACTION_CHILDREN: dict[tuple[str, str, str], Any] = {}


def count_applied(mode: str, state: Any) -> None:
    """Count an action applied (``mode``: stateless, session, bot, timer) that led to
    ``state``, and the game it finished, if it did."""
    count_action(mode, "applied")
    if state.status == GameStatus.OVER:
        GAMES_FINISHED.labels(state.rules.edition).inc()


def count_action(mode: str, outcome: str, reason: str = "") -> None:
    """Count an action applied or rejected (label children looked up once)."""
    key = (mode, outcome, reason)
    child = _ACTION_CHILDREN.get(key)
    if child is None:
        child = _ACTION_CHILDREN[key] = ACTIONS.labels(*key)
    child.inc()


def exposition() -> tuple[bytes, str]:
    """The metrics text and its content type, merged across worker processes when the
    multiprocess directory is set."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def worker_exited(pid: int) -> None:
    """gunicorn ``child_exit`` hook: drop the dead worker's live gauges (none yet) cleanly."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]


_CHILDREN: dict[tuple[str, str, str], tuple[Any, Any]] = {}


def observe(transport: str, route: str, status: Any, seconds: float) -> None:
    """Count one answered request (label children looked up once per route and status)."""
    key = (transport, route, str(status))
    children = _CHILDREN.get(key)
    if children is None:
        children = _CHILDREN[key] = (REQUESTS.labels(*key), LATENCY.labels(transport, route))
    children[0].inc()
    children[1].observe(seconds)

