"""Bounds of a game (engine/bounds.py) at creation and on every read, over real servers.

A deck, rules or players outside the bounds are refused at creation, on both transports,
with the field named; a game at the bounds is created, read and played on, and every
state the engine makes at the bounds decodes again (JSON and protobuf). Before this, an
explicit deck with more than 1,000 copies of a card was accepted and its session could
never be read again (HTTP 500, gRPC INVALID_ARGUMENT on every later call).
"""

from __future__ import annotations

import random

import grpc
import pytest
import requests
from grpc_status import rpc_status
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import (
    CARD_CODES,
    apply,
    decode_state,
    legal_actions,
    new_game,
)
from engine.bounds import MAX_CARD_COUNT, MAX_DECK_SIZE, MAX_HAND_SIZE, MAX_PLAYERS, MIN_HAND_SIZE, MIN_PLAYERS
from service.grpc_api import convert
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from tests.conftest import SERVICE_KEY, start_grpc, start_http
from tests.invariants import check_state

KEY = [("authorization", f"Bearer {SERVICE_KEY}")]


@pytest.fixture(scope="module")
def servers(throwaway_redis):
    http, rpc = start_http(throwaway_redis), start_grpc(throwaway_redis)
    channel = grpc.insecure_channel(rpc.url)
    yield http, channel
    channel.close()
    rpc.stop()
    http.stop()


def full_deck(seed: int = 5) -> list[str]:
    """The largest deck there is, shuffled: every card code MAX_CARD_COUNT times (MAX_DECK_SIZE cards)."""
    deck = [card for card in CARD_CODES for _ in range(MAX_CARD_COUNT)]
    random.Random(seed).shuffle(deck)
    assert len(deck) == MAX_DECK_SIZE
    return deck


def one_card_too_many() -> list[str]:
    """MAX_CARD_COUNT + 1 sevens among a few other cards."""
    return ["7"] * (MAX_CARD_COUNT + 1) + ["0", "1", "2", "3"] * 10


def names(problem: dict, field: str) -> bool:
    """Whether a problem document names ``field`` (engine errors: ``field``; schema errors: ``errors``)."""
    return problem.get("field") == field or field in problem.get("errors", {}).get("json", {})


def grpc_error(exc: grpc.RpcError) -> tuple[grpc.StatusCode, dict[str, str]]:
    from google.rpc import error_details_pb2

    info = error_details_pb2.ErrorInfo()
    rpc_status.from_call(exc).details[0].Unpack(info)
    return exc.code(), dict(info.metadata)


# --- HTTP ------------------------------------------------------------------------------------


@pytest.mark.rules("R-RNG-2", "R-DECK-2022")
@pytest.mark.parametrize(("path", "body", "field"), [
    ("/v1/sessions", {"deck": one_card_too_many()}, "deck"),
    ("/v1/games", {"deck": one_card_too_many()}, "deck"),
    ("/v1/sessions", {"deck": ["7"] * (MAX_DECK_SIZE + 1)}, "deck"),
    ("/v1/sessions", {"rules": {"edition": "2022", "deck": {"7": MAX_CARD_COUNT + 1}}}, "rules.deck.7"),
    ("/v1/sessions", {"rules": {"edition": "2022", "hand_size": MAX_HAND_SIZE + 1}}, "rules.hand_size"),
    ("/v1/sessions", {"players": [f"p{i}" for i in range(MAX_PLAYERS + 1)]}, "players"),
])
def test_http_create_over_a_bound_is_refused_with_the_field_named(servers, path, body, field):
    http, _ = servers
    answer = requests.post(f"{http.url}{path}", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                      "seed": 1, **body}, timeout=10)
    assert answer.status_code == 400, answer.text[:500]
    assert answer.json()["code"] == "invalid_request"
    assert names(answer.json(), field), answer.text[:500]


@pytest.mark.rules("R-RNG-2", "R-SET-1", "R-PLAYERS")
def test_http_session_at_every_bound_is_created_read_and_played(servers):
    http, _ = servers
    players = [f"p{i}" for i in range(MAX_PLAYERS)]
    made = requests.post(f"{http.url}/v1/sessions", json={
        "rules": {"edition": "1980", "hand_size": MAX_HAND_SIZE}, "players": players, "deck": full_deck()},
        timeout=10)
    assert made.status_code == 201, made.text[:500]
    sid, seats = made.json()["session_id"], made.json()["seats"]
    for token in (seats["p0"], SERVICE_KEY):
        got = requests.get(f"{http.url}/v1/sessions/{sid}", headers={"Authorization": f"Bearer {token}"},
                           timeout=10)
        assert got.status_code == 200, got.text[:500]
    state = decode_state(got.json()["state"])
    assert state.rules.deck_size == MAX_DECK_SIZE and len(state.players) == MAX_PLAYERS
    action = legal_actions(state)[0]
    acted = requests.post(f"{http.url}/v1/sessions/{sid}/actions",
                          headers={"Authorization": f"Bearer {seats[action.player]}"},
                          json={"action": {"player": action.player, "type": action.type, "card": action.card},
                                "expected_version": 1}, timeout=10)
    assert acted.status_code == 200, acted.text[:500]
    events = requests.get(f"{http.url}/v1/sessions/{sid}/events", headers={"Authorization": f"Bearer {SERVICE_KEY}"},
                          timeout=10)
    assert events.status_code == 200 and events.json()["events"]


@pytest.mark.rules("R-RNG-2")
def test_http_stateless_game_at_the_deck_bound_is_accepted_back(servers):
    http, _ = servers
    made = requests.post(f"{http.url}/v1/games", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                       "deck": full_deck(6)}, timeout=10)
    assert made.status_code == 201, made.text[:500]
    body = made.json()
    action = legal_actions(decode_state(body["state"]))[0]
    applied = requests.post(f"{http.url}/v1/games/apply", json={
        "state": body["state"], "state_signature": body["state_signature"],
        "action": {"player": action.player, "type": action.type, "card": action.card}}, timeout=10)
    assert applied.status_code == 200, applied.text[:500]


# --- gRPC ------------------------------------------------------------------------------------


def _game(deck: list[str], players=("ann", "bob"), **rules) -> pb.NewGameRequest:
    return pb.NewGameRequest(rules=pb.Rules(edition="2022", **rules), players=list(players), seed_int=1,
                             deck=convert.card_enums(deck))


@pytest.mark.rules("R-RNG-2")
@pytest.mark.parametrize("deck", [one_card_too_many(), ["7"] * (MAX_DECK_SIZE + 1), ["7"] * 200_000],
                         ids=["1001-sevens", "deck-bound-plus-one", "200000-cards"])
def test_grpc_create_over_the_deck_bound_is_invalid_argument_naming_deck(servers, deck):
    _, channel = servers
    sessions, games = pb_grpc.SessionServiceStub(channel), pb_grpc.GameServiceStub(channel)
    for call in (lambda: sessions.CreateSession(pb.CreateSessionRequest(game=_game(deck)), timeout=10),
                 lambda: games.NewGame(_game(deck), timeout=10)):
        with pytest.raises(grpc.RpcError) as refused:
            call()
        code, meta = grpc_error(refused.value)
        assert code == grpc.StatusCode.INVALID_ARGUMENT and meta.get("field") == "deck", refused.value.details()


@pytest.mark.rules("R-SET-1")
def test_grpc_create_over_the_hand_size_bound_is_invalid_argument(servers):
    _, channel = servers
    with pytest.raises(grpc.RpcError) as refused:
        pb_grpc.SessionServiceStub(channel).CreateSession(pb.CreateSessionRequest(
            game=pb.NewGameRequest(rules=pb.Rules(edition="2022", hand_size=MAX_HAND_SIZE + 1),
                                   players=["ann", "bob"])), timeout=10)
    code, meta = grpc_error(refused.value)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and meta.get("field") == "rules.hand_size"


@pytest.mark.rules("R-RNG-2", "R-SET-1", "R-PLAYERS")
def test_grpc_session_at_every_bound_is_created_read_and_played(servers):
    _, channel = servers
    sessions = pb_grpc.SessionServiceStub(channel)
    players = [f"p{i}" for i in range(MAX_PLAYERS)]
    made = sessions.CreateSession(pb.CreateSessionRequest(game=_game(full_deck(7), players, hand_size=MAX_HAND_SIZE)),
                                  timeout=10)
    got = sessions.GetSession(pb.GetSessionRequest(session_id=made.session_id), metadata=KEY, timeout=10)
    state = decode_state(convert.state_doc(got.state))
    assert state.rules.deck_size == MAX_DECK_SIZE
    action = legal_actions(state)[0]
    acted = sessions.Act(pb.ActRequest(session_id=made.session_id, action=convert.action_message(action),
                                       expected_version=1),
                         metadata=[("authorization", f"Bearer {made.seats[action.player]}")], timeout=10)
    assert acted.version == 2
    listed = sessions.ListEvents(pb.ListEventsRequest(session_id=made.session_id), metadata=KEY, timeout=10)
    assert listed.events
    # The same session over the other transport's codec path: a seat's view reads too.
    seat = sessions.GetSession(pb.GetSessionRequest(session_id=made.session_id),
                               metadata=[("authorization", f"Bearer {made.seats['p0']}")], timeout=10)
    assert seat.version == 2


@pytest.mark.rules("R-RNG-2")
def test_grpc_stateless_game_at_the_deck_bound_is_accepted_back(servers):
    _, channel = servers
    games = pb_grpc.GameServiceStub(channel)
    made = games.NewGame(_game(full_deck(8)), timeout=10)
    state = decode_state(convert.state_doc(made.state.state))
    applied = games.Apply(pb.ApplyRequest(state=made.state, action=convert.action_message(legal_actions(state)[0])),
                          timeout=10)
    assert applied.state.state.players


# --- the engine: every state made at the bounds decodes again ------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(players=st.sampled_from([MIN_PLAYERS, MAX_PLAYERS]),
       hand_size=st.sampled_from([MIN_HAND_SIZE, 4, MAX_HAND_SIZE]),
       edition=st.sampled_from(["2022", "1980"]),
       explicit=st.booleans(), scoring=st.sampled_from(["elimination", "tokens", "points"]),
       draw=st.sampled_from(["auto", "manual"]), seed=st.integers(0, 2**32), steps=st.integers(1, 60))
@pytest.mark.rules("R-RNG-1", "R-RNG-2")
def test_states_made_at_the_bounds_decode_again(players, hand_size, edition, explicit, scoring, draw, seed, steps):
    rules = {"edition": edition, "hand_size": hand_size, "scoring": scoring, "draw": draw}
    if hand_size < 4:
        rules["ono99_swap"] = False
    ids = [f"p{i}" for i in range(players)]
    if explicit:
        state, _ = new_game(rules, ids, seed=seed, deck=full_deck(seed))
    else:
        rules["deck"] = dict.fromkeys(CARD_CODES, MAX_CARD_COUNT)
        state, _ = new_game(rules, ids, seed=seed)
    rng = random.Random(seed)
    events: list = []
    for _ in range(steps):
        # The random-play checker's invariants (the JSON documents round-trip among them),
        # and the protobuf message round-trips too.
        actions = check_state(state, events)
        assert decode_state(convert.state_doc(convert.state_message(state))) == state
        if not actions:
            break
        state, more = apply(state, rng.choice(actions))
        events += more
