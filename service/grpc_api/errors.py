"""Service errors as gRPC statuses with google.rpc.Status details (grpcio-status)."""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from ..errors import ServiceError

# The HTTP table of API.md, in gRPC terms.
GRPC_CODE = {
    "invalid_request": code_pb2.INVALID_ARGUMENT,
    "unauthorized": code_pb2.UNAUTHENTICATED,
    "forbidden": code_pb2.PERMISSION_DENIED,
    "not_found": code_pb2.NOT_FOUND,
    "method_not_allowed": code_pb2.UNIMPLEMENTED,
    "version_conflict": code_pb2.ABORTED,
    "too_large": code_pb2.RESOURCE_EXHAUSTED,
    "unsupported_media_type": code_pb2.INVALID_ARGUMENT,
    "illegal_action": code_pb2.FAILED_PRECONDITION,
    "idempotency_key_reused": code_pb2.FAILED_PRECONDITION,
    "too_many_requests": code_pb2.RESOURCE_EXHAUSTED,
    "internal_error": code_pb2.INTERNAL,
    "unavailable": code_pb2.UNAVAILABLE,
}


def to_status(error: ServiceError) -> grpc.Status:
    """The gRPC status of a service error: code, message and an ErrorInfo detail whose
    ``reason`` is the stable code and whose metadata carries rule, reason, field, ..."""
    info = error_details_pb2.ErrorInfo(reason=error.code, domain="ono99",
                                       metadata={k: str(v) for k, v in error.extra.items() if k != "errors"})
    detail = any_pb2.Any()
    detail.Pack(info)
    return rpc_status.to_status(status_pb2.Status(code=GRPC_CODE[error.code], message=error.detail,
                                                  details=[detail]))
