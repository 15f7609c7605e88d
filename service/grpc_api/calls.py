"""What every gRPC call goes through: one interceptor (request ids, access logs,
metrics, seat tokens), the thread pool of session calls, and errors as statuses."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent import futures
from typing import Any, TypeVar

import grpc
import msgspec
from google.protobuf.message import DecodeError

import engine

from .. import logs, metrics
from ..application import bearer_token, is_session_id
from ..bots import check_room
from ..errors import ServiceError, from_engine
from . import convert
from .errors import to_status
from .gen import ono99_pb2 as pb

log = logging.getLogger("ono99.grpc")
access = logging.getLogger("ono99.access")

SESSION_SERVICE = pb.DESCRIPTOR.services_by_name["SessionService"].full_name
GAME_SERVICE = pb.DESCRIPTOR.services_by_name["GameService"].full_name
SEAT_TOKEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("seat_token", default=None)

_STATUS_NAMES = {code: code.name for code in grpc.StatusCode}

# The call's metadata, as grpc hands it to the interceptor (the servicer context would
# build it again on each request for it).
_CALL_METADATA: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar("call_metadata", default=())


def metadata(key: str) -> str | None:
    for name, value in _CALL_METADATA.get():
        if name == key:
            return str(value)
    return None


class Unreadable:
    """A request whose bytes are no message of its method's type (what the deserializer
    hands on instead of raising: grpc.aio would answer UNKNOWN with the parser's words)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind


def _readable(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    """``deserialize``, with bytes that are no message handed on as :class:`Unreadable`."""
    if deserialize is None:
        return None
    kind = getattr(getattr(deserialize, "__self__", None), "DESCRIPTOR", None)
    name = kind.full_name if kind is not None else "request"

    def read(data: bytes) -> Any:
        try:
            return deserialize(data)
        except DecodeError:
            return Unreadable(name)
    return read


async def _refuse_unreadable(context: grpc.aio.ServicerContext, request: Unreadable) -> None:
    """INVALID_ARGUMENT for a request whose bytes are no message of its type."""
    await context.abort_with_status(to_status(ServiceError(
        "invalid_request", f"the request is not a valid {request.kind} message")))


async def _seat_token(context: grpc.aio.ServicerContext) -> None:
    """Hand the call's seat token to the servicer, or abort the call as unauthorized."""
    found = bearer_token(metadata("authorization"))
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
        record = _CallRecord(method, needs_token=method.startswith(f"/{SESSION_SERVICE}/")
                             and method not in self.OPEN)
        if handler.unary_unary:
            behavior = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                started, failed = record.begin(request), True
                try:
                    if isinstance(request, Unreadable):  # a check, not an await, on every call
                        await _refuse_unreadable(context, request)
                    if record.needs_token:
                        await _seat_token(context)
                    response = await behavior(request, context)
                    failed = False
                    return response
                finally:
                    record.end(context, started, failed)

            return grpc.unary_unary_rpc_method_handler(unary, _readable(handler.request_deserializer),
                                                       handler.response_serializer)
        if handler.unary_stream:
            stream_behavior = handler.unary_stream

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                started, failed = record.begin(request), True
                try:
                    if isinstance(request, Unreadable):  # a check, not an await, on every call
                        await _refuse_unreadable(context, request)
                    if record.needs_token:
                        await _seat_token(context)
                    async for item in stream_behavior(request, context):
                        yield item
                    failed = False
                finally:
                    record.end(context, started, failed)

            return grpc.unary_stream_rpc_method_handler(stream, _readable(handler.request_deserializer),
                                                        handler.response_serializer)
        return handler  # reflection's bidirectional stream: left as it is


class _CallRecord:
    """What the interceptor does around one method's calls: before, the log context (and
    the wrapper asks for the seat token); after, the metrics and the access log line."""

    def __init__(self, method: str, needs_token: bool) -> None:
        self.method = method
        self.quiet = method.startswith("/grpc.")
        self.session_call = method.startswith(f"/{SESSION_SERVICE}/")
        self.needs_token = needs_token

    def begin(self, request: Any) -> float:
        """The call's log context; its start time. (Not a coroutine: every call would pay
        for awaiting one.)"""
        fields = {"request_id": logs.request_id(metadata("x-request-id"))}
        session_id = getattr(request, "session_id", None) if self.session_call else None
        if session_id and is_session_id(session_id):  # never a caller's 100 KB string
            fields["session_id"] = session_id
        logs.CONTEXT.set(fields)
        return time.perf_counter()

    def end(self, context: grpc.aio.ServicerContext, started: float, failed: bool) -> None:
        seconds = time.perf_counter() - started
        status = _STATUS_NAMES[context.code() or (grpc.StatusCode.UNKNOWN if failed else grpc.StatusCode.OK)]
        metrics.observe("grpc", self.method, status, seconds)
        if not self.quiet and access.isEnabledFor(logging.INFO):
            access.info("call", extra={"method": self.method, "status": status,
                                       "duration_ms": round(seconds * 1000, 2)})


T = TypeVar("T")


class Calls:
    """Runs a session call's blocking work (Redis) on the thread pool, with the call's
    context vars, and turns service and engine errors into gRPC statuses. ``queue``:
    the bots' calls, of which at most ``queue`` a caller asked for (``refusable``:
    hints, suggestions) wait for a thread; beyond, such a call is refused (``bots_busy``,
    UNAVAILABLE). None: no bound."""

    def __init__(self, threads: int, queue: int | None = None) -> None:
        self.pool = futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ono99-grpc")
        self.threads = threads
        self.queue = queue
        # Works handed to the pool and not yet done: counted until a work ends on its
        # thread (a cancelled call's work runs on once started) or is cancelled unstarted.
        self.held = 0
        self._held_lock = threading.Lock()

    async def answer(self, context: grpc.aio.ServicerContext, work: Callable[[], T], finish: bool = False,
                     refusable: bool = False) -> T:
        """``work``'s result. ``finish``: the work runs to its end even when the call is
        cancelled (a client that gives up must not leave a session half moved on)."""
        try:
            if refusable and self.queue is not None:
                check_room(self.held, self.threads, self.queue)
            submitted = self.pool.submit(contextvars.copy_context().run, work)
            self._hold(1)
            submitted.add_done_callback(lambda _: self._hold(-1))
            future = asyncio.wrap_future(submitted)
            if finish:
                future.add_done_callback(_consume)
                return await asyncio.shield(future)
            return await future
        except Exception as error:
            await abort(context, error)
        raise AssertionError("abort_with_status returns only by raising")

    def _hold(self, change: int) -> None:
        with self._held_lock:
            self.held += change
        if self.queue is not None:  # the bots' calls
            metrics.BOT_WORK.inc(change)


def _consume(future: asyncio.Future[Any]) -> None:
    """Take the outcome of work whose call went away (its error is logged, not lost)."""
    if not future.cancelled() and future.exception() is not None:
        log.warning("work of a cancelled call failed", exc_info=future.exception())


async def abort(context: grpc.aio.ServicerContext, error: Exception) -> None:
    """End the call with the status of ``error`` (raises, as abort_with_status does)."""
    if isinstance(error, (engine.InvalidInputError, engine.IllegalActionError)):
        error = from_engine(error)
    if not isinstance(error, ServiceError):
        log.error("unexpected error", exc_info=error)
        error = ServiceError("internal_error", "the service failed; the error was logged")
    await context.abort_with_status(to_status(error))


def on_the_loop(work: Callable[[Any, Any], T]) -> Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[T]]:
    """A servicer method from a short, CPU-bound ``work(self, request)``: it runs on the
    event loop, and its errors become statuses (one coroutine per call, no more)."""

    @functools.wraps(work)
    async def method(self: Any, request: Any, context: grpc.aio.ServicerContext) -> T:
        try:
            return work(self, request)
        except Exception as error:
            await abort(context, error)
        raise AssertionError("abort_with_status returns only by raising")

    return method


def seed_of(msg: Any) -> Any:
    kind = msg.WhichOneof("seed")
    return getattr(msg, kind) if kind else None




def view_message(view: engine.ViewDoc) -> pb.View:
    """The View message of a view document."""
    return convert.view_message(msgspec.to_builtins(view))


def peer_address(peer: str) -> str:
    """The client address of a grpc peer string ("ipv4:1.2.3.4:5678" is "1.2.3.4",
    "ipv6:[::1]:5678" is "::1"), written as HTTP's remote address is."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return peer
    return urllib.parse.unquote(rest.rpartition(":")[0]).strip("[]")  # grpc writes [::1] as %5B::1%5D
