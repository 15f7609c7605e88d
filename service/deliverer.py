"""The webhook deliverer: each endpoint's events, signed, at least once, in version
order per session. Runs in ``ono99 serve`` (a process of its own) and as ``ono99 webhooks``.

Any number of deliverers share one Redis. An endpoint is delivered by one deliverer at a
time, the holder of its lease (service.webhooks.lease_key, renewed every round; a
deliverer that dies lets it lapse after ONO99_WEBHOOK_LEASE seconds), and the live
deliverers split the endpoints between them. The holder reads the endpoint's consumer
group on each outbox stream (service.store): first it takes over every delivery still
pending (read by a deliverer that stopped or died before it was acknowledged: delivered
again, with the same ``webhook-id``), then the new entries.

Entries go to one lane per session, which delivers them one after another, so that a
session's events arrive in version order; up to ONO99_WEBHOOK_CONCURRENCY lanes of an
endpoint deliver at once, and at most ONO99_WEBHOOK_INFLIGHT entries are read and not
yet acknowledged. A failed attempt (no 2xx answer within ONO99_WEBHOOK_TIMEOUT) is
retried with exponential backoff and jitter for ONO99_WEBHOOK_RETRY_SECONDS, then the
delivery is given up: written to the dead-letter stream and counted. Each endpoint has
threads of its own, so one that hangs or fails delays no other.

Every round one deliverer also trims the outbox streams below the oldest entry some
endpoint still needs.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import importlib.metadata
import logging
import math
import random
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import msgspec
import redis
import urllib3
from prometheus_client import Counter, Gauge, Histogram
from standardwebhooks.webhooks import Webhook

from .hooks import webhook_id
from .store import SessionStore
from .webhooks import DEAD_LETTERS, REGISTRY, Endpoint, Webhooks, lease_key, make_group

log = logging.getLogger("ono99.webhooks")

# In this module, not service.metrics: only a deliverer's process has them.
DELIVERIES = Counter("ono99_webhook_deliveries_total", "Webhook attempts and their outcome",
                     ["endpoint", "outcome"])  # outcome: delivered|failed|dead
ATTEMPT = Histogram("ono99_webhook_attempt_seconds", "Time an endpoint took to answer one attempt",
                    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
DELAY = Histogram("ono99_webhook_delay_seconds", "From the commit of an event to its delivery",
                  buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))
INFLIGHT = Gauge("ono99_webhook_inflight", "Outbox entries read for an endpoint and not yet acknowledged",
                 ["endpoint"], multiprocess_mode="livesum")
HELD = Gauge("ono99_webhook_endpoints_held", "Endpoints this deliverer delivers now", multiprocess_mode="livesum")
OVERRUNS = Counter("ono99_webhook_outbox_overruns_total",
                   "Times the outbox's length cap (ONO99_WEBHOOK_OUTBOX_MAX) trimmed entries an endpoint had "
                   "not read", ["endpoint"])

DELIVERERS = "ono99:webhooks:deliverers"  # sorted set: each live deliverer, by when its heartbeat lapses
BLOCK_MS = 1000  # how long one read of a single outbox waits for new entries
IDLE = 0.2  # seconds between reads of a Cluster's outboxes (each read at once) when none had news
FIRST_BACKOFF = 0.5  # seconds before the first retry; each later one waits up to twice as long
TRIM_EVERY = 10.0  # seconds between a deliverer's trims of the outbox
DEAD_LETTERS_MAX = 10_000  # entries the dead-letter stream keeps (about)
RESPONSE_READ = 64 * 1024  # bytes of an endpoint's answer read at most
_USER_AGENT = f"ono99-webhooks/{importlib.metadata.version('ono99')}"

# KEYS: a lease. ARGV: holder, ms. Renew a lease this holder has (1), else 0.
_RENEW = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""
# KEYS: a lease. ARGV: holder. Give up a lease this holder has.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


@dataclass(frozen=True)
class Delivery:
    """How endpoints are delivered (the ``webhook_`` settings)."""

    timeout: float
    retry_seconds: float
    backoff_max: float
    concurrency: int
    inflight: int
    lease: float


class Sender:
    """Posts a signed payload; an attempt is good when the endpoint answers 2xx in time."""

    def __init__(self, timeout: float, concurrency: int) -> None:
        self.pool = urllib3.PoolManager(num_pools=100, maxsize=max(1, concurrency), retries=False,
                                        timeout=urllib3.Timeout(connect=min(timeout, 5.0), read=timeout))

    def post(self, endpoint: Endpoint, signer: Webhook, message_id: str, body: str) -> str | None:
        """Post ``body`` to the endpoint; None when it took it, else why not."""
        now = datetime.datetime.now(tz=datetime.UTC)
        headers = {"content-type": "application/json", "user-agent": _USER_AGENT, "webhook-id": message_id,
                   "webhook-timestamp": str(math.floor(now.timestamp())),
                   "webhook-signature": signer.sign(message_id, now, body)}
        try:
            response = self.pool.request("POST", endpoint.url, body=body.encode(), headers=headers,
                                         preload_content=False, redirect=False)
        except urllib3.exceptions.HTTPError as exc:
            return f"{type(exc).__name__}: {str(exc)[:200]}"
        try:
            response.read(RESPONSE_READ)
        except urllib3.exceptions.HTTPError:
            pass
        finally:
            if response.length_remaining == 0:
                response.release_conn()  # read to its end: the connection serves the next attempt
            else:
                response.close()
        return None if 200 <= response.status < 300 else f"HTTP {response.status}"


def _id_after(entry_id: str) -> str:
    milliseconds, _, sequence = entry_id.partition("-")
    return f"{milliseconds}-{int(sequence or 0) + 1}"


def _id_key(entry_id: str) -> tuple[int, int]:
    milliseconds, _, sequence = entry_id.partition("-")
    return int(milliseconds), int(sequence or 0)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


_payloads = msgspec.json.Decoder(list[dict[str, Any]])
_encode = msgspec.json.Encoder()


class EndpointWorker:
    """One endpoint's delivery while this deliverer holds its lease (see the module)."""

    def __init__(self, client: Any, outboxes: list[str], endpoint: Endpoint, consumer: str, delivery: Delivery,
                 sender: Sender) -> None:
        self.client = client
        self.outboxes = outboxes
        self.endpoint = endpoint
        self.consumer = consumer
        self.delivery = delivery
        self.sender = sender
        self.signer = Webhook(endpoint.secret)
        self.stopped = threading.Event()
        self._lanes: dict[str, collections.deque[tuple[str, str, list[tuple[int, dict[str, Any]]]]]] = {}
        self._changed = threading.Condition()
        self._inflight = 0
        self._pool = ThreadPoolExecutor(max(1, delivery.concurrency), thread_name_prefix=f"ono99-{endpoint.id}")
        self._gauge = INFLIGHT.labels(endpoint.id)
        self._reader = threading.Thread(target=self._read, name=f"ono99-read-{endpoint.id}", daemon=True)

    def start(self) -> EndpointWorker:
        self._reader.start()
        return self

    def alive(self) -> bool:
        return self._reader.is_alive()

    def stop(self) -> None:
        """Stop delivering: what is read and not acknowledged stays pending, for the next holder."""
        self.stopped.set()
        with self._changed:
            self._changed.notify_all()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._gauge.set(0)

    # --- reading ---------------------------------------------------------------------

    def _read(self) -> None:
        while not self.stopped.is_set():
            try:
                self._take_over()
                self._read_entries()
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                log.warning("webhook deliverer cannot reach Redis", extra={"endpoint": self.endpoint.id,
                                                                            "error": type(exc).__name__})
                self.stopped.wait(1.0)
            except Exception:
                log.exception("webhook endpoint's reader failed", extra={"endpoint": self.endpoint.id})
                self.stopped.wait(1.0)

    def _take_over(self) -> None:
        """Make every pending entry of the endpoint this consumer's (the lease says no
        other deliverer delivers it now), to deliver them first, in order."""
        for outbox in self.outboxes:
            start = "0-0"
            while not self.stopped.is_set():
                try:
                    # (redis-py drops the cursor of a JUSTID answer: the entries come whole)
                    found = self.client.xautoclaim(outbox, self.endpoint.id, self.consumer, 0, start_id=start,
                                                   count=200)
                except redis.ResponseError as exc:
                    self._no_group(outbox, exc)
                    break
                start = _text(found[0])
                if start == "0-0":
                    break

    def _no_group(self, outbox: str, exc: redis.ResponseError) -> None:
        """A read found no consumer group (Redis lost its data, or the endpoint was just
        deleted): make it again while the endpoint is registered."""
        if "NOGROUP" not in str(exc):
            raise exc
        if self.client.hexists(REGISTRY, self.endpoint.id):
            make_group(self.client, outbox, self.endpoint.id)

    def _read_entries(self) -> None:
        cursors = dict.fromkeys(self.outboxes, "0")  # "0": this consumer's pending entries first, then ">"
        single = len(self.outboxes) == 1
        while not self.stopped.is_set():
            with self._changed:
                while self._inflight >= self.delivery.inflight and not self.stopped.is_set():
                    self._changed.wait(0.5)
                room = self.delivery.inflight - self._inflight
            news = False
            for outbox in self.outboxes:
                cursor = cursors[outbox]
                try:
                    replies = self.client.xreadgroup(self.endpoint.id, self.consumer, {outbox: cursor},
                                                     count=min(200, max(1, room)),
                                                     block=BLOCK_MS if single and cursor == ">" else None)
                except redis.ResponseError as exc:
                    self._no_group(outbox, exc)
                    cursors[outbox] = "0"
                    continue
                entries = replies[0][1] if replies else []
                if cursor != ">":
                    if not entries:
                        cursors[outbox] = ">"
                        continue
                    cursors[outbox] = _text(entries[-1][0])
                for entry_id, fields in entries:
                    news = True
                    self._dispatch(outbox, _text(entry_id), fields)
            if not news and not single:
                self.stopped.wait(IDLE)

    def _dispatch(self, outbox: str, entry_id: str, fields: dict[bytes, bytes] | None) -> None:
        """Queue an entry's payloads of the endpoint's event types on its session's lane."""
        if self.stopped.is_set():
            return  # left pending for the next holder
        wanted: list[tuple[int, dict[str, Any]]] = []
        session = ""
        if fields:  # a pending entry trimmed away meanwhile comes back empty
            session = _text(fields[b"s"])
            wanted = [(i, p) for i, p in enumerate(_payloads.decode(fields[b"h"])) if p["type"] in self.endpoint.events]
        if not wanted:
            self.client.xack(outbox, self.endpoint.id, entry_id)
            return
        with self._changed:
            self._inflight += 1
            self._gauge.set(self._inflight)
            lane = self._lanes.get(session)
            if lane is not None:
                lane.append((outbox, entry_id, wanted))
                return
            self._lanes[session] = collections.deque([(outbox, entry_id, wanted)])
        self._pool.submit(self._lane, session)

    # --- delivering ------------------------------------------------------------------

    def _lane(self, session: str) -> None:
        """Deliver a session's queued entries, one after another."""
        try:
            while not self.stopped.is_set():
                with self._changed:
                    lane = self._lanes[session]
                    if not lane:
                        del self._lanes[session]
                        return
                    outbox, entry_id, wanted = lane[0]
                for index, payload in wanted:
                    if not self._deliver(session, index, payload):
                        return  # stopping: the entry stays pending
                self._acknowledge(outbox, entry_id)
                with self._changed:
                    lane.popleft()
                    self._inflight -= 1
                    self._gauge.set(self._inflight)
                    self._changed.notify_all()
        except Exception:
            log.exception("webhook lane failed", extra={"endpoint": self.endpoint.id, "session_id": session})
            self.stop()  # the next holder (this deliverer's next round, or another) delivers it again

    def _acknowledge(self, outbox: str, entry_id: str) -> None:
        while not self.stopped.is_set():
            try:
                self.client.xack(outbox, self.endpoint.id, entry_id)
                return
            except (redis.ConnectionError, redis.TimeoutError):
                self.stopped.wait(0.5)

    def _deliver(self, session: str, index: int, payload: dict[str, Any]) -> bool:
        """Deliver one payload, retrying until it is taken or its retry time is over (then
        dead-lettered); False only when the worker stops first."""
        body = _encode.encode(payload).decode()
        message_id = webhook_id(session, payload["data"]["version"], index)
        first = time.monotonic()
        attempt = 0
        while not self.stopped.is_set():
            started = time.perf_counter()
            problem = self.sender.post(self.endpoint, self.signer, message_id, body)
            ATTEMPT.observe(time.perf_counter() - started)
            if problem is None:
                DELIVERIES.labels(self.endpoint.id, "delivered").inc()
                made = datetime.datetime.fromisoformat(payload["timestamp"].replace("Z", "+00:00"))
                DELAY.observe(max(0.0, time.time() - made.timestamp()))
                return True
            DELIVERIES.labels(self.endpoint.id, "failed").inc()
            attempt += 1
            left = self.delivery.retry_seconds - (time.monotonic() - first)
            if left <= 0:
                self._dead_letter(message_id, body, problem, attempt)
                return True
            if attempt == 1 or attempt & (attempt - 1) == 0:  # the 1st, 2nd, 4th, 8th ... failure
                log.warning("webhook delivery failed; retrying", extra={
                    "endpoint": self.endpoint.id, "webhook_id": message_id, "attempt": attempt, "error": problem})
            ceiling = min(self.delivery.backoff_max, FIRST_BACKOFF * 2 ** (attempt - 1))
            wait = ceiling / 2 + random.uniform(0, ceiling / 2)  # "equal jitter": spread, but never at once
            if self.stopped.wait(min(wait, left)):
                return False
        return False

    def _dead_letter(self, message_id: str, body: str, problem: str, attempts: int) -> None:
        DELIVERIES.labels(self.endpoint.id, "dead").inc()
        log.error("webhook delivery given up", extra={"endpoint": self.endpoint.id, "webhook_id": message_id,
                                                        "attempts": attempts, "error": problem})
        entry = {"endpoint": self.endpoint.id, "webhook_id": message_id, "payload": body, "error": problem,
                 "attempts": attempts}
        while not self.stopped.is_set():
            try:
                self.client.xadd(DEAD_LETTERS, entry, maxlen=DEAD_LETTERS_MAX, approximate=True)
                return
            except (redis.ConnectionError, redis.TimeoutError):
                self.stopped.wait(0.5)


class Deliverer:
    """Holds the leases of its share of the endpoints and runs one
    :class:`EndpointWorker` for each (see the module)."""

    def __init__(self, store: SessionStore, delivery: Delivery, name: str | None = None) -> None:
        self.store = store
        self.client = store.client
        self.delivery = delivery
        self.name = name or f"deliverer-{secrets.token_hex(6)}"
        self.webhooks = Webhooks(store, 0)
        self.sender = Sender(delivery.timeout, delivery.concurrency)
        self.workers: dict[str, EndpointWorker] = {}
        self._renew = self.client.register_script(_RENEW)
        self._release = self.client.register_script(_RELEASE)
        self._trimmed_at = 0.0
        self._overrun_seen: dict[tuple[str, str], str] = {}

    @property
    def round_seconds(self) -> float:
        return max(0.05, min(1.0, self.delivery.lease / 3))

    def run(self, stop: threading.Event) -> None:
        log.info("webhook deliverer started", extra={"deliverer": self.name})
        while not stop.is_set():
            try:
                self.round()
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                log.warning("webhook deliverer cannot reach Redis", extra={"error": type(exc).__name__})
            except Exception:
                log.exception("webhook deliverer's round failed")
            stop.wait(self.round_seconds)
        self.close()

    def close(self) -> None:
        """Stop every worker and give up their leases (their pending entries pass to the
        deliverer that takes each lease next)."""
        for endpoint_id, worker in list(self.workers.items()):
            worker.stop()
            with contextlib.suppress(redis.RedisError):
                self._release(keys=[lease_key(endpoint_id)], args=[self.name])
        self.workers.clear()
        HELD.set(0)
        with contextlib.suppress(redis.RedisError):
            self.client.zrem(DELIVERERS, self.name)
        log.info("webhook deliverer stopped", extra={"deliverer": self.name})

    def round(self) -> None:
        """Renew what this deliverer holds, let go of what it should not, take up its
        share of the rest, and trim the outbox now and then."""
        lease_ms = max(1, int(self.delivery.lease * 1000))
        now = int(time.time() * 1000)
        self.client.zadd(DELIVERERS, {self.name: now + lease_ms})
        self.client.zremrangebyscore(DELIVERERS, "-inf", now)
        live = max(1, int(self.client.zcard(DELIVERERS)))
        endpoints = {e.id: e for e in self.webhooks.all()}
        share = math.ceil(len(endpoints) / live)
        for endpoint_id, worker in list(self.workers.items()):
            keep = (endpoint_id in endpoints and worker.alive() and worker.endpoint == endpoints[endpoint_id]
                    and len(self.workers) <= share
                    and self._renew(keys=[lease_key(endpoint_id)], args=[self.name, lease_ms]))
            if not keep:
                self._let_go(endpoint_id)
        for endpoint_id in random.sample(list(endpoints), len(endpoints)):  # deliverers start where they will
            if len(self.workers) >= share:
                break
            if endpoint_id not in self.workers and self.client.set(lease_key(endpoint_id), self.name, nx=True,
                                                                   px=lease_ms):
                self.workers[endpoint_id] = EndpointWorker(self.client, self.store.outboxes(),
                                                           endpoints[endpoint_id], self.name, self.delivery,
                                                           self.sender).start()
                log.info("delivering a webhook endpoint", extra={"endpoint": endpoint_id, "deliverer": self.name})
        HELD.set(len(self.workers))
        if time.monotonic() - self._trimmed_at >= TRIM_EVERY:
            self._trimmed_at = time.monotonic()
            self.trim(set(endpoints))

    def _let_go(self, endpoint_id: str) -> None:
        self.workers.pop(endpoint_id).stop()
        self._release(keys=[lease_key(endpoint_id)], args=[self.name])

    def trim(self, registered: set[str]) -> None:
        """Trim each outbox below the oldest entry a registered endpoint has not had
        acknowledged; drop the groups of deleted endpoints; count overruns."""
        for outbox in self.store.outboxes():
            try:
                info = self.client.xinfo_stream(outbox)
                groups = self.client.xinfo_groups(outbox)
            except redis.ResponseError:
                continue  # no such stream yet
            floor = _id_after(_text(info["last-generated-id"]))
            deleted = _text(info.get("max-deleted-entry-id") or "0-0")
            for group in groups:
                name = _text(group["name"])
                if name not in registered and not self.client.hexists(REGISTRY, name):
                    self.client.xgroup_destroy(outbox, name)  # its endpoint was deleted
                    continue
                delivered = _text(group["last-delivered-id"])
                oldest = _id_after(delivered)
                if int(group["pending"]):
                    oldest = _text(self.client.xpending(outbox, name)["min"])
                floor = min(floor, oldest, key=_id_key)
                if _id_key(deleted) > _id_key(delivered) and self._overrun_seen.get((outbox, name)) != deleted:
                    self._overrun_seen[(outbox, name)] = deleted
                    OVERRUNS.labels(name).inc()
                    log.error("the webhook outbox dropped entries an endpoint had not read (ONO99_WEBHOOK_OUTBOX_MAX)",
                              extra={"endpoint": name, "outbox": outbox})
            self.client.xtrim(outbox, minid=floor, approximate=True)
