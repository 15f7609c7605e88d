"""How the HTTP API is served: gunicorn with gevent workers.

A sync worker reads a request on the process's only thread, so a client that trickles
its headers holds the whole worker until gunicorn's timeout, and two such clients stop
a two-worker server. A gevent worker reads each connection in a greenlet of its own:
a slow or idle client holds one greenlet and one socket (a few KB), never the worker;
requests that wait on Redis yield too, so stateless calls keep their latency while
Redis stalls. Engine work is CPU-bound and short, so one process still runs one request
at a time, as a sync worker does.

Limits (``Settings``):

- ``http_header_timeout`` (gunicorn's ``keepalive``): the seconds a connection has to
  send a whole request line and headers, the first request's as well as the next ones
  of a kept-alive connection; then it is closed. A client that trickles its headers is
  dropped after it, however it paces its bytes.
- ``http_read_timeout``: the seconds of silence allowed within a request body (each
  read); then the connection is closed.
- ``http_connections`` (gunicorn's ``worker_connections``): open connections per
  worker; beyond it new connections wait in the listen backlog.
- ``http_connections_per_peer``: open connections per client address and worker;
  beyond it a new connection from that address is closed at once, so one client cannot
  take every slot (behind a proxy every client has the proxy's address: raise it, or
  0 for no limit).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import gevent
from gunicorn.workers.base_async import AsyncWorker
from gunicorn.workers.ggevent import GeventWorker

from . import metrics
from .bots import check_room, think_here
from .config import Settings

WORKER_CLASS = "service.http_server.Worker"
YIELD_WAIT = 0.01  # seconds a kept-alive connection waits at most, after each request, for the others
T = TypeVar("T")


class BotPool:
    """Where a worker's searches think: ``threads`` threads of a gevent thread pool, and
    at most ``queue`` searches waiting for one that a caller asked for (a hint or a
    suggestion: beyond, 503 ``bots_busy``); a bot seat's move is the game going on,
    and waits whatever the queue."""

    def __init__(self, threads: int, queue: int) -> None:
        self.threads = threads
        self.queue = queue
        self.pool: Any = None
        self.held = 0  # searches handed to the pool and not yet answered (counted on the worker's hub)

    @classmethod
    def of(cls, settings: Settings) -> BotPool:
        return cls(settings.bot_threads, settings.bot_queue)

    def think(self, work: Callable[[], T], admit: Callable[[], None] | None = None) -> T:
        """Run a bot's CPU-bound work on a thread of this pool when gevent runs this
        process (a gevent worker), so that the worker's other greenlets (requests, slow
        clients) keep being served while it thinks, instead of waiting for its whole
        budget; elsewhere (a test client, another WSGI server) in the calling thread.
        ``admit``: a caller's search (service.bots.Think), refused when the queue is full.
        Errors come back as values and are raised here: gevent's pool would print the
        traceback of each (a flood of refused hints, a flood of logs)."""
        from gevent import monkey

        if not monkey.is_module_patched("threading"):
            return think_here(work, admit)
        if admit is not None:
            check_room(self.held, self.threads, self.queue)
        if self.pool is None:
            from gevent.threadpool import ThreadPool

            self.pool = ThreadPool(self.threads)

        def capture() -> tuple[bool, Any]:
            try:
                return True, work()
            except Exception as error:
                return False, error

        self.held += 1  # the place is taken before admit() yields on Redis, so others see it
        metrics.BOT_WORK.inc()
        try:
            if admit is not None:
                admit()
            ok, value = self.pool.apply(capture)
        finally:
            self.held -= 1
            metrics.BOT_WORK.dec()
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]


@dataclass(frozen=True)
class ConnectionLimits:
    """What a worker holds every client connection to (from the settings)."""

    read_timeout: float
    per_peer: int

    @classmethod
    def of(cls, settings: Settings) -> ConnectionLimits:
        return cls(settings.http_read_timeout, settings.http_connections_per_peer)


class Worker(GeventWorker):  # type: ignore[misc]
    """gunicorn's gevent worker, with a read timeout on every client connection and a
    limit of open connections per client address."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.per_peer: Counter[str] = Counter()
        # options()'s post_worker_init hook sets the configured limits before the worker
        # serves; a worker gunicorn was told to use directly (``-k``, service.wsgi:app)
        # takes them from the environment.
        self.limits = ConnectionLimits.of(Settings.from_env())

    def handle_request(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> None:
        super().handle_request(listener_name, req, sock, addr)
        # The connection stays open for its next request, which gunicorn's keep-alive loop
        # reads at once. When the client has already sent it (a fast client on another
        # core), that read finds data and never returns to the event loop: one connection
        # was served back to back for up to seconds while the others' requests and new
        # connections waited in the kernel. So give the loop a turn: wait until it has
        # nothing pending, at most YIELD_WAIT (the bound keeps a flood of new connections,
        # which is never idle, from starving this one).
        with gevent.Timeout(YIELD_WAIT, False):
            gevent.idle()

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        limits = self.limits
        peer = addr[0] if isinstance(addr, tuple) else str(addr)
        if limits.per_peer and self.per_peer[peer] >= limits.per_peer:
            client.close()  # this address holds its share of the worker's connections
            return
        self.per_peer[peer] += 1
        try:
            # GeventWorker.handle makes the socket blocking with no timeout: a client that
            # sends nothing would hold its connection for ever.
            client.settimeout(limits.read_timeout)
            AsyncWorker.handle(self, listener, client, addr)
        finally:
            self.per_peer[peer] -= 1
            if not self.per_peer[peer]:
                del self.per_peer[peer]


def options(settings: Settings) -> dict[str, Any]:
    """gunicorn settings of the HTTP API (the benchmark's baseline runs under the same)."""
    limits = ConnectionLimits.of(settings)

    def post_worker_init(worker: Worker) -> None:
        worker.limits = limits

    return {
        "post_worker_init": post_worker_init,
        "bind": f"{settings.host}:{settings.http_port}", "workers": settings.workers,
        "worker_class": WORKER_CLASS, "worker_connections": settings.http_connections,
        "graceful_timeout": 20, "timeout": 30, "keepalive": settings.http_header_timeout,
        "accesslog": None, "errorlog": "-", "loglevel": settings.log_level,
        "limit_request_line": 8190, "proc_name": "ono99-http",
        "control_socket_disable": True,  # no gunicornc; nothing written under $HOME
    }
