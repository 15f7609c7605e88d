"""Service errors with stable machine-readable codes (API.md), shared by HTTP and gRPC.

The application layer raises these; each transport maps ``code`` to its own status
(``HTTP_STATUS`` here, the gRPC mapping beside the gRPC server).
"""

from __future__ import annotations

from typing import Any

from engine import IllegalActionError, InvalidInputError

HTTP_STATUS = {
    "invalid_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "version_conflict": 409,
    "too_large": 413,
    "unsupported_media_type": 415,
    "illegal_action": 422,
    "idempotency_key_reused": 422,
    "too_many_requests": 429,
    "internal_error": 500,
    "unavailable": 503,
}

TITLES = {
    "invalid_request": "Invalid request",
    "unauthorized": "Missing or unknown credentials",
    "forbidden": "Not allowed for this seat",
    "not_found": "Not found",
    "method_not_allowed": "Method not allowed",
    "version_conflict": "Version conflict",
    "too_large": "Request body too large",
    "unsupported_media_type": "Unsupported media type",
    "illegal_action": "Illegal action",
    "idempotency_key_reused": "Idempotency key reused with a different request",
    "too_many_requests": "Too many requests",
    "internal_error": "Internal error",
    "unavailable": "Session store unavailable",
}


class ServiceError(Exception):
    """An error a caller can act on: ``code`` (stable), ``detail`` (for people), extras."""

    def __init__(self, code: str, detail: str, **extra: Any) -> None:
        assert code in HTTP_STATUS, code
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.extra = extra

    def problem(self) -> dict[str, Any]:
        """The RFC 9457 problem document (without ``status``, which is per transport)."""
        return {"type": f"urn:ono99:problem:{self.code}", "title": TITLES[self.code],
                "code": self.code, "detail": self.detail, **self.extra}


def from_engine(exc: InvalidInputError | IllegalActionError) -> ServiceError:
    """The service error for an engine error."""
    if isinstance(exc, IllegalActionError):
        return ServiceError("illegal_action", exc.message, rule=exc.rule, reason=exc.reason)
    return ServiceError("invalid_request", str(exc), **({"field": exc.path} if exc.path else {}))
