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
import contextlib
import ipaddress
import re
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
    bracketed = "[" in parts.netloc  # an IP literal: an IPv6 address
    if (parts.scheme not in ("http", "https") or not port_ok
            or not (_is_ipv6(parts.hostname) if bracketed else _host_ok(parts.hostname))):
        raise ServiceError("invalid_request", "url must be an absolute http or https URL with a host name or "
                           "IP address", field="url")
    if parts.username is not None or parts.password is not None or parts.fragment:
        raise ServiceError("invalid_request", "url must hold no user name, password or #fragment", field="url")
    return url


_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def _is_ipv6(host: str | None) -> bool:
    try:
        ipaddress.IPv6Address(host or "")
    except ValueError:
        return False
    return True


def _host_ok(host: str | None) -> bool:
    """Whether ``host`` is an IP address or a DNS name (letters, digits and hyphens in
    dot-separated labels; non-ASCII names as IDNA encodes them)."""
    if not host:
        return False
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(host)
        return True
    try:
        ascii_host = host.encode("idna").decode()
    except UnicodeError:
        return False
    return len(ascii_host) <= 253 and all(_LABEL.fullmatch(label) for label in ascii_host.rstrip(".").split("."))


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
            try:
                for outbox in self.store.outboxes():
                    make_group(self.store.client, outbox, endpoint.id)
            except BaseException:
                # Not registered after all: no endpoint whose secret nobody was shown.
                with contextlib.suppress(redis.RedisError):
                    self._forget(endpoint.id)
                raise
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
        if not self.store._call("webhooks", lambda: self._forget(endpoint_id[:64])):
            raise ServiceError("not_found", f"no webhook endpoint {endpoint_id[:64]!r}")

    def _forget(self, endpoint_id: str) -> int:
        """Remove an endpoint and its consumer groups; 1 if it was registered."""
        gone = int(self.store.client.hdel(REGISTRY, endpoint_id))
        for outbox in self.store.outboxes():
            self.store.client.xgroup_destroy(outbox, endpoint_id)
        self.store.client.delete(lease_key(endpoint_id))
        return gone

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
                    if as_text(group["name"]) != endpoint_id:
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


def as_text(value: Any) -> str:
    """A Redis reply's bytes (or anything else) as text."""
    return value.decode() if isinstance(value, bytes) else str(value)
