"""Loopback ports for servers started on demand (embedded Redis, tests, benchmarks)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port the kernel has just handed out (another process may still take it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
