"""Server-Sent Events: ``GET /v1/sessions/{id}/events`` with ``Accept: text/event-stream``
streams the caller's events as they are committed (docs/API.md, "Live events").

A stream is a greenlet of the gevent worker waiting on :class:`service.live.Waiters`,
like a long poll: it holds no thread and no Redis connection while it waits, and counts
against the same per-worker limit. Each version is one message (``id:`` the version,
``event: version``, ``data:`` the version, its chain hash and its events); a comment
line every ``heartbeat`` seconds keeps proxies from closing an idle stream. The stream
ends after the version that ends the game (with an ``end`` message), and at once when
the session is deleted or the token is revoked; while Redis cannot be reached it waits
and goes on from the last version sent.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterator
from itertools import groupby
from typing import Any

from ..answers import EventsRead
from ..application import EventCursor
from ..errors import ServiceError
from ..live import Waiters
from .waiting import RECHECK

log = logging.getLogger("ono99.http")
RETRY_MS = 2000  # how long a browser waits before it reconnects a dropped stream
STORE_RETRY = 1.0  # seconds between reads while the session store cannot be reached


def message(event: str, data: Any, id: int | None = None) -> bytes:
    """One SSE message."""
    head = f"id: {id}\n" if id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def versions(events: list[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each version of a page of events, as its message's data."""
    for version, group in groupby(events, key=lambda e: e["version"]):
        batch = list(group)
        yield version, {"version": version, "chain_hash": batch[0].get("chain_hash"), "events": batch}


def _finished(cursor: EventCursor) -> bool:
    try:
        return cursor.finished()
    except ServiceError:
        return False  # the next read says what became of the session


def stream(cursor: EventCursor, waiters: Waiters, session_id: str, heartbeat: float, first: EventsRead,
           changed: threading.Event, waiting: contextlib.ExitStack, lifetime: float) -> Iterator[bytes]:
    """The SSE body of ``cursor``'s events, from its ``first`` page on; ``changed`` wakes
    it, and ``waiting`` (its place among the worker's waiters) is closed when it ends.
    After ``lifetime`` seconds it closes (no end message): a browser reconnects with the
    last id it got, and the slot is free again in the meantime."""
    with waiting:
        yield f"retry: {RETRY_MS}\n\n".encode()
        beat = time.monotonic() + heartbeat
        closes = time.monotonic() + lifetime
        page: EventsRead | None = first
        while True:
            if page is None:
                changed.clear()
                try:
                    page = cursor.read(shared=waiters.wakes(session_id))
                except ServiceError as error:
                    if error.code != "unavailable":  # deleted, expired, or the token revoked: it ends
                        yield message("end", {"reason": error.code, "detail": error.detail})
                        return
                    yield b": the session store cannot be reached; waiting\n\n"
                    time.sleep(STORE_RETRY)
                    continue
            over = False
            for version, data in versions(page.events):
                yield message("version", data, id=version)
                over = over or any(e["type"] == "game_over" for e in data["events"])
            # A version after the game's end (a seat token reissued) ends it too.
            if over or (page.events and not page.more and _finished(cursor)):
                yield message("end", {"reason": "game_over"})
                return
            more, page = page.more, None
            if more:
                continue
            now = time.monotonic()
            if now >= closes:
                return
            if now >= beat:
                yield b": heartbeat\n\n"
                beat = now + heartbeat
            changed.wait(min(beat - now, RECHECK) if beat > now else heartbeat)
