"""Webhook endpoints: registered by the service key, kept in Redis, read by deliverers.

Keys:

- ``ono99:webhooks`` hash: endpoint id → the endpoint (JSON: url, events, secret, when made)
- on each outbox stream (service.store) one consumer group per endpoint, named by its
  id, made at the stream's end when the endpoint is registered: it is delivered every
  webhook event committed after its registration
- ``ono99:webhooks:lease:ID`` the deliverer that delivers endpoint ID now
- ``ono99:webhooks:dead`` stream: the deliveries given up (service.deliverer)
"""

from __future__ import annotations

import base64
import secrets
import urllib.parse
from typing import Any

import msgspec
import redis

from .errors import ServiceError
from .hooks import EVENT_TYPES
from .store import SessionStore
from .timers import now_ms

REGISTRY = "ono99:webhooks"
DEAD_LETTERS = "ono99:webhooks:dead"
MAX_URL = 2048  # characters of an endpoint's URL


def lease_key(endpoint_id: str) -> str:
    return f"ono99:webhooks:lease:{endpoint_id}"


class Endpoint(msgspec.Struct, frozen=True):
    """A registered endpoint: where its events go, which of them, and the Standard
    Webhooks secret (``whsec_`` and base64) its deliveries are signed with."""

    id: str
    url: str
    events: list[str]
    secret: str
    created_ms: int

    def public(self) -> dict[str, Any]:
        """The endpoint as the API shows it after its registration: without its secret."""
        return {"id": self.id, "url": self.url, "events": self.events, "created_ms": self.created_ms}


_decode = msgspec.json.Decoder(Endpoint)
_encode = msgspec.json.Encoder()

# KEYS: the registry. ARGV: id, endpoint JSON, the most endpoints kept. 1: registered.
_REGISTER = """
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""


def parse_url(url: object) -> str:
    """An endpoint's URL: absolute http or https, at most MAX_URL characters, no
    credentials or fragment; errors name ``url``."""
    if not isinstance(url, str) or not 1 <= len(url) <= MAX_URL or not url.isprintable() or " " in url:
        raise ServiceError("invalid_request", f"url must be an http or https URL of at most {MAX_URL} characters",
                           field="url")
    try:
        parts = urllib.parse.urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # a bracketed host that is no IPv6 address, a port out of range
        raise ServiceError("invalid_request", "url must be an absolute http or https URL with a host",
                           field="url") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ServiceError("invalid_request", "url must be an absolute http or https URL with a host", field="url")
    if parts.username is not None or parts.password is not None or parts.fragment:
        raise ServiceError("invalid_request", "url must hold no user name, password or #fragment", field="url")
    return url


def parse_events(events: object) -> list[str]:
    """The event types an endpoint asks for (None: every one); errors name ``events``."""
    if events is None:
        return list(EVENT_TYPES)
    if (not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events)
            or len(set(events)) != len(events) or set(events) - set(EVENT_TYPES)):
        raise ServiceError("invalid_request", "events must be a list of distinct event types from: "
                           + ", ".join(EVENT_TYPES), field="events")
    return [e for e in EVENT_TYPES if e in events]


class Webhooks:
    """The registered endpoints over the session store's Redis (its breaker too)."""

    def __init__(self, store: SessionStore, most: int) -> None:
        self.store = store
        self.most = most
        self._register = store.client.register_script(_REGISTER)

    def register(self, url: str, events: list[str]) -> Endpoint:
        """A new endpoint; delivered every event committed from now on. ``too_many_requests``
        when ONO99_WEBHOOKS_MAX are registered."""
        endpoint = Endpoint(f"wh_{secrets.token_urlsafe(12)}", url, events,
                            "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode(), now_ms())

        def work() -> bool:
            if not self._register(keys=[REGISTRY], args=[endpoint.id, _encode.encode(endpoint), self.most]):
                return False
            for outbox in self.store.outboxes():
                make_group(self.store.client, outbox, endpoint.id)
            return True

        if not self.store._call("webhooks", work):
            raise ServiceError("too_many_requests", f"{self.most} webhook endpoints are registered already "
                               "(ONO99_WEBHOOKS_MAX): delete one first")
        return endpoint

    def all(self) -> list[Endpoint]:
        """Every registered endpoint, oldest first."""
        found = self.store._call("webhooks", lambda: self.store.client.hvals(REGISTRY))
        return sorted((_decode.decode(raw) for raw in found), key=lambda e: (e.created_ms, e.id))

    def get(self, endpoint_id: str) -> Endpoint:
        """The endpoint ``endpoint_id`` (``not_found``)."""
        raw = self.store._call("webhooks", lambda: self.store.client.hget(REGISTRY, endpoint_id[:64]))
        if raw is None:
            raise ServiceError("not_found", f"no webhook endpoint {endpoint_id[:64]!r}")
        return _decode.decode(raw)

    def delete(self, endpoint_id: str) -> None:
        """Forget an endpoint: nothing more is delivered to it (a delivery under way may end)."""
        def work() -> int:
            gone = int(self.store.client.hdel(REGISTRY, endpoint_id[:64]))
            if gone:
                for outbox in self.store.outboxes():
                    self.store.client.xgroup_destroy(outbox, endpoint_id)
                self.store.client.delete(lease_key(endpoint_id))
            return gone

        if not self.store._call("webhooks", work):
            raise ServiceError("not_found", f"no webhook endpoint {endpoint_id[:64]!r}")

    def backlog(self, endpoint_id: str) -> int | None:
        """The endpoint's events not delivered yet (read and pending, or not read); None
        when Redis cannot count them (entries trimmed unread)."""
        def work() -> int | None:
            total = 0
            for outbox in self.store.outboxes():
                try:
                    groups = self.store.client.xinfo_groups(outbox)
                except redis.ResponseError:  # no such stream yet
                    continue
                for group in groups:
                    if _text(group["name"]) != endpoint_id:
                        continue
                    if group.get("lag") is None:
                        return None
                    total += int(group["pending"]) + int(group["lag"])
            return total

        return self.store._call("webhooks", work)


def make_group(client: Any, outbox: str, endpoint_id: str) -> None:
    """The endpoint's consumer group on ``outbox``, at the stream's end (kept if it exists)."""
    try:
        client.xgroup_create(outbox, endpoint_id, id="$", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
