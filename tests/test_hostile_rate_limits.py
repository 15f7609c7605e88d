"""Rate limits and API keys against real servers over one real Redis: session creation
per client (address, or API key where configured) and actions per seat, kept in Redis
so they hold across replicas and transports; 429 with Retry-After / RESOURCE_EXHAUSTED."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
import requests

from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from tests.conftest import SERVICE_KEY, start_grpc, start_http

GAME = {"rules": {"edition": "2022"}, "players": ["ann", "bob"], "seed": 5}
NEW = pb.NewGameRequest(rules=pb.Rules(edition="2022"), players=["ann", "bob"], seed_int=5)


@pytest.fixture
def fresh_redis():
    """A Redis of this test alone: the limits' counters start from zero."""
    from service.embedded_redis import start_embedded

    server = start_embedded()
    yield server.connection_url
    server.stop()


def _create(url, **headers):
    return requests.post(f"{url}/v1/sessions", json=GAME, headers=headers, timeout=5)


def test_session_creation_is_limited_per_address_across_replicas_and_transports(fresh_redis):
    limits = {"ONO99_CREATES_PER_MINUTE": "6", "ONO99_CREATES_BURST": "4"}
    one, two = start_http(fresh_redis, workers=1, **limits), start_http(fresh_redis, workers=1, **limits)
    rpc = start_grpc(fresh_redis, **limits)
    channel = grpc.insecure_channel(rpc.url)
    try:
        assert [_create(one.url).status_code for _ in range(2)] == [201, 201]
        assert [_create(two.url).status_code for _ in range(2)] == [201, 201]  # the same burst of 4
        refused = _create(one.url)
        assert refused.status_code == 429 and refused.json()["code"] == "too_many_requests"
        assert 1 <= int(refused.headers["Retry-After"]) <= 10
        assert _create(two.url).status_code == 429
        with pytest.raises(grpc.RpcError) as over_grpc:
            pb_grpc.SessionServiceStub(channel).CreateSession(pb.CreateSessionRequest(game=NEW), timeout=5)
        assert over_grpc.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        # The service key is not limited.
        assert _create(one.url, **{"X-API-Key": SERVICE_KEY}).status_code == 201
    finally:
        channel.close()
        for server in (one, two, rpc):
            server.stop()


def test_actions_are_limited_per_seat_and_other_seats_keep_acting(fresh_redis):
    server = start_http(fresh_redis, workers=1, ONO99_ACTIONS_PER_SECOND="0.5", ONO99_ACTIONS_BURST="3")
    try:
        made = _create(server.url).json()
        sid, seats = made["session_id"], made["seats"]
        url = f"{server.url}/v1/sessions/{sid}/actions"
        spam = {"action": {"player": "bob", "type": "play", "card": "0"}}  # not bob's turn: refused anyway
        answers = [requests.post(url, json=spam, headers={"Authorization": f"Bearer {seats['bob']}"}, timeout=5)
                   for _ in range(4)]
        assert [a.status_code for a in answers[:3]] == [422, 422, 422]
        assert answers[3].status_code == 429 and int(answers[3].headers["Retry-After"]) >= 1
        # ann's bucket is her own: she acts.
        view = requests.get(f"{server.url}/v1/sessions/{sid}", headers={"Authorization": f"Bearer {seats['ann']}"},
                            timeout=5).json()["view"]
        hand = next(p["hand"] for p in view["players"] if p["id"] == "ann")
        playable = [c for c in hand if c not in ("ono99",)]
        acted = [requests.post(url, json={"action": {"player": "ann", "type": "play", "card": card}},
                               headers={"Authorization": f"Bearer {seats['ann']}"}, timeout=5).status_code
                 for card in playable[:1]]
        assert acted == [200]
    finally:
        server.stop()


@contextlib.contextmanager
def _both(redis_url: str, **env: str) -> Iterator[tuple[Any, pb_grpc.SessionServiceStub]]:
    """An HTTP server (one worker) and a gRPC server with ``env``, over one Redis: the
    HTTP server and a SessionService stub on the gRPC one."""
    http, rpc = start_http(redis_url, workers=1, **env), start_grpc(redis_url, **env)
    channel = grpc.insecure_channel(rpc.url)
    try:
        yield http, pb_grpc.SessionServiceStub(channel)
    finally:
        channel.close()
        http.stop()
        rpc.stop()


def test_with_api_keys_only_their_holders_create_sessions_each_with_its_own_budget(fresh_redis):
    env = {"ONO99_API_KEYS": "key-one, key-two", "ONO99_CREATES_PER_MINUTE": "6", "ONO99_CREATES_BURST": "2"}
    with _both(fresh_redis, **env) as (http, sessions):
        anonymous = _create(http.url)
        assert anonymous.status_code == 401 and anonymous.json()["code"] == "unauthorized"
        assert _create(http.url, **{"X-API-Key": "nope"}).status_code == 401
        with pytest.raises(grpc.RpcError) as no_key:
            sessions.CreateSession(pb.CreateSessionRequest(game=NEW), timeout=5)
        assert no_key.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert _create(http.url, **{"X-API-Key": "key-one"}).status_code == 201
        sessions.CreateSession(pb.CreateSessionRequest(game=NEW), metadata=[("x-api-key", "key-one")], timeout=5)
        assert _create(http.url, **{"X-API-Key": "key-one"}).status_code == 429  # key-one's burst of 2 is spent
        assert _create(http.url, **{"X-API-Key": "key-two"}).status_code == 201  # key-two's is not
        # The service key, sent as on every other call (a bearer token), creates without limit;
        # a made-up bearer token is no key.
        assert all(_create(http.url, Authorization=f"Bearer {SERVICE_KEY}").status_code == 201 for _ in range(3))
        sessions.CreateSession(pb.CreateSessionRequest(game=NEW),
                               metadata=[("authorization", f"Bearer {SERVICE_KEY}")], timeout=5)
        assert _create(http.url, Authorization="Bearer made-up").status_code == 401


# Bodies a caller without a key might send, each refused for what it holds when a key is
# sent; without one, the answer is 401 whatever the body: the body is read only once the
# caller is admitted, so it learns nothing of what it sent (not the schema, not the TTL range).
BAD_BODIES = [{"x": 1}, {"rules": {"edition": "2022"}, "players": ["ann"]},
              {**GAME, "ttl_seconds": 5}, {**GAME, "players": ["ann", {"id": "bob", "bot": {"kind": "nope"}}]}]


def test_without_an_api_key_a_malformed_creation_is_401_and_tells_nothing(fresh_redis):
    env = {"ONO99_API_KEYS": "key-one", "ONO99_CREATES_PER_MINUTE": "600", "ONO99_CREATES_BURST": "50"}
    with _both(fresh_redis, **env) as (http, sessions):
        # What a caller without a key is told of a well-formed body: every other answers the same.
        told = requests.post(f"{http.url}/v1/sessions", json=GAME, timeout=5)
        assert told.status_code == 401 and told.json()["code"] == "unauthorized", told.text
        for body in BAD_BODIES:
            for headers in ({}, {"X-API-Key": "nope"}):
                refused = requests.post(f"{http.url}/v1/sessions", json=body, headers=headers, timeout=5)
                assert (refused.status_code, refused.json()) == (401, told.json()), (body, refused.text)
            judged = requests.post(f"{http.url}/v1/sessions", json=body, headers={"X-API-Key": "key-one"}, timeout=5)
            assert judged.status_code == 400, (body, judged.text)  # the same body from a key holder
        # A key may also be sent as a bearer token (docs/API.md, under the sessions table).
        assert requests.post(f"{http.url}/v1/sessions", json=GAME, headers={"Authorization": "Bearer key-one"},
                             timeout=5).status_code == 201
        unauthenticated = requests.post(f"{http.url}/v1/sessions", data=b"{not json",
                                        headers={"Content-Type": "application/json"}, timeout=5)
        assert (unauthenticated.status_code, unauthenticated.json()) == (401, told.json())
        with pytest.raises(grpc.RpcError) as well_formed:
            sessions.CreateSession(pb.CreateSessionRequest(game=NEW), timeout=5)
        assert well_formed.value.code() == grpc.StatusCode.UNAUTHENTICATED
        bad = [pb.CreateSessionRequest(game=NEW, ttl_seconds=5),
               pb.CreateSessionRequest(game=NEW, bots={"cy": pb.Bot(kind="random")})]
        for request in bad:
            with pytest.raises(grpc.RpcError) as no_key:
                sessions.CreateSession(request, timeout=5)
            assert (no_key.value.code(), no_key.value.details()) == (
                grpc.StatusCode.UNAUTHENTICATED, well_formed.value.details()), request
            with pytest.raises(grpc.RpcError) as judged_rpc:
                sessions.CreateSession(request, metadata=[("x-api-key", "key-one")], timeout=5)
            assert judged_rpc.value.code() == grpc.StatusCode.INVALID_ARGUMENT, request
