"""The gRPC server (grpc.aio): GameService and SessionService over the application layer,
one interceptor (request ids, logs, metrics and seat tokens), health (grpc.health.v1)
and reflection.

Stateless engine calls run on the event loop (they are short and CPU-bound); session
calls, which wait on Redis, run on a thread pool of ``ONO99_GRPC_THREADS`` threads;
event streams wait on the loop (service.live) and use the pool only for their reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent import futures
from typing import Any, TypeVar

import grpc
import msgspec
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc
from prometheus_client import start_http_server

import engine

from .. import logs, metrics
from ..application import Application, Caller, bearer_token, is_session_id
from ..config import Settings
from ..errors import ServiceError, from_engine
from ..live import LiveVersions
from ..live import connect as connect_live
from . import convert
from .errors import to_status
from .gen import ono99_pb2 as pb
from .gen import ono99_pb2_grpc as pb_grpc

log = logging.getLogger("ono99.grpc")
access = logging.getLogger("ono99.access")

SESSION_SERVICE = pb.DESCRIPTOR.services_by_name["SessionService"].full_name
GAME_SERVICE = pb.DESCRIPTOR.services_by_name["GameService"].full_name
SEAT_TOKEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("seat_token", default=None)

# Mobile clients: they may ping every 30 s to keep a stream alive through NATs; the
# server pings idle connections every 2 minutes and drops them after 20 s of silence.
KEEPALIVE_OPTIONS = [
    ("grpc.keepalive_time_ms", 120_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 30_000),
    ("grpc.http2.max_pings_without_data", 0),
]


_STATUS_NAMES = {code: code.name for code in grpc.StatusCode}

# The call's metadata, as grpc hands it to the interceptor (the servicer context would
# build it again on each request for it).
_CALL_METADATA: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar("call_metadata", default=())


def _metadata(key: str) -> str | None:
    for name, value in _CALL_METADATA.get():
        if name == key:
            return str(value)
    return None


async def _seat_token(context: grpc.aio.ServicerContext) -> None:
    """Hand the call's seat token to the servicer, or abort the call as unauthorized."""
    found = bearer_token(_metadata("authorization"))
    if found is None:
        await context.abort_with_status(to_status(ServiceError(
            "unauthorized", "send metadata 'authorization: Bearer <seat token>'")))
    SEAT_TOKEN.set(found)


class CallInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """The one server interceptor, wrapped once around each method's handler.

    Every call gets a request id (``x-request-id`` metadata, else a new one) in the log
    context, an access log line, and the request counters and latency histogram.
    Session calls must carry ``authorization: Bearer <token>`` (CreateSession needs
    none); the token goes to the servicer, and which seat it opens is the application
    layer's decision, made against the session's stored seats. Both jobs share one
    interceptor: grpc.aio pays for every interceptor on every call.
    """

    OPEN: frozenset[str] = frozenset({f"/{SESSION_SERVICE}/CreateSession"})

    def __init__(self) -> None:
        self._wrapped: dict[str, Any] = {}

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[Any]], details: Any) -> Any:
        # The handler runs in this call's task, and so sees this context variable.
        _CALL_METADATA.set(details.invocation_metadata or ())
        wrapped = self._wrapped.get(details.method)
        if wrapped is None:
            handler = await continuation(details)
            if handler is None:
                return None
            wrapped = self._wrapped[details.method] = self._wrap(details.method, handler)
        return wrapped

    def _wrap(self, method: str, handler: Any) -> Any:
        quiet = method.startswith("/grpc.")
        session_call = method.startswith(f"/{SESSION_SERVICE}/")
        needs_token = session_call and method not in self.OPEN

        def begin(request: Any, context: grpc.aio.ServicerContext) -> float:
            fields = {"request_id": logs.request_id(_metadata("x-request-id"))}
            session_id = getattr(request, "session_id", None) if session_call else None
            if session_id and is_session_id(session_id):  # never a caller's 100 KB string
                fields["session_id"] = session_id
            logs.CONTEXT.set(fields)
            return time.perf_counter()

        def end(context: grpc.aio.ServicerContext, started: float, failed: bool) -> None:
            seconds = time.perf_counter() - started
            status = _STATUS_NAMES[context.code() or (grpc.StatusCode.UNKNOWN if failed else grpc.StatusCode.OK)]
            metrics.observe("grpc", method, status, seconds)
            if not quiet and access.isEnabledFor(logging.INFO):
                access.info("call", extra={"method": method, "status": status, "duration_ms": round(seconds * 1000, 2)})

        if handler.unary_unary:
            behavior = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                started, failed = begin(request, context), True
                try:
                    if needs_token:
                        await _seat_token(context)
                    response = await behavior(request, context)
                    failed = False
                    return response
                finally:
                    end(context, started, failed)

            return grpc.unary_unary_rpc_method_handler(unary, handler.request_deserializer,
                                                       handler.response_serializer)
        if handler.unary_stream:
            stream_behavior = handler.unary_stream

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                started, failed = begin(request, context), True
                try:
                    if needs_token:
                        await _seat_token(context)
                    async for item in stream_behavior(request, context):
                        yield item
                    failed = False
                finally:
                    end(context, started, failed)

            return grpc.unary_stream_rpc_method_handler(stream, handler.request_deserializer,
                                                        handler.response_serializer)
        return handler  # reflection's bidirectional stream: left as it is


T = TypeVar("T")


class Calls:
    """Runs a session call's blocking work (Redis) on the thread pool, with the call's
    context vars, and turns service and engine errors into gRPC statuses."""

    def __init__(self, threads: int) -> None:
        self.pool = futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ono99-grpc")

    async def answer(self, context: grpc.aio.ServicerContext, work: Callable[[], T]) -> T:
        try:
            run = contextvars.copy_context().run
            return await asyncio.get_running_loop().run_in_executor(self.pool, run, work)
        except Exception as error:
            await _abort(context, error)
        raise AssertionError("abort_with_status returns only by raising")


async def _abort(context: grpc.aio.ServicerContext, error: Exception) -> None:
    """End the call with the status of ``error`` (raises, as abort_with_status does)."""
    if isinstance(error, (engine.InvalidInputError, engine.IllegalActionError)):
        error = from_engine(error)
    if not isinstance(error, ServiceError):
        log.error("unexpected error", exc_info=error)
        error = ServiceError("internal_error", "the service failed; the error was logged")
    await context.abort_with_status(to_status(error))


def _on_the_loop(work: Callable[[Any, Any], T]) -> Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[T]]:
    """A servicer method from a short, CPU-bound ``work(self, request)``: it runs on the
    event loop, and its errors become statuses (one coroutine per call, no more)."""

    @functools.wraps(work)
    async def method(self: Any, request: Any, context: grpc.aio.ServicerContext) -> T:
        try:
            return work(self, request)
        except Exception as error:
            await _abort(context, error)
        raise AssertionError("abort_with_status returns only by raising")

    return method


def _seed(msg: Any) -> Any:
    kind = msg.WhichOneof("seed")
    return getattr(msg, kind) if kind else None


_RECALLED = metrics.GRPC_STATES.labels("recalled")
_DECODED = metrics.GRPC_STATES.labels("decoded")


class RecentStates:
    """The states this process returned lately (NewGame, Apply), by the bytes of the
    SignedState message they went out in: the state and, when states are signed, its
    signature.

    A stateless client sends back the state it was given: recognized by those exact
    bytes, it is the state the engine made and checked, so it is not decoded and
    validated again. Entries come only from the server's own answers, so a caller cannot
    put a state in; any other state, or another signature, takes the full path. Oldest
    first out; used from the event loop's thread only.

    Memory is bounded by ``budget`` bytes: each entry is charged ``entry_cost`` of its
    message size, an upper bound of what the key and the engine state take (a state
    holds a reference per card where the message has a byte; measured 6 to 9 times
    the message size).
    """

    COST_PER_MESSAGE_BYTE = 10
    COST_PER_ENTRY = 512

    def __init__(self, budget: int) -> None:
        self.budget = max(0, budget)
        self.used = 0
        self._states: OrderedDict[bytes, tuple[engine.GameState, int]] = OrderedDict()

    @classmethod
    def entry_cost(cls, key: bytes) -> int:
        """The bytes an entry keyed by ``key`` is charged."""
        return cls.COST_PER_ENTRY + cls.COST_PER_MESSAGE_BYTE * len(key)

    def remember(self, msg: pb.SignedState, state: engine.GameState) -> None:
        """Note that ``msg`` (a filled response field) carries ``state``."""
        if not self.budget:
            return
        key = msg.SerializeToString()
        cost = self.entry_cost(key)
        if cost > self.budget:
            return
        states = self._states
        previous = states.pop(key, None)
        if previous is not None:
            self.used -= previous[1]
        states[key] = (state, cost)
        self.used += cost
        while self.used > self.budget:
            self.used -= states.popitem(last=False)[1][1]

    def recall(self, signed: pb.SignedState) -> engine.GameState | None:
        """The state a caller sent, if this process returned it, with this signature."""
        if not self.budget:
            return None
        found = self._states.get(signed.SerializeToString())
        return None if found is None else found[0]


def _view(view: engine.ViewDoc) -> pb.View:
    return convert.view_message(msgspec.to_builtins(view))


class GameServicer(pb_grpc.GameServiceServicer):
    """Stateless engine calls, on the event loop."""

    def __init__(self, app: Application, recent: RecentStates | None = None) -> None:
        self.app = app
        self.recent = recent or RecentStates(0)

    def _state(self, signed: pb.SignedState) -> engine.GameState:
        """The caller's state: one this process returned, else decoded and checked in full."""
        return self._recall(signed)[0]

    def _recall(self, signed: pb.SignedState) -> tuple[engine.GameState, bool]:
        """The caller's state, and whether this process returned it (its message is then
        the one fill_state wrote)."""
        state = self.recent.recall(signed)
        if state is None:
            _DECODED.inc()
            return self.app.trusted_state(convert.state_doc(signed.state), signed.signature or None), False
        _RECALLED.inc()
        return state, True

    def _answer(self, msg: pb.SignedState, outcome: Any, previous: tuple[engine.GameState, Any] | None = None) -> None:
        """Fill a response's state (from the previous state and its message when given)
        and remember it."""
        convert.fill_state(msg.state, outcome.state, previous)
        signature = outcome.signature
        if signature:
            msg.signature = signature
        self.recent.remember(msg, outcome.state)

    @_on_the_loop
    def NewGame(self, request: pb.NewGameRequest) -> pb.NewGameResponse:
        outcome = self.app.new_game(convert.rules_doc(request.rules), list(request.players), seed=_seed(request),
                                    deck=convert.cards(request.deck, "deck") if request.deck else None)
        response = pb.NewGameResponse()
        self._answer(response.state, outcome)
        convert.add_events(response.events, outcome.events)
        return response

    @_on_the_loop
    def LegalActions(self, request: pb.LegalActionsRequest) -> pb.LegalActionsResponse:
        state = self._state(request.state)
        return pb.LegalActionsResponse(actions=[convert.action_message(a) for a in self.app.legal_actions(state)])

    @_on_the_loop
    def Apply(self, request: pb.ApplyRequest) -> pb.ApplyResponse:
        state, recalled = self._recall(request.state)
        outcome = self.app.apply(state, convert.action_doc(request.action))
        sent = request.state.state
        response = pb.ApplyResponse()
        self._answer(response.state, outcome, (state, sent if recalled else convert.adopt(sent, state)))
        convert.add_events(response.events, outcome.events)
        return response

    @_on_the_loop
    def View(self, request: pb.ViewRequest) -> pb.ViewResponse:
        player = request.player if request.HasField("player") else None
        return pb.ViewResponse(view=_view(self.app.view(self._state(request.state), player)))


class StreamLimits:
    """How many event streams may be open at once: in all, and from one peer address.
    Beyond either, a new stream is refused with RESOURCE_EXHAUSTED."""

    def __init__(self, total: int, per_peer: int) -> None:
        self.total, self.per_peer = total, per_peer
        self.open: dict[str, int] = {}
        self.count = 0

    def take(self, peer: str) -> None:
        """Count a new stream from ``peer``, or raise ``too_many_requests``."""
        mine = self.open.get(peer, 0)
        if self.count >= self.total:
            raise ServiceError("too_many_requests", f"the server holds its limit of {self.total} event streams; "
                               "try again later", limit=self.total)
        if mine >= self.per_peer:
            raise ServiceError("too_many_requests", f"at most {self.per_peer} event streams per client address",
                               limit=self.per_peer)
        self.open[peer] = mine + 1
        self.count += 1
        metrics.GRPC_STREAMS.set(self.count)

    def give_back(self, peer: str) -> None:
        """A stream from ``peer`` ended."""
        self.count -= 1
        left = self.open[peer] - 1
        if left:
            self.open[peer] = left
        else:
            del self.open[peer]
        metrics.GRPC_STREAMS.set(self.count)


def _peer_address(peer: str) -> str:
    """The client address of a grpc peer string ("ipv4:1.2.3.4:5678" is "1.2.3.4",
    "ipv6:[::1]:5678" is "::1"), written as HTTP's remote address is."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return peer
    return rest.rpartition(":")[0].strip("[]")


class SessionServicer(pb_grpc.SessionServiceServicer):
    """Sessions, on the thread pool; the seat token comes from :class:`CallInterceptor`."""

    def __init__(self, app: Application, calls: Calls, live: LiveVersions | None, streams: StreamLimits,
                 recheck: float = 15.0) -> None:
        self.app = app
        self.calls = calls
        self.live = live
        self.streams = streams
        self.recheck = recheck  # seconds between reads of a quiet stream's log (a missed message, an ended session)

    async def CreateSession(self, request: pb.CreateSessionRequest,
                      context: grpc.aio.ServicerContext) -> pb.CreateSessionResponse:
        caller = Caller(_peer_address(context.peer()), _metadata("x-api-key"))

        def work() -> pb.CreateSessionResponse:
            game = request.game
            made = self.app.create_session(
                convert.rules_doc(game.rules), list(game.players), seed=_seed(game),
                deck=convert.cards(game.deck, "deck") if game.deck else None, ttl=request.ttl_seconds or None,
                caller=caller)
            response = pb.CreateSessionResponse(session_id=made.session_id, version=made.version, seats=made.seats,
                                                view=_view(made.view))
            convert.add_events(response.events, made.events)
            return response
        return await self.calls.answer(context, work)

    async def GetSession(self, request: pb.GetSessionRequest,
                   context: grpc.aio.ServicerContext) -> pb.GetSessionResponse:
        def work() -> pb.GetSessionResponse:
            read = self.app.get_session(request.session_id, SEAT_TOKEN.get())
            response = pb.GetSessionResponse(session_id=read.session_id, version=read.version, view=_view(read.view))
            if read.state is not None:
                convert.fill_state(response.state, read.state)
            return response
        return await self.calls.answer(context, work)

    async def Act(self, request: pb.ActRequest, context: grpc.aio.ServicerContext) -> pb.ActResponse:
        def work() -> pb.ActResponse:
            expected = request.expected_version if request.HasField("expected_version") else None
            result = self.app.act(request.session_id, SEAT_TOKEN.get(), convert.action_doc(request.action),
                                  expected, request.idempotency_key or None)
            response = pb.ActResponse(version=result.version, view=_view(result.view), replayed=result.replayed)
            convert.add_events(response.events, result.events)
            return response
        return await self.calls.answer(context, work)

    async def ListEvents(self, request: pb.ListEventsRequest,
                   context: grpc.aio.ServicerContext) -> pb.ListEventsResponse:
        def work() -> pb.ListEventsResponse:
            events = self.app.session_events(request.session_id, SEAT_TOKEN.get(), request.after_version,
                                             after_field="after_version")
            response = pb.ListEventsResponse()
            convert.add_events(response.events, events)
            return response
        return await self.calls.answer(context, work)

    async def WatchEvents(self, request: pb.WatchEventsRequest,
                          context: grpc.aio.ServicerContext) -> AsyncIterator[pb.Event]:
        """The log after ``after_version``, then each new version as it is committed.

        A waiting stream holds no thread: it waits on the process's one pub/sub
        subscription (service.live); only its short Redis reads use the pool."""
        peer = _peer_address(context.peer())
        try:
            if self.live is None:
                raise ServiceError("unavailable", "sessions are disabled on this service")
            self.streams.take(peer)
        except ServiceError as error:
            await _abort(context, error)
        try:
            session_id, after = request.session_id, request.after_version
            viewer = await self.calls.answer(context, lambda: self.app.open_watch(
                session_id, SEAT_TOKEN.get(), after, after_field="after_version"))
            async with self.live.watch(session_id) as changed:  # type: ignore[union-attr]
                while True:
                    changed.clear()
                    read = functools.partial(self.app.events_for, session_id, viewer, after)
                    found = await self.calls.answer(context, read)
                    if found is None:
                        return  # the session ended
                    events, after = found
                    for event in events:
                        yield convert.event_message(event)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(changed.wait(), self.recheck)
        finally:
            self.streams.give_back(peer)

    async def DeleteSession(self, request: pb.DeleteSessionRequest,
                      context: grpc.aio.ServicerContext) -> pb.DeleteSessionResponse:
        def work() -> pb.DeleteSessionResponse:
            self.app.delete_session(request.session_id, SEAT_TOKEN.get())
            return pb.DeleteSessionResponse()
        return await self.calls.answer(context, work)


class GenericHandlersOnly:
    """A grpc.aio server as the ``add_*_to_server`` functions see it: each service is
    added as a generic handler only.

    Those functions also register every method with ``add_registered_method_handlers``.
    grpc.aio then keeps one pending call per registered method and runs asyncio.wait
    over all of them for every call it accepts, so each registered method (14 here,
    health and reflection included) costs every call (grpc/grpc#43461). The generic
    handlers serve the same methods; CallInterceptor looks each one up once.
    """

    def __init__(self, server: grpc.aio.Server) -> None:
        self.server = server

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        self.server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, service: str, handlers: Any) -> None:
        """Left out: the generic handler added with them serves these methods."""


class GrpcServer:
    """The gRPC server for ``settings``: ``serve()`` runs it on the current event loop until
    ``shutdown()``; ``start()``/``stop()`` run it on a thread of its own (tests, embedding)."""

    def __init__(self, settings: Settings, port: int | None = None, grace: float = 10.0) -> None:
        self.settings = settings
        self.requested_port = settings.grpc_port if port is None else port
        self.grace = grace
        self.calls = Calls(settings.grpc_threads)
        self.app = Application.from_settings(settings)
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
                     *KEEPALIVE_OPTIONS])
        services = GenericHandlersOnly(server)
        pb_grpc.add_GameServiceServicer_to_server(
            GameServicer(self.app, RecentStates(self.settings.grpc_state_cache_bytes)), services)  # type: ignore[no-untyped-call]
        live = None
        if self.store is not None:
            live = LiveVersions(connect_live(self.settings))
            await live.start()
        streams = StreamLimits(self.settings.grpc_streams, self.settings.grpc_streams_per_peer)
        pb_grpc.add_SessionServiceServicer_to_server(SessionServicer(self.app, self.calls, live, streams), services)  # type: ignore[no-untyped-call]
        checks = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(checks, services)
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(reflection.aio.ReflectionServicer(
            (GAME_SERVICE, SESSION_SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME)), services)
        self.port = server.add_insecure_port(f"{self.settings.host}:{self.requested_port}")
        for service in ("", GAME_SERVICE):
            await checks.set(service, health_pb2.HealthCheckResponse.SERVING)
        await self._report(checks)
        await server.start()
        log.info("gRPC API started", extra={"port": self.port, "sessions": self.store is not None})
        self._started.set()
        watcher = asyncio.create_task(self._watch_redis(checks))
        await self._stop.wait()
        watcher.cancel()
        await checks.enter_graceful_shutdown()
        await server.stop(self.grace)
        if live is not None:
            await live.stop()
        self.calls.pool.shutdown(wait=False, cancel_futures=True)
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
    server = GrpcServer(settings)

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
