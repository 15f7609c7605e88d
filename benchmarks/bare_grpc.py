"""The baseline of benchmarks/bench_grpc.py: a bare grpcio echo service under the same server
settings as the gRPC API (grpc.aio, message limits, keepalive)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncio
import signal

import grpc

from service.config import Settings
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.server import KEEPALIVE_OPTIONS  # the same settings as the service


async def serve(port: int) -> None:
    settings = Settings.from_env()
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", settings.max_body_bytes),
                                      ("grpc.max_send_message_length", 4 * settings.max_body_bytes),
                                      *KEEPALIVE_OPTIONS])

    async def echo(request: pb.ApplyRequest, context: object) -> pb.ApplyRequest:
        return request  # the message back, as a grpcio service written the usual way does

    handler = grpc.unary_unary_rpc_method_handler(echo, request_deserializer=pb.ApplyRequest.FromString,
                                                  response_serializer=pb.ApplyRequest.SerializeToString)
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("bench.Echo", {"Echo": handler})])
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    done = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
    await done.wait()
    await server.stop(1)


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
