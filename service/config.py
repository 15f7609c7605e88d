"""Settings: flags override environment variables, which override the defaults.

Each setting is declared once, as a field of :class:`Settings`: its default is the
field's, its type the field's annotation, and its environment variable ``ONO99_`` and
the name in capitals (:func:`env_name`), unless the field names another (``env``
metadata: the Redis connection's, as Redis clients name them).
"""

from __future__ import annotations

import logging
import math
import os
import typing
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from engine.bots import MAX_BUDGET_MS, MAX_SIMULATIONS

T = TypeVar("T")


def _setting(default: Any, *, low: float | None = None, high: float | None = None, above: float | None = None,
             env: str | None = None) -> Any:
    """A setting's field: its default, the least (``low``) and most (``high``) value it
    takes, or a number it must be ``above``, and the environment variable it is read from
    when not ``ONO99_`` and its name."""
    return field(default=default, metadata={"low": low, "high": high, "above": above, "env": env})


def _port(default: int) -> Any:
    return _setting(default, low=1, high=65_535)


def _count(default: int, high: int | None = None) -> Any:
    """A count of things where none would stop the service: at least one."""
    return _setting(default, low=1, high=high)


def _seconds(default: float) -> Any:
    return _setting(default, above=0.0)


def _zero_for_none(default: float) -> Any:
    """A setting whose 0 the README names (off, no limit, none)."""
    return _setting(default, low=0)


PROCESSES_MAX = 256  # workers one command starts at most
THREADS_MAX = 1024  # threads of one pool at most
GRPC_MS_MAX = 2**31 - 1  # gRPC takes its connection ages as 32-bit milliseconds
SESSION_TTL_RANGE = (60, 30 * 86_400)  # idle seconds a session lives: the default and what a caller may ask
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")  # the names gunicorn knows too
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass
class Settings:
    """Everything the service can be told (README, "Configuration"). A value outside a
    setting's bounds (``_setting``) stops the service at start (OPERATIONS.md)."""

    host: str = "127.0.0.1"
    http_port: int = _port(8080)
    grpc_port: int = _port(50051)
    workers: int = _count(2, high=PROCESSES_MAX)
    http_connections: int = _count(1000)
    http_connections_per_peer: int = _zero_for_none(256)
    http_header_timeout: int = _count(5)
    http_read_timeout: float = _seconds(10.0)
    grpc_threads: int = _count(32, high=THREADS_MAX)
    grpc_max_connection_age: float = _setting(600.0, low=0.001, high=GRPC_MS_MAX // 1000)
    grpc_max_connection_age_grace: float = _setting(60.0, low=0, high=GRPC_MS_MAX // 1000)
    grpc_streams: int = _count(2000)
    grpc_streams_per_peer: int = _count(100)
    grpc_state_cache_bytes: int = _zero_for_none(16 * 1024 * 1024)
    session_state_cache_bytes: int = _zero_for_none(16 * 1024 * 1024)
    metrics_port: int = _setting(9464, low=0, high=65_535)
    redis_url: str | None = _setting(None, env="REDIS_URL")
    redis_timeout: float = _seconds(0.5)
    redis_connections: int = _count(100)
    redis_breaker_failures: int = _count(3)
    redis_breaker_reset: float = _seconds(2.0)
    redis_wait_aof: bool = False
    redis_sentinels: str | None = _setting(None, env="REDIS_SENTINELS")
    redis_sentinel_master: str = _setting("mymaster", env="REDIS_SENTINEL_MASTER")
    redis_cluster: bool = _setting(False, env="REDIS_CLUSTER")
    sessions: bool = True
    session_ttl: int = _setting(86_400, low=SESSION_TTL_RANGE[0], high=SESSION_TTL_RANGE[1])
    session_ttl_max: int = _setting(86_400, low=SESSION_TTL_RANGE[0])  # callers get at most the range's most
    state_secret: str | None = None
    service_key: str | None = None
    api_keys: str | None = None
    creates_per_minute: float = _zero_for_none(600)
    creates_burst: int = _count(60)
    actions_per_second: float = _zero_for_none(10)
    actions_burst: int = _count(20)
    max_body_bytes: int = _count(256 * 1024)
    bot_max_simulations: int = _setting(2_000, low=1, high=MAX_SIMULATIONS)
    bot_max_budget_ms: int = _setting(1_000, low=1, high=MAX_BUDGET_MS)
    bot_moves_per_call: int = _count(12)
    bot_threads: int = _count(2, high=THREADS_MAX)  # none: every bot call would wait for ever
    bot_queue: int = _zero_for_none(16)
    suggests_per_second: float = _zero_for_none(5)
    suggests_burst: int = _count(10)
    turn_seconds_min: int = _count(1)
    turn_seconds_max: int = _count(86_400)
    timers: bool = True
    events_wait_max: float = _setting(30.0, low=0)
    http_waiters: int = _count(500)
    http_waiters_per_peer: int = _zero_for_none(50)
    sse_max_seconds: float = _seconds(3600.0)
    timer_interval: float = _seconds(0.1)
    timer_threads: int = _count(4, high=THREADS_MAX)
    record_key: str | None = None
    record_retention: int = _zero_for_none(86_400)
    seed_seconds_max: int = _count(600)
    spectators_max: int = _zero_for_none(100)
    stream_ticket_seconds: int = _count(60)
    sse_heartbeat: float = _seconds(15.0)
    cors_origins: str | None = None
    webhooks: bool = True
    webhooks_max: int = _zero_for_none(20)
    webhook_timeout: float = _seconds(10.0)
    webhook_retry_seconds: float = _setting(86_400.0, low=0)
    webhook_backoff_max: float = _seconds(300.0)
    webhook_concurrency: int = _count(8)
    webhook_inflight: int = _count(1000)
    webhook_outbox_max: int = _count(100_000)
    # a holder stops delivering unless it renewed its lease within three quarters of it
    # (service.deliverer.FRESH): under a second, every holder's lease went stale at once
    webhook_lease: float = _setting(15.0, low=1)
    log_level: str = "info"

    def __post_init__(self) -> None:
        for declared in fields(self):
            low, high, above = (declared.metadata.get(k) for k in ("low", "high", "above"))
            value = getattr(self, declared.name)
            if low is not None and not (value >= low and (high is None or value <= high)):  # (a NaN too)
                said = f"from {_number(low)} to {_number(high)}" if high is not None else f"at least {_number(low)}"
                raise ValueError(f"{env_name(declared.name)} must be {said}, not {_number(value)}")
            if above is not None and not value > above:
                raise ValueError(f"{env_name(declared.name)} must be above {_number(above)}, not {_number(value)}")
        if self.turn_seconds_max < self.turn_seconds_min:
            raise ValueError(f"ONO99_TURN_SECONDS_MAX ({self.turn_seconds_max}) must be at least "
                             f"ONO99_TURN_SECONDS_MIN ({self.turn_seconds_min})")
        if self.log_level.lower() not in LOG_LEVELS:
            raise ValueError(f"ONO99_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, not {self.log_level!r}")
        if self.record_key is not None:
            record_key_bytes(self.record_key)

    def pick(self, kind: type[T], prefix: str = "") -> T:
        """A ``kind`` (a dataclass of settings, such as ``Limits``) built by keyword from
        the settings of the same names (with ``prefix``: ``bot_`` + ``max_budget_ms``)."""
        return kind(**{f.name: getattr(self, prefix + f.name) for f in fields(kind)})  # type: ignore[arg-type]

    def resolved_record_key(self) -> str:
        """The record key (ONO99_RECORD_KEY: an Ed25519 private key as 64 hex digits), or
        when none is set a fresh one, said in the log."""
        if self.record_key:
            return self.record_key
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        logging.getLogger("ono99.records").warning(
            "ONO99_RECORD_KEY is not set: game records are signed by a key made now, which the next start "
            "replaces and no other replica shares (docs/RECORDS.md, signatures)")
        return Ed25519PrivateKey.generate().private_bytes_raw().hex()

    @property
    def redis_configured(self) -> bool:
        """Whether a Redis (URL or Sentinel) is configured."""
        return bool(self.redis_url or self.redis_sentinels)

    def connect_redis(self, timeout: float | None = None) -> Any:
        """A Redis client for these settings (see service.redis_client.connect) whose calls
        give up after ``timeout`` seconds (default: ONO99_REDIS_TIMEOUT)."""
        from .redis_client import connect

        return connect(self.redis_url, self.redis_timeout if timeout is None else timeout, self.redis_sentinels,
                       self.redis_sentinel_master, self.redis_cluster, self.redis_connections)

    def session_store(self) -> Any:
        """The session store for these settings (a service.store.SessionStore), or None
        when sessions are off or no Redis is configured."""
        if not (self.sessions and self.redis_configured):
            return None
        from .recent import RecentStates
        from .store import SessionStore

        if self.redis_wait_aof and self.redis_cluster:
            raise ValueError("ONO99_REDIS_WAIT_AOF is not supported with REDIS_CLUSTER: "
                             "set appendfsync always on the cluster's nodes instead")
        return SessionStore(self.connect_redis(), self.redis_breaker_failures, self.redis_breaker_reset,
                            self.redis_wait_aof, self.redis_timeout, self.webhook_outbox_max,
                            RecentStates(self.session_state_cache_bytes))

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        """Settings from the environment, then ``overrides`` (None means: not given)."""
        hints = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = os.environ.get(env_name(f.name))
            if raw:
                values[f.name] = _parse(env_name(f.name), raw, hints[f.name])
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


def env_name(setting: str) -> str:
    """The environment variable of a setting."""
    declared = next(f for f in fields(Settings) if f.name == setting)
    return declared.metadata.get("env") or f"ONO99_{setting.upper()}"


def _number(value: float) -> str:
    """A bound or a setting's value as a message says it: 3, 0.5."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def record_key_bytes(text: str) -> bytes:
    """ONO99_RECORD_KEY's 32 bytes (an Ed25519 private key as 64 hex digits); ValueError
    naming the variable when it is no such key."""
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise ValueError("ONO99_RECORD_KEY must be an Ed25519 private key: 64 hex digits")
    return raw


def _parse(name: str, raw: str, kind: Any) -> Any:
    """Environment variable ``name``'s text as the setting's type (``X | None``: as X);
    ValueError naming the variable when it is no such value."""
    options = [k for k in typing.get_args(kind) if k is not type(None)] or [kind]
    kind = options[0]
    if kind is bool:
        said = raw.strip().lower()
        if said not in TRUE + FALSE:
            raise ValueError(f"{name} must be true or false (1/0, yes/no, on/off), not {raw!r}")
        return said in TRUE
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or (kind is float and not math.isfinite(value)):
        said = {int: "an integer", float: "a number"}.get(kind, kind.__name__)
        raise ValueError(f"{name} must be {said}, not {raw!r}")
    return value
