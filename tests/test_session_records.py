"""Game records of sessions against real servers (gunicorn, gRPC, a timekeeper, Valkey):
a game of persons, a bot and a turn timer verifies with ``ono99 verify`` (chain,
signature by the service's key, every receipt from the answers, replay, outcome); a
seat's record hides what its view hides while the game runs and still verifies its
chain; tampering with a real record is caught, each by the check that names it; a
finished game's record outlives the session's idle time to live by the retention."""

from __future__ import annotations

import copy
import json
import time

import grpc
import pytest
import redis
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jsonschema import Draft202012Validator

from engine.cards import CARD_CODES
from engine.records import RECORD_SCHEMA, digest, sign, version_hash, version_meta
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from service.store import keys
from tests.conftest import SERVICE_KEY, auth, run_verify, start_grpc, start_http, start_timekeeper

pytestmark = pytest.mark.slow
RECORD_KEY = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"  # RFC 8032's first test key
RECORD_PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
ENV = {"ONO99_CREATES_PER_MINUTE": "0", "ONO99_ACTIONS_PER_SECOND": "0", "ONO99_RECORD_KEY": RECORD_KEY,
       "ONO99_RECORD_RETENTION": "600"}
SCHEMA = Draft202012Validator(RECORD_SCHEMA)
FORGER = Ed25519PrivateKey.generate()


@pytest.fixture(scope="module")
def servers():
    from service.embedded_redis import start_embedded

    store = start_embedded()
    http = start_http(store.connection_url, workers=1, **ENV)
    rpc = start_grpc(store.connection_url, **ENV)
    keeper = start_timekeeper(store.connection_url, **ENV)
    yield http, rpc, store.connection_url
    keeper.stop()
    rpc.stop()
    http.stop()
    store.stop()



def record_of(http, sid, token):
    answer = requests.get(f"{http.url}/v1/sessions/{sid}/record", headers=auth(token), timeout=10)
    assert answer.status_code == 200, answer.text
    record = answer.json()
    SCHEMA.validate(record)  # every record the service serves is one of docs/record.schema.json
    return record



def play(http, sid, seats, receipts, until_version=None, stall=None):
    """Each person's seat plays its first legal action in turn (the bot moves by itself)
    until the game is over (or the session reaches ``until_version``); a seat named
    ``stall`` lets its first turn run out. Keeps each answer's receipt."""
    stalled = False
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        full = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(SERVICE_KEY), timeout=10).json()
        if full["view"]["status"] != "playing" or (until_version and full["version"] >= until_version):
            return full
        for player, token in seats.items():
            view = requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(token), timeout=10).json()["view"]
            if not view["legal_actions"]:
                continue
            if player == stall and not stalled:
                stalled = True
                time.sleep(2.5)  # the turn's 1 s runs out: the timekeeper moves for the seat
                break
            answer = requests.post(f"{http.url}/v1/sessions/{sid}/actions", headers=auth(token),
                                   json={"action": view["legal_actions"][0]}, timeout=10)
            if answer.status_code == 200:
                body = answer.json()
                receipts.append(f"{body['version']}:{body['chain_hash']}")
            break
    raise AssertionError("the game did not end in time")


@pytest.mark.rules("R-TURN-1", "R-SET-3")
def test_a_game_of_persons_a_bot_and_a_timer_verifies_with_its_receipts_and_the_service_key(servers, tmp_path):
    http, rpc, _ = servers
    made = requests.post(f"{http.url}/v1/sessions", json={
        "rules": {"edition": "2022"}, "players": ["ann", "bob", {"id": "cpu", "bot": {"kind": "heuristic"}}],
        "seed": 8, "turn_seconds": 1, "on_timeout": "draw", "timeouts_to_bot": 0}, timeout=10).json()
    sid, seats = made["session_id"], made["seats"]
    receipts = [f"1:{made['chain_hash']}"]
    play(http, sid, seats, receipts, until_version=12, stall="bob")

    # Mid-game: each seat's record hides what its view hides and still verifies its chain.
    full = record_of(http, sid, SERVICE_KEY)
    for viewer in ("ann", "bob"):
        mine = record_of(http, sid, seats[viewer])
        assert set(mine["header"]["initial_state"]) == {"hidden"}
        drawn = [e for v in mine["versions"] for e in v["events"] if e["type"] == "drew"]
        assert all("card" not in e for e in drawn if e["player"] != viewer)
        assert all("card" in e for e in drawn if e["player"] == viewer)
        assert any(e["player"] != viewer for e in drawn)  # there was something to hide
        for hidden in (e for e in drawn if "hidden" in e):  # salted: no card code gives its hash
            assert not any(digest({"type": "drew", "player": hidden["player"], "card": c}) == hidden["hidden"]
                           for c in CARD_CODES)
        shared = min(len(mine["versions"]), len(full["versions"]))
        assert [v["hash"] for v in mine["versions"][:shared]] == [v["hash"] for v in full["versions"][:shared]]
        code, out = run_verify(tmp_path, mine, "--key", RECORD_PUBLIC)
        assert code == 0 and "skipped: the record hides cards" in out, out
    with grpc.insecure_channel(rpc.url) as channel:
        got = pb_grpc.SessionServiceStub(channel).GetRecord(pb.GetRecordRequest(session_id=sid),
                                                            metadata=[("authorization", f"Bearer {seats['ann']}")])
    over_grpc = json.loads(got.record_json)
    mine = record_of(http, sid, seats["ann"])
    shared = min(len(mine["versions"]), len(over_grpc["versions"]))
    assert over_grpc["versions"][:shared] == mine["versions"][:shared]
    assert over_grpc["signature"]["public_key"] == RECORD_PUBLIC

    final = play(http, sid, seats, receipts)
    assert final["view"]["status"] == "over"
    record = record_of(http, sid, seats["bob"])  # a finished game's record is whole for every seat
    assert record == record_of(http, sid, SERVICE_KEY)
    makers = {v["by"] for v in record["versions"]}
    assert makers == {"service", "person", "bot", "timer"}, makers
    assert record["outcome"]["winners"] == final["view"]["winners"]
    key = requests.get(f"{http.url}/v1/records/key", timeout=5).json()
    assert key == {"algorithm": "ed25519", "public_key": RECORD_PUBLIC}
    args = ["--key", key["public_key"]] + [arg for r in receipts for arg in ("--receipt", r)]
    code, out = run_verify(tmp_path, record, *args)
    assert code == 0, out
    for check in ("format", "chain", "final hash", "signature", "replay", "outcome"):
        assert f"ok   {check}" in out, out
    assert out.count("ok   receipt") == len(receipts) >= 5

    # Every event read carries its version's chain hash, the record's.
    events = requests.get(f"{http.url}/v1/sessions/{sid}/events", headers=auth(seats["ann"]), timeout=10).json()
    hashes = {v["version"]: v["hash"] for v in record["versions"]}
    assert events["events"] and all(e["chain_hash"] == hashes[e["version"]] for e in events["events"])

    # A receipt the record does not hold fails; so does another service's key.
    version = int(receipts[-1].split(":")[0])
    code, out = run_verify(tmp_path, record, "--receipt", f"{version}:{'0' * 64}")
    assert code == 1 and f"FAIL receipt {version}" in out, out
    another = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"
    code, out = run_verify(tmp_path, record, "--key", another)
    assert code == 1 and "FAIL signature" in out, out


def _tampered(record, change):
    forged = copy.deepcopy(record)
    change(forged)
    return forged


def _rehash(record):
    """A forger's chain: every hash recomputed from the header on (what no signature covers)."""
    from engine.records import header_hash

    previous = header_hash(record["header"])
    for version in record["versions"]:
        version["hash"] = previous = version_hash(previous, version_meta(version), version["events"])
    record["final_hash"] = previous
    return record


def _first(record, kind):
    return next(e for v in record["versions"] for e in v["events"] if e["type"] == kind)


def _flip_card(record):
    played = _first(record, "played")
    played["card"] = "0" if played["card"] != "0" else "1"


def _change_action(record):
    version = next(v for v in record["versions"] if v["by"] == "person")
    version["actions"][0]["card"] = "0" if version["actions"][0].get("card") != "0" else "1"


def _swap(record):
    record["versions"][2], record["versions"][3] = record["versions"][3], record["versions"][2]


def _change_hash(record):
    record["versions"][4]["hash"] = "f" * 64


def _change_hand(record):
    hand = record["header"]["initial_state"]["players"][0]["hand"]
    hand[0] = "0" if hand[0] != "0" else "1"


@pytest.mark.parametrize(("change", "check"), [
    (_flip_card, "chain"), (_change_action, "chain"), (_swap, "chain"), (_change_hash, "chain"),
    (_change_hand, "chain"),
    (lambda r: _rehash(_flip_card(r) or r), "signature"), (lambda r: _rehash(_change_action(r) or r), "signature"),
], ids=["card", "action", "swap", "hash", "hand", "rehashed card", "rehashed action"])
def test_a_real_record_tampered_with_fails_the_check_that_catches_it(servers, tmp_path, change, check):
    http, _, _ = servers
    made = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "1980"}, "players": ["ann", "bob"],
                                                          "seed": 4}, timeout=10).json()
    play(http, made["session_id"], made["seats"], [])
    record = record_of(http, made["session_id"], SERVICE_KEY)
    assert run_verify(tmp_path, record, "--key", RECORD_PUBLIC)[0] == 0
    code, out = run_verify(tmp_path, _tampered(record, change), "--key", RECORD_PUBLIC)
    assert code == 1 and f"FAIL {check}" in out, out
    if check == "signature":  # signed again by a forger's own key, the forgery is still caught: by the replay
        forged = _tampered(record, change)
        forged["signature"] = sign(forged, FORGER)
        code, out = run_verify(tmp_path, forged)
        assert code == 1 and "FAIL replay" in out, out


def test_a_finished_games_record_outlives_the_sessions_idle_time_by_the_retention(servers):
    http, _, redis_url = servers
    store = redis.Redis.from_url(redis_url)
    made = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                          "seed": 6, "ttl_seconds": 60}, timeout=10).json()
    sid = made["session_id"]
    assert all(0 < store.pttl(key) <= 60_000 for key in keys(sid) if store.exists(key))
    play(http, sid, made["seats"], [])
    requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(made["seats"]["ann"]), timeout=10)  # a read slides it
    game, events, _, record = keys(sid)
    assert int(store.hget(game, "ttl")) == 60 + 600  # ONO99_RECORD_RETENTION
    for key in (game, events, record):
        assert 600_000 < store.pttl(key) <= 660_000, key
    assert record_of(http, sid, made["seats"]["bob"])["outcome"]["status"] == "over"


def test_a_record_is_read_only_with_a_token_of_its_session(servers):
    http, _, _ = servers
    one = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"]},
                        timeout=10).json()
    other = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"]},
                          timeout=10).json()
    url = f"{http.url}/v1/sessions/{one['session_id']}/record"
    assert requests.get(url, timeout=5).status_code == 401
    assert requests.get(url, headers=auth(other["seats"]["ann"]), timeout=5).json()["code"] == "unauthorized"
    assert requests.get(f"{http.url}/v1/sessions/nope/record", headers=auth(SERVICE_KEY), timeout=5).status_code == 404
    assert requests.get(f"{http.url}/v1/sessions/{'x' * 100}/record", headers=auth(SERVICE_KEY),
                        timeout=5).status_code == 404
