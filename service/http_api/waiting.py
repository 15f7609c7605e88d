"""HTTP long polling: ``GET /v1/sessions/{id}/events?after=N&wait=S`` holds the request
until a version after N exists or S seconds pass.

A waiting request is one greenlet of the gevent worker and one ``threading.Event``
(gevent's, once the worker has patched the standard library): it holds no thread and no
Redis connection. One pattern subscription per worker (``ono99:*:live``, started with
the first waiter) wakes the waiters of each session that moves on; a waiter also reads
the log again every ``RECHECK`` seconds, so a message lost while the subscription
reconnects delays it by that much at most. At most ``limit`` requests of a worker wait
at once; beyond, 429.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import redis

from ..errors import ServiceError

log = logging.getLogger("ono99.http")
RECHECK = 1.0  # seconds between two reads of a waiting request's log
PATTERN = "ono99:*:live"


class Waiters:
    """The requests of one worker waiting for their session's next version."""

    def __init__(self, connect: Callable[[], Any], limit: int) -> None:
        self.connect = connect
        self.limit = limit
        self._lock = threading.Lock()
        self._waiting: dict[str, set[threading.Event]] = {}
        self.count = 0
        self._listener: threading.Thread | None = None

    @contextlib.contextmanager
    def waiting(self, session_id: str) -> Iterator[threading.Event]:
        """An event set whenever the session commits a version (429 past the limit)."""
        changed = threading.Event()
        with self._lock:
            if self.count >= self.limit:
                raise ServiceError("too_many_requests", f"this server holds its limit of {self.limit} waiting "
                                   "requests; try again without wait, or later", limit=self.limit, retry_after=1)
            self.count += 1
            self._waiting.setdefault(session_id, set()).add(changed)
            if self._listener is None:
                self._listener = threading.Thread(target=self._listen, name="ono99-waiters", daemon=True)
                self._listener.start()
        try:
            yield changed
        finally:
            with self._lock:
                self.count -= 1
                waiters = self._waiting[session_id]
                waiters.discard(changed)
                if not waiters:
                    del self._waiting[session_id]

    def _listen(self) -> None:
        while True:
            try:
                pubsub = self.connect().pubsub(ignore_subscribe_messages=True)
                pubsub.psubscribe(PATTERN)
                for message in pubsub.listen():
                    channel = message.get("channel") or b""
                    text = channel.decode() if isinstance(channel, bytes) else str(channel)
                    session_id = text.partition("{")[2].rpartition("}")[0]
                    with self._lock:
                        for changed in self._waiting.get(session_id, ()):
                            changed.set()
            except redis.RedisError as exc:
                log.warning("event subscription lost; reconnecting", extra={"error": type(exc).__name__})
                time.sleep(1.0)


def wait_for_events(read: Callable[[], list[Any]], changed: threading.Event, seconds: float) -> list[Any]:
    """``read()`` until it finds events or ``seconds`` pass, waking on ``changed``."""
    deadline = time.monotonic() + seconds
    while True:
        changed.clear()
        found = read()
        left = deadline - time.monotonic()
        if found or left <= 0:
            return found
        changed.wait(min(left, RECHECK))
