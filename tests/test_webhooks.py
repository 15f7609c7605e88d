"""Webhooks (API.md, "Webhooks"): endpoints registered by the service key, and signed
deliveries by real ``ono99 webhooks`` processes to real HTTP receivers, over real
gunicorn and Valkey servers: every event at least once, in version order per session,
through a receiver that is down, a deliverer killed with SIGKILL, and a receiver that
hangs beside one that answers."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import redis
import requests
from standardwebhooks.webhooks import Webhook

from service.ports import free_port
from tests.conftest import SERVICE_KEY, RunningServer, act, auth, restart_port, start_http, start_timekeeper

OPERATOR = auth(SERVICE_KEY)
FAST = {"ONO99_WEBHOOK_LEASE": "2", "ONO99_WEBHOOK_BACKOFF_MAX": "1", "ONO99_LOG_LEVEL": "warning"}
MANY = {"ONO99_CREATES_PER_MINUTE": "60000", "ONO99_CREATES_BURST": "200"}  # a hundred sessions at once


class Receiver:
    """A real HTTP server that takes webhooks: it keeps each request's headers and body
    (``status``: what it answers; ``hang``: it holds every request until released), and
    can be stopped and started again on the same port."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or restart_port()  # it may be stopped and started again on its port
        self.url = f"http://127.0.0.1:{self.port}/hooks"
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.arrived = 0  # requests whose body was read, answered or still held
        self.status = 204
        self.hang = threading.Event()  # set: requests hang until it is cleared
        self.on_post = None  # called with each request's JSON body as it is taken
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.start()

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                body = self.rfile.read(length)
                if len(body) < length:  # the sender cut its post (a worker stopping): nothing taken
                    self.close_connection = True
                    return
                with receiver.lock:
                    receiver.arrived += 1
                while receiver.hang.is_set():
                    time.sleep(0.05)
                with receiver.lock:
                    receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                if receiver.on_post is not None:
                    receiver.on_post(json.loads(body))
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()

    def taken(self) -> list[tuple[dict[str, str], bytes]]:
        """The requests answered 2xx so far."""
        with self.lock:
            return list(self.got) if 200 <= self.status < 300 else []


def start_deliverer(redis_url: str, **env: str) -> RunningServer:
    """``ono99 webhooks`` over ``redis_url``, with its metrics on a port of its own."""
    port = free_port()
    deliverer = RunningServer(["webhooks", "--metrics-port", str(port)], {"REDIS_URL": redis_url, **FAST, **env},
                              port)
    deliverer.metrics_url = f"http://127.0.0.1:{port}/metrics"
    return deliverer


def register(server, url: str, **body) -> dict:
    answer = requests.post(f"{server.url}/v1/webhooks", json={"url": url, **body}, headers=OPERATOR, timeout=10)
    assert answer.status_code == 201, answer.text
    return answer.json()


def create(server, players=None, **body) -> dict:
    answer = requests.post(f"{server.url}/v1/sessions", json={
        "rules": {"edition": "2022"}, "players": players or ["ann", {"id": "cpu", "bot": {"kind": "heuristic"}}],
        **body}, timeout=10)
    assert answer.status_code == 201, answer.text
    return answer.json()


def outbox_payloads(redis_url: str) -> dict[str, dict]:
    """Every webhook event the commits wrote, by its webhook-id: what must arrive."""
    found = {}
    for _, fields in redis.Redis.from_url(redis_url).xrange("ono99:outbox"):
        for index, payload in enumerate(json.loads(fields[b"h"])):
            data = payload["data"]
            found[f"msg_{data['session_id']}_{data['version']}_{index}"] = payload
    return found


def wait_for(check, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def arrived(receiver: Receiver, secret: str) -> dict[str, list[dict]]:
    """The deliveries taken, by webhook-id, each signature checked by Standard Webhooks' own verifier."""
    verifier = Webhook(secret)
    seen: dict[str, list[dict]] = {}
    for headers, body in receiver.taken():
        payload = verifier.verify(body, headers)  # raises on a bad signature or timestamp
        seen.setdefault(headers["webhook-id"], []).append(payload)
    return seen


def assert_in_version_order(receiver: Receiver) -> None:
    """Each session's events arrived in version order (a duplicate may repeat an earlier one)."""
    last: dict[str, int] = {}
    firsts: set[str] = set()
    for headers, body in receiver.taken():
        if headers["webhook-id"] in firsts:
            continue  # a redelivery of what already arrived
        firsts.add(headers["webhook-id"])
        data = json.loads(body)["data"]
        assert data["version"] >= last.get(data["session_id"], 0), (data, last)
        last[data["session_id"]] = data["version"]


@contextlib.contextmanager
def webhook_stack(redis_url: str, http_env: dict[str, str] | None = None, **deliverer_env: str):
    """gunicorn (with ``http_env``) and one deliverer (with ``deliverer_env``) over
    ``redis_url``, stopped after the block."""
    server = start_http(redis_url, **(http_env or {}))
    deliverer = start_deliverer(redis_url, **deliverer_env)
    try:
        yield server, deliverer
    finally:
        deliverer.stop()
        server.stop()


@pytest.fixture
def stack(own_redis):
    """gunicorn and one deliverer over a Valkey of this test's own; stopped after it."""
    with webhook_stack(own_redis, http_env=MANY) as (server, deliverer):
        yield server, deliverer, own_redis


def test_every_event_of_100_sessions_arrives_signed_once_at_least_and_in_order_per_session(stack):
    server, _, redis_url = stack
    receiver = Receiver()
    endpoint = register(server, receiver.url)
    assert endpoint["secret"].startswith("whsec_") and endpoint["events"] == [
        "session.created", "turn.started", "turn.timed_out", "seat.changed", "game.over"]
    sessions = []
    for seed in range(100):
        made = create(server, players=["ann", {"id": "b1", "bot": {"kind": "heuristic"}},
                                       {"id": "b2", "bot": {"kind": "random"}}], seed=seed)
        sessions.append(made)
        act(server, made["session_id"], made["seats"]["ann"])  # ann's card, then both bots'
    expected = outbox_payloads(redis_url)
    wait_for(lambda: set(arrived(receiver, endpoint["secret"])) >= set(expected), 90, "every event")
    seen = arrived(receiver, endpoint["secret"])
    assert set(seen) == set(expected)
    for message_id, copies in seen.items():
        assert all(copy == expected[message_id] for copy in copies)  # a duplicate is the same event
    assert_in_version_order(receiver)
    # No version without its event: a version that passed the turn on (the record names who
    # made each one, and the view who is to act after the last) has its turn.started.
    started: dict[str, set[int]] = {}
    for payload in expected.values():
        if payload["type"] == "turn.started":
            started.setdefault(payload["data"]["session_id"], set()).add(payload["data"]["version"])
    for made in sessions:
        sid = made["session_id"]
        record = requests.get(f"{server.url}/v1/sessions/{sid}/record", headers=OPERATOR, timeout=10).json()
        view = requests.get(f"{server.url}/v1/sessions/{sid}", headers=OPERATOR, timeout=10).json()["view"]
        makers = [entry["player"] for entry in record["versions"]]
        makers.append(view["current"])  # who acts after the last version
        passed = {v for v in range(1, len(makers)) if v == 1 or makers[v] != makers[v - 1]}
        assert started[sid] == passed
    first = next(p for p in expected.values() if p["data"]["session_id"] == sessions[0]["session_id"])
    assert first["type"] == "session.created" and first["data"]["players"] == ["ann", "b1", "b2"]
    assert first["data"]["bots"] == {"b1": "heuristic", "b2": "random"}


def test_a_game_tells_its_turns_timeouts_seat_changes_and_end_and_never_a_card(own_redis):
    server = start_http(own_redis)
    keeper = start_timekeeper(own_redis)
    deliverer = start_deliverer(own_redis)
    try:
        receiver = Receiver()
        endpoint = register(server, receiver.url)
        timed = create(server, players=["ann", "bob", {"id": "cpu", "bot": {"kind": "heuristic"}}], turn_seconds=1,
                       on_timeout="draw", timeouts_to_bot=1, seed=3)  # bob keeps a person at the table
        sid = timed["session_id"]

        def types_of(session_id):
            return [p["type"] for copies in arrived(receiver, endpoint["secret"]).values() for p in copies[:1]
                    if p["data"]["session_id"] == session_id]

        wait_for(lambda: "seat.changed" in types_of(sid), 30, "the timed-out seat handed to a bot")
        events = {message_id: copies[0] for message_id, copies in arrived(receiver, endpoint["secret"]).items()}
        timed_out = next(p for p in events.values() if p["type"] == "turn.timed_out")
        assert timed_out["data"] == {"session_id": sid, "version": timed_out["data"]["version"], "player": "ann",
                                     "on_timeout": "draw"}
        started = next(p for p in events.values() if p["type"] == "turn.started")
        assert started["data"]["player"] == "ann" and started["data"]["deadline_ms"] > 0
        changed = next(p for p in events.values() if p["type"] == "seat.changed")
        assert changed["data"]["player"] == "ann" and changed["data"]["bot"] == "heuristic"
        assert changed["data"]["reason"] == "timeouts"
        requests.post(f"{server.url}/v1/sessions/{sid}/seats/ann/token", headers=OPERATOR, timeout=10)
        wait_for(lambda: any(p["type"] == "seat.changed" and p["data"]["reason"] == "token_reissued"
                             for c in arrived(receiver, endpoint["secret"]).values() for p in c), 20,
                 "the reissued token's seat change")
        # A whole untimed game: its last event is game.over with the winners and scores.
        made = create(server, seed=8)
        while requests.get(f"{server.url}/v1/sessions/{made['session_id']}", headers=OPERATOR,
                           timeout=10).json()["view"]["status"] == "playing":
            act(server, made["session_id"], made["seats"]["ann"])
        wait_for(lambda: "game.over" in types_of(made["session_id"]), 30, "game.over")
        over = next(c[0] for c in arrived(receiver, endpoint["secret"]).values()
                    if c[0]["type"] == "game.over" and c[0]["data"]["session_id"] == made["session_id"])
        assert over["data"]["winners"] and set(over["data"]["scores"]) == {"ann", "cpu"}
        assert over["data"]["status"] == "over"
        # No payload holds a card, a hand or a draw pile: a webhook shows what a spectator may see.
        for _, body in receiver.taken():
            text = body.decode()
            assert not any(word in text for word in ('"card"', '"hand"', '"deck"', '"draw_pile"', '"cards"'))
    finally:
        deliverer.stop()
        keeper.stop()
        server.stop()


def test_a_receiver_down_for_10_seconds_loses_nothing(stack):
    server, deliverer, redis_url = stack
    receiver = Receiver()
    endpoint = register(server, receiver.url)
    receiver.stop()
    down_at = time.monotonic()
    for seed in range(10):
        made = create(server, seed=seed)
        act(server, made["session_id"], made["seats"]["ann"])
    time.sleep(max(0.0, 10 - (time.monotonic() - down_at)))
    receiver.start()
    expected = outbox_payloads(redis_url)
    wait_for(lambda: set(arrived(receiver, endpoint["secret"])) >= set(expected), 60, "the backlog")
    assert_in_version_order(receiver)
    failed = [line for line in requests.get(deliverer.metrics_url, timeout=5).text.splitlines()
              if line.startswith("ono99_webhook_deliveries_total") and 'outcome="failed"' in line]
    assert failed and float(failed[0].split()[-1]) > 0  # the attempts while it was down were counted


def test_a_deliverer_killed_mid_run_leaves_its_deliveries_to_another(own_redis):
    server = start_http(own_redis)
    first = start_deliverer(own_redis)
    second = None
    try:
        receiver = Receiver()
        endpoint = register(server, receiver.url)
        receiver.hang.set()  # the first deliverer reads, and its posts wait unanswered
        for seed in range(20):
            made = create(server, seed=seed)
            act(server, made["session_id"], made["seats"]["ann"])
        wait_for(lambda: redis.Redis.from_url(own_redis).xpending("ono99:outbox", endpoint["id"])["pending"] > 0,
                 20, "entries read and in flight")
        first.proc.kill()  # SIGKILL: no goodbye, its lease lapses
        first.proc.wait()
        receiver.hang.clear()
        second = start_deliverer(own_redis)
        expected = outbox_payloads(own_redis)
        wait_for(lambda: set(arrived(receiver, endpoint["secret"])) >= set(expected), 60, "every event")
        assert_in_version_order(receiver)
        seen = arrived(receiver, endpoint["secret"])
        assert all(copy == expected[message_id] for message_id, copies in seen.items() for copy in copies)
    finally:
        if second is not None:
            second.stop()
        server.stop()


def test_a_hanging_receiver_does_not_delay_another_endpoint(stack):
    server, _, redis_url = stack
    stuck, good = Receiver(), Receiver()
    stuck.hang.set()
    register(server, stuck.url)
    healthy = register(server, good.url)
    started = time.monotonic()
    for seed in range(10):
        made = create(server, seed=seed)
        act(server, made["session_id"], made["seats"]["ann"])
    expected = outbox_payloads(redis_url)
    wait_for(lambda: set(arrived(good, healthy["secret"])) >= set(expected), 30, "the healthy endpoint's events")
    assert time.monotonic() - started < 30
    assert not stuck.got  # it holds its first requests still
    stuck.hang.clear()


def test_a_delivery_that_keeps_failing_is_dead_lettered_and_counted(own_redis):
    with webhook_stack(own_redis, ONO99_WEBHOOK_RETRY_SECONDS="2") as (server, deliverer):
        receiver = Receiver()
        receiver.status = 500
        endpoint = register(server, receiver.url, events=["session.created"])
        create(server, seed=1)
        store = redis.Redis.from_url(own_redis)
        wait_for(lambda: store.xlen("ono99:webhooks:dead") == 1, 30, "the dead letter")
        (_, letter), = store.xrange("ono99:webhooks:dead")
        assert letter[b"endpoint"].decode() == endpoint["id"] and letter[b"error"] == b"HTTP 500"
        assert json.loads(letter[b"payload"])["type"] == "session.created" and int(letter[b"attempts"]) >= 2
        metrics = requests.get(deliverer.metrics_url, timeout=5).text
        assert f'ono99_webhook_deliveries_total{{endpoint="{endpoint["id"]}",outcome="dead"}} 1.0' in metrics
        wait_for(lambda: requests.get(f"{server.url}/v1/webhooks/{endpoint['id']}", headers=OPERATOR,
                                      timeout=5).json()["backlog"] == 0, 10, "the backlog to clear")


def test_only_the_service_key_manages_endpoints_within_their_limit(own_redis):
    server = start_http(own_redis, ONO99_WEBHOOKS_MAX="2")
    try:
        made = create(server, seed=1)
        url = f"{server.url}/v1/webhooks"
        body = {"url": "http://127.0.0.1:9/hooks"}
        assert requests.post(url, json=body, timeout=5).status_code == 401
        seat = requests.post(url, json=body, headers=auth(made["seats"]["ann"]), timeout=5)
        assert seat.status_code == 401 and seat.json()["code"] == "unauthorized"  # a seat token is no operator
        for bad in ({"url": "ftp://example.com/x"}, {"url": "http:///nohost"}, {"url": "http://u:p@host/x"},
                    {"url": "http://host/x#frag"}, {"url": "http://host/" + "a" * 2048}, {"url": 7},
                    {"url": "http://[::1/hooks"}, {"url": "http://[v1.x]/"}, {"url": "http://a..b/"},
                    {"url": "http://%/x"}, {"url": "http://-a.example/"}, {"url": "http://host:99999/"},
                    {"url": "http://host/x", "events": []}, {"url": "http://host/x", "events": ["game.over"] * 2},
                    {"url": "http://host/x", "events": ["card.drawn"]}, {"url": "http://host/x", "extra": 1}):
            answer = requests.post(url, json=bad, headers=OPERATOR, timeout=5)
            assert answer.status_code == 400, (bad, answer.text)
        first = requests.post(url, json=body, headers=OPERATOR, timeout=5).json()
        requests.post(url, json=body, headers=OPERATOR, timeout=5)
        third = requests.post(url, json=body, headers=OPERATOR, timeout=5)
        assert third.status_code == 429 and "ONO99_WEBHOOKS_MAX" in third.json()["detail"]
        listed = requests.get(url, headers=OPERATOR, timeout=5).json()["webhooks"]
        assert len(listed) == 2 and all("secret" not in e for e in listed)
        one = requests.get(f"{url}/{first['id']}", headers=OPERATOR, timeout=5).json()
        assert "secret" not in one and one["backlog"] == 0
        assert requests.get(f"{url}/{first['id']}", headers=auth(made["seats"]["ann"]), timeout=5).status_code == 401
        assert requests.delete(f"{url}/{first['id']}", headers=OPERATOR, timeout=5).status_code == 204
        assert requests.delete(f"{url}/{first['id']}", headers=OPERATOR, timeout=5).status_code == 404
        assert requests.get(f"{url}/{'x' * 5000}", headers=OPERATOR, timeout=5).status_code == 404
        assert requests.post(url, json=body, headers=OPERATOR, timeout=5).status_code == 201  # room again
    finally:
        server.stop()


def test_without_a_service_key_no_one_manages_endpoints(own_redis):
    server = start_http(own_redis, ONO99_SERVICE_KEY="")
    try:
        answer = requests.post(f"{server.url}/v1/webhooks", json={"url": "http://h/x"}, headers=auth("guess"),
                               timeout=5)
        assert answer.status_code == 403 and "ONO99_SERVICE_KEY" in answer.json()["detail"]
    finally:
        server.stop()


def test_a_deleted_endpoint_is_sent_nothing_more(stack):
    server, _, _ = stack
    receiver = Receiver()
    endpoint = register(server, receiver.url, events=["session.created"])
    create(server, seed=1)
    wait_for(lambda: len(receiver.taken()) == 1, 30, "the first delivery")
    assert requests.delete(f"{server.url}/v1/webhooks/{endpoint['id']}", headers=OPERATOR,
                           timeout=5).status_code == 204
    create(server, seed=2)
    time.sleep(3)
    assert len(receiver.taken()) == 1


def test_a_registration_that_cannot_make_its_groups_leaves_no_endpoint(own_redis):
    """The outbox cannot take a consumer group (here it is a key of another type): the
    registration fails as a whole, and no endpoint whose secret nobody saw is kept."""
    server = start_http(own_redis)
    try:
        redis.Redis.from_url(own_redis).set("ono99:outbox", "not a stream")
        answer = requests.post(f"{server.url}/v1/webhooks", json={"url": "http://127.0.0.1:9/hooks"},
                               headers=OPERATOR, timeout=5)
        assert answer.status_code == 503, answer.text
        assert requests.get(f"{server.url}/v1/webhooks", headers=OPERATOR, timeout=5).json()["webhooks"] == []
    finally:
        server.stop()
