"""What outsiders broke, against real servers (gunicorn, grpc.aio, timekeeper processes,
Valkey): bot seats thinking on the gRPC session threads, one client's costly timed
sessions starving every other session's forced moves, long polls woken together
getting 503 while Redis was healthy, and event waits outliving a deleted session."""

from __future__ import annotations

import http.client as http_client
import json
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
import requests

from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from service.ports import free_port
from tests.conftest import SERVICE_KEY, RunningServer, start_grpc, start_http

pytestmark = pytest.mark.slow
# Every client of these tests has the loopback address: no per-address limit of waiters.
OPEN = {"ONO99_CREATES_PER_MINUTE": "0", "ONO99_ACTIONS_PER_SECOND": "0", "ONO99_SUGGESTS_PER_SECOND": "0",
        "ONO99_HTTP_WAITERS_PER_PEER": "0"}
ISMCTS = {"kind": "ismcts", "budget_ms": 1000}


def auth(token):
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def redis_url():
    from service.embedded_redis import start_embedded

    server = start_embedded()
    yield server.connection_url
    server.stop()


def test_grpc_bot_seats_think_off_the_session_threads(redis_url):
    """34 creations whose five bot seats think 1 s a move (more than the 32 session
    threads) leave another client's GetSession fast: the bots think on their own pool."""
    rpc = start_grpc(redis_url, ONO99_GRPC_THREADS="32", ONO99_BOT_THREADS="2", **OPEN)
    channel = grpc.insecure_channel(rpc.url)
    try:
        sessions = pb_grpc.SessionServiceStub(channel)
        mine = sessions.CreateSession(pb.CreateSessionRequest(game=pb.NewGameRequest(
            rules=pb.Rules(edition="2022"), players=["ann", "bob"], seed_int=1)), timeout=10)
        bots = {f"b{i}": pb.Bot(kind="ismcts", budget_ms=1000) for i in range(5)}
        heavy = pb.CreateSessionRequest(game=pb.NewGameRequest(
            rules=pb.Rules(edition="2022"), players=[*bots, "me"], seed_int=2), bots=bots)

        def create() -> str:
            try:
                sessions.CreateSession(heavy, timeout=8)
                return "answered"
            except grpc.RpcError as error:
                return error.code().name

        with ThreadPoolExecutor(34) as pool:
            creations = [pool.submit(create) for _ in range(34)]
            time.sleep(1.5)  # every creation is in, its bots thinking
            took = []
            for _ in range(3):
                start = time.monotonic()
                read = sessions.GetSession(pb.GetSessionRequest(session_id=mine.session_id), timeout=3,
                                           metadata=[("authorization", f"Bearer {mine.seats['ann']}")])
                took.append(time.monotonic() - start)
                assert read.version == 1
            outcomes = [c.result() for c in creations]
        print(f"GetSession while 34 bot-heavy creations think: {[round(t, 3) for t in took]} s; "
              f"creations: {outcomes.count('answered')} answered, the rest {set(outcomes) - {'answered'}}")
        # Far below the 3 s deadline that failed before; a loaded machine gets slack.
        assert max(took) < 2.0
    finally:
        channel.close()
        rpc.stop()


def _timekeeper(redis_url: str, **env: str) -> RunningServer:
    return RunningServer(["timers", "--metrics-port", "0"],
                         {"REDIS_URL": redis_url, "ONO99_LOG_LEVEL": "warning", **OPEN, **env}, free_port())


def _create(http, players, **options):
    body = {"rules": {"edition": "2022"}, "players": players, "seed": 5, **options}
    answer = requests.post(f"{http.url}/v1/sessions", json=body, timeout=30)
    assert answer.status_code == 201, answer.text
    return answer.json()


def _events(http, sid, after, wait=0):
    answer = requests.get(f"{http.url}/v1/sessions/{sid}/events", params={"after": after, "wait": wait},
                          headers=auth(SERVICE_KEY), timeout=40)
    assert answer.status_code == 200, answer.text
    return answer.json()["events"]


@pytest.mark.rules("R-TIME-1")
def test_costly_timed_sessions_do_not_starve_a_light_sessions_forced_moves(redis_url):
    """110 sessions of a person and five ISMCTS bots, each forced move an ISMCTS one,
    every second (more than a round claims): a light session's forced draws still land
    within about a second of their deadlines, also once a timer has handed one of its
    seats to a rule-of-thumb bot (its moves are made at once, not queued behind the
    searches). Then SIGTERM stops the timekeeper within its grace period."""
    http = start_http(redis_url, workers=1, ONO99_BOT_MAX_BUDGET_MS="1000", **OPEN)
    keeper = _timekeeper(redis_url, ONO99_BOT_MAX_BUDGET_MS="1000")
    try:
        heavy = [{"id": f"b{i}", "bot": ISMCTS} for i in range(5)]
        for _ in range(110):
            _create(http, ["me", *heavy], turn_seconds=1, on_timeout="bot", timeout_bot=ISMCTS, timeouts_to_bot=0)
        time.sleep(3)  # the heavy sessions' forced moves and bots are under way
        light = _create(http, ["ann", "bob"], turn_seconds=1, on_timeout="draw", timeouts_to_bot=2)
        sid, after, late = light["session_id"], 1, []
        end = time.monotonic() + 40
        while len(late) < 5 and time.monotonic() < end:
            for event in _events(http, sid, after, wait=5):
                after = max(after, event["version"])
                if event["type"] == "turn_timed_out":
                    late.append(time.time() - event["deadline_ms"] / 1000)
        print(f"light session's forced moves, seconds after their deadlines: {[round(x, 2) for x in late]}")
        assert len(late) == 5  # a seat handed to a heuristic bot after two timeouts does not stall the session
        assert max(late) < 1.5  # 5 to 11 s before the two lanes, none at all with 100 costly sessions queued
        keeper.proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        keeper.proc.wait(timeout=20)
        stopped = time.monotonic() - start
        print(f"timekeeper stopped {stopped:.2f} s after SIGTERM")
        assert stopped < 6  # its grace: one bot move's budget and 2 s
    finally:
        keeper.stop()
        http.stop()


def test_a_claim_handed_back_on_stop_is_moved_by_another_timekeeper(own_redis):
    """A timekeeper that stops with claimed turns gives them back: another moves them at
    once instead of after the lease."""
    from service.store import SessionStore, keys
    from service.timers import now_ms

    http = start_http(own_redis, workers=1, **OPEN)
    try:
        made = _create(http, ["ann", "bob"], turn_seconds=1, on_timeout="draw")
        store = SessionStore(__import__("redis").Redis.from_url(own_redis))
        time.sleep(1.2)
        claimed = dict(store.claim_due(now_ms(), 60_000, 100))  # a claim with a minute's lease
        assert made["session_id"] in claimed
        assert store.hand_back(made["session_id"], claimed[made["session_id"]]) == 1
        score = store.client.zscore(store.timers_key(made["session_id"]), keys(made["session_id"])[0])
        assert score == claimed[made["session_id"]]  # due again now, not in a minute
        assert store.hand_back(made["session_id"], claimed[made["session_id"]] + 1) == 0  # not its deadline
    finally:
        http.stop()


class _LongPolls:
    """``count`` event reads of ``path`` with the service key, each on a connection of its
    own from one of two loopback addresses (each address stays within the connections
    allowed one); ``together``: all sent at the same moment, once every one is connected.
    A read's code is its status, 204 for a 200 without events, -1 for a network error."""

    def __init__(self, port: int, path: str, count: int, together: bool = False) -> None:
        self.port, self.path = port, path
        self.start = threading.Barrier(count + 1) if together else None
        self._codes: list[int] = []
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._read, args=(i,)) for i in range(count)]
        for thread in self.threads:
            thread.start()
        if self.start is not None:
            self.start.wait(10)

    def _read(self, i: int) -> None:
        source = ("127.0.0.1" if i % 2 else "127.0.0.2", 0)
        connection = http_client.HTTPConnection("127.0.0.1", self.port, timeout=40, source_address=source)
        try:
            connection.connect()
            if self.start is not None:
                self.start.wait(10)
            connection.request("GET", self.path, headers=auth(SERVICE_KEY))
            answer = connection.getresponse()
            body = json.loads(answer.read())
            code = answer.status if answer.status != 200 or body["events"] else 204
        except OSError:
            code = -1
        finally:
            connection.close()
        with self._lock:
            self._codes.append(code)

    def codes(self) -> list[int]:
        """Every read's code, once all have answered."""
        for thread in self.threads:
            thread.join(45)
        return self._codes


def test_480_long_polls_woken_together_all_get_their_events(redis_url):
    """480 waiters on one session from two loopback addresses, then one action: every
    waiter gets the action's events (one read serves a wake-up), no 503."""
    http = start_http(redis_url, workers=2, **OPEN)
    try:
        made = _create(http, ["ann", "bob"])
        sid = made["session_id"]
        view = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(made["seats"]["ann"]), timeout=10).json()
        action = view["view"]["legal_actions"][0]
        polls = _LongPolls(http.port, f"/v1/sessions/{sid}/events?after=1&wait=25", 480)
        time.sleep(4)  # all waiting
        acted = requests.post(f"{http.url}/v1/sessions/{sid}/actions", headers=auth(made["seats"]["ann"]),
                              json={"action": action}, timeout=10)
        assert acted.status_code == 200, acted.text
        results = polls.codes()
        print(f"480 woken waiters: {sorted(set(results))} "
              f"({results.count(200)} got events, {results.count(503)} got 503)")
        assert results.count(200) == 480
    finally:
        http.stop()


def test_deleting_a_session_ends_its_waits_at_once_with_not_found(redis_url):
    """WatchEvents ends with NOT_FOUND, and a long poll answers 404, as soon as the
    session is deleted (not at the next recheck, and not with OK)."""
    http = start_http(redis_url, workers=1, **OPEN)
    rpc = start_grpc(redis_url, **OPEN)
    channel = grpc.insecure_channel(rpc.url)
    try:
        made = _create(http, ["ann", "bob"])
        sid = made["session_id"]
        stream = pb_grpc.SessionServiceStub(channel).WatchEvents(
            pb.WatchEventsRequest(session_id=sid, after_version=1), timeout=30,
            metadata=[("authorization", f"Bearer {made['seats']['bob']}")])
        polled: list[tuple[int, float]] = []

        def poll() -> None:
            answer = requests.get(f"{http.url}/v1/sessions/{sid}/events", params={"after": 1, "wait": 25},
                                  headers=auth(made["seats"]["ann"]), timeout=40)
            polled.append((answer.status_code, time.monotonic()))

        poller = threading.Thread(target=poll)
        poller.start()
        time.sleep(1.5)  # both waiting
        deleted_at = time.monotonic()
        assert requests.delete(f"{http.url}/v1/sessions/{sid}", headers=auth(SERVICE_KEY),
                               timeout=10).status_code == 204
        with pytest.raises(grpc.RpcError) as ended:
            for _ in stream:
                pass
        stream_took = time.monotonic() - deleted_at
        poller.join(30)
        assert ended.value.code() == grpc.StatusCode.NOT_FOUND
        assert polled and polled[0][0] == 404
        print(f"after DeleteSession: stream ended in {stream_took:.2f} s, long poll in "
              f"{polled[0][1] - deleted_at:.2f} s")
        assert stream_took < 5 and polled[0][1] - deleted_at < 5  # the recheck would take 15 s and 5 s
    finally:
        channel.close()
        rpc.stop()
        http.stop()


def test_bot_moves_after_a_grpc_call_its_client_gave_up_on_are_still_made(redis_url):
    """An Act whose client cancels (deadline) while the bots' pool is busy: the bot seats'
    moves after it are made all the same (nothing but a later read would make them), and
    a retry with the same key answers at the last of them."""
    rpc = start_grpc(redis_url, ONO99_BOT_THREADS="1", **OPEN)
    channel = grpc.insecure_channel(rpc.url)
    try:
        sessions = pb_grpc.SessionServiceStub(channel)
        bots = {f"b{i}": pb.Bot(kind="ismcts", budget_ms=300) for i in range(3)}
        made = sessions.CreateSession(pb.CreateSessionRequest(game=pb.NewGameRequest(
            rules=pb.Rules(edition="2022"), players=["ann", *bots], seed_int=4), bots=bots), timeout=20)
        ann = [("authorization", f"Bearer {made.seats['ann']}")]
        view = sessions.GetSession(pb.GetSessionRequest(session_id=made.session_id), metadata=ann, timeout=10).view
        action = view.legal_actions[0]
        request = pb.ActRequest(session_id=made.session_id, action=action, idempotency_key="gave-up")
        # The bots' one thread thinks for a second first, so the Act's bot moves wait in its queue.
        games = pb_grpc.GameServiceStub(channel)
        dealt = games.NewGame(pb.NewGameRequest(rules=pb.Rules(edition="2022"), players=["x", "y"]), timeout=10)
        busy = threading.Thread(target=games.Suggest, args=(pb.SuggestRequest(
            state=dealt.state, player="x", bot=pb.Bot(kind="ismcts", budget_ms=1000)),), kwargs={"timeout": 10})
        busy.start()
        time.sleep(0.2)
        with pytest.raises(grpc.RpcError) as gave_up:
            sessions.Act(request, metadata=ann, timeout=0.3)
        busy.join()
        assert gave_up.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        service = [("authorization", f"Bearer {SERVICE_KEY}")]
        end, moved = time.monotonic() + 15, []
        while time.monotonic() < end and len({e.version for e in moved}) < 3:
            listed = sessions.ListEvents(pb.ListEventsRequest(session_id=made.session_id, after_version=2),
                                         metadata=service, timeout=10)
            moved = [e for e in listed.events if e.type == "played" and e.player != "ann"]
            time.sleep(0.2)
        assert len({e.version for e in moved}) == 3, moved  # every bot seat moved, with no read to make it
        again = sessions.Act(request, metadata=ann, timeout=10)
        assert again.replayed and again.version == 5
    finally:
        channel.close()
        rpc.stop()


def test_a_burst_of_reads_past_the_connection_pool_waits_for_a_connection_instead_of_failing(redis_url):
    """200 reads arriving at once on a worker whose pool holds 10 connections: each waits
    its turn for one (no 503), readiness stays green, and the breaker never opens. A read
    waits for a connection up to ONO99_REDIS_TIMEOUT; 5 s here, so that the queue fits on
    a loaded machine (at the default 0.5 s a loaded CI machine served 161 of the 200)."""
    http = start_http(redis_url, workers=1, ONO99_REDIS_CONNECTIONS="10", ONO99_REDIS_TIMEOUT="5", **OPEN)
    try:
        made = _create(http, ["ann", "bob"])
        sid = made["session_id"]
        view = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(made["seats"]["ann"]), timeout=10).json()
        assert requests.post(f"{http.url}/v1/sessions/{sid}/actions", headers=auth(made["seats"]["ann"]),
                             json={"action": view["view"]["legal_actions"][0]}, timeout=10).status_code == 200
        polls = _LongPolls(http.port, f"/v1/sessions/{sid}/events?after=1&wait=5", 200, together=True)
        ready = requests.get(f"{http.url}/readyz", timeout=10).status_code
        codes = polls.codes()
        print(f"200 reads at once over 10 connections: {sorted(set(codes))}, /readyz {ready}")
        assert codes.count(200) == 200 and ready == 200
        assert requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(SERVICE_KEY), timeout=5).status_code == 200
    finally:
        http.stop()
