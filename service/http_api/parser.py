"""webargs parser: JSON bodies parsed by msgspec, invalid input answered with 400."""

from __future__ import annotations

from typing import Any

import flask
import msgspec
from webargs import core
from webargs.flaskparser import FlaskParser, abort, is_json_request

_decoder = msgspec.json.Decoder()


class Parser(FlaskParser):
    """Malformed JSON, wrong types and unknown fields are 400 ``invalid_request`` (API.md)."""

    DEFAULT_VALIDATION_STATUS = 400

    def _raw_load_json(self, req: flask.Request) -> Any:
        data = req.get_data(cache=True)
        if not data:
            return core.missing
        if not is_json_request(req):
            abort(415, messages={"json": ["send the body as application/json"]})
        try:
            return _decoder.decode(data)
        except msgspec.DecodeError as exc:
            abort(400, messages={"json": [f"not valid JSON: {exc}"]})
