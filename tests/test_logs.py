"""JSON logs: a request id taken from and echoed in X-Request-ID, the session and its
version on session lines, and never a seat token or a hidden card."""

from __future__ import annotations

import io
import json
import logging

import pytest

from service import logs
from service.http_api import create_app
from tests.conftest import SERVICE_KEY, make_settings


@pytest.fixture
def captured():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield stream
    root.removeHandler(handler)
    root.setLevel(old_level)


def test_request_ids_sessions_and_versions_are_logged_and_secrets_are_not(captured, throwaway_redis):
    client = create_app(make_settings(throwaway_redis), warn_unsigned=False).test_client()
    created = client.post("/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"], "seed": 3},
                          headers={"X-Request-ID": "req-42"})
    assert created.headers["X-Request-ID"] == "req-42"
    body = created.json
    sid, seats = body["session_id"], body["seats"]
    state = client.get(f"/v1/sessions/{sid}", headers={"Authorization": f"Bearer {SERVICE_KEY}"}).json["state"]
    hand = state["players"][0]["hand"]
    acted = client.post(f"/v1/sessions/{sid}/actions", headers={"Authorization": f"Bearer {seats['ann']}"},
                        json={"action": {"player": "ann", "type": "play", "card": hand[0]}})
    assert acted.status_code == 200
    generated = acted.headers["X-Request-ID"]
    assert generated and generated != "req-42"
    assert client.get("/healthz", headers={"X-Request-ID": "bad id with spaces"}).headers["X-Request-ID"] != \
        "bad id with spaces"

    text = captured.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    created_lines = [e for e in lines if e.get("request_id") == "req-42"]
    assert any(e["message"] == "session created" and e["session_id"] == sid for e in created_lines)
    applied = [e for e in lines if e["message"] == "action applied"]
    assert applied and applied[0]["session_id"] == sid and applied[0]["version"] == 2
    assert applied[0]["request_id"] == generated
    access = [e for e in lines if e["logger"] == "ono99.access" and e.get("request_id") == generated]
    assert access and access[0]["status"] == 200 and access[0]["route"] == "/v1/sessions/<session_id>/actions"
    for token in [*seats.values(), SERVICE_KEY]:
        assert token not in text
    # No hidden card is logged: no hand, no run of the draw pile, in any JSON spelling,
    # and no line carries a card at all (the drawn one is hidden from the other seat).
    hidden = [p["hand"] for p in state["players"]] + [state["draw_pile"][:4]]
    for cards in hidden:
        for separators in ((",", ":"), (", ", ": ")):
            assert json.dumps(cards, separators=separators) not in text
    assert not [e for e in lines if {"card", "cards", "hand", "hands", "draw_pile"} & set(e)]


def test_grpc_calls_log_the_request_id_from_metadata_and_the_session_and_no_token(captured, throwaway_redis):
    import grpc

    from service.grpc_api.gen import ono99_pb2 as pb
    from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
    from service.grpc_api.server import GrpcServer

    server = GrpcServer(make_settings(throwaway_redis), port=0, grace=1).start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            sessions = pb_grpc.SessionServiceStub(channel)
            game = pb.NewGameRequest(rules=pb.Rules(edition="2022"), players=["ann", "bob"], seed_int=3)
            created = sessions.CreateSession(pb.CreateSessionRequest(game=game), metadata=[("x-request-id", "rpc-7")])
            token = created.seats["ann"]
            sessions.GetSession(pb.GetSessionRequest(session_id=created.session_id),
                                metadata=[("authorization", f"Bearer {token}")])
    finally:
        server.stop()
    text = captured.getvalue()
    access = [e for e in map(json.loads, text.splitlines()) if e["logger"] == "ono99.access"]
    by_method = {e["method"].rsplit("/", 1)[1]: e for e in access}
    assert by_method["CreateSession"]["request_id"] == "rpc-7" and by_method["CreateSession"]["status"] == "OK"
    got = by_method["GetSession"]
    assert got["session_id"] == created.session_id and got["request_id"] not in ("", "rpc-7")
    for secret in [*created.seats.values(), SERVICE_KEY]:
        assert secret not in text
