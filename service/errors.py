"""Service errors with stable machine-readable codes (API.md), shared by HTTP and gRPC.

The application layer raises these; each transport maps ``code`` to its own status
from the one table, ``ERRORS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine import IllegalActionError, InvalidInputError


@dataclass(frozen=True)
class ErrorCode:
    """How one error code is answered: HTTP status, gRPC status code, problem title."""

    http: int
    grpc: str  # the name of a google.rpc.Code
    title: str


# The one table of error codes. The HTTP and gRPC transports map from it, and a test
# checks the README and the .proto comment against it.
ERRORS: dict[str, ErrorCode] = {
    "invalid_request": ErrorCode(400, "INVALID_ARGUMENT", "Invalid request"),
    "unauthorized": ErrorCode(401, "UNAUTHENTICATED", "Missing or unknown credentials"),
    "forbidden": ErrorCode(403, "PERMISSION_DENIED", "Not allowed for this seat"),
    "not_found": ErrorCode(404, "NOT_FOUND", "Not found"),
    "method_not_allowed": ErrorCode(405, "UNIMPLEMENTED", "Method not allowed"),
    "version_conflict": ErrorCode(409, "ABORTED", "Version conflict"),
    "not_dealt": ErrorCode(409, "FAILED_PRECONDITION", "Not dealt yet"),
    "seed_refused": ErrorCode(409, "FAILED_PRECONDITION", "Seed not taken"),
    "precondition_failed": ErrorCode(412, "FAILED_PRECONDITION", "Precondition failed"),
    "too_large": ErrorCode(413, "RESOURCE_EXHAUSTED", "Request body too large"),
    "unsupported_media_type": ErrorCode(415, "INVALID_ARGUMENT", "Unsupported media type"),
    "illegal_action": ErrorCode(422, "FAILED_PRECONDITION", "Illegal action"),
    "idempotency_key_reused": ErrorCode(422, "FAILED_PRECONDITION",
                                        "Idempotency key reused with a different request"),
    "too_many_requests": ErrorCode(429, "RESOURCE_EXHAUSTED", "Too many requests"),
    "internal_error": ErrorCode(500, "INTERNAL", "Internal error"),
    "unavailable": ErrorCode(503, "UNAVAILABLE", "Session store unavailable"),
    "bots_busy": ErrorCode(503, "UNAVAILABLE", "Bots busy"),
}


class ServiceError(Exception):
    """An error a caller can act on: ``code`` (stable), ``detail`` (for people), extras."""

    def __init__(self, code: str, detail: str, **extra: Any) -> None:
        assert code in ERRORS, code
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.extra = extra

    def renamed(self, names: dict[str, str]) -> ServiceError:
        """This error with its field named as a transport names it (``names``: canonical
        to the transport's), in ``field`` and where the detail begins with it."""
        field = self.extra.get("field")
        if field not in names:
            return self
        detail = names[field] + self.detail[len(field):] if self.detail.startswith(field) else self.detail
        return ServiceError(self.code, detail, **{**self.extra, "field": names[field]})

    def problem(self) -> dict[str, Any]:
        """The RFC 9457 problem document (without ``status``, which is per transport)."""
        return {"type": f"urn:ono99:problem:{self.code}", "title": ERRORS[self.code].title,
                "code": self.code, "detail": self.detail, **self.extra}


def engine_call(call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)`` with the engine's errors as service errors."""
    try:
        return call(*args, **kwargs)
    except (InvalidInputError, IllegalActionError) as exc:
        raise from_engine(exc) from None


def from_engine(exc: InvalidInputError | IllegalActionError) -> ServiceError:
    """The service error for an engine error."""
    if isinstance(exc, IllegalActionError):
        return ServiceError("illegal_action", exc.message, rule=exc.rule, reason=exc.reason)
    return ServiceError("invalid_request", str(exc), **({"field": exc.path} if exc.path else {}))
