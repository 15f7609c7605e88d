"""Fair sessions against real servers (gunicorn, gRPC, three timekeepers, Valkey): the
service commits to a secret, the seats send seeds, the deal comes from both; nothing
before game over carries the secret; the record then verifies with the commitment
recomputed here; refused seeds get their 4xx; the deal at ``seed_seconds`` lands once
with three timekeepers; a deleted session's record reveals its secret."""

from __future__ import annotations

import copy
import hashlib
import json
import time

import grpc
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jsonschema import Draft202012Validator

from engine import new_game
from engine.fairness import master_key
from engine.records import RECORD_SCHEMA, sign
from engine.shuffle import fair_seed
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from tests.conftest import SERVICE_KEY, auth, run_verify, start_grpc, start_http, start_timekeeper

pytestmark = pytest.mark.slow
ENV = {"ONO99_CREATES_PER_MINUTE": "0", "ONO99_ACTIONS_PER_SECOND": "0",
       "ONO99_RECORD_KEY": "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"}
FORGER = Ed25519PrivateKey.generate()
SEED_ANN, SEED_BOB = "a1" * 16, "B2" * 32  # 16 and 64 bytes; either case is taken


@pytest.fixture(scope="module")
def servers():
    from service.embedded_redis import start_embedded

    store = start_embedded()
    http = start_http(store.connection_url, workers=1, **ENV)
    rpc = start_grpc(store.connection_url, **ENV)
    keepers = [start_timekeeper(store.connection_url, **ENV) for _ in range(3)]
    yield http, rpc, keepers
    for keeper in keepers:
        keeper.stop()
    rpc.stop()
    http.stop()
    store.stop()



def create(http, **body):
    answer = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"}, "fair": True, **body},
                           timeout=10)
    assert answer.status_code == 201, answer.text
    return answer.json()


def seed(http, sid, token, value):
    return requests.post(f"{http.url}/v1/sessions/{sid}/seed", json={"seed": value}, headers=auth(token), timeout=10)



@pytest.mark.rules("R-RNG-1", "R-SET-3")
def test_a_fair_game_of_persons_and_a_bot_deals_from_the_seeds_and_verifies_after_it(servers, tmp_path):
    http, _, _ = servers
    heard: list[str] = []  # every answer's text until game over: none may hold the secret

    def get(url, token):
        answer = requests.get(f"{http.url}{url}", headers=auth(token), timeout=10)
        heard.append(answer.text)
        return answer

    made = create(http, players=["ann", "bob", {"id": "cpu", "bot": {"kind": "heuristic"}}], seed_seconds=120)
    heard.append(json.dumps(made))
    sid, seats = made["session_id"], made["seats"]
    fair = made["view"]["fairness"]
    assert made["view"]["status"] == "seeding" and made["events"] == []
    assert fair["algorithm"] == "ono99-fair-1" and len(fair["commitment"]) == 64
    assert fair["seeds"] == {"ann": None, "bob": None, "cpu": None} and fair["secret"] is None
    assert all(p["hand"] is None for p in made["view"]["players"]) and made["view"]["legal_actions"] == []
    assert made["view"]["deadline_ms"] > time.time() * 1000 + 100_000  # the seeding's end

    # Before the deal: no cards, no actions, no hints; the state read with the service key is none.
    view = get(f"/v1/sessions/{sid}", seats["ann"]).json()["view"]
    assert view["status"] == "seeding" and all(p["hand"] is None for p in view["players"])
    assert "state" not in get(f"/v1/sessions/{sid}", SERVICE_KEY).json()
    acted = requests.post(f"{http.url}/v1/sessions/{sid}/actions", headers=auth(seats["ann"]), timeout=10,
                          json={"action": {"player": "ann", "type": "play", "card": "5"}})
    assert acted.status_code == 409 and acted.json()["code"] == "not_dealt"
    hint = requests.post(f"{http.url}/v1/sessions/{sid}/suggest", headers=auth(seats["ann"]), timeout=10,
                         json={"bot": {"kind": "heuristic"}})
    assert hint.status_code == 409 and hint.json()["code"] == "not_dealt"

    # Seeds: malformed ones, the service key's and a second one from a seat are refused.
    for bad in ("ab" * 15, "ab" * 65, "zz" * 16, "abc" * 11, 12345, None, " " * 32, "00 " * 12, "0x" + "ab" * 15):
        answer = seed(http, sid, seats["ann"], bad)
        assert answer.status_code == 400 and answer.json()["code"] == "invalid_request", (bad, answer.text)
    assert seed(http, sid, SERVICE_KEY, SEED_ANN).status_code == 403
    first = seed(http, sid, seats["ann"], SEED_ANN)
    assert first.status_code == 200, first.text
    heard.append(first.text)
    assert first.json()["view"]["status"] == "seeding" and first.json()["view"]["fairness"]["seeds"]["ann"] == SEED_ANN
    assert first.json()["events"] == [{"type": "seed_sent", "player": "ann", "seed": SEED_ANN, "version": 2,
                                       "chain_hash": first.json()["chain_hash"]}]
    again = seed(http, sid, seats["ann"], SEED_ANN)
    assert again.status_code == 409 and again.json()["code"] == "seed_refused" and again.json()["reason"] == "sent"

    # The last person's seed deals the game: its version, then the deal's.
    dealt = seed(http, sid, seats["bob"], SEED_BOB)
    assert dealt.status_code == 200, dealt.text
    heard.append(dealt.text)
    body = dealt.json()
    assert [e["type"] for e in body["events"]][:2] == ["seed_sent", "dealt"]  # the deal is a version of its own
    assert body["view"]["status"] == "playing" and body["view"]["fairness"]["seeds"]["bob"] == SEED_BOB.lower()
    assert body["view"]["players"][1]["hand"] and body["view"]["players"][0]["hand"] is None
    late = seed(http, sid, seats["ann"], SEED_ANN)
    assert late.status_code == 409 and late.json()["reason"] == "dealt"
    full = get(f"/v1/sessions/{sid}", SERVICE_KEY).json()
    assert full["state"]["seed"] == "hidden-until-the-game-is-over"  # the master key stays the service's

    # Play to the end; the answers and records heard meanwhile hold no secret.
    deadline = time.monotonic() + 120
    while full["view"]["status"] == "playing":
        assert time.monotonic() < deadline
        for player in ("ann", "bob"):
            mine = get(f"/v1/sessions/{sid}", seats[player]).json()["view"]
            if mine["legal_actions"]:
                answer = requests.post(f"{http.url}/v1/sessions/{sid}/actions", headers=auth(seats[player]),
                                       json={"action": mine["legal_actions"][0]}, timeout=10)
                heard.append(answer.text)
        get(f"/v1/sessions/{sid}/record", seats["ann"])
        get(f"/v1/sessions/{sid}/record", SERVICE_KEY)
        get(f"/v1/sessions/{sid}/events", SERVICE_KEY)
        full = get(f"/v1/sessions/{sid}", SERVICE_KEY).json()

    revealed = full["view"]["fairness"]["secret"]
    assert revealed and hashlib.sha256(bytes.fromhex(revealed)).hexdigest() == fair["commitment"]
    key = master_key(bytes.fromhex(revealed), [bytes.fromhex(SEED_ANN), bytes.fromhex(SEED_BOB), None])
    told = [text for text in heard if revealed in text or key.hex() in text]
    assert told and all('"status":"over"' in text or '"game_over"' in text for text in told)  # only after it
    assert full["state"]["seed"] == fair_seed(key)  # shown once the game is over
    logs = http.log.read_text()
    assert revealed not in logs and key.hex() not in logs

    log = requests.get(f"{http.url}/v1/sessions/{sid}/events", headers=auth(seats["ann"]), timeout=10).json()
    shown = [e for e in log["events"] if e["type"] == "secret_revealed"]
    assert [e["secret"] for e in shown] == [revealed] and shown[0]["version"] == full["version"]
    record = requests.get(f"{http.url}/v1/sessions/{sid}/record", headers=auth(seats["bob"]), timeout=10).json()
    Draft202012Validator(RECORD_SCHEMA).validate(record)
    assert record["fairness"]["secret"] == revealed and record["header"]["initial_state"] is None
    deal = next(v for v in record["versions"] if v["actions"] == [{"type": "deal"}])
    assert deal["by"] == "service"  # the last person's seed dealt it: a version of the service's
    expected, _ = new_game({"edition": "2022"}, ["ann", "bob", "cpu"], seed=fair_seed(key))  # the deal, by hand
    first_hand = next(e for v in record["versions"] for e in v["events"] if e["type"] == "played")
    assert first_hand["card"] in expected.players[0].hand
    code, out = run_verify(tmp_path, record, "--key", requests.get(f"{http.url}/v1/records/key", timeout=5).json()[
        "public_key"])
    assert code == 0, out
    for check in ("commitment", "seeds", "replay", "outcome", "signature"):
        assert f"ok   {check}" in out, out

    # Each tampering with the fairness part is caught: by the service's signature, which
    # covers the fairness block, and when a forger signs again with its own key, by the
    # check of the part.
    for change, check in [(lambda r: r["fairness"].update(secret="00" * 32), "commitment"),
                          (lambda r: r["fairness"].update(secret=None), "commitment"),
                          (lambda r: r["fairness"]["seeds"].update(ann="cd" * 16), "seeds"),
                          (lambda r: r["header"]["fairness"].update(commitment="ee" * 32), "chain"),
                          (lambda r: next(e for v in r["versions"] for e in v["events"]
                                          if e["type"] == "seed_sent").update(seed="cd" * 16), "chain")]:
        forged = copy.deepcopy(record)
        change(forged)
        code, out = run_verify(tmp_path, forged)
        assert code == 1 and f"FAIL {'signature' if check != 'chain' else check}" in out, out
        forged["signature"] = sign(forged, FORGER)
        code, out = run_verify(tmp_path, forged)
        assert code == 1 and f"FAIL {check}" in out, out


def test_seeds_of_a_stranger_an_unfair_session_and_bad_creations_are_refused(servers):
    http, _, _ = servers
    made = create(http, players=["ann", "bob"])
    other = create(http, players=["ann", "bob"])
    assert seed(http, made["session_id"], other["seats"]["ann"], SEED_ANN).status_code == 401
    assert seed(http, made["session_id"], None, SEED_ANN).status_code == 401
    assert seed(http, "no-such-session", made["seats"]["ann"], SEED_ANN).status_code == 404
    unfair = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["a", "b"]},
                           timeout=10).json()
    refused = seed(http, unfair["session_id"], unfair["seats"]["a"], SEED_ANN)
    assert refused.status_code == 409 and refused.json()["reason"] == "not_fair"
    assert "fairness" not in unfair["view"] or unfair["view"]["fairness"] is None
    for body, field in [({"seed": 7}, "seed"), ({"deck": ["5"] * 20}, "deck"), ({"seed_seconds": 0}, "seed_seconds"),
                        ({"seed_seconds": 601}, "seed_seconds"), ({"fair": "yes"}, "fair"),
                        ({"fair": False, "seed_seconds": 5}, "seed_seconds")]:
        answer = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["a", "b"],
                                                                "fair": True, **body}, timeout=10)
        assert answer.status_code == 400 and answer.json()["field"] == field, (body, answer.text)


def test_the_deal_at_seed_seconds_lands_once_with_three_timekeepers(servers):
    http, _, keepers = servers
    made = [create(http, players=["ann", "bob", {"id": "cpu", "bot": {"kind": "random"}}], seed_seconds=1)
            for _ in range(4)]
    assert seed(http, made[0]["session_id"], made[0]["seats"]["ann"], SEED_ANN).status_code == 200
    deadline = time.monotonic() + 30
    for one in made:
        while True:
            view = requests.get(f"{http.url}/v1/sessions/{one['session_id']}", headers=auth(SERVICE_KEY),
                                timeout=10).json()["view"]
            if view["status"] != "seeding":
                break
            assert time.monotonic() < deadline, "no timekeeper dealt"
            time.sleep(0.1)
        record = requests.get(f"{http.url}/v1/sessions/{one['session_id']}/record", headers=auth(SERVICE_KEY),
                              timeout=10).json()
        deals = [v for v in record["versions"] if {"type": "deal"} in v["actions"]]
        assert len(deals) == 1 and deals[0]["by"] == "timer", deals
    assert made[0] and requests.get(f"{http.url}/v1/sessions/{made[0]['session_id']}", headers=auth(SERVICE_KEY),
                                    timeout=10).json()["view"]["fairness"]["seeds"] == {
        "ann": SEED_ANN, "bob": None, "cpu": None}  # a missing seed is recorded as missing
    assert all(k.proc.poll() is None for k in keepers)


def test_a_deleted_fair_session_reveals_its_secret_in_its_record(servers, tmp_path):
    http, _, _ = servers
    made = create(http, players=["ann", "bob"])
    sid = made["session_id"]
    assert seed(http, sid, made["seats"]["ann"], SEED_ANN).status_code == 200
    assert requests.delete(f"{http.url}/v1/sessions/{sid}", headers=auth(made["seats"]["bob"]),
                           timeout=10).status_code == 204
    assert requests.get(f"{http.url}/v1/sessions/{sid}", headers=auth(SERVICE_KEY), timeout=10).status_code == 404
    record = requests.get(f"{http.url}/v1/sessions/{sid}/record", headers=auth(made["seats"]["ann"]), timeout=10)
    assert record.status_code == 200, record.text
    secret = record.json()["fairness"]["secret"]
    assert hashlib.sha256(bytes.fromhex(secret)).hexdigest() == made["view"]["fairness"]["commitment"]
    code, out = run_verify(tmp_path, record.json())
    assert code == 0 and "ok   outcome: never dealt" in out, out


def test_a_fair_session_over_grpc_seeds_deals_and_gives_its_record(servers):
    _, rpc, _ = servers
    with grpc.insecure_channel(rpc.url) as channel:
        sessions = pb_grpc.SessionServiceStub(channel)
        made = sessions.CreateSession(pb.CreateSessionRequest(
            game=pb.NewGameRequest(rules=pb.Rules(edition="1980"), players=["ann", "bob"]), fair=True,
            seed_seconds=60), timeout=10)
        assert made.view.status == pb.GAME_STATUS_SEEDING and len(made.view.fairness.commitment) == 64
        ann, bob = ([("authorization", f"Bearer {made.seats[p]}")] for p in ("ann", "bob"))
        with pytest.raises(grpc.RpcError) as refused:
            sessions.SendSeed(pb.SendSeedRequest(session_id=made.session_id, seed="xy"), metadata=ann, timeout=10)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as early:
            draw = pb.Action(player="ann", type=pb.ACTION_TYPE_DRAW)
            sessions.Act(pb.ActRequest(session_id=made.session_id, action=draw),
                         metadata=ann, timeout=10)
        assert early.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        sent = sessions.SendSeed(pb.SendSeedRequest(session_id=made.session_id, seed=SEED_ANN), metadata=ann,
                                 timeout=10)
        assert sent.version == 2 and sent.view.fairness.seeds["ann"] == SEED_ANN and sent.chain_hash
        with pytest.raises(grpc.RpcError) as twice:
            sessions.SendSeed(pb.SendSeedRequest(session_id=made.session_id, seed=SEED_ANN), metadata=ann,
                              timeout=10)
        assert twice.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        dealt = sessions.SendSeed(pb.SendSeedRequest(session_id=made.session_id, seed=SEED_BOB), metadata=bob,
                                  timeout=10)
        assert dealt.view.status == pb.GAME_STATUS_PLAYING and not dealt.view.fairness.secret
        record = json.loads(sessions.GetRecord(pb.GetRecordRequest(session_id=made.session_id), metadata=bob,
                                               timeout=10).record_json)
        assert record["fairness"]["secret"] is None and record["versions"][-1]["hash"] == dealt.chain_hash
