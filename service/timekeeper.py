"""The timekeeper: moves for the players whose turn's deadline has passed.

Any number of timekeepers, on any number of replicas, share one Redis. Each round one
claims the due sessions of the timers sorted set (a Lua script that also pushes each
claimed entry ``lease`` on, so that a timekeeper that dies mid-move leaves it to the
others once the lease ends), and hands each to the application's forced move, which
lands only through the session's compare-and-set at the version whose deadline passed:
so every forced move is applied exactly once, whoever claims it and however often.
Runs in ``ono99 serve`` (a process of its own) and as ``ono99 timers``.

Two lanes keep one client's costly sessions from delaying everyone's forced moves: a
forced move that needs no bot (``on_timeout`` ``draw`` or ``forfeit``) is made on the
moves lane at once; bot work (a ``bot`` forced move, and each bot seat's move after a
forced move) goes to the bots lane, :class:`TakingTurns`, which makes one bot move at a
time and sends the session to the back of the queue before its next one.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from prometheus_client import Counter, Gauge, Histogram

from .errors import ServiceError
from .store import SessionStore
from .timers import now_ms
from .turns import Forced, Turns

log = logging.getLogger("ono99.timekeeper")

# In this module, not service.metrics: only a timekeeper's process has them.
DUE = Counter("ono99_timers_due_total", "Timed turns claimed past their deadline by this timekeeper")
OUTCOMES = Counter("ono99_timers_outcomes_total", "What the timekeeper did with a claimed turn",
                   ["outcome"])  # applied|bot_moved|not_due|moved_on|gone|failed|handed_back
LATENESS = Histogram("ono99_timer_lateness_seconds", "How long after its deadline a forced move landed",
                     buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
BOT_QUEUE = Gauge("ono99_timer_bot_queue", "Sessions whose next bot move waits in the timekeeper's bots lane",
                  multiprocess_mode="livesum")

Step = Callable[[], Forced]


class TakingTurns:
    """The bots lane: sessions' bot moves on ``threads`` threads, round robin. Each queued
    item is one session's next step; a step that returns another goes to the back of the
    queue, so a session with five bot seats waits between its moves while other
    sessions' moves are made. ``done(session_id, forced, first, more)`` is called with
    each step's result (None: it failed; ``first``: the session's first step since it
    was handed in; ``more``: its next step is queued)."""

    def __init__(self, threads: int, done: Callable[[str, Forced | None, bool, bool], None]) -> None:
        self.done = done
        self._queue: collections.deque[tuple[str, Step, bool]] = collections.deque()
        self._ready = threading.Condition()
        self._stopping = False
        self._threads = [threading.Thread(target=self._work, name=f"ono99-timekeeper-bots-{i}", daemon=True)
                         for i in range(max(1, threads))]
        for thread in self._threads:
            thread.start()

    def submit(self, session_id: str, step: Step, first: bool = True) -> None:
        with self._ready:
            self._queue.append((session_id, step, first))
            BOT_QUEUE.set(len(self._queue))
            self._ready.notify()

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._stopping:
                    self._ready.wait()
                if self._stopping:
                    return
                session_id, step, first = self._queue.popleft()
                BOT_QUEUE.set(len(self._queue))
            forced = _run(session_id, step)
            more = forced is not None and forced.then is not None and not self._stopping
            if more:
                self.submit(session_id, forced.then, first=False)  # type: ignore[union-attr, arg-type]
            self.done(session_id, forced, first, more)

    def stop(self, timeout: float) -> list[str]:
        """Stop taking steps: the steps being made finish (within ``timeout`` seconds, a
        bot move's budget); the sessions still queued are returned, not stepped."""
        with self._ready:
            self._stopping = True
            left = [session_id for session_id, _, _ in self._queue]
            self._queue.clear()
            BOT_QUEUE.set(0)
            self._ready.notify_all()
        end = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))
        return left


def _run(session_id: str, step: Step) -> Forced | None:
    """A step's result; None when it failed (logged; the session's lease hands it on)."""
    try:
        return step()
    except ServiceError as error:  # Redis trouble
        log.warning("forced move failed", extra={"session_id": session_id, "code": error.code})
    except Exception:
        log.exception("forced move failed", extra={"session_id": session_id})
    return None


class Timekeeper:
    """Claims due turns every ``interval`` seconds (at once again while a round found a
    full batch) and moves for their players: on ``threads`` threads when no bot is
    needed, else in the bots lane (``bot_threads`` threads, see :class:`TakingTurns`)."""

    def __init__(self, store: SessionStore, turns: Turns, interval: float = 0.1, lease_ms: int = 1_000,
                 batch: int = 100, threads: int = 4, bot_threads: int = 2, stop_timeout: float = 5.0) -> None:
        self.store = store
        self.turns = turns
        self.interval = interval
        self.lease_ms = lease_ms
        self.batch = batch
        self.stop_timeout = stop_timeout
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ono99-timekeeper")
        self.bots = TakingTurns(bot_threads, self._step_done)
        self._lock = threading.Lock()
        # Sessions being worked on (or waiting for a thread), with the deadline claimed;
        # of them, those in the bots lane.
        self._busy: dict[str, int] = {}
        self._thinking: set[str] = set()

    def run_once(self) -> int:
        """One round: claim the due turns (no more than ``batch`` in the works at once)
        and hand each to a lane; how many were claimed."""
        with self._lock:
            room = self.batch - (len(self._busy) - len(self._thinking))
        if room <= 0:
            return 0
        due = self.store.claim_due(now_ms(), self.lease_ms, room)
        for session_id, deadline in due:
            DUE.inc()
            with self._lock:
                if session_id in self._busy:
                    continue  # its lease ran out while this process still works on it
                self._busy[session_id] = deadline
            self.pool.submit(self._force, session_id)
        return len(due)

    def _force(self, session_id: str) -> None:
        forced = _run(session_id, lambda: self.turns.force(session_id, now_ms(), think=False))
        if forced is not None and forced.outcome == "thinks":
            self._park(session_id, lambda: self.turns.force(session_id, now_ms()), first=True)
            return
        self._step_done(session_id, forced, True, forced is not None and forced.then is not None)
        while forced is not None and forced.then is not None and not forced.costly:
            forced = _run(session_id, forced.then)  # a rule-of-thumb bot's move: made here, at once
        if forced is not None and forced.then is not None:
            self._park(session_id, forced.then, first=False)
            return
        self._step_done(session_id, forced, False, False)

    def _park(self, session_id: str, step: Step, first: bool) -> None:
        """Hand a session's next step to the bots lane; while it waits there it does not
        count against the turns a round may claim."""
        with self._lock:
            self._thinking.add(session_id)
        self.bots.submit(session_id, step, first)

    def _step_done(self, session_id: str, forced: Forced | None, first: bool, more: bool) -> None:
        """A step ended: report the forced move (a session's first step), and once no
        step follows, the session is no longer in the works."""
        if first:
            self._report(session_id, "failed" if forced is None else forced.outcome)
        if not more:
            with self._lock:
                self._busy.pop(session_id, None)
                self._thinking.discard(session_id)

    def _report(self, session_id: str, outcome: str) -> None:
        OUTCOMES.labels(outcome).inc()
        if outcome == "applied":
            with self._lock:
                deadline = self._busy.get(session_id)
            if deadline is not None:
                LATENESS.observe(max(0, now_ms() - deadline) / 1000)

    def run(self, stop: threading.Event) -> None:
        """Rounds until ``stop`` is set; Redis errors are logged and waited out. Then the
        moves under way land (each is one script, a bot's within its budget), and the
        turns claimed but not yet moved for are handed back to the other timekeepers."""
        log.info("timekeeper started", extra={"interval_s": self.interval, "lease_ms": self.lease_ms})
        while not stop.is_set():
            try:
                claimed = self.run_once()
            except ServiceError as error:
                log.warning("timekeeper round failed", extra={"code": error.code})
                claimed = 0
            if claimed < self.batch:
                stop.wait(self.interval)
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.bots.stop(self.stop_timeout)
        with self._lock:
            unfinished = dict(self._busy)
            self._busy.clear()
        handed = 0
        for session_id, deadline in unfinished.items():
            try:
                handed += self.store.hand_back(session_id, deadline)
            except ServiceError:
                break  # Redis is away: the leases hand them on
        OUTCOMES.labels("handed_back").inc(handed)
        log.info("timekeeper stopped", extra={"handed_back": handed})
