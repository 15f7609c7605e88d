"""HTTP long polling: ``GET /v1/sessions/{id}/events?after=N&wait=S`` holds the request
until a version after N exists or S seconds pass.

A waiting request is one greenlet of the gevent worker and one ``threading.Event``
(gevent's, once the worker has patched the standard library), from
:class:`service.live.Waiters`: it holds no thread and no Redis connection. A waiter
also reads the log again every ``RECHECK`` seconds, so a message lost while the
subscription reconnects delays it by that much at most.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

RECHECK = 5.0  # seconds between two reads of a waiting request's log (a missed message)


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
