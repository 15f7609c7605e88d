"""New session versions as they are committed, for event streams that wait without a thread.

One Redis pub/sub connection per process (redis-py's asyncio client) is shared by every
local stream: the first stream of a session subscribes to its channel
(``store.live_channel``), the last one to leave unsubscribes, and each message wakes the
streams of that session. A waiting stream is an ``asyncio.Event``, not a thread.

In a Redis Cluster a PUBLISH reaches every node, so the connection goes to the node
the URL names. If the connection drops, redis-py reconnects and subscribes again;
streams meanwhile re-read the log every ``recheck`` seconds, so nothing is missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import redis
import redis.asyncio

from .config import Settings
from .errors import ServiceError
from .store import live_channel

log = logging.getLogger("ono99.live")


def connect(settings: Settings) -> Any:
    """An asyncio Redis client for the pub/sub connection (URL, Sentinel or Cluster node)."""
    timeout = settings.redis_timeout
    if settings.redis_sentinels:
        from redis.asyncio.sentinel import Sentinel

        nodes = [(host, int(port)) for host, _, port in
                 (n.strip().rpartition(":") for n in settings.redis_sentinels.split(","))]
        sentinel = Sentinel(nodes, socket_timeout=timeout, socket_connect_timeout=timeout)  # type: ignore[no-untyped-call]
        return sentinel.master_for(settings.redis_sentinel_master, socket_connect_timeout=timeout)
    return redis.asyncio.Redis.from_url(settings.redis_url or "", socket_connect_timeout=timeout)


class LiveVersions:
    """Fans one pub/sub subscription per session out to the local streams waiting on it."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._pubsub: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._waiting: dict[bytes, set[asyncio.Event]] = {}
        self._confirmed: dict[bytes, asyncio.Future[None]] = {}
        # A channel of this process alone keeps the connection subscribed (and so
        # readable) while no stream waits.
        self._own = f"ono99:live:{secrets.token_hex(8)}"

    async def start(self) -> None:
        """Open the connection and start reading it."""
        self._pubsub = self.client.pubsub()
        await self._pubsub.subscribe(self._own)
        self._reader = asyncio.create_task(self._read(), name="ono99-live")

    async def stop(self) -> None:
        """Stop reading and close the connection."""
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()

    @contextlib.asynccontextmanager
    async def watch(self, session_id: str, confirm_within: float = 2.0) -> AsyncIterator[asyncio.Event]:
        """An event set whenever the session commits a version, from when Redis has
        confirmed the subscription (so a commit after entering is never missed)."""
        channel = live_channel(session_id).encode()
        changed = asyncio.Event()
        waiting = self._waiting.setdefault(channel, set())
        first = not waiting
        waiting.add(changed)
        try:
            if first:  # set before the await, so the session's next watchers find it
                self._confirmed[channel] = asyncio.get_running_loop().create_future()
                await self._pubsub.subscribe(channel)
            confirmed = self._confirmed[channel]
            with contextlib.suppress(TimeoutError):
                # Not confirmed in time (Redis slow): the stream re-reads the log anyway.
                await asyncio.wait_for(asyncio.shield(confirmed), confirm_within)
            yield changed
        finally:
            waiting.discard(changed)
            if not waiting:
                del self._waiting[channel]
                self._confirmed.pop(channel, None)
                with contextlib.suppress(redis.RedisError, OSError):
                    await self._pubsub.unsubscribe(channel)

    async def _read(self) -> None:
        backoff = 0.1
        while True:
            try:
                message = await self._pubsub.get_message(timeout=5.0)
                backoff = 0.1
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the connection dropped: redis-py reconnects on the next read
                log.warning("live updates connection lost", extra={"error": type(exc).__name__})
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
                continue
            if message is None:
                continue
            channel = message.get("channel")
            if message["type"] == "subscribe":
                confirmed = self._confirmed.get(channel)
                if confirmed is not None and not confirmed.done():
                    confirmed.set_result(None)
            elif message["type"] == "message":
                for changed in self._waiting.get(channel, ()):
                    changed.set()



PATTERN = "ono99:*:live"  # every session's channel (store.live_channel)


class Waiters:
    """The requests of one HTTP worker waiting for their session's next version (long
    polling): one pattern subscription (``PATTERN``, started with the first waiter, on a
    plain redis-py client: gevent's, in a gevent worker) wakes the waiters of each
    session that moves on. At most ``limit`` wait at once, and ``per_peer`` from one
    client address (0: no such limit); beyond, 429."""

    def __init__(self, connect: Callable[[], Any], limit: int, per_peer: int = 0) -> None:
        self.connect = connect
        self.limit = limit
        self.per_peer = per_peer
        self._peers: dict[str, int] = {}
        self._lock = threading.Lock()
        self._waiting: dict[str, set[threading.Event]] = {}
        self._wakes: dict[str, int] = {}  # per session waited on: the messages heard so far
        self.count = 0
        self._listener: threading.Thread | None = None

    def wakes(self, session_id: str) -> int:
        """How many messages of the session this worker has heard while it had waiters: a
        read begun after the n-th sees the version it announced, so the waiters woken by
        it can share one read (``store.SharedReads``)."""
        return self._wakes.get(session_id, 0)

    @contextlib.contextmanager
    def waiting(self, session_id: str, peer: str = "") -> Iterator[threading.Event]:
        """An event set whenever the session commits a version (429 past the limits)."""
        changed = threading.Event()
        with self._lock:
            if self.count >= self.limit:
                raise ServiceError("too_many_requests", f"this server holds its limit of {self.limit} waiting "
                                   "requests; try again without wait, or later", limit=self.limit, retry_after=1)
            mine = self._peers.get(peer, 0)
            if self.per_peer and mine >= self.per_peer:
                raise ServiceError("too_many_requests", f"at most {self.per_peer} waiting requests and event "
                                   "streams per client address", limit=self.per_peer, retry_after=1)
            self._peers[peer] = mine + 1
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
                left = self._peers[peer] - 1
                if left:
                    self._peers[peer] = left
                else:
                    del self._peers[peer]
                waiters = self._waiting[session_id]
                waiters.discard(changed)
                if not waiters:
                    del self._waiting[session_id]
                    self._wakes.pop(session_id, None)

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
                        waiters = self._waiting.get(session_id)
                        if waiters:
                            self._wakes[session_id] = self._wakes.get(session_id, 0) + 1
                            for changed in waiters:
                                changed.set()
            except redis.RedisError as exc:
                log.warning("event subscription lost; reconnecting", extra={"error": type(exc).__name__})
                time.sleep(1.0)
