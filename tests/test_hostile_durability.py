"""Acknowledged actions survive a Redis crash: `kill -9` of a real server with an
append-only file, five times under load, with ONO99_REDIS_WAIT_AOF on (the default
where the service starts Redis itself: `ono99 serve --redis-data`, compose)."""

from __future__ import annotations

import os
import random
import signal
import threading
import time

import pytest
import redis
import requests

from engine import decode_state, legal_actions
from service.embedded_redis import start_embedded
from service.store import keys
from tests.conftest import SERVICE_KEY, restart_port, start_http

pytestmark = pytest.mark.slow


def play_and_crash(tmp_path, wait_aof: bool, appendfsync: str, crashes: int = 5,
                   every: float = 1.5) -> tuple[int, int]:
    """(actions acknowledged, acknowledged actions lost) over ``crashes`` kill -9 restarts
    of the Redis server, one every ``every`` seconds, under four clients acting as fast
    as they can (with no crash: for ``every`` seconds)."""
    port = restart_port()
    data = tmp_path / "aof"
    server = start_embedded(data, port=port, appendfsync=appendfsync)
    url = server.connection_url
    http = start_http(url, workers=2, ONO99_REDIS_WAIT_AOF="true" if wait_aof else "false",
                      ONO99_REDIS_BREAKER_RESET="0.2", ONO99_ACTIONS_PER_SECOND="0")
    acked: dict[str, int] = {}
    count = [0]
    lock = threading.Lock()
    stop = threading.Event()

    def player(seed: int) -> None:
        rng = random.Random(seed)
        web = requests.Session()
        sid = seats = None
        while not stop.is_set():
            try:
                if sid is None:
                    made = web.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"},
                                                                     "players": ["ann", "bob"]}, timeout=5)
                    if made.status_code != 201:
                        time.sleep(0.05)
                        continue
                    sid, seats = made.json()["session_id"], made.json()["seats"]
                    with lock:
                        acked[sid] = 1
                got = web.get(f"{http.url}/v1/sessions/{sid}", headers={"Authorization": f"Bearer {SERVICE_KEY}"},
                              timeout=5)
                if got.status_code != 200:
                    time.sleep(0.05)
                    continue
                actions = legal_actions(decode_state(got.json()["state"]))
                if not actions:
                    sid = None
                    continue
                a = rng.choice(actions)
                done = web.post(f"{http.url}/v1/sessions/{sid}/actions",
                                headers={"Authorization": f"Bearer {seats[a.player]}"},
                                json={"action": {"player": a.player, "type": a.type, "card": a.card},
                                      "expected_version": got.json()["version"]}, timeout=5)
                if done.status_code == 200:
                    with lock:
                        acked[sid] = max(acked[sid], done.json()["version"])
                        count[0] += 1
            except requests.RequestException:
                time.sleep(0.05)

    clients = [threading.Thread(target=player, args=(k,)) for k in range(4)]
    try:
        for t in clients:
            t.start()
        if not crashes:
            time.sleep(every)
        for _ in range(crashes):
            time.sleep(every)
            os.kill(server._process.pid, signal.SIGKILL)
            server._process.wait()
            time.sleep(0.2)
            server = start_embedded(data, port=port, appendfsync=appendfsync)
        if crashes:
            time.sleep(1.0)
    finally:
        stop.set()
        for t in clients:
            t.join(10)
        http.stop()
    try:
        store = redis.Redis.from_url(url)
        lost = 0
        for sid, version in acked.items():
            stored = store.hget(keys(sid)[0], "version")
            lost += max(0, version - int(stored or 0))
    finally:
        server.stop()
    return count[0], lost


def test_no_acknowledged_action_is_lost_over_five_crashes_with_wait_aof(tmp_path):
    acknowledged, lost = play_and_crash(tmp_path, wait_aof=True, appendfsync="always")
    print(f"WAITAOF on, appendfsync always: {acknowledged} actions acknowledged, {lost} lost over 5 crashes")
    assert acknowledged > 100
    assert lost == 0
