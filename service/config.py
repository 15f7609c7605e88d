"""Settings: flags override environment variables, which override the defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any, ClassVar


def _env(name: str, default: Any, kind: type = str) -> Any:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if kind is bool:
        return raw.lower() in ("1", "true", "yes", "on")
    return kind(raw)


@dataclass
class Settings:
    """Everything the service can be told. ``ENV`` names each field's variable."""

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
    metrics_port: int = 9464
    redis_url: str | None = None
    redis_timeout: float = 0.5
    redis_connections: int = 100
    redis_breaker_failures: int = 3
    redis_breaker_reset: float = 2.0
    redis_wait_aof: bool = False
    redis_sentinels: str | None = None
    redis_sentinel_master: str = "mymaster"
    redis_cluster: bool = False
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
    timer_interval: float = 0.1
    timer_threads: int = 4
    log_level: str = "info"

    ENV: ClassVar[dict[str, str]] = {
        "host": "ONO99_HOST", "http_port": "ONO99_HTTP_PORT", "grpc_port": "ONO99_GRPC_PORT",
        "workers": "ONO99_WORKERS", "http_connections": "ONO99_HTTP_CONNECTIONS",
        "http_connections_per_peer": "ONO99_HTTP_CONNECTIONS_PER_PEER",
        "http_header_timeout": "ONO99_HTTP_HEADER_TIMEOUT", "http_read_timeout": "ONO99_HTTP_READ_TIMEOUT",
        "grpc_threads": "ONO99_GRPC_THREADS",
        "grpc_max_connection_age": "ONO99_GRPC_MAX_CONNECTION_AGE",
        "grpc_max_connection_age_grace": "ONO99_GRPC_MAX_CONNECTION_AGE_GRACE",
        "grpc_streams": "ONO99_GRPC_STREAMS", "grpc_streams_per_peer": "ONO99_GRPC_STREAMS_PER_PEER",
        "grpc_state_cache_bytes": "ONO99_GRPC_STATE_CACHE_BYTES", "metrics_port": "ONO99_METRICS_PORT",
        "redis_url": "REDIS_URL", "redis_timeout": "ONO99_REDIS_TIMEOUT",
        "redis_connections": "ONO99_REDIS_CONNECTIONS",
        "redis_breaker_failures": "ONO99_REDIS_BREAKER_FAILURES", "redis_breaker_reset": "ONO99_REDIS_BREAKER_RESET",
        "redis_wait_aof": "ONO99_REDIS_WAIT_AOF",
        "redis_sentinels": "REDIS_SENTINELS", "redis_sentinel_master": "REDIS_SENTINEL_MASTER",
        "redis_cluster": "REDIS_CLUSTER",
        "sessions": "ONO99_SESSIONS", "session_ttl": "ONO99_SESSION_TTL", "session_ttl_max": "ONO99_SESSION_TTL_MAX",
        "state_secret": "ONO99_STATE_SECRET", "service_key": "ONO99_SERVICE_KEY",
        "api_keys": "ONO99_API_KEYS", "creates_per_minute": "ONO99_CREATES_PER_MINUTE",
        "creates_burst": "ONO99_CREATES_BURST", "actions_per_second": "ONO99_ACTIONS_PER_SECOND",
        "actions_burst": "ONO99_ACTIONS_BURST",
        "max_body_bytes": "ONO99_MAX_BODY_BYTES", "log_level": "ONO99_LOG_LEVEL",
        "bot_max_simulations": "ONO99_BOT_MAX_SIMULATIONS", "bot_max_budget_ms": "ONO99_BOT_MAX_BUDGET_MS",
        "bot_moves_per_call": "ONO99_BOT_MOVES_PER_CALL", "bot_threads": "ONO99_BOT_THREADS",
        "suggests_per_second": "ONO99_SUGGESTS_PER_SECOND", "suggests_burst": "ONO99_SUGGESTS_BURST",
        "turn_seconds_min": "ONO99_TURN_SECONDS_MIN", "turn_seconds_max": "ONO99_TURN_SECONDS_MAX",
        "timers": "ONO99_TIMERS", "events_wait_max": "ONO99_EVENTS_WAIT_MAX",
        "http_waiters": "ONO99_HTTP_WAITERS", "timer_interval": "ONO99_TIMER_INTERVAL",
        "timer_threads": "ONO99_TIMER_THREADS",
    }

    @property
    def redis_configured(self) -> bool:
        """Whether a Redis (URL or Sentinel) is configured."""
        return bool(self.redis_url or self.redis_sentinels)

    def connect_redis(self) -> Any:
        """A Redis client for these settings (see service.redis_client.connect)."""
        from .redis_client import connect

        return connect(self.redis_url, self.redis_timeout, self.redis_sentinels, self.redis_sentinel_master,
                       self.redis_cluster, self.redis_connections)

    def session_store(self) -> Any:
        """The session store for these settings (a service.store.SessionStore), or None
        when sessions are off or no Redis is configured."""
        if not (self.sessions and self.redis_configured):
            return None
        from .store import SessionStore

        if self.redis_wait_aof and self.redis_cluster:
            raise ValueError("ONO99_REDIS_WAIT_AOF is not supported with REDIS_CLUSTER: "
                             "set appendfsync always on the cluster's nodes instead")
        return SessionStore(self.connect_redis(), self.redis_breaker_failures, self.redis_breaker_reset,
                            self.redis_wait_aof, self.redis_timeout)

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        """Settings from the environment, then ``overrides`` (None means: not given)."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            default = f.default
            kind = {"int": int, "float": float, "bool": bool}.get(str(f.type).split(" ")[0], str)
            values[f.name] = _env(cls.ENV[f.name], default, kind)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
