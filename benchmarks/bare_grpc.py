"""The baseline of benchmarks/grpc.py: a bare grpcio echo service under the same server
settings as the gRPC API (thread pool, message limits, keepalive)."""

from __future__ import annotations

import sys
from pathlib import Path

# This folder holds benchmarks/grpc.py, which would hide the grpc package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import signal  # noqa: E402
import threading  # noqa: E402
from concurrent import futures  # noqa: E402

import grpc  # noqa: E402

from service.config import Settings  # noqa: E402
from service.grpc_api.server import KEEPALIVE_OPTIONS  # noqa: E402


def main() -> None:
    port = int(sys.argv[1])
    settings = Settings.from_env()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=settings.grpc_threads),
                         options=[("grpc.max_receive_message_length", settings.max_body_bytes),
                                  ("grpc.max_send_message_length", 4 * settings.max_body_bytes), *KEEPALIVE_OPTIONS])
    echo = grpc.unary_unary_rpc_method_handler(lambda request, context: request)  # raw bytes in, same bytes out
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("bench.Echo", {"Echo": echo})])
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait()
    server.stop(1).wait()


if __name__ == "__main__":
    main()
