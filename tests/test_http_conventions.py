"""HTTP conventions integrators expect, against a real gunicorn: conditional requests
per RFC 9110 (If-Match 412, strong comparison, ``*``; If-None-Match 304) and the
``WWW-Authenticate`` challenge of a 401 (RFC 6750)."""

from __future__ import annotations

import pytest
import requests

from tests.conftest import SERVICE_KEY, start_http


@pytest.fixture(scope="module")
def http(throwaway_redis):
    server = start_http(throwaway_redis, workers=1, ONO99_CREATES_PER_MINUTE="0", ONO99_ACTIONS_PER_SECOND="0")
    yield server
    server.stop()


def _session(http):
    made = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                          "seed": 7}, timeout=10).json()
    return made["session_id"], made["seats"]


def _act(http, sid, token, card, **headers):
    return requests.post(f"{http.url}/v1/sessions/{sid}/actions", timeout=10,
                         headers={"Authorization": f"Bearer {token}", **headers},
                         json={"action": {"player": "ann", "type": "play", "card": card}})


def test_a_failing_if_match_is_412_and_expected_version_keeps_409(http):
    sid, seats = _session(http)
    stale = _act(http, sid, seats["ann"], "8", **{"If-Match": '"v5"'})
    assert stale.status_code == 412 and stale.headers["Content-Type"] == "application/problem+json"
    assert stale.json()["code"] == "precondition_failed" and stale.json()["current_version"] == 1
    body = requests.post(f"{http.url}/v1/sessions/{sid}/actions", headers={"Authorization": f"Bearer {seats['ann']}"},
                         json={"action": {"player": "ann", "type": "play", "card": "8"}, "expected_version": 5},
                         timeout=10)
    assert body.status_code == 409 and body.json()["code"] == "version_conflict"
    matched = _act(http, sid, seats["ann"], "8", **{"If-Match": '"v1"'})
    assert matched.status_code == 200 and matched.headers["ETag"] == '"v2"'


def test_if_match_compares_strongly_and_star_matches_any_version(http):
    sid, seats = _session(http)
    weak = _act(http, sid, seats["ann"], "8", **{"If-Match": 'W/"v1"'})
    assert weak.status_code == 412, weak.text  # the session is at v1, but a weak tag never matches
    assert _act(http, sid, seats["ann"], "8", **{"If-Match": "*"}).status_code == 200
    assert _act(http, "no-such-session", seats["ann"], "8", **{"If-Match": "*"}).status_code == 404
    for bad in ("v1 v2", '"v1", "v2"', "v1", '"v1', '""v1""', '"x1"'):
        refused = _act(http, sid, seats["ann"], "8", **{"If-Match": bad})
        assert refused.status_code == 400 and refused.json()["field"] == "If-Match", bad
    at = requests.get(f"{http.url}/v1/sessions/{sid}", headers={"Authorization": f"Bearer {seats['ann']}"},
                      timeout=10).json()["version"]
    # Compared as text, strongly: no tag but this API's own "vN" of the current version matches.
    for never in (f'"v0{at}"', f'"v{at:018d}"', '"v0"', f'W/"v{at}"'):
        refused = _act(http, sid, seats["ann"], "3", **{"If-Match": never})
        assert refused.status_code == 412 and refused.json()["current_version"] == at, never
    # The precondition is judged once the session is found and the caller known.
    assert _act(http, "no-such-session", seats["ann"], "3", **{"If-Match": 'W/"v1"'}).status_code == 404
    assert requests.post(f"{http.url}/v1/sessions/{sid}/actions", headers={"If-Match": 'W/"v1"'}, timeout=10,
                         json={"action": {"player": "ann", "type": "play", "card": "3"}}).status_code == 401


def test_if_none_match_answers_304_while_the_session_is_unchanged(http):
    sid, seats = _session(http)
    url, ann = f"{http.url}/v1/sessions/{sid}", {"Authorization": f"Bearer {seats['ann']}"}
    first = requests.get(url, headers=ann, timeout=10)
    assert first.status_code == 200 and first.headers["ETag"] == '"v1"'
    assert "Authorization" in first.headers["Vary"]
    for held in ('"v1"', 'W/"v1"', '"v0", "v1"', "*"):
        again = requests.get(url, headers={**ann, "If-None-Match": held}, timeout=10)
        assert again.status_code == 304 and again.content == b"" and again.headers["ETag"] == '"v1"', held
    assert _act(http, sid, seats["ann"], "8").status_code == 200
    changed = requests.get(url, headers={**ann, "If-None-Match": '"v1"'}, timeout=10)
    assert changed.status_code == 200 and changed.headers["ETag"] == '"v2"'
    service = requests.get(url, headers={"Authorization": f"Bearer {SERVICE_KEY}", "If-None-Match": '"v2"'},
                           timeout=10)
    assert service.status_code == 304


def test_a_401_names_the_bearer_scheme(http):
    sid, _ = _session(http)
    missing = requests.get(f"{http.url}/v1/sessions/{sid}", timeout=10)
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"] == 'Bearer realm="ono99"'
    wrong = requests.get(f"{http.url}/v1/sessions/{sid}", headers={"Authorization": "Bearer nope"}, timeout=10)
    assert wrong.status_code == 401
    assert wrong.headers["WWW-Authenticate"] == 'Bearer realm="ono99", error="invalid_token"'
    basic = requests.get(f"{http.url}/v1/sessions/{sid}", headers={"Authorization": "Basic YTpi"}, timeout=10)
    assert basic.status_code == 401 and basic.headers["WWW-Authenticate"] == 'Bearer realm="ono99"'
