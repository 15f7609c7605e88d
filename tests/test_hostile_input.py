"""Malformed input from a hostile client, against real HTTP and gRPC servers.

Whatever a client sends, it gets the documented 4xx / gRPC status, never a 5xx nor a
status the transport makes up: deeply nested JSON, versions past any int64, strings and
floats where integers belong, chunked bodies past ONO99_MAX_BODY_BYTES, huge session
ids, signatures with extra characters. Reads of events renew a session's time to live,
as every other read does.
"""

from __future__ import annotations

import json
import socket
import struct
import time

import grpc
import pytest
import redis
import requests
from grpc_status import rpc_status

from engine import decode_state, legal_actions
from service.grpc_api import convert
from service.grpc_api.gen import ono99_pb2 as pb
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc
from service.store import keys
from tests.conftest import SERVICE_KEY, start_grpc, start_http

MAX_BODY = 256 * 1024  # ONO99_MAX_BODY_BYTES' default
KEY = [("authorization", f"Bearer {SERVICE_KEY}")]


@pytest.fixture(scope="module")
def servers(throwaway_redis):
    # No creation limit: the refused bodies sent to POST /v1/sessions here count against it
    # (docs/SECURITY.md), and this module is about what a refusal says, not how many there are.
    http, rpc = start_http(throwaway_redis, ONO99_CREATES_PER_MINUTE="0"), start_grpc(throwaway_redis)
    channel = grpc.insecure_channel(rpc.url, options=[("grpc.max_send_message_length", 4 * MAX_BODY)])
    yield http, channel, throwaway_redis
    channel.close()
    rpc.stop()
    http.stop()


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _session(http, **extra) -> dict:
    made = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                          "seed": 3, **extra}, timeout=5)
    assert made.status_code == 201, made.text
    return made.json()


def _first_action(http, sid: str) -> dict:
    state = decode_state(requests.get(f"{http.url}/v1/sessions/{sid}", headers=_auth(SERVICE_KEY),
                                      timeout=5).json()["state"])
    a = legal_actions(state)[0]
    return {"player": a.player, "type": a.type, **({"card": a.card} if a.card else {})}


def _info(exc: grpc.RpcError) -> dict[str, str]:
    from google.rpc import error_details_pb2

    status = rpc_status.from_call(exc)
    assert status is not None, (exc.code(), exc.details())
    info = error_details_pb2.ErrorInfo()
    status.details[0].Unpack(info)
    return {"reason": info.reason, **info.metadata}


# --- (a) deeply nested JSON ------------------------------------------------------------------

def _nested_arrays(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _nested_objects(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


@pytest.mark.parametrize("body", [
    _nested_arrays(100_000),
    _nested_objects(40_000),
    b'{"rules": ' + _nested_arrays(100_000) + b', "players": ["ann", "bob"]}',
    b'{"rules": {"edition": "2022", "deck": {"7": ' + _nested_arrays(5_000) + b'}}, "players": ["ann", "bob"]}',
    b'{"rules": {"edition": "2022", "deck": {"7": ' + _nested_arrays(900) + b'}}, "players": ["ann", "bob"]}',
    b'{"rules": {"edition": "2022", "x": ' + _nested_objects(990) + b'}, "players": ["ann", "bob"]}',
], ids=["arrays-100000", "objects-40000", "rules-arrays-100000", "deck-arrays-5000", "deck-arrays-900",
        "rules-objects-990"])
@pytest.mark.parametrize("path", ["/v1/games", "/v1/sessions", "/v1/games/apply", "/v1/games/view"])
def test_deeply_nested_json_is_400_not_500(servers, path, body):
    http, _, _ = servers
    assert len(body) <= MAX_BODY
    answer = requests.post(f"{http.url}{path}", data=body, headers={"Content-Type": "application/json"}, timeout=10)
    assert answer.status_code == 400, answer.text[:300]
    assert answer.json()["code"] == "invalid_request"


def test_deeply_nested_json_in_a_session_action_is_400(servers):
    http, _, _ = servers
    s = _session(http)
    for body in (_nested_arrays(100_000), b'{"action": ' + _nested_objects(40_000) + b"}"):
        answer = requests.post(f"{http.url}/v1/sessions/{s['session_id']}/actions", data=body,
                               headers={**_auth(s["seats"]["ann"]), "Content-Type": "application/json"}, timeout=10)
        assert answer.status_code == 400, answer.text[:300]


def test_bodies_built_to_slow_the_nesting_check_are_answered_at_once_and_stall_nothing(servers):
    """Brackets, then an unclosed string of escaped quotes (or 130,000 balanced brackets):
    the nesting check is linear in the body, so two such bodies at once leave /healthz
    answering (a check that backtracked held both workers past their timeout)."""
    import threading

    http, _, _ = servers
    bodies = [b"[" * 33 + b'"' + b'\\"' * 130_000, b"[]" * 130_000]
    assert all(len(b) <= MAX_BODY for b in bodies)
    answers: list[tuple[int, float]] = []

    def send(body: bytes) -> None:
        started = time.monotonic()
        got = requests.post(f"{http.url}/v1/games", data=body, headers={"Content-Type": "application/json"},
                            timeout=30)
        answers.append((got.status_code, time.monotonic() - started))

    senders = [threading.Thread(target=send, args=(b,)) for b in bodies]
    for t in senders:
        t.start()
    health = requests.get(f"{http.url}/healthz", timeout=5)
    for t in senders:
        t.join()
    assert health.status_code == 200
    assert [code for code, _ in answers] == [400, 400] and max(s for _, s in answers) < 2


# --- (b) event versions past any int64 over gRPC -----------------------------------------------

@pytest.mark.parametrize("after", [2**31, 10**9 + 1, 2**63 - 1, 2**63, 2**64 - 1])
def test_grpc_events_after_a_version_out_of_range_are_invalid_argument(servers, after):
    http, channel, _ = servers
    s = _session(http)
    sessions = pb_grpc.SessionServiceStub(channel)
    with pytest.raises(grpc.RpcError) as listed:
        sessions.ListEvents(pb.ListEventsRequest(session_id=s["session_id"], after_version=after),
                            metadata=KEY, timeout=5)
    assert listed.value.code() == grpc.StatusCode.INVALID_ARGUMENT, listed.value.details()
    assert _info(listed.value)["field"] == "after_version"
    watch = sessions.WatchEvents(pb.WatchEventsRequest(session_id=s["session_id"], after_version=after),
                                 metadata=KEY, timeout=5)
    with pytest.raises(grpc.RpcError) as watched:
        next(iter(watch))
    assert watched.value.code() == grpc.StatusCode.INVALID_ARGUMENT, watched.value.details()


@pytest.mark.parametrize("after", ["\uff11", "1_0", " 1", "+1", "1.0", "", str(10**9 + 1),
                                   "0", "007", str(10**9)])
def test_http_events_after_takes_ascii_digits_within_range_only(servers, after):
    http, _, _ = servers
    s = _session(http)
    answer = requests.get(f"{http.url}/v1/sessions/{s['session_id']}/events", params={"after": after},
                          headers=_auth(s["seats"]["ann"]), timeout=5)
    if after.isascii() and after.isdigit() and int(after) <= 10**9:
        assert answer.status_code == 200, answer.text[:300]
        plain = requests.get(f"{http.url}/v1/sessions/{s['session_id']}/events", params={"after": int(after)},
                             headers=_auth(s["seats"]["ann"]), timeout=5)
        assert answer.json() == plain.json()  # "007" reads as 7
    else:
        assert answer.status_code == 400, answer.text[:300]
        assert answer.json()["field"] == "query.after"  # as every query field is named


@pytest.mark.parametrize("method", ["GameService/NewGame", "GameService/Apply", "SessionService/CreateSession",
                                    "SessionService/Act", "SessionService/WatchEvents"])
def test_grpc_bytes_that_are_no_message_are_invalid_argument(servers, method):
    # grpc.aio answered UNKNOWN, with the protobuf parser's own words, for bytes its
    # deserializer could not read.
    _, channel, _ = servers
    open_call = channel.unary_stream if method.endswith("WatchEvents") else channel.unary_unary
    call = open_call(f"/ono99.v1.{method}")
    with pytest.raises(grpc.RpcError) as refused:
        answer = call(b"\xff\xff\xff\xff", metadata=KEY, timeout=5)
        if method.endswith("WatchEvents"):
            next(answer)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refused.value.details()
    assert _info(refused.value)["reason"] == "invalid_request"
    assert "is not a valid ono99.v1." in refused.value.details()


def test_grpc_events_after_the_last_version_within_range_are_empty(servers):
    http, channel, _ = servers
    s = _session(http)
    listed = pb_grpc.SessionServiceStub(channel).ListEvents(
        pb.ListEventsRequest(session_id=s["session_id"], after_version=10**9), metadata=KEY, timeout=5)
    assert list(listed.events) == []


# --- (c) wrong types where integers belong -----------------------------------------------------

@pytest.mark.parametrize("value", ["1", 1.5, 1.0, 1e308, True, [1], {"v": 1}])
def test_expected_version_of_the_wrong_type_is_400(servers, value):
    http, _, _ = servers
    s = _session(http)
    sid = s["session_id"]
    answer = requests.post(f"{http.url}/v1/sessions/{sid}/actions", headers=_auth(SERVICE_KEY),
                           json={"action": _first_action(http, sid), "expected_version": value}, timeout=5)
    assert answer.status_code == 400, answer.text[:300]
    assert "expected_version" in answer.json()["errors"]["json"]
    # Nothing was applied.
    assert requests.get(f"{http.url}/v1/sessions/{sid}", headers=_auth(SERVICE_KEY), timeout=5).json()["version"] == 1


@pytest.mark.parametrize("value", ["3600", 3600.0, 3600.5, True, 1e308])
def test_ttl_seconds_of_the_wrong_type_is_400(servers, value):
    http, _, _ = servers
    answer = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                            "ttl_seconds": value}, timeout=5)
    assert answer.status_code == 400, answer.text[:300]
    assert "ttl_seconds" in answer.json()["errors"]["json"]


def test_integers_of_the_right_type_still_work(servers):
    http, _, _ = servers
    s = _session(http, ttl_seconds=3600)
    sid = s["session_id"]
    answer = requests.post(f"{http.url}/v1/sessions/{sid}/actions", headers=_auth(SERVICE_KEY),
                           json={"action": _first_action(http, sid), "expected_version": 1}, timeout=5)
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("header", ['"v\u00b2"', '"v' + "9" * 5000 + '"', '"v-1"', '"v1.0"', "v"])
def test_if_match_that_is_no_etag_of_this_api_is_400(servers, header):
    http, _, _ = servers
    s = _session(http)
    sid = s["session_id"]
    answer = requests.post(f"{http.url}/v1/sessions/{sid}/actions",
                           headers={**_auth(SERVICE_KEY), "If-Match": header.encode("latin-1")},
                           json={"action": _first_action(http, sid)}, timeout=5)
    assert answer.status_code == 400, answer.text[:300]
    assert answer.json()["field"] == "If-Match"


# --- (d) chunked bodies past the size limit --------------------------------------------------------

def _chunked(http, path: str, body: bytes, chunk: int = 16 * 1024) -> tuple[int, bytes]:
    """POST ``body`` with Transfer-Encoding: chunked (no Content-Length) over a raw socket."""
    with socket.create_connection(("127.0.0.1", http.port), timeout=10) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode())
        try:
            for start in range(0, len(body), chunk):
                part = body[start:start + chunk]
                sock.sendall(b"%x\r\n%s\r\n" % (len(part), part))
            sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server may answer and close before it has read everything
        return _status(_reply(sock))


def _reply(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (or resets it)."""
    reply = b""
    while True:
        try:
            data = sock.recv(65536)
        except OSError:
            break
        if not data:
            break
        reply += data
    return reply


def _status(reply: bytes) -> tuple[int, bytes]:
    """An HTTP answer's status and body."""
    head, _, rest = reply.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), rest


def _pad(body: bytes, size: int) -> bytes:
    """A JSON object's text padded with spaces to exactly ``size`` bytes."""
    return body[:-1] + b" " * (size - len(body)) + b"}"


def _padded(size: int) -> bytes:
    """A valid new-game body of exactly ``size`` bytes."""
    return _pad(b'{"rules": {"edition": "2022"}, "players": ["ann", "bob"], "seed": 1}', size)


@pytest.mark.parametrize("size", [MAX_BODY + 1, MAX_BODY + 64 * 1024, 4 * MAX_BODY])
def test_chunked_body_over_the_limit_is_413(servers, size):
    http, _, _ = servers
    status, body = _chunked(http, "/v1/games", _padded(size))
    assert status == 413, body[:300]
    assert b"too_large" in body


def test_chunked_body_at_the_limit_is_served(servers):
    http, _, _ = servers
    for size in (1000, MAX_BODY):
        status, body = _chunked(http, "/v1/games", _padded(size))
        assert status == 201, body[:300]


# A chunked body whose framing is malformed: 400, not 500 (the server's parse error of the
# body used to reach the app's handler of unexpected errors).
_BODY = b'{"rules": {"edition": "2022"}, "players": ["ann", "bob"], "seed": 1}'


@pytest.mark.parametrize("framing", [
    b"zz\r\n" + _BODY + b"\r\n0\r\n\r\n",                                   # a size that is no hex number
    b"-1\r\n" + _BODY + b"\r\n0\r\n\r\n",                                   # a negative size
    b"%x\r\n" % len(_BODY) + _BODY + b"XX0\r\n\r\n",                          # no line end after the chunk
    b"%x\r\n" % len(_BODY) + _BODY + b"\r\n0\r\nbad trailer\r\n\r\n",       # a trailer that is no header
], ids=["not-hex", "negative", "no-line-end", "bad-trailer"])
@pytest.mark.parametrize("path", ["/v1/games", "/v1/games/apply", "/v1/sessions"])
def test_malformed_chunked_body_is_400(servers, framing, path):
    http, _, _ = servers
    with socket.create_connection(("127.0.0.1", http.port), timeout=10) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode() + framing)
        status, body = _status(_reply(sock))
    assert status == 400, body[:300]
    assert json.loads(body)["code"] == "invalid_request", body[:300]
    assert requests.get(f"{http.url}/healthz", timeout=5).status_code == 200


# A body with a Content-Length is read in one read of that length (service/http_api/parser.py,
# _body); a chunked one through werkzeug: the same limit holds for both.

def _padded_apply(http, size: int, path: str = "/v1/games/apply") -> bytes:
    """A valid body of exactly ``size`` bytes (padded with spaces) for a stateless apply,
    or for ``path`` another stateless route's (its state alone)."""
    game = requests.post(f"{http.url}/v1/games", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                      "seed": 1}, timeout=5).json()
    signed = {"state": game["state"], "state_signature": game["state_signature"]}
    if path == "/v1/games/apply":
        signed["action"] = requests.post(f"{http.url}/v1/games/legal-actions", json=signed,
                                         timeout=5).json()["actions"][0]
    return _pad(json.dumps(signed).encode(), size)


def _sized(http, path: str, body: bytes) -> tuple[int, bytes]:
    """POST ``body`` with a Content-Length over a raw socket. A length over the limit is
    refused from the headers alone: the body is then not sent (the server closes at
    once, and a client still sending would have its answer cut by a reset)."""
    with socket.create_connection(("127.0.0.1", http.port), timeout=10) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
        if len(body) <= MAX_BODY:
            sock.sendall(body)
        return _status(_reply(sock))


@pytest.mark.parametrize("send", [_chunked, _sized])
def test_apply_body_at_the_limit_is_served_and_one_byte_more_is_413(servers, send):
    http, _, _ = servers
    status, body = send(http, "/v1/games/apply", _padded_apply(http, MAX_BODY))
    assert status == 200, body[:300]
    assert json.loads(body)["events"][0]["type"] == "played"
    status, body = send(http, "/v1/games/apply", _padded_apply(http, MAX_BODY + 1))
    assert status == 413, body[:300]
    assert b"too_large" in body


@pytest.fixture(scope="module")
def impatient_http(throwaway_redis):
    """``ono99 http`` with one worker and a read timeout of one second."""
    http = start_http(throwaway_redis, workers=1, ONO99_HTTP_READ_TIMEOUT="1")
    yield http
    http.stop()


def _cut_short(http, path: str, body: bytes, then: str) -> bytes:
    """POST ``body`` announcing 100 bytes more than it sends, then ``then``: "half-close"
    (the client sends no more), "wait" (it keeps the connection open and silent) or
    "reset" (it drops the connection); what the server answered (nothing after a reset)."""
    sock = socket.create_connection(("127.0.0.1", http.port), timeout=10)
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body) + 100}\r\nConnection: close\r\n\r\n".encode() + body)
    if then == "reset":
        time.sleep(0.2)  # the server is reading the body
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        return b""
    if then == "half-close":
        sock.shutdown(socket.SHUT_WR)
    with sock:
        return _reply(sock)


@pytest.mark.parametrize("path", ["/v1/games/apply", "/v1/games/legal-actions"])
@pytest.mark.parametrize("then", ["half-close", "wait"])
def test_a_body_shorter_than_its_content_length_is_400_never_applied(impatient_http, path, then):
    """A client that announces more than it sends: the read gives up at the close or at
    the read timeout, and the answer is a 400 (a truncated body that is valid JSON is
    never applied), on the busiest route (msgspec decodes its body) as on the others
    (webargs)."""
    body = _padded_apply(impatient_http, 4000, path)
    reply = _cut_short(impatient_http, path, body, then)
    status, answer = _status(reply)
    assert status == 400, reply[:300]
    assert json.loads(answer)["code"] == "invalid_request"


def _answered(http, status_class: str) -> float:
    """Requests to the stateless routes answered with a status of ``status_class``
    ("4", "5"), as the server's /metrics counts them."""
    metrics = requests.get(f"{http.url}/metrics", timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith("ono99_requests_total") and 'route="/v1/games/' in line
               and f'status="{status_class}' in line)


def test_clients_that_reset_mid_body_are_no_failures_of_the_service(impatient_http):
    """Dropping connections in the middle of a body, a cheap flood, is the clients'
    doing: each such request is counted a 4xx, never a 500 (nor an error logged with
    its traceback)."""
    bodies = {path: _padded_apply(impatient_http, 4000, path) for path in ("/v1/games/apply",
                                                                          "/v1/games/legal-actions")}
    refused, failed = _answered(impatient_http, "4"), _answered(impatient_http, "5")
    for path, body in bodies.items():
        for _ in range(5):
            _cut_short(impatient_http, path, body, "reset")
    deadline = time.monotonic() + 10  # the worker answers each reset as it reads it
    while _answered(impatient_http, "4") + _answered(impatient_http, "5") < refused + failed + 10:
        assert time.monotonic() < deadline, "the resets were not all answered"
        time.sleep(0.1)
    assert _answered(impatient_http, "5") == failed
    assert _answered(impatient_http, "4") == refused + 10


# --- (e) huge session ids ----------------------------------------------------------------------

LONG_ID = "S" * 100_000


def test_grpc_huge_unknown_session_id_is_not_found_without_echoing_it(servers):
    _, channel, _ = servers
    sessions = pb_grpc.SessionServiceStub(channel)
    action = pb.Action(player="ann", type=pb.ACTION_TYPE_PLAY, card=pb.CARD_7)
    calls = [
        lambda: sessions.GetSession(pb.GetSessionRequest(session_id=LONG_ID), metadata=KEY, timeout=5),
        lambda: sessions.Act(pb.ActRequest(session_id=LONG_ID, action=action), metadata=KEY, timeout=5),
        lambda: sessions.ListEvents(pb.ListEventsRequest(session_id=LONG_ID), metadata=KEY, timeout=5),
        lambda: next(iter(sessions.WatchEvents(pb.WatchEventsRequest(session_id=LONG_ID), metadata=KEY,
                                               timeout=5))),
        lambda: sessions.DeleteSession(pb.DeleteSessionRequest(session_id=LONG_ID), metadata=KEY, timeout=5),
    ]
    for call in calls:
        with pytest.raises(grpc.RpcError) as refused:
            call()
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND, refused.value.code()
        assert len(refused.value.details()) < 300 and "SSSS" * 100 not in refused.value.details()
        assert _info(refused.value)["reason"] == "not_found"


def test_grpc_huge_viewer_is_invalid_argument_without_echoing_it(servers):
    _, channel, _ = servers
    games = pb_grpc.GameServiceStub(channel)
    made = games.NewGame(pb.NewGameRequest(rules=pb.Rules(edition="2022"), players=["ann", "bob"], seed_int=1),
                         timeout=5)
    with pytest.raises(grpc.RpcError) as refused:
        games.View(pb.ViewRequest(state=made.state, player="p" * 100_000), timeout=5)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(refused.value.details()) < 300


def test_http_long_unknown_session_id_is_404_without_echoing_it(servers):
    http, _, _ = servers
    long_id = "S" * 7_000
    for method, suffix in (("GET", ""), ("DELETE", ""), ("GET", "/events"), ("POST", "/actions")):
        answer = requests.request(method, f"{http.url}/v1/sessions/{long_id}{suffix}", headers=_auth(SERVICE_KEY),
                                  json={"action": {"player": "ann", "type": "play", "card": "7"}}
                                  if method == "POST" else None, timeout=5)
        assert answer.status_code == 404, answer.text[:300]
        assert long_id not in answer.text and len(answer.content) < 1000


def test_a_real_session_id_is_still_found_and_an_unknown_short_one_is_named(servers):
    http, channel, _ = servers
    s = _session(http)
    got = pb_grpc.SessionServiceStub(channel).GetSession(pb.GetSessionRequest(session_id=s["session_id"]),
                                                          metadata=KEY, timeout=5)
    assert got.session_id == s["session_id"]
    missing = requests.get(f"{http.url}/v1/sessions/no-such-session", headers=_auth(SERVICE_KEY), timeout=5)
    assert missing.status_code == 404 and "no-such-session" in missing.json()["detail"]


# --- (f) signatures with extra characters ---------------------------------------------------------

def _tampered(signature: str) -> list[str]:
    return [signature + "!", "!" + signature, signature[:5] + "." + signature[5:], signature + "=",
            signature + "==", signature + " ", signature + "\n", signature[:10] + "*" + signature[10:]]


def test_http_state_signature_with_extra_characters_is_refused(servers):
    http, _, _ = servers
    made = requests.post(f"{http.url}/v1/games", json={"rules": {"edition": "2022"}, "players": ["ann", "bob"],
                                                       "seed": 4}, timeout=5).json()
    body = {"state": made["state"]}
    assert requests.post(f"{http.url}/v1/games/legal-actions", json={**body, "state_signature":
                                                                     made["state_signature"]}, timeout=5).ok
    for signature in _tampered(made["state_signature"]):
        answer = requests.post(f"{http.url}/v1/games/legal-actions", json={**body, "state_signature": signature},
                               timeout=5)
        assert answer.status_code == 400, (signature, answer.text[:300])
        assert answer.json()["reason"] == "signature_invalid"


def test_grpc_state_signature_with_extra_characters_is_refused(servers):
    _, channel, _ = servers
    games = pb_grpc.GameServiceStub(channel)
    made = games.NewGame(pb.NewGameRequest(rules=pb.Rules(edition="2022"), players=["ann", "bob"], seed_int=4),
                         timeout=5)
    games.LegalActions(pb.LegalActionsRequest(state=made.state), timeout=5)
    for signature in _tampered(made.state.signature):
        sent = pb.SignedState(state=made.state.state, signature=signature)
        with pytest.raises(grpc.RpcError) as refused:
            games.LegalActions(pb.LegalActionsRequest(state=sent), timeout=5)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, signature
        assert _info(refused.value)["reason"] == "signature_invalid"
        assert _info(refused.value)["field"] == "state.signature"  # the gRPC request's own field
        assert refused.value.details().startswith("state.signature does not match")


# --- (g) reads of events renew the session's time to live ------------------------------------------

def _aged(redis_url: str, sid: str, seconds: int = 100) -> redis.Redis:
    """Let the session's keys age: their time to live down to ``seconds``."""
    client = redis.Redis.from_url(redis_url)
    for key in keys(sid)[:2]:
        client.expire(key, seconds)
    return client


def _renewed(client: redis.Redis, sid: str, ttl: int) -> bool:
    return all(client.ttl(key) > ttl - 30 for key in keys(sid)[:2])


def test_http_events_read_renews_the_session_ttl(servers):
    http, _, redis_url = servers
    s = _session(http, ttl_seconds=3600)
    client = _aged(redis_url, s["session_id"])
    answer = requests.get(f"{http.url}/v1/sessions/{s['session_id']}/events", headers=_auth(s["seats"]["ann"]),
                          timeout=5)
    assert answer.status_code == 200
    assert _renewed(client, s["session_id"], 3600), [client.ttl(k) for k in keys(s["session_id"])]


def test_grpc_list_and_watch_events_renew_the_session_ttl(servers):
    http, channel, redis_url = servers
    sessions = pb_grpc.SessionServiceStub(channel)
    s = _session(http, ttl_seconds=3600)
    sid, token = s["session_id"], [("authorization", f"Bearer {s['seats']['bob']}")]
    client = _aged(redis_url, sid)
    sessions.ListEvents(pb.ListEventsRequest(session_id=sid), metadata=token, timeout=5)
    assert _renewed(client, sid, 3600)

    client = _aged(redis_url, sid)
    watch = sessions.WatchEvents(pb.WatchEventsRequest(session_id=sid), metadata=token, timeout=10)
    deadline = time.monotonic() + 5
    while not _renewed(client, sid, 3600) and time.monotonic() < deadline:
        time.sleep(0.05)
    watch.cancel()
    assert _renewed(client, sid, 3600), [client.ttl(k) for k in keys(sid)]


def test_grpc_session_calls_work_over_a_real_game(servers):
    """The checks above leave ordinary calls alone: a few actions, then their events."""
    http, channel, _ = servers
    sessions = pb_grpc.SessionServiceStub(channel)
    s = _session(http)
    sid = s["session_id"]
    for version in (1, 2):
        state = decode_state(requests.get(f"{http.url}/v1/sessions/{sid}", headers=_auth(SERVICE_KEY),
                                          timeout=5).json()["state"])
        a = legal_actions(state)[0]
        sessions.Act(pb.ActRequest(session_id=sid, action=convert.action_message(a), expected_version=version),
                     metadata=[("authorization", f"Bearer {s['seats'][a.player]}")], timeout=5)
    listed = sessions.ListEvents(pb.ListEventsRequest(session_id=sid, after_version=1), metadata=KEY, timeout=5)
    assert {e.version for e in listed.events} == {2, 3}


@pytest.mark.parametrize("data", [b'{"state":', b"[" * 40 + b"]" * 40])
def test_a_malformed_body_is_answered_alike_by_a_typed_route_and_the_others(client, data):
    """POST /v1/games/apply decodes its body with msgspec in one pass, other routes through
    webargs: malformed or too deeply nested JSON gets the same 400 from both."""
    other = client.post("/v1/games/legal-actions", data=data, content_type="application/json")
    applied = client.post("/v1/games/apply", data=data, content_type="application/json")
    assert other.status_code == applied.status_code == 400
    assert applied.json["errors"] == other.json["errors"] and applied.json["detail"] == other.json["detail"]
