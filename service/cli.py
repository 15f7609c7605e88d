"""``ono99``: run the service.

    ono99 serve   the HTTP API (gunicorn), the gRPC API and a timekeeper (processes of
                  their own), with an embedded Redis-protocol server when REDIS_URL is not set
    ono99 http    the HTTP API alone (REDIS_URL, or --no-sessions)
    ono99 grpc    the gRPC API alone (REDIS_URL, or --no-sessions)
    ono99 timers  a timekeeper alone: forced moves of timed sessions (REDIS_URL)
    ono99 webhooks  a webhook deliverer alone (REDIS_URL)
    ono99 check   exit 0 when a server answers ready (container health checks)
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import engine

from . import logs
from .config import Settings, env_name

log = logging.getLogger("ono99")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help=_about("host", "address to listen on"))
    parser.add_argument("--http-port", type=int, help=_about("http_port", "HTTP port"))
    parser.add_argument("--grpc-port", type=int, help=_about("grpc_port", "gRPC port"))
    parser.add_argument("--workers", type=int, help=_about("workers", "gunicorn worker processes"))
    parser.add_argument("--redis-url", help=_about("redis_url", "Redis for sessions"))
    parser.add_argument("--no-sessions", action="store_true", help="stateless endpoints only")
    parser.add_argument("--log-level", help=_about("log_level", "debug, info, warning, error, critical"))


def _about(setting: str, what: str) -> str:
    """A flag's help: what it sets, its environment variable and its default (Settings)."""
    default = getattr(Settings, setting)
    return f"{what} ({env_name(setting)}" + (f", default {default})" if default is not None else ")")


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(metrics_port=getattr(args, "metrics_port", None), host=args.host,
                             http_port=args.http_port, grpc_port=args.grpc_port,
                             workers=args.workers,
                             redis_url=args.redis_url, log_level=args.log_level,
                             sessions=False if args.no_sessions else None,
                             timers=False if getattr(args, "no_timers", False) else None,
                             webhooks=False if getattr(args, "no_webhooks", False) else None)


def run_gunicorn(settings: Settings) -> None:
    """Serve the HTTP API with gunicorn in this process (the master) until SIGTERM/SIGINT."""
    from gunicorn.app.base import BaseApplication

    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # One directory shared by the workers, so /metrics adds up across them.
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="ono99-metrics-")
    from . import http_server, metrics
    from .signing import warn_unsigned_states

    class Gunicorn(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            options = {**http_server.options(settings),
                       "child_exit": lambda server, worker: metrics.worker_exited(worker.pid)}
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            logs.setup(settings.log_level)
            # Imported in the worker, after gevent has patched the standard library.
            from .application import Application
            from .http_api import create_app

            application = Application.from_settings(settings, think=http_server.BotPool.of(settings).think)
            return create_app(settings, application, warn_unsigned=False)

    if not settings.state_secret:
        warn_unsigned_states()
    log.info("HTTP API starting", extra={"bind": f"{settings.host}:{settings.http_port}", "engine": engine.BUILD,
                                         "workers": settings.workers, "sessions": settings.redis_configured})
    Gunicorn().run()


# The ports a command listens on, with the settings that name them (for errors).
_PORTS = {"http": ("HTTP", "ONO99_HTTP_PORT / --http-port"),
          "grpc": ("gRPC", "ONO99_GRPC_PORT / --grpc-port"),
          "metrics": ("gRPC metrics", "ONO99_METRICS_PORT / --metrics-port")}


def ports_free(settings: Settings, *names: str) -> bool:
    """Whether this command's ports (``http``, ``grpc``, ``metrics``; 0: unused) can be
    bound on ``settings.host``; if one cannot, one error line names it and its setting.

    Checked before anything starts: otherwise gunicorn retries a taken port for five
    seconds, and a gRPC process (or its metrics server) dies on one while the rest runs.
    """
    for name in names:
        port = getattr(settings, f"{name}_port")
        if not port:
            continue
        problem = _bind_error(settings.host, port)
        if problem is not None:
            what, setting = _PORTS[name]
            log.error(f"cannot listen on the {what} port {settings.host}:{port} ({setting}): {problem}",
                      extra={"port": port, "setting": setting.split()[0]})
            return False
    return True


def _bind_error(host: str, port: int) -> str | None:
    """Why a listening socket on ``host:port`` cannot be bound now, or None."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do
            probe.bind(address)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


class Children:
    """The processes ``serve`` starts beside gunicorn (which runs in serve's own process).

    A thread waits on each; when one ends while serve runs, it logs which one died and
    stops gunicorn (SIGTERM to this process: its graceful stop), so serve exits non-zero
    instead of running on with half of itself.
    """

    def __init__(self) -> None:
        self.died: str | None = None
        self.closing = False

    def watch(self, name: str, process: subprocess.Popen[bytes] | None) -> None:
        if process is not None:
            threading.Thread(target=self._wait, args=(name, process), name=f"ono99-watch-{name}",
                             daemon=True).start()

    def _wait(self, name: str, process: subprocess.Popen[bytes]) -> None:
        code = _wait_exit(process)
        if self.closing or self.died is not None:
            return
        self.died = name
        log.error(f"the {name} (pid {process.pid}) died (exit code {code}): stopping ono99 serve",
                  extra={"child": name, "pid": process.pid, "exit_code": code})
        os.kill(os.getpid(), signal.SIGTERM)


def _wait_exit(process: subprocess.Popen[bytes]) -> int | None:
    """Wait until ``process`` ends; its exit code (negative: the signal), None if unknown.

    The process is left for Popen (and gunicorn's reaping of any child) to collect:
    Popen.wait would hold Popen's lock for as long as it waits, and gunicorn workers,
    forked meanwhile, would inherit it locked.
    """
    if not hasattr(os, "waitid"):
        while process.poll() is None:
            threading.Event().wait(0.5)
        return process.returncode
    try:
        found = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        return None  # already collected
    if found is None:
        return None
    return found.si_status if found.si_code == os.CLD_EXITED else -found.si_status


def serve(args: argparse.Namespace, settings: Settings) -> int:
    """Everything on its embedded defaults: gRPC in a process of its own (never inside
    forked gunicorn workers), HTTP under gunicorn in this one.

    Exits non-zero at once when one of its ports cannot be bound, and as soon as the
    gRPC process or the embedded Redis dies (after gunicorn's graceful stop)."""
    if not ports_free(settings, "http", "grpc", "metrics"):
        return 1
    owner = os.getpid()  # gunicorn workers fork inside this call and leave it by SystemExit
    children = Children()
    # Until gunicorn installs its own, a SIGTERM (a watcher's too) ends serve through the cleanup below.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(1 if children.died else 0))
    server = _embedded_redis(args, settings, children)
    env = _child_env(settings)
    grpc_process = subprocess.Popen([sys.executable, "-m", "service.cli", "grpc"], env=env)
    children.watch("gRPC server", grpc_process)
    keeper = _beside_http("timers", "timekeeper", env, children) if settings.sessions and settings.timers else None
    deliverer = (_beside_http("webhooks", "webhook deliverer", env, children)
                 if settings.sessions and settings.webhooks else None)
    code: int | str | None = 0
    try:
        run_gunicorn(settings)
    except SystemExit as exc:
        if os.getpid() != owner:
            raise  # a gunicorn worker leaving: nothing of serve's is its to stop
        code = exc.code
    finally:
        if os.getpid() == owner:
            children.closing = True
            processes = [p for p in (grpc_process, keeper, deliverer) if p is not None]
            for child in processes:
                child.terminate()
            for child in processes:
                try:
                    child.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    child.kill()
            if server is not None:
                server.stop()
    if children.died is not None:
        return 1
    if code:
        log.error(f"the HTTP server (gunicorn) stopped with exit code {code}: stopping ono99 serve")
        return code if isinstance(code, int) else 1
    return 0


def _beside_http(command: str, name: str, env: dict[str, str], children: Children) -> subprocess.Popen[bytes]:
    """``ono99 COMMAND`` in a process of its own, watched as ``name``. Its metrics join the
    HTTP workers' (prometheus-client's multiprocess directory), so /metrics on the HTTP
    port shows them: the gRPC process has the metrics port."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="ono99-metrics-")
    process = subprocess.Popen([sys.executable, "-m", "service.cli", command],
                               env={**env, "ONO99_METRICS_PORT": "0",
                                    "PROMETHEUS_MULTIPROC_DIR": os.environ["PROMETHEUS_MULTIPROC_DIR"]})
    children.watch(name, process)
    return process


def _embedded_redis(args: argparse.Namespace, settings: Settings, children: Children) -> Any:
    """Start the embedded Redis server when sessions are on and no Redis is configured,
    point the settings at it and watch it; None when there is nothing to start."""
    if not settings.sessions or settings.redis_configured:
        return None
    from .embedded_redis import start_embedded

    server = start_embedded(Path(args.redis_data) if args.redis_data else None)
    settings.redis_url = server.connection_url
    children.watch("embedded Redis server", getattr(server, "_process", None))
    if args.redis_data and not os.environ.get(env_name("redis_wait_aof")):
        # The embedded server fsyncs every write (appendfsync always): acknowledge an
        # action only once its append-only file holds it.
        settings.redis_wait_aof = True
    return server


def _child_env(settings: Settings) -> dict[str, str]:
    """The environment of serve's other processes: serve's own, with the settings it
    resolved (flags, the embedded Redis) written back as their variables."""
    resolved = ("redis_url", "redis_sentinels", "redis_sentinel_master", "host", "grpc_port", "metrics_port",
                "log_level", "sessions", "redis_wait_aof", "record_key")
    return {**os.environ, **{env_name(name): _as_env(getattr(settings, name)) for name in resolved}}


def _as_env(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _needs_redis(name: str, settings: Settings) -> None:
    if settings.sessions and not settings.redis_configured:
        sys.exit(f"ono99 {name}: set REDIS_URL (or --redis-url) or REDIS_SENTINELS, or pass --no-sessions")


def http(args: argparse.Namespace, settings: Settings) -> int:
    """The HTTP API alone."""
    _needs_redis("http", settings)
    if not ports_free(settings, "http"):
        return 1
    run_gunicorn(settings)
    return 0


def grpc(args: argparse.Namespace, settings: Settings) -> int:
    """The gRPC API alone."""
    _needs_redis("grpc", settings)
    if not ports_free(settings, "grpc", "metrics"):
        return 1
    from .grpc_api.server import run

    if not settings.state_secret:
        from .signing import warn_unsigned_states

        warn_unsigned_states()
    run(settings)
    return 0


def _metrics_until_stopped(settings: Settings) -> threading.Event:
    """For a process that serves no API: its metrics on ONO99_METRICS_PORT (0: none), and
    the event SIGTERM or SIGINT sets to stop it."""
    from prometheus_client import start_http_server

    if settings.metrics_port:
        start_http_server(settings.metrics_port, addr=settings.host)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop


def timers(args: argparse.Namespace, settings: Settings) -> int:
    """The timekeeper alone: moves for players whose turn's deadline passed."""
    _needs_redis("timers", settings)
    if not ports_free(settings, "metrics"):
        return 1
    from .application import Application
    from .timekeeper import Timekeeper

    app = Application.from_settings(settings)
    assert app.store is not None
    stop = _metrics_until_stopped(settings)
    Timekeeper(app.store, app.turns, settings.timer_interval, threads=settings.timer_threads,
               bot_threads=settings.bot_threads, stop_timeout=settings.bot_max_budget_ms / 1000 + 2).run(stop)
    return 0


def webhooks(args: argparse.Namespace, settings: Settings) -> int:
    """A webhook deliverer alone: posts the registered endpoints' events."""
    _needs_redis("webhooks", settings)
    if not ports_free(settings, "metrics"):
        return 1
    from .deliverer import BLOCK_MS, Deliverer, Delivery
    from .store import SessionStore

    # Its reads wait up to BLOCK_MS for new entries: its client waits longer than that.
    client = settings.connect_redis(timeout=max(settings.redis_timeout, BLOCK_MS / 1000 + 2))
    store = SessionStore(client, settings.redis_breaker_failures, settings.redis_breaker_reset)
    stop = _metrics_until_stopped(settings)
    Deliverer(store, settings.pick(Delivery, prefix="webhook_")).run(stop)
    return 0


def check(args: argparse.Namespace, settings: Settings) -> int:
    """Exit 0 when the target answers ready: an HTTP URL (2xx), or grpc://host:port whose
    health service reports SERVING. For container health checks."""
    target: str = args.target
    try:
        if target.startswith("grpc://"):
            import grpc as grpclib
            from grpc_health.v1 import health_pb2, health_pb2_grpc

            with grpclib.insecure_channel(target.removeprefix("grpc://")) as channel:
                reply = health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(service=args.service), timeout=args.timeout)
            ok = reply.status == health_pb2.HealthCheckResponse.SERVING
        else:
            import urllib.request

            with urllib.request.urlopen(target, timeout=args.timeout) as response:
                ok = 200 <= response.status < 300
    except Exception as exc:
        print(f"ono99 check: {target}: {exc}", file=sys.stderr)
        return 1
    return 0 if ok else 1


def _receipt(text: str) -> tuple[int, str]:
    version, _, chain_hash = text.partition(":")
    if not version.isdigit() or len(chain_hash) != 64 or set(chain_hash) - set("0123456789abcdef"):
        raise argparse.ArgumentTypeError(f"{text!r} is not VERSION:HASH (64 lowercase hex digits)")
    return int(version), chain_hash


def _public_key(text: str) -> str:
    if len(text) != 64 or set(text.lower()) - set("0123456789abcdef"):
        raise argparse.ArgumentTypeError(f"{text!r} is not an Ed25519 public key (64 hex digits)")
    return text.lower()


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")  # Python's json reads NaN and Infinity; a record holds neither


def verify(args: argparse.Namespace) -> int:
    """Check a game record (docs/RECORDS.md): one line per check; exit 0 only when every
    check holds, else 1 (2 when the file is not a JSON record)."""
    import json

    from engine.records import verify as verify_record

    try:
        with open(args.record, encoding="utf-8") as file:
            record = json.load(file, parse_constant=_not_json)
    except (OSError, ValueError, RecursionError) as exc:
        print(f"ono99 verify: {args.record}: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr)
        return 2
    if not isinstance(record, dict) or "format" not in record:
        print(f"ono99 verify: {args.record}: not a game record (a JSON object with a format)", file=sys.stderr)
        return 2
    checks = verify_record(record, args.receipt, args.key)
    sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]  # a record's odd text is shown
    for c in checks:
        print(f"{'ok  ' if c.ok else 'FAIL'} {c.name}" + (f": {c.detail}" if c.detail else ""))
    return 0 if all(c.ok for c in checks) else 1


def version_text() -> str:
    """The service's version and its engine's build (compiled by mypyc, or interpreted)."""
    import importlib.metadata

    return f"ono99 {importlib.metadata.version('ono99')} (engine: {engine.BUILD})"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ono99`` command."""
    parser = argparse.ArgumentParser(prog="ono99", description="ONO 99 rules service")
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="run the service on its embedded defaults")
    _common(p_serve)
    p_serve.add_argument("--redis-data", help="directory where the embedded Redis keeps its data "
                                              "(default: in memory only)")
    p_serve.add_argument("--metrics-port", type=int,
                         help=_about("metrics_port", "Prometheus metrics of the gRPC process; 0: off"))
    p_serve.add_argument("--no-timers", action="store_true",
                         help="no timekeeper in this serve (ONO99_TIMERS=false): timed sessions then need "
                              "an ono99 timers elsewhere")
    p_serve.add_argument("--no-webhooks", action="store_true",
                         help="no webhook deliverer in this serve (ONO99_WEBHOOKS=false): registered endpoints "
                              "then need an ono99 webhooks elsewhere")
    p_serve.set_defaults(func=serve)
    p_http = sub.add_parser("http", help="run the HTTP API alone")
    _common(p_http)
    p_http.set_defaults(func=http)
    p_grpc = sub.add_parser("grpc", help="run the gRPC API alone")
    _common(p_grpc)
    p_grpc.add_argument("--metrics-port", type=int,
                        help=_about("metrics_port", "Prometheus metrics of the gRPC process; 0: off"))
    p_grpc.set_defaults(func=grpc)
    p_timers = sub.add_parser("timers", help="run a timekeeper: forced moves of timed sessions")
    _common(p_timers)
    p_timers.add_argument("--metrics-port", type=int,
                          help=_about("metrics_port", "Prometheus metrics of the timekeeper; 0: off"))
    p_timers.set_defaults(func=timers)
    p_hooks = sub.add_parser("webhooks", help="run a webhook deliverer: signed events to registered endpoints")
    _common(p_hooks)
    p_hooks.add_argument("--metrics-port", type=int,
                         help=_about("metrics_port", "Prometheus metrics of the deliverer; 0: off"))
    p_hooks.set_defaults(func=webhooks)
    p_check = sub.add_parser("check", help="health check of a running server (for containers)")
    p_check.add_argument("target", help="http://host:port/readyz or grpc://host:port")
    p_check.add_argument("--service", default="", help="gRPC health service name (default: the whole server)")
    p_check.add_argument("--timeout", type=float, default=2.0)
    p_check.set_defaults(func=check)
    p_verify = sub.add_parser("verify", help="check a game record: format, hash chain, signature, receipts, "
                                             "replay, outcome")
    p_verify.add_argument("record", help="the record's JSON file")
    p_verify.add_argument("--receipt", action="append", type=_receipt, default=[], metavar="VERSION:HASH",
                          help="a chain hash kept from an answer, which the record must hold at that version")
    p_verify.add_argument("--key", type=_public_key, metavar="PUBLIC_KEY",
                          help="the service's record key (hex, GET /v1/records/key), which must have signed it")
    args = parser.parse_args(argv)
    if args.command == "check":
        return check(args, Settings())
    if args.command == "verify":
        return verify(args)
    try:
        settings = _settings(args)
    except ValueError as error:  # a setting that is malformed or out of its bounds
        parser.exit(2, f"ono99: {error}\n")
    logs.setup(settings.log_level)
    if args.command in ("serve", "http", "grpc"):
        settings.record_key = settings.resolved_record_key()  # one key for every worker and process it starts
    return int(args.func(args, settings))


if __name__ == "__main__":
    sys.exit(main())
