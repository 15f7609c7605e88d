"""A stalled Redis (SIGSTOP) under real `ono99 http` and `ono99 grpc` servers.

Stateless calls never touch Redis and keep their latency; session calls answer 503 /
UNAVAILABLE within ONO99_REDIS_TIMEOUT, then at once while the circuit breaker is open,
and work again by themselves once Redis answers.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import grpc
import pytest
import requests

from service.embedded_redis import start_embedded
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from tests.conftest import start_grpc, start_http

pytestmark = pytest.mark.slow
TIMEOUT = 0.5
# A stateless call that waited on Redis would take TIMEOUT; a loaded two-core machine
# adds tens of milliseconds of its own.
STALL_BOUND = TIMEOUT / 5
GAME = {"rules": {"edition": "2022"}, "players": ["ann", "bob"], "seed": 3}


@pytest.fixture
def stallable_redis():
    server = start_embedded()
    pid = server._process.pid
    yield server.connection_url, pid
    os.kill(pid, signal.SIGCONT)
    server.stop()


def _while_calling(session_caller, stop: threading.Event, stateless, seconds: float = 4.0) -> list[float]:
    """Run ``session_caller`` in 8 threads until ``stop``; meanwhile time ``stateless()``
    calls (each must return true) for ``seconds``; their latencies."""
    callers = [threading.Thread(target=session_caller) for _ in range(8)]
    for t in callers:
        t.start()
    latencies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        assert stateless()
        latencies.append(time.perf_counter() - started)
    stop.set()
    for t in callers:
        t.join()
    return latencies


def _p99(values):
    values = sorted(values)
    return values[int(len(values) * 0.99)]


def test_http_stateless_calls_keep_their_latency_and_session_calls_fail_fast_while_redis_stalls(stallable_redis):
    url, pid = stallable_redis
    server = start_http(url, workers=2, ONO99_REDIS_TIMEOUT=str(TIMEOUT), ONO99_REDIS_BREAKER_RESET="2")
    try:
        made = requests.post(f"{server.url}/v1/sessions", json=GAME, timeout=5).json()
        sid, token = made["session_id"], made["seats"]["ann"]
        read = f"{server.url}/v1/sessions/{sid}"
        auth = {"Authorization": f"Bearer {token}"}
        session = requests.Session()
        normal = []
        for _ in range(100):
            started = time.perf_counter()
            assert session.post(f"{server.url}/v1/games", json=GAME, timeout=5).status_code == 201
            normal.append(time.perf_counter() - started)

        os.kill(pid, signal.SIGSTOP)
        stop = threading.Event()
        session_answers: list[tuple[int, float, str | None]] = []

        def session_caller() -> None:
            own = requests.Session()
            while not stop.is_set():
                started = time.perf_counter()
                got = own.get(read, headers=auth, timeout=10)
                session_answers.append((got.status_code, time.perf_counter() - started, got.headers.get("Retry-After")))

        stalled = _while_calling(session_caller, stop, lambda: session.post(
            f"{server.url}/v1/games", json=GAME, timeout=5).status_code == 201)

        os.kill(pid, signal.SIGCONT)
        recovered_after = None
        resumed = time.monotonic()
        while time.monotonic() - resumed < 10:
            if requests.get(read, headers=auth, timeout=5).status_code == 200:
                recovered_after = time.monotonic() - resumed
                break
            time.sleep(0.1)
    finally:
        os.kill(pid, signal.SIGCONT)
        server.stop()
    print(f"stateless p99: {_p99(normal) * 1000:.1f} ms with Redis up, {_p99(stalled) * 1000:.1f} ms stalled; "
          f"session calls: {len(session_answers)} answered, slowest {max(s for _, s, _ in session_answers):.2f} s; "
          f"recovered {recovered_after} s after Redis resumed")
    assert _p99(stalled) <= max(2 * _p99(normal), STALL_BOUND)
    assert session_answers and all(status == 503 for status, _, _ in session_answers)
    # The documented timeout is the real one (a little slack for a loaded machine).
    assert max(s for _, s, _ in session_answers) <= TIMEOUT + 0.3
    fast = [s for status, s, retry in session_answers if retry is not None]
    # The breaker answers at once: no waiting on Redis (the median allows for a loaded machine).
    assert len(fast) > len(session_answers) / 2 and sorted(fast)[len(fast) // 2] < 0.1
    assert recovered_after is not None and recovered_after <= 4


def test_grpc_stateless_calls_keep_their_latency_and_session_calls_fail_within_the_timeout(stallable_redis):
    url, pid = stallable_redis
    rpc = start_grpc(url, ONO99_REDIS_TIMEOUT=str(TIMEOUT))
    channel = grpc.insecure_channel(rpc.url)
    games, sessions = pb_grpc.GameServiceStub(channel), pb_grpc.SessionServiceStub(channel)
    new = pb.NewGameRequest(rules=pb.Rules(edition="2022"), players=["ann", "bob"], seed_int=3)
    try:
        made = sessions.CreateSession(pb.CreateSessionRequest(game=new), timeout=5)
        meta = [("authorization", f"Bearer {made.seats['ann']}")]
        normal = []
        for _ in range(100):
            started = time.perf_counter()
            games.NewGame(new, timeout=5)
            normal.append(time.perf_counter() - started)
        os.kill(pid, signal.SIGSTOP)
        stop = threading.Event()
        failures: list[tuple[grpc.StatusCode, float]] = []

        def session_caller() -> None:
            while not stop.is_set():
                started = time.perf_counter()
                try:
                    sessions.GetSession(pb.GetSessionRequest(session_id=made.session_id), metadata=meta, timeout=10)
                except grpc.RpcError as exc:
                    failures.append((exc.code(), time.perf_counter() - started))

        stalled = _while_calling(session_caller, stop, lambda: games.NewGame(new, timeout=5) is not None)
        os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 10
        while True:
            try:
                sessions.GetSession(pb.GetSessionRequest(session_id=made.session_id), metadata=meta, timeout=5)
                break
            except grpc.RpcError:
                assert time.monotonic() < deadline, "session calls did not recover"
                time.sleep(0.1)
    finally:
        os.kill(pid, signal.SIGCONT)
        channel.close()
        rpc.stop()
    print(f"gRPC stateless p99: {_p99(normal) * 1000:.1f} ms up, {_p99(stalled) * 1000:.1f} ms stalled; "
          f"{len(failures)} session calls failed, slowest {max(s for _, s in failures):.2f} s")
    assert _p99(stalled) <= max(2 * _p99(normal), STALL_BOUND)
    assert failures and all(code == grpc.StatusCode.UNAVAILABLE for code, _ in failures)
    assert max(s for _, s in failures) <= TIMEOUT + 0.3
