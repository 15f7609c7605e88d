"""Webhooks under failure and abuse: the claims of API.md, OPERATIONS.md and
SECURITY.md ("Webhooks") held against real gunicorn, real ``ono99 webhooks``
deliverers, real Valkey servers and real HTTP receivers (the helpers of
tests/test_webhooks.py): Redis restarts, leases lost and taken over, deliverers
joining, stalling and stopping, receivers that trickle, refuse or hang, endpoints
deleted mid-delivery, and odd input."""

from __future__ import annotations

import contextlib
import itertools
import json
import signal
import socket
import threading
import time
from pathlib import Path

import pytest
import redis
import requests

from tests.conftest import act, auth, restart_port, start_http
from tests.test_webhooks import (
    MANY,
    OPERATOR,
    Receiver,
    arrived,
    create,
    outbox_payloads,
    register,
    start_deliverer,
    wait_for,
    webhook_stack,
)

BOTS = ["ann", {"id": "b1", "bot": {"kind": "heuristic"}}, {"id": "b2", "bot": {"kind": "random"}}]


def arrival_versions(receiver: Receiver) -> dict[str, list[int]]:
    """Each session's versions in the order their posts were taken, duplicates included."""
    found: dict[str, list[int]] = {}
    for _, body in receiver.taken():
        data = json.loads(body)["data"]
        found.setdefault(data["session_id"], []).append(data["version"])
    return found


def older_after_newer(receiver: Receiver) -> dict[str, list[int]]:
    """The sessions whose posts went back to an older version after a newer one (API.md:
    "a redelivery repeats the events that came just before, never an older one after a
    newer one")."""
    return {sid: versions for sid, versions in arrival_versions(receiver).items()
            if any(b < a for a, b in itertools.pairwise(versions))}


def all_read(url: str, group: str) -> bool:
    """Every outbox entry is read by the endpoint's group (pending in its lanes)."""
    r = redis.Redis.from_url(url)
    (info,) = [g for g in r.xinfo_groups("ono99:outbox") if g["name"].decode() == group]
    return info["lag"] == 0 and info["pending"] == r.xlen("ono99:outbox")


class Valkey:
    """An embedded Valkey with an append-only file, that can be restarted on its port
    (its data kept: the consumer groups' pending entries survive, as in production)."""

    def __init__(self, data_dir: Path) -> None:
        from service.embedded_redis import start_embedded

        self._start = start_embedded
        self.data_dir = data_dir
        self.port = restart_port()
        self.server = start_embedded(data_dir=data_dir, port=self.port)
        self.url = self.server.connection_url

    def restart(self, down: float) -> None:
        self.server.stop()
        time.sleep(down)
        self.server = self._start(data_dir=self.data_dir, port=self.port)

    def stop(self) -> None:
        self.server.stop()


@pytest.fixture
def valkey(tmp_path):
    server = Valkey(tmp_path)
    yield server
    server.stop()


# --- a deliverer that loses Redis -----------------------------------------------------------


def test_a_redis_restart_never_posts_an_older_event_after_a_newer_one(valkey):
    """Valkey restarted (its data kept) while a lane holds a session's entries: the
    reader reads its pending entries again, and those its lanes hold already are not
    queued a second time, so no older version arrives after a newer one."""
    server = start_http(valkey.url, **MANY)
    # A long lease: the holder keeps the endpoint through the restart.
    deliverer = start_deliverer(valkey.url, ONO99_WEBHOOK_LEASE="60", ONO99_WEBHOOK_TIMEOUT="60")
    try:
        receiver = Receiver()
        endpoint = register(server, receiver.url)
        receiver.hang.set()  # the lane's first post waits: the session's later entries queue behind it
        made = create(server, players=BOTS, seed=5)
        for _ in range(3):
            act(server, made["session_id"], made["seats"]["ann"])
        wait_for(lambda: all_read(valkey.url, endpoint["id"]), 20, "every entry read into the lane")
        valkey.restart(down=2.0)  # the reader sees ConnectionError; Valkey comes back with its PEL
        time.sleep(4)  # the reader's retry (1 s), its take-over and its read of "0"
        receiver.hang.clear()
        expected = outbox_payloads(valkey.url)
        wait_for(lambda: set(arrived(receiver, endpoint["secret"])) >= set(expected), 30, "every event")
        time.sleep(3)  # whatever else the lane holds
        assert older_after_newer(receiver) == {}, str(arrival_versions(receiver))
    finally:
        deliverer.stop()
        server.stop()


# --- leases lost, taken over, passed between deliverers ---------------------------------------


def created_events(url: str) -> dict[str, dict]:
    return {i: p for i, p in outbox_payloads(url).items() if p["type"] == "session.created"}


def _traffic(server, stop: threading.Event, seeds: list[int], every: float = 0.0) -> None:
    """Sessions made one after another until ``stop`` (every ``every`` seconds; 0: an
    outbox entry every few ms)."""
    seed = 1000
    while not stop.is_set():
        create(server, seed=seed)
        seeds.append(seed)
        seed += 1
        stop.wait(every)


def test_entries_a_stopped_reader_took_are_delivered_by_its_successor(own_redis):
    """The lease lost (deleted here, as a stall past ONO99_WEBHOOK_LEASE or Redis down
    longer would) while the reader waits in XREADGROUP: the worker is let go of and a new
    one takes the lease; what the old reader still takes is pending on its consumer, and
    the new worker's periodic take-over delivers it."""
    with webhook_stack(own_redis, http_env=MANY) as (server, _deliverer):
        store = redis.Redis.from_url(own_redis)
        receiver = Receiver()
        endpoint = register(server, receiver.url, events=["session.created"])
        create(server, seed=1)
        wait_for(lambda: len(receiver.taken()) == 1, 20, "the first delivery")
        for attempt in range(3):  # (each new worker reads "0" at its start: a later try would pick it up)
            time.sleep(1.5)  # the worker's reader is blocked in XREADGROUP ">" again
            stop, seeds = threading.Event(), []
            traffic = threading.Thread(target=_traffic, args=(server, stop, seeds))
            store.delete(f"ono99:webhooks:lease:{endpoint['id']}")  # the lease lapsed
            traffic.start()
            time.sleep(1.5)
            stop.set()
            traffic.join()
            expected = created_events(own_redis)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not set(arrived(receiver, endpoint["secret"])) >= set(expected):
                time.sleep(0.2)
            missing = set(expected) - set(arrived(receiver, endpoint["secret"]))
            pending = store.xpending_range("ono99:outbox", endpoint["id"], "-", "+", 100)
            stuck = [(p["message_id"], p["consumer"], p["time_since_delivered"]) for p in pending]
            assert not missing, (f"try {attempt}: {len(missing)} of {len(expected)} events never arrived; "
                                 f"pending 10 s on: {stuck}")


def held_endpoints(server, redis_url: str, **body) -> tuple[list[Receiver], list[dict]]:
    """Two receivers, each registered as an endpoint with ``body``, once a deliverer
    holds both endpoints' leases."""
    receivers = [Receiver() for _ in range(2)]
    endpoints = [register(server, r.url, **body) for r in receivers]
    wait_for(lambda: int(redis.Redis.from_url(redis_url).exists(
        *[f"ono99:webhooks:lease:{e['id']}" for e in endpoints])) == 2, 20, "both leases held")
    return receivers, endpoints


def test_a_deliverer_joining_and_leaving_loses_no_delivery(own_redis):
    """Deliverers join (a rolling update, a scale-up) and leave: endpoints pass between
    them, and every event still arrives."""
    server = start_http(own_redis, **MANY)
    first = start_deliverer(own_redis)
    others = []
    stop = threading.Event()
    try:
        receivers, endpoints = held_endpoints(server, own_redis, events=["session.created"])
        for attempt in range(8):  # a deliverer joins, takes an endpoint over; then leaves (it gives it back)
            stop, seeds = threading.Event(), []
            # A session every 0.9 s: the first's reader, let go of, waits in XREADGROUP for the next one
            traffic = threading.Thread(target=_traffic, args=(server, stop, seeds, 0.9))
            traffic.start()
            time.sleep(1)
            others.append(start_deliverer(own_redis))
            time.sleep(3)
            stop.set()
            traffic.join()
            expected = created_events(own_redis)
            deadline = time.monotonic() + 10
            missing = 1
            while missing and time.monotonic() < deadline:
                missing = sum(len(set(expected) - set(arrived(r, e["secret"])))
                              for r, e in zip(receivers, endpoints, strict=True))
                time.sleep(0.2)
            assert not missing, f"try {attempt}: {missing} of {2 * len(expected)} deliveries never arrived"
            others.pop().stop()
    finally:
        stop.set()
        for d in [first, *others]:
            d.stop()
        server.stop()


def _moves(server, stop: threading.Event) -> None:
    """One session after another moved on until ``stop``: ann's action and the bots'
    moves behind it, every 0.1 s (each a few versions, each an outbox entry)."""
    made, seed = None, 0
    while not stop.is_set():
        if made is None:
            made, seed = create(server, players=BOTS, seed=seed), seed + 1
        sid, token = made["session_id"], made["seats"]["ann"]
        view = requests.get(f"{server.url}/v1/sessions/{sid}", headers=auth(token), timeout=10).json()["view"]
        if view["legal_actions"]:
            act(server, sid, token)
        else:  # ann is out, or the game is over
            made = None
        stop.wait(0.1)


def test_a_session_keeps_its_order_while_its_endpoint_passes_between_deliverers(own_redis):
    """A deliverer joins and leaves five times while sessions move on, so each endpoint
    passes from one holder to the other and back: no session's events arrive older after
    newer. (A holder used to give its lease up while its reader's last read, sent before
    it let go, could still take the entries of the next second: the new holder read on
    past them, and they were posted seconds later, after newer ones.)"""
    server = start_http(own_redis, **MANY)
    first = start_deliverer(own_redis)
    others = []
    stop = threading.Event()
    try:
        receivers, endpoints = held_endpoints(server, own_redis)
        traffic = threading.Thread(target=_moves, args=(server, stop))
        traffic.start()
        for _ in range(5):
            time.sleep(1)
            others.append(start_deliverer(own_redis))  # takes one endpoint over
            time.sleep(4)
            others.pop().stop()  # gives it back
        stop.set()
        traffic.join()
        expected = set(outbox_payloads(own_redis))
        for receiver, endpoint in zip(receivers, endpoints, strict=True):
            wait_for(lambda r=receiver, e=endpoint: set(arrived(r, e["secret"])) >= expected, 30,
                     "every event at both endpoints")
        assert len(expected) > 40, len(expected)  # events all along the hand-overs
        for receiver in receivers:
            assert older_after_newer(receiver) == {}, str(arrival_versions(receiver))
    finally:
        stop.set()
        for d in [first, *others]:
            d.stop()
        server.stop()


# --- ONO99_WEBHOOK_TIMEOUT bounds a whole attempt ---------------------------------------------


class Trickler:
    """A receiver that answers 204, but its header one byte every ``every`` seconds for
    ``seconds``: each read of the deliverer's socket gets a byte well within any timeout.
    It records when each connection's request came and when the client hung up."""

    def __init__(self, seconds: float, every: float = 0.5) -> None:
        self.seconds, self.every = seconds, every
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hooks"
        self.held: list[float] = []  # how long each answer kept the client
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        started = time.monotonic()
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 204 No Content\r\nX-Slow: ")
            while time.monotonic() - started < self.seconds:
                conn.sendall(b"a")
                time.sleep(self.every)
            conn.sendall(b"\r\nContent-Length: 0\r\n\r\n")
        except OSError:
            pass  # the client gave up
        finally:
            self.held.append(time.monotonic() - started)
            conn.close()


def test_an_answer_trickled_byte_by_byte_is_cut_at_the_timeout(own_redis):
    """ONO99_WEBHOOK_TIMEOUT bounds a whole attempt: a receiver that sends its answer a
    byte every half second is cut off after it, not waited for as long as it trickles."""
    with webhook_stack(own_redis, ONO99_WEBHOOK_TIMEOUT="2") as (server, _deliverer):
        trickler = Trickler(seconds=12)
        register(server, trickler.url, events=["session.created"])
        create(server, seed=1)
        wait_for(lambda: trickler.held, 30, "the first attempt to end")
        assert trickler.held[0] < 2 + 1.5, f"an attempt of a 2 s timeout held the lane {trickler.held[0]:.1f} s"


def test_a_deliverer_asked_to_stop_exits_without_waiting_for_a_slow_receiver(own_redis):
    """SIGTERM: the deliverer cuts its posts under way and exits at once, well within the
    15 s deploy/k8s/webhooks.yaml gives it."""
    with webhook_stack(own_redis, ONO99_WEBHOOK_TIMEOUT="2") as (server, deliverer):
        trickler = Trickler(seconds=25)
        register(server, trickler.url, events=["session.created"])
        create(server, seed=1)
        time.sleep(3)  # the attempt is under way
        started = time.monotonic()
        deliverer.proc.terminate()
        with contextlib.suppress(Exception):
            deliverer.proc.wait(timeout=10)
        took = time.monotonic() - started
        assert deliverer.proc.poll() is not None and took < 5, f"still running {took:.0f} s after SIGTERM"


# --- failing sessions beside healthy ones -----------------------------------------------------


class Picky:
    """A receiver that refuses (500) every event of the first ``refused`` sessions it
    hears of (a backend that does not know them, or chokes on them) and takes the rest."""

    def __init__(self, refused: int) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        picky = self
        self.refused: set[str] = set()
        self.taken: list[dict] = []
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                session = payload["data"]["session_id"]
                with picky.lock:
                    if session not in picky.refused and len(picky.refused) < refused:
                        picky.refused.add(session)
                    status = 500 if session in picky.refused else 204
                    if status == 204:
                        picky.taken.append(payload)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_sessions_whose_deliveries_fail_hold_up_no_other_session(own_redis):
    """As many failing sessions as the endpoint has lanes (ONO99_WEBHOOK_CONCURRENCY, 2
    here): while they wait for their retries they hold no thread, and another session's
    event is posted at once."""
    with webhook_stack(own_redis, ONO99_WEBHOOK_CONCURRENCY="2") as (server, _deliverer):
        picky = Picky(refused=2)
        register(server, picky.url, events=["session.created"])
        for seed in (1, 2):
            create(server, seed=seed)  # the two sessions the receiver refuses
        wait_for(lambda: len(picky.refused) == 2, 20, "two refused sessions")
        third = create(server, seed=3)["session_id"]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not picky.taken:
            time.sleep(0.2)
        assert [p["data"]["session_id"] for p in picky.taken] == [third], \
            "a healthy session's event waits while two other sessions are retried (for up to a day)"


# --- a deleted endpoint -----------------------------------------------------------------------


def test_a_deleted_endpoint_is_posted_nothing_its_lanes_still_hold(own_redis):
    """DELETE /v1/webhooks/{id} while its lanes hold entries: at most the posts under way
    end (ONO99_WEBHOOK_CONCURRENCY, 8), nothing more is posted."""
    # The default lease: rounds of 1 s.
    with webhook_stack(own_redis, http_env=MANY, ONO99_WEBHOOK_LEASE="15") as (server, _deliverer):
        receiver = Receiver()
        endpoint = register(server, receiver.url)
        receiver.hang.set()
        for seed in range(12):
            made = create(server, players=BOTS, seed=seed)
            act(server, made["session_id"], made["seats"]["ann"])
        wait_for(lambda: all_read(own_redis, endpoint["id"]), 20, "every entry read into the lanes")
        assert requests.delete(f"{server.url}/v1/webhooks/{endpoint['id']}", headers=OPERATOR,
                               timeout=5).status_code == 204
        before = len(receiver.got)
        receiver.hang.clear()  # the posts under way end: at most ONO99_WEBHOOK_CONCURRENCY (8)
        time.sleep(3)
        after = len(receiver.got) - before
        assert after <= 8, f"{after} posts to an endpoint after its DELETE answered 204"


# --- a stalled holder --------------------------------------------------------------------------


def test_a_stalled_deliverer_posts_nothing_beside_its_successor(own_redis):
    """A holder stopped (SIGSTOP) past its lease, with a session's entries in its lane:
    another takes over and delivers everything; when the first goes on, its lease is
    stale, and it posts none of the older events after the newer ones."""
    server = start_http(own_redis, **MANY)
    first = start_deliverer(own_redis, ONO99_WEBHOOK_TIMEOUT="60")
    second = None
    try:
        receiver = Receiver()
        endpoint = register(server, receiver.url)
        receiver.hang.set()
        made = create(server, players=BOTS, seed=5)
        for _ in range(4):
            act(server, made["session_id"], made["seats"]["ann"])
        wait_for(lambda: all_read(own_redis, endpoint["id"]), 20, "every entry read into the lane")
        wait_for(lambda: receiver.arrived >= 1, 20, "the holder's first post under way")
        first.proc.send_signal(signal.SIGSTOP)  # stalled, with the session's entries in its lane
        receiver.hang.clear()  # its post under way is answered (the answer waits in its socket)
        second = start_deliverer(own_redis, ONO99_WEBHOOK_TIMEOUT="60")
        expected = outbox_payloads(own_redis)
        wait_for(lambda: set(arrived(receiver, endpoint["secret"])) >= set(expected), 30, "the successor's posts")
        first.proc.send_signal(signal.SIGCONT)
        time.sleep(3)
        assert older_after_newer(receiver) == {}, str(arrival_versions(receiver))
    finally:
        first.proc.send_signal(signal.SIGCONT)
        first.stop()
        if second is not None:
            second.stop()
        server.stop()


# --- input, trims, seat changes ------------------------------------------------------------------


def test_a_malformed_ipv6_url_is_a_400(own_redis):
    """A bracketed host that is no IPv6 address is a bad request, not an internal error."""
    server = start_http(own_redis)
    try:
        for url in ("http://[::1/hooks", "http://[not-an-ip]/hooks"):
            answer = requests.post(f"{server.url}/v1/webhooks", json={"url": url}, headers=OPERATOR, timeout=5)
            assert answer.status_code == 400, (url, answer.status_code, answer.text[:200])
    finally:
        server.stop()


def test_a_deleted_endpoints_reader_stops_instead_of_spinning(own_redis):
    """After DELETE the holder's reader finds no group and stops: it does not ask Redis
    again and again as fast as it answers."""
    with webhook_stack(own_redis, ONO99_WEBHOOK_LEASE="15") as (server, _deliverer):
        store = redis.Redis.from_url(own_redis)
        receiver = Receiver()
        endpoint = register(server, receiver.url, events=["session.created"])
        create(server, seed=1)
        wait_for(lambda: receiver.taken(), 20, "the first delivery")
        before = store.info("commandstats").get("cmdstat_xreadgroup", {}).get("calls", 0)
        requests.delete(f"{server.url}/v1/webhooks/{endpoint['id']}", headers=OPERATOR, timeout=5)
        time.sleep(2)
        calls = store.info("commandstats").get("cmdstat_xreadgroup", {}).get("calls", 0) - before
        assert calls < 20, f"{calls} XREADGROUP calls in the 2 s after the endpoint was deleted"


def test_the_backlog_counts_entries_until_a_deliverer_has_passed_them(own_redis):
    """API.md: backlog is the outbox entries the endpoint has not had delivered, read or
    not; entries without events of its types pass at once once read. With no deliverer
    running, three commits wait; a deliverer clears them without posting anything."""
    server = start_http(own_redis)
    try:
        receiver = Receiver()
        endpoint = register(server, receiver.url, events=["game.over"])
        for seed in range(3):
            create(server, seed=seed)  # no game ends
        url = f"{server.url}/v1/webhooks/{endpoint['id']}"
        assert requests.get(url, headers=OPERATOR, timeout=5).json()["backlog"] == 3
        deliverer = start_deliverer(own_redis)
        try:
            wait_for(lambda: requests.get(url, headers=OPERATOR, timeout=5).json()["backlog"] == 0, 20,
                     "the backlog passed")
        finally:
            deliverer.stop()
        assert not receiver.got
    finally:
        server.stop()


def test_a_trim_racing_an_acknowledgement_goes_on(own_redis):
    """An acknowledgement landing between the trim's XINFO GROUPS and its XPENDING (in
    process, over a real Valkey) leaves the group with nothing pending: the trim goes on."""
    from service.deliverer import Deliverer, Delivery
    from service.redis_client import connect
    from service.store import SessionStore
    from service.webhooks import Webhooks

    client = connect(own_redis, 3.0)
    store = SessionStore(client)
    endpoint = Webhooks(store, 20).register("http://127.0.0.1:9/hooks", ["session.created"])
    for n in range(3):
        client.xadd("ono99:outbox", {"s": f"s{n}", "h": b"[]"})
    (_, entries), = client.xreadgroup(endpoint.id, "c", {"ono99:outbox": ">"})

    class AckingBetween:
        """The client, with a lane's XACK landing just after XINFO GROUPS answers."""

        def __getattr__(self, name):
            return getattr(client, name)

        def xinfo_groups(self, name):
            groups = client.xinfo_groups(name)
            client.xack(name, endpoint.id, *[entry_id for entry_id, _ in entries])
            return groups

    deliverer = Deliverer(store, Delivery(2, 2, 1, 2, 100, 2.0))
    deliverer.client = AckingBetween()
    def trims() -> int:
        return int(client.info("commandstats").get("cmdstat_xtrim", {}).get("calls", 0))

    before = trims()
    deliverer.trim({endpoint.id})  # raised ValueError on the None XPENDING gave
    assert trims() == before + 1  # the round went on to trim the outbox


def test_a_reissued_token_says_who_plays_the_seat_now(own_redis):
    """A seat handed to a bot, then its token reissued: the token's seat.changed names
    the bot that still plays it (``bot``: the kind playing it now)."""
    with webhook_stack(own_redis) as (server, _deliverer):
        receiver = Receiver()
        endpoint = register(server, receiver.url, events=["seat.changed"])
        made = create(server, players=["ann", "bob", {"id": "cpu", "bot": {"kind": "heuristic"}}], seed=4)
        sid = made["session_id"]
        handed = requests.put(f"{server.url}/v1/sessions/{sid}/seats/bob/bot", json={"bot": {"kind": "random"}},
                              headers=OPERATOR, timeout=10)
        assert handed.status_code == 200, handed.text
        assert requests.post(f"{server.url}/v1/sessions/{sid}/seats/bob/token", headers=OPERATOR,
                             timeout=10).status_code == 200
        wait_for(lambda: len(arrived(receiver, endpoint["secret"])) == 2, 20, "both seat changes")
        changes = sorted((c[0] for c in arrived(receiver, endpoint["secret"]).values()),
                         key=lambda p: p["data"]["version"])
        assert changes[0]["data"]["bot"] == "random"
        record = requests.get(f"{server.url}/v1/sessions/{sid}/record", headers=OPERATOR, timeout=10).json()
        assert changes[1]["data"]["reason"] == "token_reissued"
        assert changes[1]["data"]["bot"] == "random", (changes[1]["data"], "the record's last versions:",
                                                      record["versions"][-2:])


def test_a_lease_under_a_second_is_refused_at_start_and_one_second_delivers(own_redis):
    """ONO99_WEBHOOK_LEASE below a second (0 made every holder's lease stale at once: it
    let its endpoints go every round) stops the deliverer at start, naming the setting;
    the least it takes, one second, delivers."""
    refused = start_deliverer(own_redis, ONO99_WEBHOOK_LEASE="0.99")
    try:
        assert refused.proc.wait(timeout=60) != 0
        assert "ONO99_WEBHOOK_LEASE must be at least 1, not 0.99" in refused.log.read_text()
    finally:
        refused.stop()
    with webhook_stack(own_redis, ONO99_WEBHOOK_LEASE="1") as (server, _deliverer):
        receiver = Receiver()
        endpoint = register(server, receiver.url, events=["session.created"])
        create(server, seed=1)
        wait_for(lambda: len(arrived(receiver, endpoint["secret"])) == 1, 20, "the delivery")
