"""End to end against real servers: gunicorn on a free port, a real Redis-protocol server."""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from engine import apply, decode_state, encode_state, format_action, legal_actions
from service.embedded_redis import start_embedded
from tests.conftest import SERVICE_KEY, restart_port, start_http


def auth(token):
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def server(redis_url):
    running = start_http(redis_url, workers=2, ONO99_ACTIONS_PER_SECOND="0")  # plays as fast as it can
    yield running
    assert running.stop() == 0  # SIGTERM: a clean, graceful exit


def test_concurrent_actions_on_one_version_apply_exactly_once(server):
    created = requests.post(f"{server.url}/v1/sessions", json={"rules": {"edition": "2022"},
                                                               "players": ["ann", "bob", "cy"], "seed": 21}).json()
    sid = created["session_id"]
    start = decode_state(requests.get(f"{server.url}/v1/sessions/{sid}", headers=auth(SERVICE_KEY)).json()["state"])
    legal = [format_action(a) for a in legal_actions(start)]
    actor = legal[0]["player"]
    # 16 racers: every legal action of the player to act, repeated, all pinned to version 1.
    racers = [legal[i % len(legal)] for i in range(16)]
    barrier = threading.Barrier(len(racers))

    def race(action):
        barrier.wait()
        return requests.post(f"{server.url}/v1/sessions/{sid}/actions",
                             json={"action": action, "expected_version": 1},
                             headers=auth(created["seats"][actor]), timeout=30)

    with ThreadPoolExecutor(len(racers)) as pool:
        answers = list(pool.map(race, racers))
    statuses = [a.status_code for a in answers]
    assert statuses.count(200) == 1, statuses
    assert all(s in (409, 422) for s in statuses if s != 200), statuses
    winner = racers[statuses.index(200)]
    final = requests.get(f"{server.url}/v1/sessions/{sid}", headers=auth(SERVICE_KEY)).json()
    assert final["version"] == 2
    assert final["state"] == encode_state(apply(start, winner)[0])


def test_no_endpoint_shows_a_seat_another_hand_or_the_draw_pile(server):
    created = requests.post(f"{server.url}/v1/sessions", json={"rules": {"edition": "1980", "draw": "manual"},
                                                               "players": ["ann", "bob", "cy"], "seed": 4}).json()
    sid, seats = created["session_id"], created["seats"]
    import random

    rng = random.Random(1)
    for _ in range(60):
        state = decode_state(requests.get(f"{server.url}/v1/sessions/{sid}", headers=auth(SERVICE_KEY)).json()["state"])
        if state.status == "over":
            break
        for seat, token in seats.items():
            view = requests.get(f"{server.url}/v1/sessions/{sid}", headers=auth(token)).json()
            assert "state" not in view
            _assert_sees_only_own(view["view"], state, seat)
            log = requests.get(f"{server.url}/v1/sessions/{sid}/events?after=0", headers=auth(token)).json()
            for event in log["events"]:
                assert event["type"] != "drew" or ("card" in event) == (event["player"] == seat)
            # An illegal attempt: the problem document names no card of anyone else.
            wrong = requests.post(f"{server.url}/v1/sessions/{sid}/actions", headers=auth(token),
                                  json={"action": {"player": seat, "type": "play", "card": "ono99"}}).json()
            assert set(wrong) <= {"type", "title", "status", "code", "detail", "rule", "reason", "field"}
            # The only card an explanation may name is the one the seat tried to play.
            assert set(re.findall(r"'([^']*)'", wrong["detail"])) <= {"ono99"}, wrong["detail"]
        action = rng.choice(legal_actions(state))
        answer = requests.post(f"{server.url}/v1/sessions/{sid}/actions", headers=auth(seats[action.player]),
                               json={"action": format_action(action)})
        assert answer.status_code == 200, answer.text
        _assert_sees_only_own(answer.json()["view"], None, action.player)


def _assert_sees_only_own(view, state, seat):
    assert "draw_pile" not in view and "seed" not in view
    for p in view["players"]:
        if p["id"] != seat and p["status"] != "out":
            assert p["hand"] is None
        elif p["id"] == seat and state is not None:
            assert p["hand"] == list(next(q for q in state.players if q.id == seat).hand)


def test_redis_outage_gives_quick_503s_and_the_service_recovers(tmp_path):
    port = restart_port()
    redis_server = start_embedded(tmp_path / "redis", port=port)
    http = start_http(redis_server.connection_url, workers=1, ONO99_REDIS_TIMEOUT="0.5")
    try:
        created = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"},
                                                                 "players": ["ann", "bob"], "seed": 2}).json()
        sid = created["session_id"]
        state = decode_state(requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(SERVICE_KEY)).json()["state"])
        action = format_action(legal_actions(state)[0])
        redis_server.stop()
        began = time.monotonic()
        down = requests.post(f"{http.url}/v1/sessions/{sid}/actions", json={"action": action},
                             headers=auth(created["seats"]["ann"]), timeout=10)
        assert down.status_code == 503 and down.json()["code"] == "unavailable"
        assert time.monotonic() - began < 3
        assert requests.get(f"{http.url}/readyz", timeout=10).status_code == 503
        assert requests.post(f"{http.url}/v1/games", json={"rules": {"edition": "2022"},
                                                           "players": ["a", "b"]}).status_code == 201
        redis_server = start_embedded(tmp_path / "redis", port=port)
        deadline = time.monotonic() + 10
        while requests.get(f"{http.url}/readyz", timeout=10).status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        up = requests.post(f"{http.url}/v1/sessions/{sid}/actions", json={"action": action},
                           headers=auth(created["seats"]["ann"]), timeout=10)
        assert up.status_code == 200 and up.json()["version"] == 2
    finally:
        http.stop()
        redis_server.stop()
