"""Connections to Redis that give up quickly, and the circuit breaker over them."""

from __future__ import annotations

import logging
import time
from typing import Any, TypeVar

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from . import metrics
from .errors import ServiceError

log = logging.getLogger("ono99.store")


# redis.Redis, or redis.cluster.RedisCluster: both offer every command used here.
Client = Any


def connect(url: str | None, timeout: float, sentinels: str | None = None,
            sentinel_master: str = "mymaster", cluster: bool = False, connections: int = 100) -> Client:
    """A client that gives up quickly: explicit socket timeouts, one quick retry.

    With ``sentinels`` ("host:port,host:port") the client asks Redis Sentinel for the
    current primary of ``sentinel_master`` and follows it across failovers. With
    ``cluster`` the URL names any node of a Redis Cluster; a session's keys share a
    slot (the ``{session id}`` hash tag), so its scripts and pipelines stay on one node.
    A process opens at most ``connections`` connections (to each node of a Cluster).
    """
    # A call gives up after ``timeout``: a timeout is not retried (that would double the
    # wait); a dropped connection is, once (a failover or an idle connection closed).
    retry = Retry(ExponentialBackoff(cap=0.05, base=0.01), retries=1, supported_errors=(redis.ConnectionError,))
    options = {"socket_timeout": timeout, "socket_connect_timeout": timeout, "retry": retry,
               "health_check_interval": 30, "max_connections": connections}
    if sentinels:
        from redis.sentinel import Sentinel

        nodes = [(host, int(port)) for host, _, port in (n.strip().rpartition(":") for n in sentinels.split(","))]
        sentinel = Sentinel(nodes, socket_timeout=timeout, socket_connect_timeout=timeout)  # type: ignore[no-untyped-call]
        primary: redis.Redis = sentinel.master_for(sentinel_master, **options)  # type: ignore[no-untyped-call]
        return primary
    if not url:
        raise ValueError("a Redis URL or Sentinel addresses are needed")
    if cluster:
        from redis.cluster import RedisCluster

        return RedisCluster.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=retry, max_connections=connections)
    return redis.Redis.from_pool(WaitingPool.from_url(url, timeout=timeout, **options))


class WaitingPool(redis.BlockingConnectionPool):
    """A pool whose callers wait, up to the client's timeout, for a connection when all
    ``max_connections`` are in use (a burst of requests queues instead of failing), and
    then get MaxConnectionsError: the pool is full, Redis is not down."""

    def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().get_connection(*args, **kwargs)  # type: ignore[no-untyped-call]
        except redis.ConnectionError as exc:
            if str(exc) != "No connection available.":  # BlockingConnectionPool's own words for a full pool
                raise
            raise redis.exceptions.MaxConnectionsError("every connection of the pool is in use") from exc


def unavailable(exc: Exception, operation: str = "call") -> ServiceError:
    metrics.REDIS_ERRORS.labels(operation).inc()
    log.warning("session store unreachable", extra={"operation": operation, "error": type(exc).__name__})
    return ServiceError("unavailable", f"the session store cannot be reached ({type(exc).__name__})")


T = TypeVar("T")


class Breaker:
    """A circuit breaker over the calls to Redis.

    After ``failures`` calls in a row that could not reach Redis it opens: calls are
    refused at once for ``reset`` seconds. Then calls go through again; the first
    success closes it, and the first failure opens it for another ``reset`` seconds.
    It takes no lock around a call, so concurrent calls stay concurrent (pybreaker
    holds one lock across every guarded call, which would serialize a process' Redis
    calls); a race between two failures only counts one of them twice.
    """

    def __init__(self, failures: int, reset: float) -> None:
        self.failures, self.reset = max(1, failures), reset
        self.failed = 0
        self.open_until = 0.0

    def refuses(self) -> float:
        """Seconds until calls go through again; 0 when they go through now."""
        if self.failed < self.failures:
            return 0.0
        return max(0.0, self.open_until - time.monotonic())

    def succeeded(self) -> None:
        self.failed = 0

    def failed_once(self) -> None:
        self.failed += 1
        if self.failed >= self.failures:
            if self.failed == self.failures:
                log.warning("session store unreachable: refusing calls", extra={"seconds": self.reset})
            self.open_until = time.monotonic() + self.reset
