"""Spectator tokens and reissued seat tokens against real servers (gunicorn with two
workers, a gRPC process, Valkey): a spectator reads what a spectator may and nothing
more, never acts, and stops at once when revoked, its streams and long polls included;
the service key gives a person who lost a seat token a new one, and the old one stops
at once everywhere."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
import requests

from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from tests.conftest import SERVICE_KEY, auth, start_grpc, start_http

pytestmark = pytest.mark.slow
ENV = {"ONO99_CREATES_PER_MINUTE": "0", "ONO99_ACTIONS_PER_SECOND": "0", "ONO99_SPECTATORS_MAX": "2"}


@pytest.fixture(scope="module")
def servers():
    from service.embedded_redis import start_embedded

    store = start_embedded()
    http = start_http(store.connection_url, workers=2, **ENV)
    rpc = start_grpc(store.connection_url, **ENV)
    yield http, rpc
    rpc.stop()
    http.stop()
    store.stop()



def create(http, **body):
    answer = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                            "seed": 7, **body}, timeout=10)
    assert answer.status_code == 201, answer.text
    return answer.json()


def play_a_few(http, sid, seats, moves=6):
    for _ in range(moves):
        for token in seats.values():
            view = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(token), timeout=10).json()["view"]
            if view["legal_actions"]:
                assert requests.post(f"{http.url}/v1/sessions/{sid}/actions", headers=auth(token), timeout=10,
                                     json={"action": view["legal_actions"][0]}).status_code == 200


def spectate(http, sid, token):
    answer = requests.post(f"{http.url}/v1/sessions/{sid}/spectators", headers=auth(token), timeout=10)
    assert answer.status_code == 201, answer.text
    return answer.json()


@pytest.mark.rules("R-SET-3")
def test_a_spectator_reads_the_spectators_view_events_and_record_and_never_acts(servers):
    http, _ = servers
    made = create(http)
    sid, seats = made["session_id"], made["seats"]
    watcher = spectate(http, sid, seats["ann"])
    assert watcher["id"] == watcher["token"][:8]
    play_a_few(http, sid, seats)
    spy = auth(watcher["token"])
    read = requests.get(f"{http.url}/v1/sessions/{sid}", headers=spy, timeout=10).json()
    assert "state" not in read and read["view"]["viewer"] is None and read["view"]["legal_actions"] == []
    assert all(p["hand"] is None for p in read["view"]["players"] if p["status"] != "out")
    events = requests.get(f"{http.url}/v1/sessions/{sid}/events", headers=spy, timeout=10).json()["events"]
    drawn = [e for e in events if e["type"] == "drew"]
    assert drawn and all("card" not in e for e in drawn)
    record = requests.get(f"{http.url}/v1/sessions/{sid}/record", headers=spy, timeout=10).json()
    assert set(record["header"]["initial_state"]) == {"hidden"}
    assert all("card" not in e for v in record["versions"] for e in v["events"] if e["type"] == "drew")

    # Everything that acts, or makes tokens, is refused to it.
    legal = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(seats["ann"]), timeout=10).json()["view"]
    action = (legal["legal_actions"] or [{"player": "ann", "type": "play", "card": "5"}])[0]
    refused = [
        requests.post(f"{http.url}/v1/sessions/{sid}/actions", headers=spy, json={"action": action}, timeout=10),
        requests.post(f"{http.url}/v1/sessions/{sid}/suggest", headers=spy, json={"bot": {"kind": "random"}},
                      timeout=10),
        requests.put(f"{http.url}/v1/sessions/{sid}/seats/ann/bot", headers=spy, json={"bot": {"kind": "random"}},
                     timeout=10),
        requests.post(f"{http.url}/v1/sessions/{sid}/spectators", headers=spy, timeout=10),
        requests.post(f"{http.url}/v1/sessions/{sid}/seats/ann/token", headers=spy, timeout=10),
        requests.delete(f"{http.url}/v1/sessions/{sid}", headers=spy, timeout=10),
    ]
    assert [r.status_code for r in refused] == [403] * 6, [r.text for r in refused]
    assert requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(seats["ann"]), timeout=10).json()[
        "version"] == read["version"]  # nothing it sent changed the session


def test_a_revoked_spectator_stops_at_once_its_stream_and_long_poll_included(servers):
    http, rpc = servers
    made = create(http)
    sid, seats = made["session_id"], made["seats"]
    watcher = spectate(http, sid, SERVICE_KEY)
    play_a_few(http, sid, seats, moves=1)  # events for the stream to start with
    polled: list[tuple[int, float]] = []

    def poll() -> None:
        answer = requests.get(f"{http.url}/v1/sessions/{sid}/events", params={"after": 50, "wait": 25},
                              headers=auth(watcher["token"]), timeout=40)
        polled.append((answer.status_code, time.monotonic()))

    with grpc.insecure_channel(rpc.url) as channel:
        stream = pb_grpc.SessionServiceStub(channel).WatchEvents(
            pb.WatchEventsRequest(session_id=sid, after_version=0), timeout=30,
            metadata=[("authorization", f"Bearer {watcher['token']}")])
        first = next(stream)
        assert first.version == 2
        poller = threading.Thread(target=poll)
        poller.start()
        time.sleep(1.0)
        revoked_at = time.monotonic()
        assert requests.delete(f"{http.url}/v1/sessions/{sid}/spectators/{watcher['id']}",
                               headers=auth(seats["bob"]), timeout=10).status_code == 204
        with pytest.raises(grpc.RpcError) as ended:
            for _ in stream:
                pass
        took = time.monotonic() - revoked_at
        poller.join(30)
    assert ended.value.code() == grpc.StatusCode.UNAUTHENTICATED and took < 5, (ended.value, took)
    assert polled and polled[0][0] == 401 and polled[0][1] - revoked_at < 5, polled
    assert requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(watcher["token"]), timeout=10).status_code == 401
    again = requests.delete(f"{http.url}/v1/sessions/{sid}/spectators/{watcher['id']}", headers=auth(SERVICE_KEY),
                            timeout=10)
    assert again.status_code == 404


def test_spectators_are_capped_per_session_and_revoked_by_id_or_token(servers):
    http, _ = servers
    made = create(http)
    sid, ann = made["session_id"], auth(made["seats"]["ann"])
    first, second = spectate(http, sid, made["seats"]["ann"]), spectate(http, sid, SERVICE_KEY)
    listed = requests.get(f"{http.url}/v1/sessions/{sid}/spectators", headers=auth(made["seats"]["bob"]), timeout=10)
    assert listed.json()["spectators"] == sorted([{"id": first["id"], "by": "ann"}, {"id": second["id"], "by": None}],
                                                 key=lambda s: s["id"])
    assert requests.get(f"{http.url}/v1/sessions/{sid}/spectators", headers=auth(first["token"]),
                        timeout=10).status_code == 403
    full = requests.post(f"{http.url}/v1/sessions/{sid}/spectators", headers=ann, timeout=10)
    assert full.status_code == 429 and full.json()["limit"] == 2  # ONO99_SPECTATORS_MAX
    assert requests.delete(f"{http.url}/v1/sessions/{sid}/spectators/{first['token']}", headers=ann,
                           timeout=10).status_code == 204
    assert requests.post(f"{http.url}/v1/sessions/{sid}/spectators", headers=ann, timeout=10).status_code == 201
    assert requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(second["token"]), timeout=10).status_code == 200
    for bad in ("short", "x" * 8):
        assert requests.delete(f"{http.url}/v1/sessions/{sid}/spectators/{bad}", headers=ann,
                               timeout=10).status_code == 404
    other = create(http)
    assert requests.get(f"{http.url}/v1/sessions/{other['session_id']}", headers=auth(second["token"]),
                        timeout=10).status_code == 401  # a spectator of one session only


def test_the_service_key_reissues_a_lost_seat_token_and_the_old_one_stops_everywhere(servers):
    http, rpc = servers
    made = create(http, players=["ann", "bob", {"id": "cpu", "bot": {"kind": "random"}}])
    sid, seats = made["session_id"], made["seats"]
    old = seats["ann"]
    play_a_few(http, sid, seats, moves=1)  # events for the stream to start with
    stolen = spectate(http, sid, old)  # asked for with the token that is then replaced
    kept = spectate(http, sid, seats["bob"])
    with grpc.insecure_channel(rpc.url) as channel:
        sessions = pb_grpc.SessionServiceStub(channel)
        stream = sessions.WatchEvents(pb.WatchEventsRequest(session_id=sid, after_version=0), timeout=30,
                                      metadata=[("authorization", f"Bearer {old}")])
        next(stream)
        for token, player, code in [(seats["bob"], "ann", 403), (SERVICE_KEY, "cpu", 400),
                                    (SERVICE_KEY, "nobody", 400), (SERVICE_KEY, "x" * 100, 400)]:
            answer = requests.post(f"{http.url}/v1/sessions/{sid}/seats/{player}/token", headers=auth(token),
                                   timeout=10)
            assert answer.status_code == code, (player, answer.text)
        reissued = requests.post(f"{http.url}/v1/sessions/{sid}/seats/ann/token", headers=auth(SERVICE_KEY),
                                 timeout=10)
        assert reissued.status_code == 200, reissued.text
        body = reissued.json()
        with pytest.raises(grpc.RpcError) as ended:
            for _ in stream:
                pass
        assert ended.value.code() == grpc.StatusCode.UNAUTHENTICATED
        # Over gRPC too, in the same shape: the new token is reissued again there.
        again = sessions.ReissueSeatToken(pb.ReissueSeatTokenRequest(session_id=sid, player="ann"),
                                          metadata=[("authorization", f"Bearer {SERVICE_KEY}")], timeout=10)
        assert again.version == body["version"] + 1 and again.token not in (old, body["token"])
        with pytest.raises(grpc.RpcError) as stale:
            sessions.GetSession(pb.GetSessionRequest(session_id=sid),
                                metadata=[("authorization", f"Bearer {body['token']}")], timeout=10)
        assert stale.value.code() == grpc.StatusCode.UNAUTHENTICATED
        spectator = sessions.AddSpectator(pb.AddSpectatorRequest(session_id=sid),
                                          metadata=[("authorization", f"Bearer {again.token}")], timeout=10)
        assert spectator.id == spectator.token[:8]
        listed = sessions.ListSpectators(pb.ListSpectatorsRequest(session_id=sid),
                                         metadata=[("authorization", f"Bearer {SERVICE_KEY}")], timeout=10)
        assert {(s.id, s.by) for s in listed.spectators} == {(spectator.id, "ann"), (kept["id"], "bob")}
    for url in (f"/v1/sessions/{sid}", f"/v1/sessions/{sid}/events", f"/v1/sessions/{sid}/record"):
        assert requests.get(f"{http.url}{url}", headers=auth(old), timeout=10).status_code == 401  # both workers
        # The spectator tokens the old token asked for went with it; another seat's stay.
        assert requests.get(f"{http.url}{url}", headers=auth(stolen["token"]), timeout=10).status_code == 401
        assert requests.get(f"{http.url}{url}", headers=auth(kept["token"]), timeout=10).status_code == 200
    view = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(again.token), timeout=10).json()
    assert view["view"]["viewer"] == "ann"
    log = requests.get(f"{http.url}/v1/sessions/{sid}/events", headers=auth(seats["bob"]), timeout=10).json()
    assert [e["player"] for e in log["events"] if e["type"] == "seat_token_reissued"] == ["ann", "ann"]
    assert body["chain_hash"] == next(e["chain_hash"] for e in log["events"] if e["type"] == "seat_token_reissued")
