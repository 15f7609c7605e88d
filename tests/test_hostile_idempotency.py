"""A cheating seat and idempotency keys, against real HTTP and gRPC servers.

Authorization comes before any replay; a key belongs to the session and to the caller
(seat token or service key) that used it, so a replay only ever returns the answer to
the caller who earned it, and no caller learns whether another's key exists.
"""

from __future__ import annotations

import grpc
import pytest
import requests

from engine import decode_state, legal_actions
from service.grpc_api import convert
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from tests.conftest import SERVICE_KEY, start_grpc, start_http


@pytest.fixture(scope="module")
def servers(throwaway_redis):
    http, rpc = start_http(throwaway_redis), start_grpc(throwaway_redis)
    channel = grpc.insecure_channel(rpc.url)
    yield http, pb_grpc.SessionServiceStub(channel)
    channel.close()
    rpc.stop()
    http.stop()


def _auth(token):
    return {"Authorization": f"Bearer {token}"}


def _session(http):
    made = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"},
                                                          "players": ["ann", "bob"], "seed": 31}, timeout=5)
    assert made.status_code == 201
    return made.json()


def _next(http, sid):
    state = decode_state(requests.get(f"{http.url}/v1/sessions/{sid}", headers=_auth(SERVICE_KEY),
                                      timeout=5).json()["state"])
    a = legal_actions(state)[0]
    return {"player": a.player, "type": a.type, **({"card": a.card} if a.card else {})}


def _act_http(http, sid, token, action, key):
    return requests.post(f"{http.url}/v1/sessions/{sid}/actions", json={"action": action},
                         headers={**_auth(token), "Idempotency-Key": key}, timeout=5)


def _hand(view, player):
    return next(p["hand"] for p in view["players"] if p["id"] == player)


def test_another_seat_replaying_an_action_with_its_key_gets_forbidden_not_the_answer_over_http(servers):
    http, _ = servers
    s = _session(http)
    sid, seats = s["session_id"], s["seats"]
    action = _next(http, sid)
    mine = _act_http(http, sid, seats["ann"], action, "k-1")
    assert mine.status_code == 200 and _hand(mine.json()["view"], "ann") is not None
    stolen = _act_http(http, sid, seats["bob"], action, "k-1")
    assert stolen.status_code == 403, stolen.text
    assert stolen.json()["code"] == "forbidden"
    assert "view" not in stolen.json() and "events" not in stolen.json()
    assert stolen.headers.get("Idempotent-Replayed") is None
    # ann's own retry is still a replay of her answer.
    again = _act_http(http, sid, seats["ann"], action, "k-1")
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == mine.json()


def test_keys_are_scoped_to_the_caller_so_one_seats_key_neither_collides_nor_leaks_over_http(servers):
    http, _ = servers
    s = _session(http)
    sid, seats = s["session_id"], s["seats"]
    first = _act_http(http, sid, seats["ann"], _next(http, sid), "shared-key")
    assert first.status_code == 200
    # bob's turn now: the same key is his own, not a reuse of ann's.
    action = _next(http, sid)
    assert action["player"] == "bob"
    his = _act_http(http, sid, seats["bob"], action, "shared-key")
    assert his.status_code == 200, his.text
    assert his.headers.get("Idempotent-Replayed") is None and his.json()["version"] == 3
    # The service key has keys of its own too: its reuse of the same key acts anew.
    action = _next(http, sid)
    by_service = _act_http(http, sid, SERVICE_KEY, action, "shared-key")
    assert by_service.status_code == 200 and by_service.headers.get("Idempotent-Replayed") is None
    assert by_service.json()["version"] == 4


def test_a_foreign_seat_learns_nothing_about_keys_it_did_not_use_over_http(servers):
    http, _ = servers
    s = _session(http)
    sid, seats = s["session_id"], s["seats"]
    assert _act_http(http, sid, seats["ann"], _next(http, sid), "probe").status_code == 200
    # bob (now to act) probing ann's key with a different action is just his action.
    action = _next(http, sid)
    answer = _act_http(http, sid, seats["bob"], action, "probe")
    assert answer.status_code == 200 and answer.json().get("code") != "idempotency_key_reused"


def test_another_seat_replaying_with_its_key_gets_permission_denied_over_grpc(servers):
    http, rpc = servers
    s = _session(http)
    sid, seats = s["session_id"], s["seats"]
    state = decode_state(requests.get(f"{http.url}/v1/sessions/{sid}", headers=_auth(SERVICE_KEY),
                                      timeout=5).json()["state"])
    message = convert.action_message(legal_actions(state)[0])
    request = pb.ActRequest(session_id=sid, action=message, idempotency_key="g-1")
    mine = rpc.Act(request, metadata=[("authorization", f"Bearer {seats['ann']}")], timeout=5)
    assert not mine.replayed and any(p.hand for p in mine.view.players)
    with pytest.raises(grpc.RpcError) as stolen:
        rpc.Act(request, metadata=[("authorization", f"Bearer {seats['bob']}")], timeout=5)
    assert stolen.value.code() == grpc.StatusCode.PERMISSION_DENIED
    again = rpc.Act(request, metadata=[("authorization", f"Bearer {seats['ann']}")], timeout=5)
    assert again.replayed and again.view == mine.view
