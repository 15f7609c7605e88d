"""Sessions over HTTP: seat tokens, versions, idempotency, event log, expiry of access."""

from __future__ import annotations

import pytest

from engine import decode_state, legal_actions
from tests.conftest import SERVICE_KEY
from tests.test_http_games import problem


def auth(token):
    return {"Authorization": f"Bearer {token}"}


def create(client, **extra):
    body = {"rules": {"edition": "2022"}, "players": ["ann", "bob", "cy"], "seed": 9, **extra}
    response = client.post("/v1/sessions", json=body)
    assert response.status_code == 201, response.data
    return response.json


def full_state(client, sid):
    return decode_state(client.get(f"/v1/sessions/{sid}", headers=auth(SERVICE_KEY)).json["state"])


def next_action(client, sid):
    action = legal_actions(full_state(client, sid))[0]
    return {"player": action.player, "type": action.type, **({"card": action.card} if action.card else {})}


@pytest.mark.rules("R-SET-3")
def test_each_seat_sees_only_its_own_hand(client):
    s = create(client)
    assert s["version"] == 1 and set(s["seats"]) == {"ann", "bob", "cy"}
    assert all(p["hand"] is None for p in s["view"]["players"])
    for seat, token in s["seats"].items():
        got = client.get(f"/v1/sessions/{s['session_id']}", headers=auth(token))
        assert got.status_code == 200 and got.headers["ETag"] == '"v1"'
        view = got.json["view"]
        assert view["viewer"] == seat and "state" not in got.json
        assert [p["hand"] is not None for p in view["players"]] == [p["id"] == seat for p in view["players"]]


def test_tokens_are_required_and_checked(client):
    s = create(client)
    sid = s["session_id"]
    problem(client.get(f"/v1/sessions/{sid}"), 401, "unauthorized")
    problem(client.get(f"/v1/sessions/{sid}", headers=auth("nope")), 401, "unauthorized")
    other = create(client)
    problem(client.get(f"/v1/sessions/{sid}", headers=auth(other["seats"]["ann"])), 401, "unauthorized")
    problem(client.get("/v1/sessions/unknown", headers=auth("x")), 404, "not_found")


def test_a_seat_acts_only_for_itself(client):
    s = create(client)
    action = next_action(client, s["session_id"])
    assert action["player"] == "ann"
    p = problem(client.post(f"/v1/sessions/{s['session_id']}/actions", json={"action": action},
                            headers=auth(s["seats"]["bob"])), 403, "forbidden")
    assert p["player"] == "bob"


def test_actions_advance_the_version_and_stale_versions_conflict(client):
    s = create(client)
    sid, ann = s["session_id"], s["seats"]["ann"]
    action = next_action(client, sid)
    done = client.post(f"/v1/sessions/{sid}/actions", json={"action": action, "expected_version": 1},
                       headers=auth(ann))
    assert done.status_code == 200 and done.json["version"] == 2 and done.headers["ETag"] == '"v2"'
    assert done.json["view"]["viewer"] == "ann" and done.json["events"][0]["type"] == "played"
    bob_action = next_action(client, sid)
    p = problem(client.post(f"/v1/sessions/{sid}/actions", json={"action": bob_action, "expected_version": 1},
                            headers=auth(s["seats"]["bob"])), 409, "version_conflict")
    assert p["current_version"] == 2
    p = problem(client.post(f"/v1/sessions/{sid}/actions", json={"action": bob_action},
                            headers={**auth(s["seats"]["bob"]), "If-Match": '"v1"'}), 412, "precondition_failed")
    assert client.get(f"/v1/sessions/{sid}", headers=auth(ann)).json["version"] == 2


def test_illegal_actions_change_nothing(client):
    s = create(client)
    sid = s["session_id"]
    before = full_state(client, sid)
    p = problem(client.post(f"/v1/sessions/{sid}/actions",
                            json={"action": {"player": "bob", "type": "play", "card": "7"}},
                            headers=auth(s["seats"]["bob"])), 422, "illegal_action")
    assert p["reason"] in ("not_your_turn", "card_not_in_hand")
    assert full_state(client, sid) == before


def test_idempotency_key_replays_the_first_answer(client):
    s = create(client)
    sid, ann = s["session_id"], s["seats"]["ann"]
    action = next_action(client, sid)
    headers = {**auth(ann), "Idempotency-Key": "k-1"}
    first = client.post(f"/v1/sessions/{sid}/actions", json={"action": action}, headers=headers)
    again = client.post(f"/v1/sessions/{sid}/actions", json={"action": action}, headers=headers)
    assert first.status_code == again.status_code == 200
    assert again.json == first.json and again.headers["Idempotent-Replayed"] == "true"
    assert client.get(f"/v1/sessions/{sid}", headers=auth(ann)).json["version"] == 2
    other = {"player": "ann", "type": "play", "card": "0"}
    problem(client.post(f"/v1/sessions/{sid}/actions", json={"action": other}, headers=headers),
            422, "idempotency_key_reused")
    too_long = {**auth(ann), "Idempotency-Key": "k" * 201}
    p = problem(client.post(f"/v1/sessions/{sid}/actions", json={"action": other}, headers=too_long),
                400, "invalid_request")
    assert p["field"] == "Idempotency-Key" and p["detail"] == "Idempotency-Key is at most 200 characters"


def test_event_log_after_a_version_is_redacted_per_viewer(client):
    s = create(client)
    sid = s["session_id"]
    for _ in range(3):
        action = next_action(client, sid)
        token = s["seats"][action["player"]]
        done = client.post(f"/v1/sessions/{sid}/actions", json={"action": action}, headers=auth(token))
        assert done.status_code == 200
    for seat, token in s["seats"].items():
        events = client.get(f"/v1/sessions/{sid}/events?after=1", headers=auth(token)).json["events"]
        assert [e["version"] for e in events if e["type"] == "played"] == [2, 3, 4]
        for e in events:
            if e["type"] == "drew":
                assert ("card" in e) == (e["player"] == seat)
    everything = client.get(f"/v1/sessions/{sid}/events?after=0", headers=auth(SERVICE_KEY)).json["events"]
    assert all("card" in e for e in everything if e["type"] == "drew")
    assert client.get(f"/v1/sessions/{sid}/events?after=4", headers=auth(SERVICE_KEY)).json["events"] == []
    problem(client.get(f"/v1/sessions/{sid}/events?after=-1", headers=auth(SERVICE_KEY)), 400, "invalid_request")


def test_deleted_sessions_are_gone(client):
    s = create(client)
    sid = s["session_id"]
    assert client.delete(f"/v1/sessions/{sid}", headers=auth(s["seats"]["cy"])).status_code == 204
    problem(client.get(f"/v1/sessions/{sid}", headers=auth(s["seats"]["cy"])), 404, "not_found")


def test_session_keys_share_one_cluster_slot_and_expire(client, redis_url):
    import redis

    from service.store import keys

    s = create(client, ttl_seconds=120)
    r = redis.Redis.from_url(redis_url)
    names = keys(s["session_id"])
    assert all(f"{{{s['session_id']}}}" in k for k in names)
    assert 0 < r.ttl(names[0]) <= 120 and 0 < r.ttl(names[1]) <= 120
    for ttl in (59, 30 * 86_400 + 1):
        refused = client.post("/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                    "ttl_seconds": ttl})
        assert problem(refused, 400, "invalid_request")["field"] == "ttl_seconds"  # one bound, one shape


def test_a_creation_is_admitted_before_what_it_sends_is_judged(redis_url):
    """Without a key where keys are required, a malformed creation is 401, not a 400
    that tells the caller what is wrong with it (nor does it escape the rate limit)."""
    from service.http_api import create_app
    from tests.conftest import make_settings

    keyed = create_app(make_settings(redis_url, api_keys="k1"), warn_unsigned=False).test_client()
    bad = {"rules": {"edition": "1999"}, "players": ["ann", "bob"]}
    problem(keyed.post("/v1/sessions", json=bad), 401, "unauthorized")
    problem(keyed.post("/v1/sessions", json=bad, headers={"X-API-Key": "k1"}), 400, "invalid_request")
    off = create_app(make_settings(redis_url, sessions=False), warn_unsigned=False).test_client()
    problem(off.post("/v1/sessions", json=bad), 503, "unavailable")


def test_a_state_this_process_committed_is_read_back_as_it_was_and_any_other_is_decoded_in_full(client, redis_url):
    """A session's state read back byte for byte as this process committed it is the state
    the engine made (SessionStore.states, ONO99_SESSION_STATE_CACHE_BYTES); a state that
    anyone else wrote is decoded and checked in full, and an impossible one refused."""
    import re

    import redis

    from engine import InvalidInputError, apply, dumps_state, loads_state
    from service.http_api import create_app
    from service.store import keys
    from tests.conftest import make_settings

    store = client.application.extensions["ono99"].sessions.store
    assert store.states.budget == 16 * 1024 * 1024  # the default
    s = create(client)
    sid = s["session_id"]
    acted = client.post(f"/v1/sessions/{sid}/actions", json={"action": next_action(client, sid)},
                        headers=auth(s["seats"]["ann"]))
    assert acted.status_code == 200, acted.data
    read = store.read(sid)
    assert read.known is not None and read.game() is read.known == loads_state(read.state)

    game = keys(sid)[0]
    r = redis.Redis.from_url(redis_url)
    moved = apply(read.known, legal_actions(read.known)[0])[0]  # a state this process never wrote
    r.hset(game, "state", dumps_state(moved))
    read = store.read(sid)
    assert read.known is None and read.game() == moved
    r.hset(game, "state", re.sub(rb'"total":-?\d+', b'"total":100000', read.state))  # past any limit
    with pytest.raises(InvalidInputError):
        store.read(sid).game()

    off = create_app(make_settings(redis_url, session_state_cache_bytes=0), warn_unsigned=False).test_client()
    s = create(off)
    sid = s["session_id"]
    assert off.post(f"/v1/sessions/{sid}/actions", json={"action": next_action(off, sid)},
                    headers=auth(s["seats"]["ann"])).status_code == 200
    assert off.application.extensions["ono99"].sessions.store.read(sid).known is None
