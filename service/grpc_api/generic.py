"""Services added to the gRPC server as generic handlers only (a workaround, see below)."""

from __future__ import annotations

from typing import Any

import grpc


class GenericHandlersOnly:
    """A grpc.aio server as the ``add_*_to_server`` functions see it: each service is
    added as a generic handler only.

    Those functions also register every method with ``add_registered_method_handlers``.
    grpc.aio then keeps one pending call per registered method and runs asyncio.wait
    over all of them for every call it accepts, so each registered method (14 here,
    health and reflection included) costs every call (grpc/grpc#43461). The generic
    handlers serve the same methods; CallInterceptor looks each one up once.

    It relies on how grpcio's generated code registers services, so grpcio is pinned by
    requirements.lock; it can go once grpc/grpc#43461 is released (then registered
    methods cost nothing per call and may even be faster).
    """

    def __init__(self, server: grpc.aio.Server) -> None:
        self.server = server

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        self.server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, service: str, handlers: Any) -> None:
        """Left out: the generic handler added with them serves these methods."""
