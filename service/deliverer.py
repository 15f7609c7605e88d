"""The webhook deliverer: each endpoint's events, signed, at least once, in version
order per session. Runs in ``ono99 serve`` (a process of its own) and as ``ono99 webhooks``.

Any number of deliverers share one Redis. An endpoint is delivered by one deliverer at a
time, the holder of its lease (service.webhooks.lease_key, renewed every round; a
deliverer that dies lets it lapse after ONO99_WEBHOOK_LEASE seconds), and the live
deliverers split the endpoints between them. The holder reads the endpoint's consumer
group on each outbox stream (service.store): first it takes over every delivery still
pending (read by a deliverer that stopped or died before it was acknowledged: delivered
again, with the same ``webhook-id``), then the new entries (a holder that lets an
endpoint go gives its lease up only once its reader's last read has ended, so that
nothing that read took is left behind the new holder's reads); every few seconds it looks
again for pending entries no lane of its holds (read by a reader it stopped, or left by
a deliverer that lost its lease), so none is stranded.

Entries go to one lane per session, which delivers them one after another, so that a
session's events arrive in version order; up to ONO99_WEBHOOK_CONCURRENCY lanes of an
endpoint post at once, and at most ONO99_WEBHOOK_INFLIGHT entries are read and not yet
acknowledged. A failed attempt (no 2xx answer within ONO99_WEBHOOK_TIMEOUT, the whole
attempt) is retried with exponential backoff and jitter for ONO99_WEBHOOK_RETRY_SECONDS,
then the delivery is given up: written to the dead-letter stream and counted. A lane
waiting for its retry holds no thread. Each endpoint has threads and connections of its
own, so one that hangs or fails delays no other. A holder posts only while its lease is
fresh: one that stalled past it (a pause, a partition) posts nothing more, and its
successor delivers from what is acknowledged.

Every round one deliverer also trims the outbox streams below the oldest entry some
endpoint still needs.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import heapq
import http.client
import importlib.metadata
import itertools
import logging
import math
import random
import secrets
import socket
import ssl
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import msgspec
import redis
from prometheus_client import Counter, Gauge, Histogram
from standardwebhooks.webhooks import Webhook

from .hooks import webhook_id
from .store import SessionStore
from .webhooks import DEAD_LETTERS, REGISTRY, Endpoint, Webhooks, as_text, lease_key, make_group

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
RESCAN = 5.0  # seconds between a worker's looks for pending entries none of its lanes holds
# The longest a stopped reader's last read may take: its block, then the client's timeouts.
READ_ENDS = BLOCK_MS / 1000 + 5.0
FIRST_BACKOFF = 0.5  # seconds before the first retry; each later one waits up to twice as long
TRIM_EVERY = 10.0  # seconds between a deliverer's trims of the outbox
DEAD_LETTERS_MAX = 10_000  # entries the dead-letter stream keeps (about)
RESPONSE_READ = 64 * 1024  # bytes of an endpoint's answer read at most
FRESH = 0.75  # a holder posts while its lease was renewed less than this share of it ago
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
    """Posts signed payloads to one endpoint over keep-alive connections of its own.

    ``timeout`` bounds a whole attempt (connect, send, the answer's head and up to
    RESPONSE_READ bytes of its body): a watchdog thread shuts the socket of an attempt
    that outlives it, so a receiver that trickles its answer byte by byte is cut off like
    one that sends nothing (a per-read socket timeout, as HTTP clients' are, would wait
    for it as long as it trickles). :meth:`close` cuts every attempt under way at once.
    """

    def __init__(self, url: str, timeout: float) -> None:
        parts = urllib.parse.urlsplit(url)
        self.https = parts.scheme == "https"
        self.host, self.port = parts.hostname or "", parts.port
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.timeout = timeout
        self._idle: list[http.client.HTTPConnection] = []
        self._busy: dict[int, tuple[float, http.client.HTTPConnection]] = {}  # attempt → (deadline, connection)
        self._attempts = itertools.count()
        self._changed = threading.Condition()
        self._closed = False
        threading.Thread(target=self._watch, name="ono99-webhook-watchdog", daemon=True).start()

    def _connection(self) -> http.client.HTTPConnection:
        with self._changed:
            if self._idle:
                return self._idle.pop()
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def post(self, signer: Webhook, message_id: str, body: str) -> str | None:
        """Post ``body``; None when the endpoint took it (2xx in time), else why not."""
        now = datetime.datetime.now(tz=datetime.UTC)
        headers = {"Content-Type": "application/json", "User-Agent": _USER_AGENT, "webhook-id": message_id,
                   "webhook-timestamp": str(math.floor(now.timestamp())),
                   "webhook-signature": signer.sign(message_id, now, body)}
        connection = self._connection()
        attempt = next(self._attempts)
        with self._changed:
            if self._closed:
                return "the deliverer let the endpoint go"
            self._busy[attempt] = (time.monotonic() + self.timeout, connection)
            self._changed.notify()
        reuse = False
        try:
            connection.request("POST", self.target, body=body.encode(), headers=headers)
            response = connection.getresponse()
            response.read(RESPONSE_READ)
            reuse = response.isclosed() and not response.will_close  # read to its end, and kept alive
            return None if 200 <= response.status < 300 else f"HTTP {response.status}"
        except (OSError, http.client.HTTPException) as exc:
            with self._changed:
                cut = attempt not in self._busy
            if cut:
                return f"no answer within {self.timeout:g} s (ONO99_WEBHOOK_TIMEOUT)"
            return f"{type(exc).__name__}: {str(exc)[:200]}"
        finally:
            with self._changed:
                cut = self._busy.pop(attempt, None) is None
                if reuse and not cut and not self._closed:
                    self._idle.append(connection)
                    connection = None  # type: ignore[assignment]
            if connection is not None:
                connection.close()

    def _watch(self) -> None:
        """Shut the socket of every attempt past its deadline (all of them once closed)."""
        with self._changed:
            while True:
                now = time.monotonic()
                late = [a for a, (deadline, _) in self._busy.items() if self._closed or deadline <= now]
                for attempt in late:
                    _, connection = self._busy.pop(attempt)
                    if connection.sock is not None:
                        with contextlib.suppress(OSError):
                            connection.sock.shutdown(socket.SHUT_RDWR)
                if self._closed:
                    return
                soonest = min((deadline for deadline, _ in self._busy.values()), default=now + 60)
                self._changed.wait(max(0.01, soonest - now))

    def close(self) -> None:
        """Cut the attempts under way and close the idle connections."""
        with self._changed:
            self._closed = True
            idle, self._idle = self._idle, []
            self._changed.notify()
        for connection in idle:
            connection.close()


def _id_after(entry_id: str) -> str:
    milliseconds, _, sequence = entry_id.partition("-")
    return f"{milliseconds}-{int(sequence or 0) + 1}"


def _id_key(entry_id: str) -> tuple[int, int]:
    milliseconds, _, sequence = entry_id.partition("-")
    return int(milliseconds), int(sequence or 0)


_payloads = msgspec.json.Decoder(list[dict[str, Any]])
_encode = msgspec.json.Encoder()


@dataclass
class Entry:
    """An outbox entry in a lane: the payloads of the endpoint's types (index in the
    entry, payload), how many are delivered, and the retries of the next one."""

    outbox: str
    entry_id: str
    wanted: list[tuple[int, dict[str, Any]]]
    done: int = 0
    failed_since: float | None = None  # monotonic time of the next payload's first failed attempt
    attempts: int = 0


@dataclass
class Lane:
    """A session's entries, in order, and whether a thread (or a retry's timer) has it."""

    entries: collections.deque[Entry] = field(default_factory=collections.deque)
    scheduled: bool = False


class EndpointWorker:
    """One endpoint's delivery while this deliverer holds its lease (see the module)."""

    def __init__(self, client: Any, outboxes: list[str], endpoint: Endpoint, consumer: str,
                 delivery: Delivery) -> None:
        self.client = client
        self.outboxes = outboxes
        self.endpoint = endpoint
        self.consumer = consumer
        self.delivery = delivery
        self.signer = Webhook(endpoint.secret)
        self.sender = Sender(endpoint.url, delivery.timeout)
        self.stopped = threading.Event()
        self.renewed_at = time.monotonic()  # when its lease was last known to be held (Deliverer.round)
        self._lanes: dict[str, Lane] = {}
        self._queued: set[str] = set()  # the entry ids in its lanes
        self._retries: list[tuple[float, int, str]] = []  # (when, tie-break, session): lanes waiting to retry
        self._ties = itertools.count()
        self._changed = threading.Condition()
        self._pool = ThreadPoolExecutor(max(1, delivery.concurrency), thread_name_prefix=f"ono99-{endpoint.id}")
        self._gauge = INFLIGHT.labels(endpoint.id)
        self._threads = [threading.Thread(target=self._read, name=f"ono99-read-{endpoint.id}", daemon=True),
                         threading.Thread(target=self._retry, name=f"ono99-retry-{endpoint.id}", daemon=True)]

    def start(self) -> EndpointWorker:
        for thread in self._threads:
            thread.start()
        return self

    def alive(self) -> bool:
        return not self.stopped.is_set() and self._threads[0].is_alive()

    def stop(self) -> None:
        """Stop delivering: what is read and not acknowledged stays pending, for the next
        holder; the posts under way are cut."""
        self.stopped.set()
        self.sender.close()
        with self._changed:
            self._changed.notify_all()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._gauge.set(0)

    def may_post(self) -> bool:
        """Whether this worker still delivers: not stopped, and its lease fresh (a holder
        that stalled past it stops: another may hold the endpoint now)."""
        if self.stopped.is_set():
            return False
        if time.monotonic() - self.renewed_at > self.delivery.lease * FRESH:
            log.warning("webhook lease not renewed in time: letting the endpoint go",
                        extra={"endpoint": self.endpoint.id})
            self.stop()
            return False
        return True

    # --- reading ---------------------------------------------------------------------

    def ended(self, seconds: float) -> bool:
        """Whether its reader has ended (once stopped), waiting at most ``seconds``."""
        self._threads[0].join(seconds)
        return not self._threads[0].is_alive()

    def _read(self) -> None:
        while not self.stopped.is_set():
            try:
                self._take_over(0)
                self._read_entries()
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                log.warning("webhook deliverer cannot reach Redis", extra={"endpoint": self.endpoint.id,
                                                                            "error": type(exc).__name__})
                self.stopped.wait(1.0)
            except Exception:
                log.exception("webhook endpoint's reader failed", extra={"endpoint": self.endpoint.id})
                self.stopped.wait(1.0)

    def _take_over(self, idle_ms: int) -> None:
        """Make the endpoint's pending entries idle at least ``idle_ms`` this consumer's
        (the lease says no other deliverer delivers it now), to be read again from "0"."""
        for outbox in self.outboxes:
            start = "0-0"
            while not self.stopped.is_set():
                try:
                    # (redis-py drops the cursor of a JUSTID answer: the entries come whole)
                    found = self.client.xautoclaim(outbox, self.endpoint.id, self.consumer, idle_ms,
                                                   start_id=start, count=200)
                except redis.ResponseError as exc:
                    self._no_group(outbox, exc)
                    break
                start = as_text(found[0])
                if start == "0-0":
                    break

    def _no_group(self, outbox: str, exc: redis.ResponseError) -> None:
        """A read found no consumer group: the endpoint was deleted (the worker stops at
        once), or Redis lost its data (the group is made again)."""
        if "NOGROUP" not in str(exc):
            raise exc
        if not self.client.hexists(REGISTRY, self.endpoint.id):
            log.info("webhook endpoint deleted: its delivery stops", extra={"endpoint": self.endpoint.id})
            self.stop()
            return
        make_group(self.client, outbox, self.endpoint.id)

    def _read_entries(self) -> None:
        cursors = dict.fromkeys(self.outboxes, "0")  # "0": this consumer's pending entries first, then ">"
        single = len(self.outboxes) == 1
        rescanned = time.monotonic()
        while self.may_post():  # a holder that stalled past its lease reads no more either
            if time.monotonic() - rescanned >= RESCAN:  # pending entries none of its lanes holds
                rescanned = time.monotonic()
                self._take_over(int(self.delivery.lease * 1000))
                cursors = dict.fromkeys(self.outboxes, "0")
            with self._changed:
                while len(self._queued) >= self.delivery.inflight and not self.stopped.is_set():
                    self._changed.wait(0.5)
                room = self.delivery.inflight - len(self._queued)
            news = False
            for outbox in self.outboxes:
                if self.stopped.is_set():
                    return
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
                    cursors[outbox] = as_text(entries[-1][0])
                for entry_id, fields in entries:
                    news = True
                    self._dispatch(outbox, as_text(entry_id), fields)
            if not news and not single:
                self.stopped.wait(IDLE)

    def _dispatch(self, outbox: str, entry_id: str, fields: dict[bytes, bytes] | None) -> None:
        """Queue an entry's payloads of the endpoint's event types on its session's lane
        (an entry a lane holds already is left there)."""
        if self.stopped.is_set() or entry_id in self._queued:
            return  # left pending for the next holder, or already queued
        wanted: list[tuple[int, dict[str, Any]]] = []
        session = ""
        if fields:
            session = as_text(fields[b"s"])
            wanted = [(i, p) for i, p in enumerate(_payloads.decode(fields[b"h"])) if p["type"] in self.endpoint.events]
        else:  # read, then trimmed away by the outbox's cap before it was delivered
            OVERRUNS.labels(self.endpoint.id).inc()
            log.error("the webhook outbox dropped an entry read and not delivered (ONO99_WEBHOOK_OUTBOX_MAX)",
                      extra={"endpoint": self.endpoint.id, "entry": entry_id})
        if not wanted:
            self.client.xack(outbox, self.endpoint.id, entry_id)
            return
        with self._changed:
            self._queued.add(entry_id)
            self._gauge.set(len(self._queued))
            lane = self._lanes.setdefault(session, Lane())
            lane.entries.append(Entry(outbox, entry_id, wanted))
            if lane.scheduled:
                return
            lane.scheduled = True
        with contextlib.suppress(RuntimeError):  # the pool shut down: stopping, the entry stays pending
            self._pool.submit(self._lane, session)

    # --- delivering ------------------------------------------------------------------

    def _retry(self) -> None:
        """Hand each lane whose retry is due back to the pool."""
        with self._changed:
            while not self.stopped.is_set():
                now = time.monotonic()
                if self._retries and self._retries[0][0] <= now:
                    _, _, session = heapq.heappop(self._retries)
                    with contextlib.suppress(RuntimeError):  # the pool shut down: stopping
                        self._pool.submit(self._lane, session)
                    continue
                self._changed.wait(self._retries[0][0] - now if self._retries else None)

    def _lane(self, session: str) -> None:
        """Deliver a session's queued entries one after another, until the lane is empty
        or its next payload waits for a retry (then it holds no thread)."""
        try:
            while self.may_post():
                with self._changed:
                    lane = self._lanes[session]
                    if not lane.entries:
                        del self._lanes[session]
                        return
                    entry = lane.entries[0]
                while entry.done < len(entry.wanted):
                    wait = self._attempt(session, entry)
                    if wait is None:
                        continue
                    with self._changed:
                        heapq.heappush(self._retries, (time.monotonic() + wait, next(self._ties), session))
                        self._changed.notify_all()
                    return
                self._acknowledge(entry)
                with self._changed:
                    lane.entries.popleft()
                    self._queued.discard(entry.entry_id)
                    self._gauge.set(len(self._queued))
                    self._changed.notify_all()
        except Exception:
            log.exception("webhook lane failed", extra={"endpoint": self.endpoint.id, "session_id": session})
            self.stop()  # the next holder (this deliverer's next round, or another) delivers it again

    def _attempt(self, session: str, entry: Entry) -> float | None:
        """One attempt at the entry's next payload: None when it is done with (delivered, or
        given up and dead-lettered), else the seconds to wait before the next attempt."""
        index, payload = entry.wanted[entry.done]
        if not self.may_post():
            return 1.0  # not posted: the worker is stopping
        body = _encode.encode(payload).decode()
        message_id = webhook_id(session, payload["data"]["version"], index)
        started = time.perf_counter()
        problem = self.sender.post(self.signer, message_id, body)
        ATTEMPT.observe(time.perf_counter() - started)
        if problem is None:
            DELIVERIES.labels(self.endpoint.id, "delivered").inc()
            made = datetime.datetime.fromisoformat(payload["timestamp"].replace("Z", "+00:00"))
            DELAY.observe(max(0.0, time.time() - made.timestamp()))
            entry.done, entry.failed_since, entry.attempts = entry.done + 1, None, 0
            return None
        if self.stopped.is_set():
            return 1.0  # cut by the stop: not a failure of the endpoint's
        DELIVERIES.labels(self.endpoint.id, "failed").inc()
        entry.attempts += 1
        if entry.failed_since is None:
            entry.failed_since = time.monotonic()
        left = self.delivery.retry_seconds - (time.monotonic() - entry.failed_since)
        if left <= 0:
            self._dead_letter(message_id, body, problem, entry.attempts)
            entry.done, entry.failed_since, entry.attempts = entry.done + 1, None, 0
            return None
        if entry.attempts & (entry.attempts - 1) == 0:  # the 1st, 2nd, 4th, 8th ... failure
            log.warning("webhook delivery failed; retrying", extra={
                "endpoint": self.endpoint.id, "webhook_id": message_id, "attempt": entry.attempts, "error": problem})
        ceiling = min(self.delivery.backoff_max, FIRST_BACKOFF * 2.0 ** (entry.attempts - 1))
        return min(ceiling / 2 + random.uniform(0, ceiling / 2), left)  # "equal jitter": spread, never at once

    def _acknowledge(self, entry: Entry) -> None:
        while not self.stopped.is_set():
            try:
                self.client.xack(entry.outbox, self.endpoint.id, entry.entry_id)
                return
            except (redis.ConnectionError, redis.TimeoutError):
                self.stopped.wait(0.5)

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
        self.workers: dict[str, EndpointWorker] = {}
        self._consumers = itertools.count(1)  # each worker reads as a consumer of its own
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
        stopped = list(self.workers.items())
        for _, worker in stopped:
            worker.stop()
        self._release_ended(stopped)
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
            asked = time.monotonic()  # the lease lasts at least lease_ms from here when renewed
            keep = (endpoint_id in endpoints and worker.alive() and worker.endpoint == endpoints[endpoint_id]
                    and len(self.workers) <= share
                    and self._renew(keys=[lease_key(endpoint_id)], args=[self.name, lease_ms]))
            if keep:
                worker.renewed_at = asked
            else:
                self._let_go(endpoint_id)
        for endpoint_id in random.sample(list(endpoints), len(endpoints)):  # deliverers start where they will
            if len(self.workers) >= share:
                break
            asked = time.monotonic()
            if endpoint_id not in self.workers and self.client.set(lease_key(endpoint_id), self.name, nx=True,
                                                                   px=lease_ms):
                worker = EndpointWorker(self.client, self.store.outboxes(), endpoints[endpoint_id],
                                        f"{self.name}-{next(self._consumers)}", self.delivery)
                worker.renewed_at = asked
                self.workers[endpoint_id] = worker.start()
                log.info("delivering a webhook endpoint", extra={"endpoint": endpoint_id, "deliverer": self.name})
        HELD.set(len(self.workers))
        if time.monotonic() - self._trimmed_at >= TRIM_EVERY:
            self._trimmed_at = time.monotonic()
            self.trim(set(endpoints))

    def _let_go(self, endpoint_id: str) -> None:
        """Stop the endpoint's worker, and give its lease up once its reader has ended
        (on a thread of its own, so that the round goes on)."""
        worker = self.workers.pop(endpoint_id)
        worker.stop()
        threading.Thread(target=self._release_ended, args=([(endpoint_id, worker)],),
                         name="ono99-webhook-release", daemon=True).start()

    def _release_ended(self, stopped: list[tuple[str, EndpointWorker]]) -> None:
        """Give up the leases of stopped workers, each once its reader has ended: a read
        it sent before the stop still takes the entries of the next second, and the next
        holder must find them pending, to take them over before it reads on past them
        (else they go seconds later, after newer ones). A reader that does not end within
        READ_ENDS keeps its lease until it lapses."""
        deadline = time.monotonic() + READ_ENDS
        for endpoint_id, worker in stopped:
            if worker.ended(max(0.0, deadline - time.monotonic())):
                with contextlib.suppress(redis.RedisError):
                    self._release(keys=[lease_key(endpoint_id)], args=[self.name])
            else:
                log.warning("a stopped webhook reader has not ended: its lease is left to lapse",
                            extra={"endpoint": endpoint_id, "deliverer": self.name})

    def trim(self, registered: set[str]) -> None:
        """Trim each outbox below the oldest entry a registered endpoint has not had
        acknowledged; drop the groups of deleted endpoints; count overruns."""
        for outbox in self.store.outboxes():
            try:
                info = self.client.xinfo_stream(outbox)
                groups = self.client.xinfo_groups(outbox)
            except redis.ResponseError:
                continue  # no such stream yet
            floor = _id_after(as_text(info["last-generated-id"]))
            deleted = as_text(info.get("max-deleted-entry-id") or "0-0")
            for group in groups:
                name = as_text(group["name"])
                if name not in registered and not self.client.hexists(REGISTRY, name):
                    self.client.xgroup_destroy(outbox, name)  # its endpoint was deleted
                    continue
                delivered = as_text(group["last-delivered-id"])
                oldest = _id_after(delivered)
                if int(group["pending"]):
                    pending = self.client.xpending(outbox, name)["min"]  # None: acknowledged meanwhile
                    oldest = as_text(pending) if pending is not None else oldest
                floor = min(floor, oldest, key=_id_key)
                self._forget_consumers(outbox, name)
                if (name in self.workers and _id_key(deleted) > _id_key(delivered)  # counted by its holder only
                        and self._overrun_seen.get((outbox, name)) != deleted):
                    self._overrun_seen[(outbox, name)] = deleted
                    OVERRUNS.labels(name).inc()
                    log.error("the webhook outbox dropped entries an endpoint had not read (ONO99_WEBHOOK_OUTBOX_MAX)",
                              extra={"endpoint": name, "outbox": outbox})
            self.client.xtrim(outbox, minid=floor, approximate=True)

    def _forget_consumers(self, outbox: str, group: str) -> None:
        """Drop a group's consumers that hold nothing and have been idle twice a lease:
        the readers of workers gone (each worker reads as a consumer of its own)."""
        for consumer in self.client.xinfo_consumers(outbox, group):
            if int(consumer["pending"]) == 0 and int(consumer["idle"]) > 2 * self.delivery.lease * 1000:
                self.client.xgroup_delconsumer(outbox, group, as_text(consumer["name"]))
