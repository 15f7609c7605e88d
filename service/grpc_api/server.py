"""The gRPC server: GameService and SessionService over the application layer, a seat
token interceptor, health (grpc.health.v1) and reflection."""

from __future__ import annotations

import contextvars
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
import msgspec
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

import engine

from .. import logs, metrics
from ..application import Application
from ..config import Settings
from ..errors import ServiceError
from ..signing import StateSigner
from ..store import SessionStore, connect
from . import convert
from .errors import abort, answer, to_status
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


class SeatTokenInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    """Checks that session calls carry ``authorization: Bearer <token>`` and hands the
    token to the servicer; CreateSession needs none. Which seat a token opens is the
    application layer's decision, made against the session's stored seats."""

    OPEN: frozenset[str] = frozenset({f"/{SESSION_SERVICE}/CreateSession"})

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None or not details.method.startswith(f"/{SESSION_SERVICE}/") or details.method in self.OPEN:
            return handler
        token = _bearer(dict(details.invocation_metadata).get("authorization", ""))

        def guard(behavior: Callable[..., Any]) -> Callable[..., Any]:
            def run(request: Any, context: grpc.ServicerContext) -> Any:
                if token is None:
                    abort(context, ServiceError("unauthorized", "send metadata 'authorization: Bearer <seat token>'"))
                SEAT_TOKEN.set(token)
                return behavior(request, context)
            return run

        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(guard(handler.unary_unary), handler.request_deserializer,
                                                       handler.response_serializer)
        return grpc.unary_stream_rpc_method_handler(guard(handler.unary_stream), handler.request_deserializer,
                                                    handler.response_serializer)


class ObservingInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    """Every call: a request id (``x-request-id`` metadata, else a new one) in the log
    context, a log line, and the request counters and latency histogram."""

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None:
            return None
        method = details.method
        offered = dict(details.invocation_metadata).get("x-request-id")

        def observe(context: grpc.ServicerContext, started: float, failed: bool) -> None:
            code = context.code() if hasattr(context, "code") else None
            status = (code or (grpc.StatusCode.UNKNOWN if failed else grpc.StatusCode.OK)).name
            seconds = time.perf_counter() - started
            metrics.observe("grpc", method, status, seconds)
            if not method.startswith("/grpc."):
                access.info("call", extra={"method": method, "status": status, "duration_ms": round(seconds * 1000, 2)})

        def unary(behavior: Callable[..., Any]) -> Callable[..., Any]:
            def run(request: Any, context: grpc.ServicerContext) -> Any:
                logs.CONTEXT.set({"request_id": logs.request_id(offered)})
                logs.bind(session_id=getattr(request, "session_id", None) or None)
                started, failed = time.perf_counter(), True
                try:
                    response = behavior(request, context)
                    failed = False
                    return response
                finally:
                    observe(context, started, failed)
            return run

        def stream(behavior: Callable[..., Any]) -> Callable[..., Any]:
            def run(request: Any, context: grpc.ServicerContext) -> Any:
                logs.CONTEXT.set({"request_id": logs.request_id(offered)})
                logs.bind(session_id=getattr(request, "session_id", None) or None)
                started, failed = time.perf_counter(), True
                try:
                    yield from behavior(request, context)
                    failed = False
                finally:
                    observe(context, started, failed)
            return run

        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(unary(handler.unary_unary), handler.request_deserializer,
                                                       handler.response_serializer)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(stream(handler.unary_stream), handler.request_deserializer,
                                                        handler.response_serializer)
        return handler  # reflection's bidirectional stream: not counted


def _bearer(header: str) -> str | None:
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _seed(msg: Any) -> Any:
    kind = msg.WhichOneof("seed")
    return getattr(msg, kind) if kind else None


def _signed_state(app: Application, signed: pb.SignedState) -> engine.GameState:
    return app.trusted_state(convert.state_doc(signed.state), signed.signature or None)


def _signed(outcome: Any) -> pb.SignedState:
    return pb.SignedState(state=convert.state_message(outcome.state),
                          signature=outcome.signature or "")


def _view(view: engine.ViewDoc) -> pb.View:
    return convert.view_message(msgspec.to_builtins(view))


def _events(events: list[dict[str, Any]]) -> list[pb.Event]:
    return [convert.event_message(e) for e in events]


class GameServicer(pb_grpc.GameServiceServicer):
    """Stateless engine calls."""

    def __init__(self, app: Application) -> None:
        self.app = app

    def NewGame(self, request: pb.NewGameRequest, context: grpc.ServicerContext) -> pb.NewGameResponse:
        def work() -> pb.NewGameResponse:
            outcome = self.app.new_game(convert.rules_doc(request.rules), list(request.players), seed=_seed(request),
                                        deck=convert.cards(request.deck, "deck") if request.deck else None)
            return pb.NewGameResponse(state=_signed(outcome), events=_events(outcome.events))
        return answer(context, work)

    def LegalActions(self, request: pb.LegalActionsRequest,
                     context: grpc.ServicerContext) -> pb.LegalActionsResponse:
        def work() -> pb.LegalActionsResponse:
            state = _signed_state(self.app, request.state)
            return pb.LegalActionsResponse(actions=[convert.action_message(a) for a in self.app.legal_actions(state)])
        return answer(context, work)

    def Apply(self, request: pb.ApplyRequest, context: grpc.ServicerContext) -> pb.ApplyResponse:
        def work() -> pb.ApplyResponse:
            outcome = self.app.apply(_signed_state(self.app, request.state), convert.action_doc(request.action))
            return pb.ApplyResponse(state=_signed(outcome), events=_events(outcome.events))
        return answer(context, work)

    def View(self, request: pb.ViewRequest, context: grpc.ServicerContext) -> pb.ViewResponse:
        def work() -> pb.ViewResponse:
            player = request.player if request.HasField("player") else None
            return pb.ViewResponse(view=_view(self.app.view(_signed_state(self.app, request.state), player)))
        return answer(context, work)


class SessionServicer(pb_grpc.SessionServiceServicer):
    """Sessions; the seat token comes from :class:`SeatTokenInterceptor`."""

    def __init__(self, app: Application) -> None:
        self.app = app

    def CreateSession(self, request: pb.CreateSessionRequest,
                      context: grpc.ServicerContext) -> pb.CreateSessionResponse:
        def work() -> pb.CreateSessionResponse:
            game = request.game
            session_id, seats, state, events = self.app.create_session(
                convert.rules_doc(game.rules), list(game.players), seed=_seed(game),
                deck=convert.cards(game.deck, "deck") if game.deck else None, ttl=request.ttl_seconds or None)
            return pb.CreateSessionResponse(session_id=session_id, version=1, seats=seats,
                                            view=_view(engine.view_doc(state, None)),
                                            events=_events(engine.redact_events(events, None)))
        return answer(context, work)

    def GetSession(self, request: pb.GetSessionRequest,
                   context: grpc.ServicerContext) -> pb.GetSessionResponse:
        def work() -> pb.GetSessionResponse:
            version, viewer, state = self.app.get_session(request.session_id, SEAT_TOKEN.get())
            response = pb.GetSessionResponse(session_id=request.session_id, version=version,
                                             view=_view(engine.view_doc(state, viewer)))
            if viewer is None:
                response.state.CopyFrom(convert.state_message(state))
            return response
        return answer(context, work)

    def Act(self, request: pb.ActRequest, context: grpc.ServicerContext) -> pb.ActResponse:
        def work() -> pb.ActResponse:
            expected = request.expected_version if request.HasField("expected_version") else None
            result = self.app.act(request.session_id, SEAT_TOKEN.get(), convert.action_doc(request.action),
                                  expected, request.idempotency_key or None)
            return pb.ActResponse(version=result.version, events=_events(result.events), view=_view(result.view),
                                  replayed=result.replayed)
        return answer(context, work)

    def ListEvents(self, request: pb.ListEventsRequest,
                   context: grpc.ServicerContext) -> pb.ListEventsResponse:
        def work() -> pb.ListEventsResponse:
            events = self.app.session_events(request.session_id, SEAT_TOKEN.get(), request.after_version)
            return pb.ListEventsResponse(events=_events(events))
        return answer(context, work)

    def WatchEvents(self, request: pb.WatchEventsRequest,
                    context: grpc.ServicerContext) -> Iterator[pb.Event]:
        stream = answer(context, lambda: self.app.watch_events(
            request.session_id, SEAT_TOKEN.get(), request.after_version, context.is_active))
        while True:
            event = answer(context, lambda: next(stream, None))
            if event is None:
                return
            yield convert.event_message(event)

    def DeleteSession(self, request: pb.DeleteSessionRequest,
                      context: grpc.ServicerContext) -> pb.DeleteSessionResponse:
        def work() -> pb.DeleteSessionResponse:
            self.app.delete_session(request.session_id, SEAT_TOKEN.get())
            return pb.DeleteSessionResponse()
        return answer(context, work)


class GrpcServer:
    """A running gRPC server with its health reporting."""

    def __init__(self, settings: Settings, port: int | None = None) -> None:
        signer = StateSigner(settings.state_secret)
        self.store = SessionStore(connect(settings.redis_url, settings.redis_timeout)) \
            if settings.sessions and settings.redis_url else None
        app = Application(signer, self.store, settings.service_key, settings.session_ttl)
        limit = settings.max_body_bytes
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=settings.grpc_threads, thread_name_prefix="ono99-grpc"),
            interceptors=[ObservingInterceptor(), SeatTokenInterceptor()],
            options=[("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", 4 * limit),
                     *KEEPALIVE_OPTIONS])
        pb_grpc.add_GameServiceServicer_to_server(GameServicer(app), self.server)  # type: ignore[no-untyped-call]
        pb_grpc.add_SessionServiceServicer_to_server(SessionServicer(app), self.server)  # type: ignore[no-untyped-call]
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (GAME_SERVICE, SESSION_SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME), self.server)
        self.port = self.server.add_insecure_port(f"{settings.host}:{settings.grpc_port if port is None else port}")
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch_redis, name="ono99-health", daemon=True)

    def _report(self) -> None:
        """Session calls are NOT_SERVING while Redis does not answer; stateless ones stay up."""
        up = self.store is not None and self.store.ping()
        self.health.set(SESSION_SERVICE, health_pb2.HealthCheckResponse.SERVING if up
                        else health_pb2.HealthCheckResponse.NOT_SERVING)

    def _watch_redis(self) -> None:
        while not self._stop.wait(1.0):
            self._report()

    def start(self) -> GrpcServer:
        for service in ("", GAME_SERVICE):
            self.health.set(service, health_pb2.HealthCheckResponse.SERVING)
        self._report()
        self.server.start()
        self._watcher.start()
        log.info("gRPC API started", extra={"port": self.port, "sessions": self.store is not None})
        return self

    def stop(self, grace: float = 10.0) -> None:
        """Refuse new calls, let running ones finish for ``grace`` seconds, then stop."""
        self._stop.set()
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait()
        log.info("gRPC API stopped")


def run(settings: Settings) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully; Prometheus metrics on
    ``settings.metrics_port`` (0: none)."""
    if settings.metrics_port:
        start_http_server(settings.metrics_port, addr=settings.host)
    server = GrpcServer(settings).start()
    done = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        log.info("shutting down", extra={"signal": signal.Signals(signum).name})
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    done.wait()
    server.stop()


__all__ = ["GrpcServer", "run", "to_status"]
