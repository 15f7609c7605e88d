"""Who may create sessions and how fast anyone may act: API keys and rate limits.

Limits are counted in Redis (``SessionStore.throttle``), so they hold across replicas
and both transports.
"""

from __future__ import annotations

import hmac
import math
from dataclasses import dataclass

from . import metrics
from .errors import ServiceError
from .store import SessionStore


@dataclass(frozen=True)
class Limits:
    """Rate limits kept in Redis, so they hold across replicas (0: no limit)."""

    creates_per_minute: float
    creates_burst: int
    actions_per_second: float
    actions_burst: int
    suggests_per_second: float
    suggests_burst: int


@dataclass(frozen=True)
class Caller:
    """Who sends a request that needs no seat: the client address as the server sees it,
    and the API key it presented, if any."""

    address: str
    api_key: str | None = None


class Admission:
    """API keys for session creation, and the rate limits of creations and actions.
    Keys are known by their SHA-256 digests, as the application layer makes them."""

    def __init__(self, limits: Limits, api_key_hashes: tuple[str, ...], service_key_hash: str | None) -> None:
        self.limits = limits
        self.api_key_hashes = api_key_hashes
        self.service_key_hash = service_key_hash

    def check_creation(self, store: SessionStore, address: str, key_digest: str | None) -> None:
        """With API keys configured only their holders (and the service key) may create;
        creations are rate limited per key, else per address; the service key is not."""
        if key_digest is not None and self.service_key_hash and hmac.compare_digest(key_digest,
                                                                                     self.service_key_hash):
            return
        if self.api_key_hashes and (key_digest is None or not any(
                hmac.compare_digest(key_digest, known) for known in self.api_key_hashes)):
            raise ServiceError("unauthorized", "creating a session needs an API key of this service")
        per_minute = self.limits.creates_per_minute
        if per_minute > 0:
            who = f"key:{key_digest[:32]}" if key_digest is not None and self.api_key_hashes else f"addr:{address}"
            _throttle(store, f"create:{who}", per_minute / 60, self.limits.creates_burst, "session creations")

    def check_action(self, store: SessionStore, session_id: str, player: str) -> None:
        """A seat's action, counted before it is judged (refused ones count too)."""
        if self.limits.actions_per_second > 0:
            _throttle(store, f"act:{{{session_id}}}:{player}", self.limits.actions_per_second,
                      self.limits.actions_burst, "actions from this seat")


    def check_suggest(self, store: SessionStore | None, address: str) -> None:
        """A stateless bot suggestion, counted per client address (none without a
        session store to count in: a service without sessions has no Redis)."""
        if store is not None and self.limits.suggests_per_second > 0:
            _throttle(store, f"suggest:addr:{address}", self.limits.suggests_per_second, self.limits.suggests_burst,
                      "bot suggestions from this address")


def _throttle(store: SessionStore, key: str, per_second: float, burst: int, what: str) -> None:
    wait = store.throttle(key, per_second, burst)
    if wait:
        metrics.RATE_LIMITED.labels(key.partition(":")[0]).inc()
        raise ServiceError("too_many_requests", f"too many {what}; try again in {math.ceil(wait * 1000)} ms",
                           retry_after=max(1, math.ceil(wait)))
