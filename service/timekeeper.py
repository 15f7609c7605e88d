"""The timekeeper: moves for the players whose turn's deadline has passed.

Any number of timekeepers, on any number of replicas, share one Redis. Each round one
claims the due sessions of the timers sorted set (a Lua script that also pushes each
claimed entry ``lease`` on, so that a timekeeper that dies mid-move leaves it to the
others once the lease ends), and hands each to the application's forced move, which
lands only through the session's compare-and-set at the version whose deadline passed:
so every forced move is applied exactly once, whoever claims it and however often.
Runs in ``ono99 serve`` (a process of its own) and as ``ono99 timers``.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from prometheus_client import Counter, Histogram

from .errors import ServiceError
from .store import SessionStore
from .timers import now_ms
from .turns import Turns

log = logging.getLogger("ono99.timekeeper")

# In this module, not service.metrics: only a timekeeper's process has them.
DUE = Counter("ono99_timers_due_total", "Timed turns claimed past their deadline by this timekeeper")
OUTCOMES = Counter("ono99_timers_outcomes_total", "What the timekeeper did with a claimed turn",
                   ["outcome"])  # applied|bot_moved|not_due|moved_on|gone|failed
LATENESS = Histogram("ono99_timer_lateness_seconds", "How long after its deadline a forced move landed",
                     buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))


class Timekeeper:
    """Claims due turns every ``interval`` seconds (at once again while a round found a
    full batch) and moves for their players on ``threads`` threads: a forced move that
    costs CPU (an ISMCTS ``timeout_bot``, the bot seats that move after it) holds one
    thread and shares the CPU, instead of making every other session wait its turn."""

    def __init__(self, store: SessionStore, turns: Turns, interval: float = 0.1, lease_ms: int = 1_000,
                 batch: int = 100, threads: int = 4) -> None:
        self.store = store
        self.turns = turns
        self.interval = interval
        self.lease_ms = lease_ms
        self.batch = batch
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ono99-timekeeper")
        self._lock = threading.Lock()
        self._busy: set[str] = set()  # sessions whose forced move is being made (or waits for a thread)

    def run_once(self) -> int:
        """One round: claim the due turns (no more than ``batch`` in the works at once)
        and hand each to the pool; how many were claimed."""
        with self._lock:
            room = self.batch - len(self._busy)
        if room <= 0:
            return 0
        due = self.store.claim_due(now_ms(), self.lease_ms, room)
        for session_id, deadline in due:
            DUE.inc()
            with self._lock:
                if session_id in self._busy:
                    continue  # its lease ran out while this process still works on it
                self._busy.add(session_id)
            self.pool.submit(self._force, session_id, deadline)
        return len(due)

    def _force(self, session_id: str, deadline: int) -> None:
        try:
            outcome = self.turns.force(session_id, now_ms())
        except ServiceError as error:  # Redis trouble: the lease hands the turn on
            log.warning("forced move failed", extra={"session_id": session_id, "code": error.code})
            outcome = "failed"
        except Exception:
            log.exception("forced move failed", extra={"session_id": session_id})
            outcome = "failed"
        finally:
            with self._lock:
                self._busy.discard(session_id)
        OUTCOMES.labels(outcome).inc()
        if outcome == "applied":
            LATENESS.observe(max(0, now_ms() - deadline) / 1000)

    def run(self, stop: threading.Event) -> None:
        """Rounds until ``stop`` is set; Redis errors are logged and waited out."""
        log.info("timekeeper started", extra={"interval_s": self.interval, "lease_ms": self.lease_ms})
        while not stop.is_set():
            try:
                claimed = self.run_once()
            except ServiceError as error:
                log.warning("timekeeper round failed", extra={"code": error.code})
                claimed = 0
            if claimed < self.batch:
                stop.wait(self.interval)
        self.pool.shutdown(wait=True)  # the moves under way land (each is one script)
        log.info("timekeeper stopped")
