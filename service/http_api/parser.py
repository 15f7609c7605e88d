"""webargs parser: JSON bodies parsed by msgspec, invalid input answered with 400."""

from __future__ import annotations

import itertools
from typing import Any

import flask
import msgspec
from webargs import core
from webargs.flaskparser import FlaskParser, abort, is_json_request
from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge

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
        data = req.get_data(cache=True)
        _check_streamed_size(req, data)
        if not data:
            return core.missing
        if not is_json_request(req):
            abort(415, messages={"json": ["send the body as application/json"]})
        if too_deep(data):
            abort(400, messages={"json": [f"not valid JSON: nested deeper than {MAX_JSON_DEPTH} levels"]})
        try:
            return _decoder.decode(data)
        except msgspec.DecodeError as exc:
            abort(400, messages={"json": [f"not valid JSON: {exc}"]})


def _check_streamed_size(req: flask.Request, data: bytes) -> None:
    """413 for a body without Content-Length (chunked) that goes past MAX_CONTENT_LENGTH.

    werkzeug refuses a Content-Length over the limit, but a streamed body is only cut
    at the limit: ``get_data`` returns its first MAX_CONTENT_LENGTH bytes as if they
    were all. One byte more in the stream means the body was longer.
    """
    limit = req.max_content_length
    if limit is None or req.content_length is not None or len(data) < limit:
        return
    try:
        more = req.environ["wsgi.input"].read(1)
    except (OSError, ValueError):
        raise ClientDisconnected() from None
    if more:
        raise RequestEntityTooLarge()
