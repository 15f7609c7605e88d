"""Service errors as gRPC statuses with google.rpc.Status details (grpcio-status)."""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from ..errors import ERRORS, ServiceError

# The application names fields canonically; these are gRPC's names for them.
FIELD_NAMES = {"after": "after_version", "state_signature": "state.signature"}


def to_status(error: ServiceError) -> grpc.Status:
    """The gRPC status of a service error: code, message and an ErrorInfo detail whose
    ``reason`` is the stable code and whose metadata carries rule, reason, field, ...;
    a RetryInfo detail too when the error says when to retry."""
    error = error.renamed(FIELD_NAMES)
    metadata = {k: str(v) for k, v in error.extra.items() if k != "errors"}
    info = error_details_pb2.ErrorInfo(reason=error.code, domain="ono99", metadata=metadata)
    details = [_packed(info)]
    if "retry_after" in error.extra:  # google.rpc.RetryInfo: when a retry may succeed
        details.append(_packed(error_details_pb2.RetryInfo(
            retry_delay=duration_pb2.Duration(seconds=int(error.extra["retry_after"])))))
    code = code_pb2.Code.Value(ERRORS[error.code].grpc)
    return rpc_status.to_status(status_pb2.Status(code=code, message=error.detail, details=details))


def _packed(message: Any) -> any_pb2.Any:
    detail = any_pb2.Any()
    detail.Pack(message)
    return detail
