"""The gRPC API against real servers: parity with HTTP, streams across processes, status
codes and details, health, reflection, and stubs that match the .proto files."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import grpc
import pytest
import requests
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status

from engine import InvalidInputError, decode_state, encode_state, legal_actions, resolve_rules
from service.grpc_api import convert
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from tests.conftest import SERVICE_KEY, start_grpc, start_http


@pytest.fixture(scope="module")
def servers(throwaway_redis):
    """An HTTP server and a gRPC server, separate processes over one Redis."""
    http, rpc = start_http(throwaway_redis), start_grpc(throwaway_redis)
    channel = grpc.insecure_channel(rpc.url)
    yield http, rpc, channel
    channel.close()
    assert rpc.stop() == 0 and http.stop() == 0  # both shut down cleanly on SIGTERM


def bearer(token):
    return [("authorization", f"Bearer {token}")]


def as_messages(events):
    return [convert.event_message(e) for e in events]


PARITY = [({"edition": "2022"}, ["ann", "bob", "cy", "dee"], 1), ({"edition": "1980"}, ["ann", "bob", "cy"], 2),
          ({"edition": "1980", "scoring": "tokens", "tokens": 1}, ["ann", "bob", "cy"], 3),
          ({"edition": "2022", "scoring": "points", "target": 60}, ["ann", "bob"], 4)]


def recalled_states(rpc):
    """How many states the gRPC server has recognized as ones it returned."""
    for line in requests.get(rpc.metrics_url, timeout=5).text.splitlines():
        if line.startswith('ono99_grpc_states_total{source="recalled"}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.mark.rules("R-P2-1", "R-ELIM-1", "R-ROUND", "R-SCORE-TOK")
def test_the_same_games_over_http_and_grpc_give_the_same_states_and_events(servers):
    http, rpc, channel = servers
    games = pb_grpc.GameServiceStub(channel)
    seen: set[str] = set()
    recalled_before, calls_sending_back = recalled_states(rpc), 0
    for rules, players, seed in PARITY:
        h = requests.post(f"{http.url}/v1/games", json={"rules": rules, "players": players, "seed": seed}).json()
        rules_msg = convert.rules_message(resolve_rules(h["state"]["rules"]))
        g = games.NewGame(pb.NewGameRequest(rules=rules_msg, players=players, seed_int=seed))
        rng = random.Random(seed)
        for _ in range(400):
            state = decode_state(h["state"])
            assert decode_state(convert.state_doc(g.state.state)) == state
            if state.status == "over":
                break
            actions = legal_actions(state)
            listed = games.LegalActions(pb.LegalActionsRequest(state=g.state)).actions
            assert list(listed) == [convert.action_message(a) for a in actions]
            action = rng.choice(actions)
            h = requests.post(f"{http.url}/v1/games/apply", json={
                "state": h["state"], "state_signature": h["state_signature"],
                "action": {"player": action.player, "type": action.type,
                           **({"card": action.card} if action.card else {})}}).json()
            g = games.Apply(pb.ApplyRequest(state=g.state, action=convert.action_message(action)))
            calls_sending_back += 2  # LegalActions and Apply, each with the state the server last returned
            assert list(g.events) == as_messages(h["events"])
            seen.update(e["type"] for e in h["events"])
        assert decode_state(h["state"]).status == "over"
        assert encode_state(decode_state(convert.state_doc(g.state.state))) == h["state"]
    assert {"play2_pending", "eliminated", "round_started", "round_over", "game_over"} <= seen
    # Every state sent back as returned (signed) was recognized, not decoded again.
    assert recalled_states(rpc) - recalled_before >= calls_sending_back


def test_a_stream_gets_every_event_in_order_redacted_and_a_reconnect_replays_the_gap(servers):
    http, _, channel = servers
    sessions = pb_grpc.SessionServiceStub(channel)
    created = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"},
                                                             "players": ["ann", "bob"], "seed": 12}).json()
    sid, seats = created["session_id"], created["seats"]
    received: dict[str, list] = {"ann": [], "bob": []}
    streams = {p: sessions.WatchEvents(pb.WatchEventsRequest(session_id=sid, after_version=1),
                                       metadata=bearer(seats[p])) for p in seats}

    def read(player):
        try:
            for event in streams[player]:
                received[player].append(event)
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.CANCELLED

    readers = [threading.Thread(target=read, args=(p,)) for p in seats]
    for t in readers:
        t.start()
    # No wait for the streams to subscribe: a stream reads the log after it subscribes,
    # so it gets every event after after_version whenever it was committed.
    rng = random.Random(5)
    for _ in range(6):  # actions over HTTP, through another process
        state = decode_state(requests.get(f"{http.url}/v1/sessions/{sid}",
                                          headers={"Authorization": f"Bearer {SERVICE_KEY}"}).json()["state"])
        a = rng.choice(legal_actions(state))
        done = requests.post(f"{http.url}/v1/sessions/{sid}/actions",
                             headers={"Authorization": f"Bearer {seats[a.player]}"},
                             json={"action": {"player": a.player, "type": a.type, "card": a.card}})
        assert done.status_code == 200
    full = requests.get(f"{http.url}/v1/sessions/{sid}/events?after=1",
                        headers={"Authorization": f"Bearer {SERVICE_KEY}"}).json()["events"]
    deadline = time.monotonic() + 10
    while any(len(received[p]) < len(full) for p in seats) and time.monotonic() < deadline:
        time.sleep(0.05)
    for p in seats:
        streams[p].cancel()
    for t in readers:
        t.join(5)
    for player in seats:
        got = received[player]
        assert [e.version for e in got] == [e["version"] for e in full]
        assert [e.type for e in got] == [e["type"] for e in full]
        for mine, event in zip(got, full, strict=True):
            if event["type"] == "drew":
                visible = event["player"] == player
                assert (mine.card != pb.CARD_UNSPECIFIED) == visible
    # A reconnect with an old version gets the gap first.
    again = sessions.WatchEvents(pb.WatchEventsRequest(session_id=sid, after_version=3), metadata=bearer(seats["ann"]))
    gap = []
    for event in again:
        gap.append(event)
        if len(gap) == len([e for e in full if e["version"] > 3]):
            again.cancel()
            break
    assert [e.version for e in gap] == [e["version"] for e in full if e["version"] > 3]


def details(exc):
    status = rpc_status.from_call(exc)
    info = pb_error_info(status.details[0])
    return exc.code(), info.reason, dict(info.metadata)


def pb_error_info(detail):
    from google.rpc import error_details_pb2

    info = error_details_pb2.ErrorInfo()
    detail.Unpack(info)
    return info


def test_errors_carry_matching_status_codes_and_the_http_code_in_details(servers):
    _, _, channel = servers
    games, sessions = pb_grpc.GameServiceStub(channel), pb_grpc.SessionServiceStub(channel)
    with pytest.raises(grpc.RpcError) as exc:
        games.NewGame(pb.NewGameRequest(rules=pb.Rules(edition="1999"), players=["a", "b"]))
    assert details(exc.value)[:2] == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_request")
    game = games.NewGame(pb.NewGameRequest(rules=pb.Rules(edition="2022"), players=["a", "b"], seed_int=1))
    with pytest.raises(grpc.RpcError) as exc:
        games.Apply(pb.ApplyRequest(state=game.state, action=pb.Action(player="b", type=pb.ACTION_TYPE_PLAY,
                                                                        card=pb.CARD_7)))
    code, reason, meta = details(exc.value)
    assert (code, reason, meta["rule"], meta["reason"]) == (grpc.StatusCode.FAILED_PRECONDITION, "illegal_action",
                                                            "R-TURN-1", "not_your_turn")
    broken = pb.SignedState()
    broken.CopyFrom(game.state)
    broken.state.players[0].hand[0] = pb.CARD_UNSPECIFIED
    with pytest.raises(grpc.RpcError) as exc:
        games.LegalActions(pb.LegalActionsRequest(state=broken))
    code, reason, meta = details(exc.value)
    assert (code, reason, meta["field"]) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_request",
                                             "state.players[0].hand[0]")
    broken.CopyFrom(game.state)
    broken.state.direction = 3
    with pytest.raises(grpc.RpcError) as exc:
        games.LegalActions(pb.LegalActionsRequest(state=broken))
    assert details(exc.value)[2]["field"] == "state.direction"
    tampered = pb.SignedState()
    tampered.CopyFrom(game.state)
    tampered.signature = "forged"
    with pytest.raises(grpc.RpcError) as exc:
        games.LegalActions(pb.LegalActionsRequest(state=tampered))
    assert details(exc.value)[2]["reason"] == "signature_invalid"
    for ttl in (59, 30 * 86_400 + 1):
        with pytest.raises(grpc.RpcError) as exc:
            sessions.CreateSession(pb.CreateSessionRequest(game=pb.NewGameRequest(
                rules=pb.Rules(edition="2022"), players=["a", "b"]), ttl_seconds=ttl))
        code, reason, meta = details(exc.value)
        assert (code, reason, meta["field"]) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_request", "ttl_seconds")
    created = sessions.CreateSession(pb.CreateSessionRequest(game=pb.NewGameRequest(
        rules=pb.Rules(edition="2022"), players=["a", "b"], seed_int=2)))
    sid = created.session_id
    with pytest.raises(grpc.RpcError) as exc:
        sessions.GetSession(pb.GetSessionRequest(session_id=sid))
    assert details(exc.value)[:2] == (grpc.StatusCode.UNAUTHENTICATED, "unauthorized")
    with pytest.raises(grpc.RpcError) as exc:
        sessions.GetSession(pb.GetSessionRequest(session_id="nope"), metadata=bearer("x"))
    assert details(exc.value)[:2] == (grpc.StatusCode.NOT_FOUND, "not_found")
    state = decode_state(convert.state_doc(sessions.GetSession(pb.GetSessionRequest(session_id=sid),
                                                               metadata=bearer(SERVICE_KEY)).state))
    action = convert.action_message(legal_actions(state)[0])
    with pytest.raises(grpc.RpcError) as exc:
        sessions.Act(pb.ActRequest(session_id=sid, action=action), metadata=bearer(created.seats["b"]))
    assert details(exc.value)[:2] == (grpc.StatusCode.PERMISSION_DENIED, "forbidden")
    first = sessions.Act(pb.ActRequest(session_id=sid, action=action, expected_version=1, idempotency_key="k"),
                         metadata=bearer(created.seats["a"]))
    assert first.version == 2
    again = sessions.Act(pb.ActRequest(session_id=sid, action=action, expected_version=1, idempotency_key="k"),
                         metadata=bearer(created.seats["a"]))
    assert again.replayed and again.version == 2
    for wrong, field in ((pb.ActRequest(idempotency_key="k" * 201), "idempotency_key"),
                         (pb.ActRequest(expected_version=0), "expected_version")):
        wrong.session_id = sid
        wrong.action.CopyFrom(action)
        with pytest.raises(grpc.RpcError) as exc:
            sessions.Act(wrong, metadata=bearer(created.seats["a"]))
        code, reason, meta = details(exc.value)
        assert (code, reason, meta["field"]) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_request", field)
    with pytest.raises(grpc.RpcError) as exc:
        sessions.Act(pb.ActRequest(session_id=sid, action=action, expected_version=1),
                     metadata=bearer(created.seats["a"]))
    code, reason, meta = details(exc.value)
    assert (code, reason, meta["current_version"]) == (grpc.StatusCode.ABORTED, "version_conflict", "2")


def test_reflection_lists_the_services(servers):
    _, _, channel = servers
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    answers = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    names = {s.name for a in answers for s in a.list_services_response.service}
    assert {"ono99.v1.GameService", "ono99.v1.SessionService", "grpc.health.v1.Health"} <= names


def test_health_flips_with_redis(tmp_path):
    from service.config import Settings
    from service.embedded_redis import start_embedded
    from service.grpc_api.server import GrpcServer
    from tests.conftest import restart_port

    port = restart_port()
    redis_server = start_embedded(tmp_path, port=port)
    server = GrpcServer(Settings(redis_url=redis_server.connection_url, redis_timeout=0.3), port=0, grace=1).start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    health = health_pb2_grpc.HealthStub(channel)

    def status(service):
        return health.Check(health_pb2.HealthCheckRequest(service=service), timeout=2).status

    def eventually(service, wanted):
        deadline = time.monotonic() + 10
        while status(service) != wanted:
            assert time.monotonic() < deadline, f"{service} never became {wanted}"
            time.sleep(0.1)

    serving, not_serving = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING
    try:
        eventually("ono99.v1.SessionService", serving)
        redis_server.stop()
        eventually("ono99.v1.SessionService", not_serving)
        assert status("ono99.v1.GameService") == serving and status("") == serving
        redis_server = start_embedded(tmp_path, port=port)
        eventually("ono99.v1.SessionService", serving)
    finally:
        channel.close()
        server.stop()
        redis_server.stop()


def test_every_service_is_served_by_generic_handlers_with_no_registered_methods(monkeypatch):
    """grpc.aio runs asyncio.wait over one pending call per registered method on every
    call it accepts (grpc/grpc#43461): the server registers none, and still serves each
    service."""
    from grpc.aio import _server

    from service.config import Settings
    from service.grpc_api.server import GrpcServer

    registered: list[str] = []
    real = _server.Server.add_registered_method_handlers
    monkeypatch.setattr(_server.Server, "add_registered_method_handlers",
                        lambda self, service, handlers: registered.append(service) or real(self, service, handlers))
    server = GrpcServer(Settings(sessions=False), port=0, grace=1).start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        game = pb_grpc.GameServiceStub(channel).NewGame(
            pb.NewGameRequest(rules=pb.Rules(edition="2022"), players=["ann", "bob"], seed_int=1), timeout=5)
        assert len(game.state.state.players) == 2
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        answers = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
        assert "ono99.v1.GameService" in {s.name for a in answers for s in a.list_services_response.service}
        with pytest.raises(grpc.RpcError) as failed:  # served, and refused for want of a seat token
            pb_grpc.SessionServiceStub(channel).GetSession(pb.GetSessionRequest(session_id="x"), timeout=5)
        assert failed.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        channel.close()
        server.stop()
    assert registered == []


def test_committed_stubs_match_the_proto_files(tmp_path):
    from service.grpc_api.stubs import GEN, generate

    fresh = {p.name: p.read_text() for p in generate(tmp_path)}
    committed = {p.name: p.read_text() for p in Path(GEN).glob("*.py*") if p.name != "__init__.py"}
    assert fresh == committed, "stubs are stale: run python -m service.grpc_api.stubs"


def test_recent_states_give_back_only_what_this_process_returned_with_its_signature():
    from engine import new_game
    from service.recent import RecentStates

    def returned(seed, signature):
        state, _ = new_game({"edition": "2022"}, ["a", "b"], seed=seed)
        msg = pb.SignedState(signature=signature)
        convert.fill_state(msg.state, state)
        return msg.SerializeToString(), state

    (m1, s1), (m2, s2), (m3, s3) = returned(1, "sig1"), returned(2, "sig2"), returned(3, "")
    cost = max(RecentStates.entry_cost(m) for m in (m1, m2))
    recent = RecentStates(2 * cost)  # room for two of them
    recent.remember(m1, s1)
    sent_back = pb.SignedState.FromString(m1)  # as a client sends it
    assert recent.recall(sent_back.SerializeToString()) is s1
    for signature in ("", "sig2", "sïg1"):
        sent_back.signature = signature
        assert recent.recall(sent_back.SerializeToString()) is None  # the full path then checks the signature
    altered = pb.SignedState.FromString(m1)
    altered.state.total += 1
    assert recent.recall(altered.SerializeToString()) is None  # any other state is decoded and checked in full
    recent.remember(m2, s2)
    recent.remember(m3, s3)  # the oldest goes
    assert recent.recall(m1) is None and recent.recall(m2) is s2 and recent.recall(m3) is s3
    assert recent.used <= recent.budget
    off = RecentStates(0)
    off.remember(m2, s2)
    assert off.recall(m2) is None
    too_large = RecentStates(RecentStates.entry_cost(m1) - 1)  # an entry over the whole budget is not kept
    too_large.remember(m1, s1)
    assert too_large.recall(m1) is None and too_large.used == 0


def test_rules_are_translated_once_per_rule_set_and_every_caller_gets_its_own_document():
    """R-RULES: the translation of a Rules message is remembered by its bytes (a game's
    every call carries the same rules), within a bound a caller cannot stretch."""
    from service.grpc_api.convert import _REMEMBERED_RULES_BYTES, _rules_doc, _rules_json

    msg = pb.Rules(edition="1980", limit=120, deck=[pb.DeckEntry(card=pb.CARD_0, count=9)],
                   play2_deflectors=[pb.CARD_HOLD], no_total_floor=True)
    first = convert.rules_doc(msg)
    assert first == _rules_doc(msg) == {"edition": "1980", "deck": {"0": 9}, "limit": 120, "total_floor": None,
                                        "play2_deflectors": ["hold"]}
    first["deck"]["0"] = 1  # a caller's own copy: changing it changes no one else's
    hits = _rules_json.cache_info().hits
    again = convert.rules_doc(pb.Rules.FromString(msg.SerializeToString()))
    assert again == _rules_doc(msg) and _rules_json.cache_info().hits == hits + 1
    with pytest.raises(InvalidInputError):  # a bad card is still refused
        convert.rules_doc(pb.Rules(edition="2022", deck=[pb.DeckEntry(card=999, count=1)]))
    # Unknown fields (kept by protobuf) can make a Rules message as long as the message
    # limit: one over _REMEMBERED_RULES_BYTES is translated, never remembered.
    def stuffed(length):  # msg with an unknown field (number 1023) making it ``length`` bytes
        head = msg.SerializeToString() + b"\xfa\x3f\x80\x10"  # tag, then a two-byte length
        payload = length - len(head)
        made = pb.Rules.FromString(head[:-2] + bytes([0x80 | payload & 0x7F, payload >> 7]) + b"x" * payload)
        assert len(made.SerializeToString()) == length
        return made

    for length, kept in ((_REMEMBERED_RULES_BYTES, 1), (_REMEMBERED_RULES_BYTES + 1, 0)):
        size = _rules_json.cache_info().currsize
        assert convert.rules_doc(stuffed(length)) == _rules_doc(msg)
        assert _rules_json.cache_info().currsize == size + kept


@pytest.mark.parametrize("players", [2, 4, 6])
def test_a_state_message_written_from_the_previous_one_equals_one_written_whole(players):
    from engine import apply, new_game
    from tests.test_random_play import CONFIGS

    ids = [f"p{i}" for i in range(players)]
    steps = 0
    for config, rules in sorted(CONFIGS.items()):
        for n in range(3):
            rng = random.Random(f"{config}/{n}")
            state, _ = new_game(rules, ids, seed=f"{config}/{players}/{n}")
            msg = convert.state_message(state)
            while state.status == "playing":
                following, _ = apply(state, rng.choice(legal_actions(state)))
                whole = convert.state_message(following)
                patched = convert.fill_state(pb.GameState(), following, (state, msg))
                assert patched.SerializeToString() == whole.SerializeToString(), (config, steps)
                state, msg, steps = following, patched, steps + 1
    assert steps > 1000


def test_event_messages_are_what_protobuf_makes_of_the_event_objects():
    """Every kind of event (plays, draws, eliminations, round ends with points, scores
    and winners) becomes the Event message protobuf's own JSON mapping gives."""
    from google.protobuf import json_format

    from engine import apply, new_game
    from tests.test_random_play import CONFIGS

    kinds = set()
    for config, rules in sorted(CONFIGS.items()):
        rng = random.Random(config)
        state, events = new_game(rules, ["p0", "p1", "p2"], seed=config)
        while state.status == "playing":
            state, more = apply(state, rng.choice(legal_actions(state)))
            events += more
        built = pb.ApplyResponse()
        convert.add_events(built.events, events)
        for event, added in zip(events, built.events, strict=True):
            card = {"card": pb.Card.Name(convert.card_enums([event["card"]])[0])} if "card" in event else {}
            expected = json_format.ParseDict({**event, **card}, pb.Event())
            assert convert.event_message(event) == expected == added, event
            kinds.add(event["type"])
    assert {"played", "drew", "eliminated", "round_over", "game_over"} <= kinds, kinds
