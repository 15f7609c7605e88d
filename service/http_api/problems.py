"""Every error as application/problem+json (RFC 9457) with the stable ``code`` of API.md."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from flask import Response, request
from werkzeug.exceptions import HTTPException

from ..application import bearer_token
from ..errors import ERRORS, ServiceError

log = logging.getLogger("ono99.http")
PROBLEM_JSON = "application/problem+json"
_json = msgspec.json.Encoder()

# werkzeug's and webargs' HTTP errors by status (webargs refuses a body with 422).
_BY_STATUS = {ERRORS[code].http: code for code in (
    "invalid_request", "unauthorized", "forbidden", "not_found", "method_not_allowed", "too_large",
    "unsupported_media_type", "unavailable")} | {422: "invalid_request"}


# The application names fields canonically; these are HTTP's names for them.
FIELD_NAMES = {"idempotency_key": "Idempotency-Key"}


def problem_response(error: ServiceError, headers: dict[str, str] | None = None) -> Response:
    """The problem+json response of a service error."""
    status = ERRORS[error.code].http
    body = {**error.renamed(FIELD_NAMES).problem(), "status": status}
    if status >= 500:
        log.error("request failed", extra={"code": error.code, "path": request.path})
    if "retry_after" in error.extra:
        headers = {**(headers or {}), "Retry-After": str(error.extra["retry_after"])}
    if status == 401:  # RFC 6750: the scheme to use, and whether the token sent was refused
        sent = bearer_token(request.headers.get("Authorization")) is not None
        headers = {**(headers or {}), "WWW-Authenticate": 'Bearer realm="ono99"'
                   + (', error="invalid_token"' if sent else "")}
    return Response(_json.encode(body), status=status, mimetype=PROBLEM_JSON,
                    headers=headers)


def _first_error(errors: Any, path: str = "") -> tuple[str, str]:
    """The first validation message's field (dotted path, "" for the whole body) and the
    message, prefixed with the field."""
    if isinstance(errors, dict):
        for key, value in errors.items():
            if key in ("json", "_schema"):  # the body, or the whole of it (marshmallow's name)
                return _first_error(value, path)
            return _first_error(value, f"{path}.{key}" if path else str(key))
    if isinstance(errors, list) and errors:
        first = errors[0]
        if isinstance(first, str):
            return path, first if first.startswith(path) else f"{path}: {first}"
        return _first_error(first, path)
    return path, "invalid request"


def from_http_exception(exc: HTTPException) -> Response:
    """Problem response for werkzeug's and webargs' HTTP errors (bad bodies, 404, 405, 413)."""
    status = exc.code or 500
    code = _BY_STATUS.get(status, "internal_error")
    data = getattr(exc, "data", None) or {}
    messages = data.get("messages")
    if messages is not None:
        field, message = _first_error(messages)
        error = ServiceError(code, message, errors=messages, **({"field": field} if field else {}))
    elif status == 413:
        error = ServiceError("too_large", "the request body is over the size limit")
    else:
        error = ServiceError(code, exc.description or exc.name)
    response = problem_response(error)
    if status == 405 and exc.get_response().headers.get("Allow"):
        response.headers["Allow"] = exc.get_response().headers["Allow"]
    return response


def from_unexpected(exc: Exception) -> Response:
    """A 500 that says nothing of the internals (the log has the traceback)."""
    log.exception("unexpected error", extra={"path": request.path})
    return problem_response(ServiceError("internal_error", "the service failed; the error was logged"))


def document_answer(blueprint: Any, status: int, schema: Any = None) -> Any:
    """Decorator: the operation's success answer in the OpenAPI document (a marshmallow
    schema, a component's name, or None for no body). Documentation only: the views build
    their responses themselves, so flask-smorest's ``response``, which wraps a view to
    serialize what it returns, would only add a call to each request."""
    from http import HTTPStatus

    content = {} if schema is None else {"content": {"application/json": {"schema": schema}}}
    return blueprint.doc(responses={status: {"description": HTTPStatus(status).phrase, **content}})


def document_errors(blueprint: Any, *statuses: int) -> Any:
    """Decorator: list these error statuses (problem documents: flask-smorest's response
    components) in the OpenAPI operation. Documentation only: unlike ``alt_response`` it
    puts no wrapper around the view for each status."""
    from http import HTTPStatus

    return blueprint.doc(responses={status: HTTPStatus(status).name
                                    for status in statuses})
