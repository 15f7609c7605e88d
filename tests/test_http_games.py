"""The stateless HTTP endpoints (API.md): flows, problem documents, signing, limits."""

from __future__ import annotations

import pytest

from tests.conftest import make_settings

PROBLEM_KEYS = {"type", "title", "status", "code", "detail", "field", "rule", "reason", "errors",
                "current_version", "player"}


def problem(response, status, code):
    assert response.status_code == status, response.data
    assert response.mimetype == "application/problem+json"
    body = response.json
    assert body["code"] == code and body["status"] == status and set(body) <= PROBLEM_KEYS
    return body


def new_game(client, **body):
    body = {"rules": {"edition": "2022"}, "players": ["ann", "bob", "cy"], "seed": 5, **body}
    response = client.post("/v1/games", json=body)
    assert response.status_code == 201, response.data
    return response.json


@pytest.mark.rules("R-SET-1", "R-TURN-1")
def test_a_game_is_dealt_listed_applied_and_viewed(client):
    game = new_game(client)
    assert game["state_signature"] and len(game["state"]["players"]) == 3
    signed = {"state": game["state"], "state_signature": game["state_signature"]}
    actions = client.post("/v1/games/legal-actions", json=signed).json["actions"]
    assert actions and all(a["player"] == "ann" for a in actions)
    applied = client.post("/v1/games/apply", json={**signed, "action": actions[0]})
    assert applied.status_code == 200
    assert applied.json["events"][0]["type"] == "played" and applied.json["state"]["current"] == "bob"
    view = client.post("/v1/games/view", json={**signed, "player": "bob"}).json["view"]
    assert view["viewer"] == "bob" and view["players"][0]["hand"] is None and "draw_pile" not in view


def test_same_seed_gives_the_same_game_and_explicit_decks_deal_in_order(client):
    assert new_game(client)["state"] == new_game(client)["state"]
    deck = ["1", "2", "3", "4", "5", "6", "7", "8", "9"]
    dealt = new_game(client, players=["a", "b"], seed=None, deck=deck)["state"]
    assert dealt["players"][0]["hand"] == ["1", "3", "5", "7"] and dealt["draw_pile"] == ["9"]


@pytest.mark.rules("R-TURN-2")
def test_illegal_actions_answer_422_with_rule_and_reason(client):
    game = new_game(client)
    body = {"state": game["state"], "state_signature": game["state_signature"]}
    hand = game["state"]["players"][1]["hand"]
    p = problem(client.post("/v1/games/apply", json={**body, "action": {"player": "bob", "type": "play",
                                                                          "card": hand[0]}}), 422, "illegal_action")
    assert (p["rule"], p["reason"]) == ("R-TURN-1", "not_your_turn")


@pytest.mark.parametrize(("body", "words"), [
    ({"rules": {"edition": "2022"}, "players": ["ann"]}, "players"),
    ({"rules": {"edition": "1999"}, "players": ["a", "b"]}, "rules.edition"),
    ({"rules": {"edition": "2022", "limit": True}, "players": ["a", "b"]}, "rules.limit"),
    ({"rules": {"edition": "2022"}, "players": ["a", "b"], "colour": "red"}, "colour"),
    ({"rules": {"edition": "2022"}, "players": ["a", "b"], "seed": 1.5}, "seed"),
    ({"rules": {"edition": "2022"}, "players": ["a", "b"], "deck": ["x"]}, "deck"),
    ({"rules": {"edition": "2022"}, "players": ["a", "a"]}, "unique"),
])
def test_bad_game_requests_are_400_invalid_request(client, body, words):
    p = problem(client.post("/v1/games", json=body), 400, "invalid_request")
    assert words in p["detail"] + str(p.get("field", "")) + str(p.get("errors", ""))


def test_malformed_json_unknown_fields_and_bad_states_are_400(client):
    problem(client.post("/v1/games/apply", data=b'{"state":', content_type="application/json"),
            400, "invalid_request")
    game = new_game(client)
    state = dict(game["state"], total=150)
    p = problem(client.post("/v1/games/legal-actions", json={"state": state,
                                                             "state_signature": game["state_signature"]}),
                400, "invalid_request")
    assert "state.total" in p["detail"]
    problem(client.post("/v1/games/apply", json={"state": game["state"], "action": {"player": "ann",
                                                                                   "type": "fly"}}),
            400, "invalid_request")


def test_signed_mode_refuses_missing_and_tampered_signatures(client):
    game = new_game(client)
    p = problem(client.post("/v1/games/legal-actions", json={"state": game["state"]}), 400, "invalid_request")
    assert p["reason"] == "signature_missing"
    tampered = game["state"]
    tampered["players"][0]["hand"], tampered["players"][1]["hand"] = (tampered["players"][1]["hand"],
                                                                      tampered["players"][0]["hand"])
    p = problem(client.post("/v1/games/legal-actions", json={"state": tampered,
                                                             "state_signature": game["state_signature"]}),
                400, "invalid_request")
    assert p["reason"] == "signature_invalid"


def test_key_order_on_the_wire_does_not_break_a_signature(client):
    game = new_game(client)
    reordered = dict(reversed(list(game["state"].items())))
    response = client.post("/v1/games/legal-actions", json={"state": reordered,
                                                            "state_signature": game["state_signature"]})
    assert response.status_code == 200


def test_unsigned_mode_accepts_states_without_signature(redis_url):
    from service.http_api import create_app

    client = create_app(make_settings(redis_url, state_secret=None), warn_unsigned=False).test_client()
    game = new_game(client)
    assert game["state_signature"] is None
    assert client.post("/v1/games/legal-actions", json={"state": game["state"]}).status_code == 200


def test_body_size_limit_is_413(redis_url):
    from service.http_api import create_app

    client = create_app(make_settings(redis_url, max_body_bytes=2000), warn_unsigned=False).test_client()
    p = problem(client.post("/v1/games", json={"rules": {"edition": "2022"}, "players": ["a", "b"],
                                               "deck": ["1"] * 1000}), 413, "too_large")
    assert "size" in p["detail"]


def test_unknown_routes_and_methods_are_problems(client):
    problem(client.get("/v1/nothing"), 404, "not_found")
    problem(client.get("/v1/games/apply"), 405, "method_not_allowed")


def test_rules_endpoint_lists_presets_and_options(client):
    body = client.get("/v1/rules").json
    assert set(body["presets"]) == {"2022", "1980"} and body["presets"]["1980"]["ono99_swap"] is False
    assert {o["name"] for o in body["options"]} >= {"limit", "draw", "scoring", "ono99_on_zero"}


def test_openapi_document_and_health(client):
    spec = client.get("/openapi.json").json
    assert spec["openapi"].startswith("3.1")
    assert {"/v1/games", "/v1/games/apply", "/v1/sessions/{session_id}/actions"} <= set(spec["paths"])
    assert "StateDoc" in spec["components"]["schemas"]
    assert client.get("/healthz").json == {"status": "ok"}
    assert client.get("/readyz").status_code == 200
    assert client.get("/docs").status_code == 200
