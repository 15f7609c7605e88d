"""``ono99``: run the service.

    ono99 serve   HTTP API under gunicorn, with an embedded Redis-protocol server when
                  REDIS_URL is not set
    ono99 http    the HTTP API alone (REDIS_URL, or --no-sessions)
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from . import logs
from .config import Settings

log = logging.getLogger("ono99")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="address to listen on (ONO99_HOST, default 127.0.0.1)")
    parser.add_argument("--http-port", type=int, help="HTTP port (ONO99_HTTP_PORT, default 8080)")
    parser.add_argument("--workers", type=int, help="gunicorn worker processes (ONO99_WORKERS, default 2)")
    parser.add_argument("--redis-url", help="Redis for sessions (REDIS_URL)")
    parser.add_argument("--no-sessions", action="store_true", help="stateless endpoints only")
    parser.add_argument("--log-level", help="debug, info, warning, error (ONO99_LOG_LEVEL, default info)")


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(host=args.host, http_port=args.http_port, workers=args.workers,
                             redis_url=args.redis_url, log_level=args.log_level,
                             sessions=False if args.no_sessions else None)


def run_gunicorn(settings: Settings) -> None:
    """Serve the HTTP API with gunicorn in this process (the master) until SIGTERM/SIGINT."""
    from gunicorn.app.base import BaseApplication

    from .http_api import create_app, warn_unsigned_states

    class Gunicorn(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            options = {
                "bind": f"{settings.host}:{settings.http_port}", "workers": settings.workers,
                "worker_class": "sync", "graceful_timeout": 20, "timeout": 30, "keepalive": 5,
                "accesslog": None, "errorlog": "-", "loglevel": settings.log_level,
                "limit_request_line": 8190, "proc_name": "ono99-http",
            }
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            logs.setup(settings.log_level)
            return create_app(settings, warn_unsigned=False)

    if not settings.state_secret:
        warn_unsigned_states()
    log.info("HTTP API starting", extra={"bind": f"{settings.host}:{settings.http_port}",
                                         "workers": settings.workers, "sessions": bool(settings.redis_url)})
    Gunicorn().run()


def serve(args: argparse.Namespace, settings: Settings) -> int:
    """Everything on its embedded defaults."""
    server = None
    if settings.sessions and not settings.redis_url:
        from .embedded_redis import start_embedded

        server = start_embedded(Path(args.redis_data) if args.redis_data else None)
        settings.redis_url = server.connection_url
        os.environ["REDIS_URL"] = settings.redis_url
    try:
        run_gunicorn(settings)
    finally:
        if server is not None:
            server.stop()
    return 0


def http(args: argparse.Namespace, settings: Settings) -> int:
    """The HTTP API alone."""
    if settings.sessions and not settings.redis_url:
        sys.exit("ono99 http: set REDIS_URL (or --redis-url), or pass --no-sessions")
    run_gunicorn(settings)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ono99`` command."""
    parser = argparse.ArgumentParser(prog="ono99", description="ONO 99 rules service")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="run the service on its embedded defaults")
    _common(p_serve)
    p_serve.add_argument("--redis-data", help="directory where the embedded Redis keeps its data "
                                              "(default: in memory only)")
    p_serve.set_defaults(func=serve)
    p_http = sub.add_parser("http", help="run the HTTP API alone")
    _common(p_http)
    p_http.set_defaults(func=http)
    args = parser.parse_args(argv)
    settings = _settings(args)
    logs.setup(settings.log_level)
    return int(args.func(args, settings))


if __name__ == "__main__":
    sys.exit(main())
