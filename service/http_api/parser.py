"""Request bodies: JSON parsed by msgspec, invalid input answered with 400.

Most routes' bodies go through webargs and their marshmallow schema (:class:`Parser`).
The busiest routes' bodies (:func:`typed_body`) are decoded by msgspec straight into a
Struct made of the engine's own documents, and documented by that Struct's JSON Schema:
the same checks, without building the body as dicts first and checking it again field
by field in Python.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import flask
import msgspec
from gunicorn.http.errors import ParseException
from webargs import core
from webargs.flaskparser import FlaskParser, is_json_request
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge

from ..errors import ServiceError

S = TypeVar("S", bound=msgspec.Struct)

_decoder = msgspec.json.Decoder()

MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays and objects a body may have (a request of this API needs 5)."""

_DEPTH_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def too_deep(data: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON text nests arrays and objects deeper than ``limit``.

    Decoders recurse once per level, so a body of 100,000 ``[`` would exhaust the stack
    (here, or in whatever walks the value later): it is refused before decoding. A body
    with no more brackets than ``limit`` cannot nest deeper, which is every request's
    case. Otherwise the strings are cut out (escaped backslashes, then escaped quotes
    removed, so every quote left opens or closes one) and the brackets outside them
    counted: each step a single pass at C speed, linear in the body's size whatever it
    holds.
    """
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    outside = b"".join(data.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[0::2])
    brackets = outside.translate(None, _NOT_BRACKETS)
    return bool(brackets) and max(itertools.accumulate(map(_DEPTH_STEP.__getitem__, brackets))) > limit


class Parser(FlaskParser):
    """Malformed JSON, wrong types and unknown fields are 400 ``invalid_request`` (API.md)."""

    DEFAULT_VALIDATION_STATUS = 400

    def _raw_load_json(self, req: flask.Request) -> Any:
        data = json_bytes(req)
        return _decode(_decoder, data) if data else core.missing


def _refused(code: str, message: str) -> ServiceError:
    return ServiceError(code, message, errors={"json": [message]})


def json_bytes(req: flask.Request) -> bytes:
    """The request's body, b"" when it has none: 413 when it is over the size limit, 400
    when the client stops before the end of what it announced, 415 when it is not sent
    as JSON, 400 when it nests deeper than MAX_JSON_DEPTH. Every route reads its body
    once, here (werkzeug's cache of it stays empty)."""
    data = _body(req)
    if not data:
        return b""
    if not is_json_request(req):
        raise _refused("unsupported_media_type", "send the body as application/json")
    if too_deep(data):
        raise _refused("invalid_request", f"not valid JSON: nested deeper than {MAX_JSON_DEPTH} levels")
    return data


@contextlib.contextmanager
def _reading() -> Iterator[None]:
    """Around every read of the request's body: what the client's bytes or connection
    make a read raise is a 400, not a failure of the service. A read timeout or a reset
    (as werkzeug's own reader takes them) is ClientDisconnected; a chunked body whose
    framing is malformed (gunicorn's parse errors: a chunk size that is no hex number,
    a chunk without its line end, a malformed trailer) is ``invalid_request``."""
    try:
        yield
    except (OSError, ValueError):
        raise ClientDisconnected() from None
    except ParseException:
        raise _refused("invalid_request", "the chunked body is malformed") from None


def _body(req: flask.Request) -> bytes:
    """The request's bytes (413, or 400 for a body cut short, as ``json_bytes`` says).

    A body of known length is read from the WSGI input for that length, in one read as
    a rule: behind a server that ends the input itself (gunicorn), werkzeug's
    ``get_data`` reads a body through a wrapper limited to MAX_CONTENT_LENGTH, in steps
    of 64 KiB, each into a new buffer, and asks once more at the end (10 µs for a 2 KB
    body where the one read takes 3 µs), and hands on a body cut short as if whole. A
    streamed (chunked) body is read by ``get_data``. Every read is within :func:`_reading`.
    """
    length = req.content_length
    if length is None:
        with _reading():
            data = req.get_data(cache=True)
        _check_streamed_size(req, data)
        return data
    limit = req.max_content_length
    if limit is not None and length > limit:
        raise RequestEntityTooLarge()
    stream = req.environ["wsgi.input"]
    with _reading():
        body: bytes = stream.read(length)  # WSGI: at most CONTENT_LENGTH bytes
        while len(body) < length:  # a server may answer a read with less than asked
            more = stream.read(length - len(body))
            if not more:
                raise ClientDisconnected()  # closed before the end of what it announced
            body += more
    return body


def _decode(decoder: msgspec.json.Decoder[Any], data: bytes) -> Any:
    """``data`` decoded: 400 for text that is no JSON, or (a typed decoder) for JSON that
    does not fit its Struct."""
    try:
        return decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise _invalid(exc) from None
    except msgspec.DecodeError as exc:
        raise _refused("invalid_request", f"not valid JSON: {exc}") from None


def _check_streamed_size(req: flask.Request, data: bytes) -> None:
    """413 for a body without Content-Length (chunked) that goes past MAX_CONTENT_LENGTH.

    A Content-Length over the limit is refused before reading (``_body``), but a
    streamed body is only cut at the limit: ``get_data`` returns its first
    MAX_CONTENT_LENGTH bytes as if they were all. One byte more in the stream means the
    body was longer.
    """
    limit = req.max_content_length
    if limit is None or len(data) < limit:
        return
    with _reading():
        more = req.environ["wsgi.input"].read(1)
    if more:
        raise RequestEntityTooLarge()


# msgspec's messages name the field they miss or refuse in backticks ("Object missing
# required field `action`", "Object contains unknown field `x`") and end with its place.
_NAMED = re.compile(r"Object (?:missing required|contains unknown) field `([^`]*)`")


def _invalid(exc: msgspec.ValidationError) -> ServiceError:
    """The 400 of a body that does not fit its Struct, shaped as webargs' are: ``field``
    the dotted path, ``errors`` the message under it."""
    message, sep, where = str(exc).rpartition(" - at `")
    if not sep:
        message, where = str(exc), "$`"
    parts = [p for p in re.split(r"[.\[\]]", where.rstrip("`")[1:]) if p]
    named = _NAMED.match(message)
    if named:
        parts.append(named.group(1))
    path = ".".join(parts)
    errors: Any = [message]
    for part in reversed(parts):
        errors = {part: errors}
    return ServiceError("invalid_request", f"{path}: {message}" if path else message,
                        **({"field": path} if path else {}), errors={"json": errors})


def read_body(decoder: msgspec.json.Decoder[S]) -> S:
    """The request's JSON body decoded by ``decoder`` (400, 413 or 415 as :class:`Parser` answers)."""
    data = json_bytes(flask.request)
    if not data:
        raise _refused("invalid_request", "send a JSON body")
    result: S = _decode(decoder, data)
    return result


def component_name(kind: type[msgspec.Struct]) -> str:
    """The OpenAPI component of a body Struct: ``ApplyBody`` is ``Apply`` (as marshmallow's
    ``ApplySchema`` would be)."""
    return kind.__name__.removesuffix("Body")


def typed_body(blueprint: Any, kind: type[S]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the view gets its JSON body as a ``kind`` (see :func:`read_body`) as its
    first argument (after ``self``), and the OpenAPI operation documents the body as
    ``kind``'s component (schemas.engine_components registers it)."""
    decoder = msgspec.json.Decoder(kind)
    documented = blueprint.doc(requestBody={"required": True, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{component_name(kind)}"}}}})

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def parsed(self: Any, *args: Any, **kwargs: Any) -> Any:
            return view(self, read_body(decoder), *args, **kwargs)

        return documented(parsed)  # type: ignore[no-any-return]
    return decorate
