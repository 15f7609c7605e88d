"""Redis refusing writes, against real servers: a full Redis (noeviction) and a Redis
without the append-only file ONO99_REDIS_WAIT_AOF needs answer 503, never 500; callers
cannot make sessions that outlive the ones in play (ONO99_SESSION_TTL_MAX)."""

from __future__ import annotations

import pytest
import redis
import requests

from tests.conftest import start_http

GAME = {"rules": {"edition": "2022"}, "players": ["ann", "bob"], "seed": 5}
LARGEST = {"rules": {"edition": "2022", "deck": {c: 1000 for c in ("0", "1", "2", "3", "4", "5", "6", "7")}},
           "players": ["ann", "bob"], "seed": 5}


def test_a_full_redis_answers_503_and_play_goes_on_where_it_can(own_redis):
    store = redis.Redis.from_url(own_redis)
    server = start_http(own_redis, workers=1, ONO99_CREATES_PER_MINUTE="0")
    try:
        made = requests.post(f"{server.url}/v1/sessions", json=GAME, timeout=5).json()
        used = int(store.info("memory")["used_memory"])
        store.config_set("maxmemory-policy", "noeviction")
        store.config_set("maxmemory", used + 300_000)
        answers = [requests.post(f"{server.url}/v1/sessions", json=LARGEST, timeout=5) for _ in range(20)]
        assert {a.status_code for a in answers} <= {201, 503}  # full: refused, never a 500
        refused = [a.json() for a in answers if a.status_code == 503]
        assert refused and all(p["detail"] == "the session store is full" for p in refused)
        # Reads still work on a full Redis.
        read = requests.get(f"{server.url}/v1/sessions/{made['session_id']}",
                            headers={"Authorization": f"Bearer {made['seats']['ann']}"}, timeout=5)
        assert read.status_code == 200
    finally:
        store.config_set("maxmemory", 0)
        server.stop()


def test_wait_aof_against_a_redis_without_an_append_only_file_is_not_ready_and_answers_503(own_redis):
    server = start_http(own_redis, workers=1, ONO99_REDIS_WAIT_AOF="true")  # the embedded server: no AOF
    try:
        assert requests.get(f"{server.url}/readyz", timeout=5).status_code == 503
        refused = requests.post(f"{server.url}/v1/sessions", json=GAME, timeout=5)
        assert refused.status_code == 503 and refused.json()["code"] == "unavailable"
    finally:
        server.stop()


@pytest.mark.parametrize(("limit", "asked", "status"), [
    (None, 86_400, 201), (None, 86_401, 400), ("172800", 172_800, 201), ("172800", 172_801, 400)])
def test_a_session_cannot_be_asked_to_live_longer_than_the_configured_maximum(own_redis, limit, asked, status):
    env = {"ONO99_SESSION_TTL_MAX": limit} if limit else {}
    server = start_http(own_redis, workers=1, **env)
    try:
        answer = requests.post(f"{server.url}/v1/sessions", json={**GAME, "ttl_seconds": asked}, timeout=5)
        assert answer.status_code == status, answer.text
        if status == 400:
            assert answer.json()["field"] == "ttl_seconds"
    finally:
        server.stop()
