"""The gRPC server (grpc.aio): GameService and SessionService over the application layer,
one interceptor (request ids, logs, metrics and seat tokens), health (grpc.health.v1)
and reflection.

Stateless engine calls run on the event loop (they are short and CPU-bound); session
calls, which wait on Redis, run on a thread pool of ``ONO99_GRPC_THREADS`` threads;
event streams wait on the loop (service.live) and use the pool only for their reads.
The services are in games.py and sessions.py, what every call goes through in calls.py.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc
from prometheus_client import start_http_server

import engine

from ..application import Application
from ..config import Settings
from ..live import LiveVersions
from ..live import connect as connect_live
from ..recent import RecentStates
from .calls import GAME_SERVICE, SESSION_SERVICE, CallInterceptor, Calls
from .errors import to_status
from .games import GameServicer
from .gen import ono99_pb2_grpc as pb_grpc
from .generic import GenericHandlersOnly
from .sessions import SessionServicer, StreamLimits

log = logging.getLogger("ono99.grpc")

# Mobile clients: they may ping every 30 s to keep a stream alive through NATs; the
# server pings idle connections every 2 minutes and drops them after 20 s of silence.
KEEPALIVE_OPTIONS = [
    ("grpc.keepalive_time_ms", 120_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 30_000),
    ("grpc.http2.max_pings_without_data", 0),
]


REFLECTION_V1 = "grpc.reflection.v1.ServerReflection"


def reflection_v1(reflector: Any) -> grpc.GenericRpcHandler:
    """Server reflection ``v1`` beside ``v1alpha`` (grpcio-reflection serves only the
    latter; clients such as grpcurl ask for v1 first). The two protocols' messages are
    the same fields with the same numbers, so v1alpha's servicer answers v1 as is."""
    from grpc_reflection.v1alpha import reflection_pb2

    return grpc.method_handlers_generic_handler(REFLECTION_V1, {
        "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
            reflector.ServerReflectionInfo,
            request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
            response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString)})


class GrpcServer:
    """The gRPC server for ``settings``: ``serve()`` runs it on the current event loop until
    ``shutdown()``; ``start()``/``stop()`` run it on a thread of its own (tests, embedding)."""

    def __init__(self, settings: Settings, port: int | None = None, grace: float = 10.0,
                 application: Application | None = None) -> None:
        self.settings = settings
        self.requested_port = settings.grpc_port if port is None else port
        self.grace = grace
        self.calls = Calls(settings.grpc_threads)
        # bots think here, never on the session calls' threads
        self.bot_calls = Calls(settings.bot_threads, settings.bot_queue)
        self.app = application or Application.from_settings(settings)
        self.store = self.app.store
        self.port: int | None = None
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    async def serve(self) -> None:
        """Serve until ``shutdown()``; then refuse new calls and give running ones ``grace`` seconds."""
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        limit = self.settings.max_body_bytes
        server = grpc.aio.server(
            interceptors=[CallInterceptor()],
            options=[("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", 4 * limit),
                     *KEEPALIVE_OPTIONS,
                     # A connection is closed (GOAWAY) after this age, so that clients spread
                     # over the replicas an autoscaler adds; calls in flight get the grace.
                     ("grpc.max_connection_age_ms", int(self.settings.grpc_max_connection_age * 1000)),
                     ("grpc.max_connection_age_grace_ms", int(self.settings.grpc_max_connection_age_grace * 1000))])
        services = GenericHandlersOnly(server)
        pb_grpc.add_GameServiceServicer_to_server(
            GameServicer(self.app, self.bot_calls, RecentStates(self.settings.grpc_state_cache_bytes)), services)  # type: ignore[no-untyped-call]
        live = None
        if self.store is not None:
            live = LiveVersions(connect_live(self.settings))
            await live.start()
        streams = StreamLimits(self.settings.grpc_streams, self.settings.grpc_streams_per_peer)
        sessions = SessionServicer(self.app, self.calls, live, streams, bot_calls=self.bot_calls)
        pb_grpc.add_SessionServiceServicer_to_server(sessions, services)  # type: ignore[no-untyped-call]
        checks = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(checks, services)
        reflector = reflection.aio.ReflectionServicer(
            (GAME_SERVICE, SESSION_SERVICE, health.SERVICE_NAME, REFLECTION_V1, reflection.SERVICE_NAME))
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(reflector, services)
        server.add_generic_rpc_handlers((reflection_v1(reflector),))
        self.port = server.add_insecure_port(f"{self.settings.host}:{self.requested_port}")
        for service in ("", GAME_SERVICE):
            await checks.set(service, health_pb2.HealthCheckResponse.SERVING)
        await self._report(checks)
        await server.start()
        log.info("gRPC API started", extra={"port": self.port, "sessions": self.store is not None,
                                            "engine": engine.BUILD})
        self._started.set()
        watcher = asyncio.create_task(self._watch_redis(checks))
        await self._stop.wait()
        watcher.cancel()
        await checks.enter_graceful_shutdown()
        await server.stop(self.grace)
        if live is not None:
            await live.stop()
        for calls in (self.calls, self.bot_calls):
            calls.pool.shutdown(wait=False, cancel_futures=True)
        log.info("gRPC API stopped")

    def shutdown(self) -> None:
        """Ask ``serve()`` to stop (from any thread or a signal handler)."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)

    async def _report(self, checks: Any) -> None:
        """Session calls are NOT_SERVING while Redis does not answer; stateless ones stay up."""
        up = self.store is not None and await asyncio.get_running_loop().run_in_executor(
            self.calls.pool, self.app.ready)
        await checks.set(SESSION_SERVICE, health_pb2.HealthCheckResponse.SERVING if up
                         else health_pb2.HealthCheckResponse.NOT_SERVING)

    async def _watch_redis(self, checks: Any) -> None:
        while True:
            await asyncio.sleep(1.0)
            await self._report(checks)

    def start(self) -> GrpcServer:
        """Serve on a thread of its own; returns once the server listens."""
        self._thread = threading.Thread(target=asyncio.run, args=(self.serve(),), name="ono99-grpc", daemon=True)
        self._thread.start()
        if not self._started.wait(30):
            raise RuntimeError("the gRPC server did not start")
        return self

    def stop(self) -> None:
        """Stop a server started with ``start()``."""
        self.shutdown()
        if self._thread is not None:
            self._thread.join(self.grace + 10)


def run(settings: Settings) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully; Prometheus metrics on
    ``settings.metrics_port`` (0: none)."""
    if settings.metrics_port:
        start_http_server(settings.metrics_port, addr=settings.host)
    server = GrpcServer(settings, application=Application.from_settings(settings))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, _stopping, signum, server)
        await server.serve()

    asyncio.run(main())


def _stopping(signum: int, server: GrpcServer) -> None:
    log.info("shutting down", extra={"signal": signal.Signals(signum).name})
    server.shutdown()


__all__ = ["GrpcServer", "run", "to_status"]
