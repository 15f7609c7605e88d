"""Settings: flags override environment variables, which override the defaults.

Each setting is declared once, as a field of :class:`Settings`: its default is the
field's, its type the field's annotation, and its environment variable ``ONO99_`` and
the name in capitals (:func:`env_name`), unless the field names another (``env``
metadata: the Redis connection's, as Redis clients name them).
"""

from __future__ import annotations

import logging
import os
import typing
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

T = TypeVar("T")


def _env_named(name: str) -> Any:
    return field(default=None, metadata={"env": name})


@dataclass
class Settings:
    """Everything the service can be told (README, "Configuration")."""

    host: str = "127.0.0.1"
    http_port: int = 8080
    grpc_port: int = 50051
    workers: int = 2
    http_connections: int = 1000
    http_connections_per_peer: int = 256
    http_header_timeout: int = 5
    http_read_timeout: float = 10.0
    grpc_threads: int = 32
    grpc_max_connection_age: float = 600.0
    grpc_max_connection_age_grace: float = 60.0
    grpc_streams: int = 2000
    grpc_streams_per_peer: int = 100
    grpc_state_cache_bytes: int = 16 * 1024 * 1024
    session_state_cache_bytes: int = 16 * 1024 * 1024
    metrics_port: int = 9464
    redis_url: str | None = _env_named("REDIS_URL")
    redis_timeout: float = 0.5
    redis_connections: int = 100
    redis_breaker_failures: int = 3
    redis_breaker_reset: float = 2.0
    redis_wait_aof: bool = False
    redis_sentinels: str | None = _env_named("REDIS_SENTINELS")
    redis_sentinel_master: str = field(default="mymaster", metadata={"env": "REDIS_SENTINEL_MASTER"})
    redis_cluster: bool = field(default=False, metadata={"env": "REDIS_CLUSTER"})
    sessions: bool = True
    session_ttl: int = 86_400
    session_ttl_max: int = 86_400
    state_secret: str | None = None
    service_key: str | None = None
    api_keys: str | None = None
    creates_per_minute: float = 600
    creates_burst: int = 60
    actions_per_second: float = 10
    actions_burst: int = 20
    max_body_bytes: int = 256 * 1024
    bot_max_simulations: int = 2_000
    bot_max_budget_ms: int = 1_000
    bot_moves_per_call: int = 12
    bot_threads: int = 2
    suggests_per_second: float = 5
    suggests_burst: int = 10
    turn_seconds_min: int = 1
    turn_seconds_max: int = 86_400
    timers: bool = True
    events_wait_max: float = 30.0
    http_waiters: int = 500
    http_waiters_per_peer: int = 50
    sse_max_seconds: float = 3600.0
    timer_interval: float = 0.1
    timer_threads: int = 4
    record_key: str | None = None
    record_retention: int = 86_400
    seed_seconds_max: int = 600
    spectators_max: int = 100
    stream_ticket_seconds: int = 60
    sse_heartbeat: float = 15.0
    cors_origins: str | None = None
    webhooks: bool = True
    webhooks_max: int = 20
    webhook_timeout: float = 10.0
    webhook_retry_seconds: float = 86_400.0
    webhook_backoff_max: float = 300.0
    webhook_concurrency: int = 8
    webhook_inflight: int = 1000
    webhook_outbox_max: int = 100_000
    webhook_lease: float = 15.0
    log_level: str = "info"

    def __post_init__(self) -> None:
        # The bot settings a service cannot work with: no thread to think on (every bot
        # call would wait forever), no move a call, or bounds past the engine's own.
        from engine.bots import MAX_BUDGET_MS, MAX_SIMULATIONS

        for name, low, high in (("bot_threads", 1, None), ("bot_moves_per_call", 1, None),
                                ("bot_max_simulations", 1, MAX_SIMULATIONS), ("bot_max_budget_ms", 1, MAX_BUDGET_MS)):
            value = getattr(self, name)
            if value < low or (high is not None and value > high):
                bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
                raise ValueError(f"{env_name(name)} must be {bounds}, not {value}")

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


def _parse(name: str, raw: str, kind: Any) -> Any:
    """Environment variable ``name``'s text as the setting's type (``X | None``: as X);
    ValueError naming the variable when it is no such value."""
    options = [k for k in typing.get_args(kind) if k is not type(None)] or [kind]
    kind = options[0]
    if kind is bool:
        return raw.lower() in ("1", "true", "yes", "on")
    try:
        return kind(raw)
    except ValueError:
        said = {int: "an integer", float: "a number"}.get(kind, kind.__name__)
        raise ValueError(f"{name} must be {said}, not {raw!r}") from None
