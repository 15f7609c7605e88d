"""Server-Sent Events against real servers (gunicorn's gevent worker, Valkey): a seat's
stream shows each version as it is committed, redacted for it, resumes with
Last-Event-ID without gaps or repeats, beats, ends at game over and at once on deletion;
stream tickets open it without the token in a URL; streams count against the worker's
waiters; CORS lets the pages of ONO99_CORS_ORIGINS in, and only them; and an
EventSource in headless Chromium sees a bot's move arrive."""

from __future__ import annotations

import http.server
import json
import re
import threading
import time

import pytest
import requests
import sseclient

from tests.conftest import ROOT, SERVICE_KEY, act, auth, restart_port, start_http
from tests.test_docs_page import DevTools, find_chromium

pytestmark = pytest.mark.slow
PAGE_PORT_HOST = "127.0.0.1"


class _Page(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def page_server():
    server = http.server.ThreadingHTTPServer((PAGE_PORT_HOST, 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


@pytest.fixture(scope="module")
def http_server(page_server):
    from service.embedded_redis import start_embedded

    store = start_embedded()
    origin = f"http://{PAGE_PORT_HOST}:{page_server.server_address[1]}"
    server = start_http(store.connection_url, workers=1, ONO99_CREATES_PER_MINUTE="0", ONO99_ACTIONS_PER_SECOND="0",
                        ONO99_SSE_HEARTBEAT="1", ONO99_HTTP_WAITERS="6", ONO99_CORS_ORIGINS=origin)
    yield server, origin
    server.stop()
    store.stop()



def create(server, **body):
    answer = requests.post(f"{server.url}/v1/sessions", json={
        "rules": {"edition": "2022"}, "players": ["ann", {"id": "cpu", "bot": {"kind": "heuristic"}}], "seed": 5,
        **body}, timeout=10)
    assert answer.status_code == 201, answer.text
    return answer.json()


def open_stream(server, sid, headers, after=0, **params):
    return requests.get(f"{server.url}/v1/sessions/{sid}/events", params={"after": after, **params},
                        headers={"Accept": "text/event-stream", **headers}, stream=True, timeout=30)


@pytest.mark.rules("R-SET-3")
def test_a_seats_stream_shows_each_version_redacted_and_resumes_without_gaps_or_repeats(http_server):
    server, _ = http_server
    made = create(server)
    sid, ann = made["session_id"], made["seats"]["ann"]
    response = open_stream(server, sid, auth(ann))
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/event-stream")
    messages = sseclient.SSEClient(response).events()
    answer = act(server, sid, ann)  # ann's move, then the bot's, before the answer
    seen = []
    while not seen or seen[-1]["version"] < answer["version"]:
        message = next(messages)
        assert message.event == "version"
        data = json.loads(message.data)
        assert int(message.id) == data["version"] and len(data["chain_hash"]) == 64
        seen.append(data)
    response.close()
    assert [d["version"] for d in seen] == sorted({d["version"] for d in seen})
    events = [e for d in seen for e in d["events"]]
    assert any(e["type"] == "played" and e["player"] == "cpu" for e in events)  # the bot's move arrived
    assert all("card" not in e for e in events if e["type"] == "drew" and e["player"] != "ann")
    # Resuming where a browser left off: the versions after it, and only them.
    act(server, sid, ann)
    last = seen[-1]["version"]
    resumed = open_stream(server, sid, {**auth(ann), "Last-Event-ID": str(last)})
    first = next(sseclient.SSEClient(resumed).events())
    resumed.close()
    assert int(first.id) == last + 1


def test_a_stream_beats_when_idle_ends_at_game_over_and_then_answers_204(http_server):
    server, _ = http_server
    made = create(server)
    sid, ann = made["session_id"], made["seats"]["ann"]
    idle = open_stream(server, sid, auth(ann), after=1)
    lines = idle.iter_lines()
    started = time.monotonic()
    assert next(line for line in lines if line.startswith(b":")) == b": heartbeat"  # ONO99_SSE_HEARTBEAT=1
    assert time.monotonic() - started < 5
    idle.close()
    stream = open_stream(server, sid, auth(ann))
    messages = sseclient.SSEClient(stream).events()
    deadline = time.monotonic() + 60
    while requests.get(f"{server.url}/v1/sessions/{sid}", headers=auth(ann), timeout=10).json()["view"][
            "status"] == "playing":
        assert time.monotonic() < deadline
        act(server, sid, ann)
    last, ended = 0, None
    for message in messages:
        if message.event == "end":
            ended = json.loads(message.data)
            break
        last = int(message.id)
    assert ended == {"reason": "game_over"}
    after = open_stream(server, sid, {**auth(ann), "Last-Event-ID": str(last)})
    assert after.status_code == 204  # a browser's EventSource stops reconnecting


def test_a_stream_ends_at_once_when_the_session_is_deleted(http_server):
    server, _ = http_server
    made = create(server)
    sid = made["session_id"]
    stream = open_stream(server, sid, auth(made["seats"]["ann"]), after=1)
    time.sleep(0.5)
    deleted_at = time.monotonic()
    assert requests.delete(f"{server.url}/v1/sessions/{sid}", headers=auth(SERVICE_KEY), timeout=10).status_code == 204
    ended = next(m for m in sseclient.SSEClient(stream).events() if m.event == "end")
    assert json.loads(ended.data)["reason"] == "not_found" and time.monotonic() - deleted_at < 5


def test_stream_tickets_open_a_stream_without_the_token_and_only_their_own(http_server):
    server, _ = http_server
    made, other = create(server), create(server)
    sid, ann = made["session_id"], made["seats"]["ann"]
    ticket = requests.post(f"{server.url}/v1/sessions/{sid}/stream-ticket", headers=auth(ann), timeout=10)
    assert ticket.status_code == 201 and ticket.json()["expires_in"] == 60
    opened = open_stream(server, sid, {}, after=1, ticket=ticket.json()["ticket"])
    assert opened.status_code == 200
    opened.close()
    for sid_, value in ((other["session_id"], ticket.json()["ticket"]), (sid, "no-such-ticket")):
        assert open_stream(server, sid_, {}, after=1, ticket=value).status_code == 401
    plain = requests.get(f"{server.url}/v1/sessions/{sid}/events", params={"ticket": ticket.json()["ticket"]},
                         timeout=10)
    assert plain.status_code == 400 and plain.json()["field"] == "ticket"  # a ticket opens streams only
    assert requests.post(f"{server.url}/v1/sessions/{sid}/stream-ticket", timeout=10).status_code == 401


def test_streams_count_against_the_workers_waiters(throwaway_redis):
    server = start_http(throwaway_redis, workers=1, ONO99_CREATES_PER_MINUTE="0", ONO99_HTTP_WAITERS="3",
                        ONO99_SSE_HEARTBEAT="1")
    try:
        _held_streams_and_then_one_more(server)
    finally:
        server.stop()


def _held_streams_and_then_one_more(server):
    made = create(server)
    sid, ann = made["session_id"], made["seats"]["ann"]
    for _ in range(5):  # a HEAD answers the headers alone and holds no waiter (a body nobody reads would)
        head = requests.head(f"{server.url}/v1/sessions/{sid}/events", params={"after": 1}, timeout=10,
                             headers={"Accept": "text/event-stream", **auth(ann)})
        assert head.status_code == 200 and head.headers["Content-Type"].startswith("text/event-stream")
    held = [open_stream(server, sid, auth(ann), after=1) for _ in range(3)]  # ONO99_HTTP_WAITERS=3
    try:
        assert all(r.status_code == 200 for r in held)
        refused = open_stream(server, sid, auth(ann), after=1)
        assert refused.status_code == 429 and refused.json()["limit"] == 3
        poll = requests.get(f"{server.url}/v1/sessions/{sid}/events", params={"after": 1, "wait": 5},
                            headers=auth(ann), timeout=10)
        assert poll.status_code == 429  # streams and long polls share the limit
        assert requests.get(f"{server.url}/healthz", timeout=5).status_code == 200  # other calls go on
    finally:
        for r in held:
            r.close()
    deadline = time.monotonic() + 10  # the worker lets the closed ones go
    while open_stream(server, sid, auth(ann), after=1).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_cors_lets_in_the_configured_origin_only(http_server):
    server, origin = http_server
    made = create(server)
    url = f"{server.url}/v1/sessions/{made['session_id']}/stream-ticket"
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
    allowed = requests.options(url, headers={"Origin": origin, **preflight}, timeout=5)
    assert allowed.headers.get("Access-Control-Allow-Origin") == origin
    assert "authorization" in allowed.headers.get("Access-Control-Allow-Headers", "").lower()
    stranger = requests.options(url, headers={"Origin": "http://evil.example", **preflight}, timeout=5)
    assert "Access-Control-Allow-Origin" not in stranger.headers


def test_an_eventsource_in_headless_chromium_sees_a_bots_move_arrive(http_server, page_server, tmp_path):
    browser = find_chromium()
    if browser is None:
        pytest.skip("no Chromium (Debian: apt-get install chromium)")
    server, origin = http_server
    made = create(server)
    sid, ann = made["session_id"], made["seats"]["ann"]
    # The page runs docs/API.md's EventSource example as written, with its names filled in.
    example = re.search(r"^```js\n(.*?)^```", (ROOT / "docs" / "API.md").read_text(), re.M | re.S)
    assert example is not None
    _Page.body = f"""<!doctype html><script type="module">
      window.got = [];
      const base = "{server.url}", id = "{sid}", token = "{ann}";
      const show = (data) => window.got.push(data);
      {example.group(1)}
      source.onopen = () => window.got.push("open");
      source.onerror = () => window.got.push("error");
    </script>""".encode()
    chromium = DevTools(browser, ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                  f"--user-data-dir={tmp_path / 'profile'}", "--disable-background-networking"],
                        tmp_path / "chromium.log")
    try:
        target = chromium.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        page = chromium.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        chromium.call("Page.navigate", {"url": f"{origin}/"}, page)
        deadline = time.monotonic() + 30
        while "open" not in (chromium.evaluate(page, "window.got") or []):
            assert time.monotonic() < deadline, chromium.evaluate(page, "window.got")
            time.sleep(0.2)
        act(server, sid, ann)  # the bot answers ann's move
        while True:
            got = chromium.evaluate(page, "window.got") or []
            events = [e for m in got if isinstance(m, dict) for e in m["events"]]
            if any(e["type"] == "played" and e["player"] == "cpu" for e in events):
                break
            assert time.monotonic() < deadline, got
            time.sleep(0.2)
    finally:
        chromium.close()
    assert "error" not in got


def test_a_stream_waits_out_a_redis_restart_and_goes_on_from_the_last_version_sent(tmp_path):
    from service.embedded_redis import start_embedded

    port = restart_port()
    store = start_embedded(data_dir=tmp_path / "data", port=port)
    server = start_http(store.connection_url, workers=1, ONO99_CREATES_PER_MINUTE="0", ONO99_SSE_HEARTBEAT="1",
                        ONO99_REDIS_BREAKER_RESET="0.5")
    try:
        made = create(server)
        sid, ann = made["session_id"], made["seats"]["ann"]
        stream = open_stream(server, sid, auth(ann), after=1)
        messages = sseclient.SSEClient(stream).events()
        before = act(server, sid, ann)["version"]
        while int(next(messages).id) < before:
            pass
        store.stop()
        time.sleep(2)  # the stream finds the store gone, and waits
        store = start_embedded(data_dir=tmp_path / "data", port=port)
        deadline = time.monotonic() + 20
        while True:  # the server's breaker and pool recover
            try:
                after = act(server, sid, ann)["version"]
                break
            except AssertionError:
                assert time.monotonic() < deadline
                time.sleep(0.5)
        seen = []
        while not seen or seen[-1] < after:
            seen.append(int(next(messages).id))
        assert seen == list(range(before + 1, after + 1))  # no version skipped or sent twice
        stream.close()
    finally:
        server.stop()
        store.stop()


def test_a_version_after_game_over_ends_a_resumed_stream(http_server):
    server, _ = http_server
    made = create(server)
    sid, ann = made["session_id"], made["seats"]["ann"]
    deadline = time.monotonic() + 60
    while requests.get(f"{server.url}/v1/sessions/{sid}", headers=auth(ann), timeout=10).json()["view"][
            "status"] == "playing":
        assert time.monotonic() < deadline
        act(server, sid, ann)
    over = requests.get(f"{server.url}/v1/sessions/{sid}", headers=auth(SERVICE_KEY), timeout=10).json()["version"]
    reissued = requests.post(f"{server.url}/v1/sessions/{sid}/seats/ann/token", headers=auth(SERVICE_KEY), timeout=10)
    assert reissued.status_code == 200  # a version after the game's end
    stream = open_stream(server, sid, {**auth(reissued.json()["token"]), "Last-Event-ID": str(over)})
    messages = list(sseclient.SSEClient(stream).events())  # the stream ends by itself
    assert [m.event for m in messages] == ["version", "end"] and int(messages[0].id) == over + 1


def test_a_heartbeat_of_zero_seconds_is_refused_at_start(throwaway_redis):
    from tests.conftest import RunningServer, free_port

    port = free_port()
    server = RunningServer(["http", "--http-port", str(port), "--workers", "1"],
                           {"REDIS_URL": throwaway_redis, "ONO99_SSE_HEARTBEAT": "0", "ONO99_LOG_LEVEL": "warning"},
                           port)
    assert server.proc.wait(timeout=60) != 0
    assert "ONO99_SSE_HEARTBEAT" in server.log.read_text()


def test_one_address_gets_its_share_of_the_waiters_and_odd_resume_points_are_refused(throwaway_redis):
    import http.client

    server = start_http(throwaway_redis, workers=1, ONO99_CREATES_PER_MINUTE="0", ONO99_HTTP_WAITERS="10",
                        ONO99_HTTP_WAITERS_PER_PEER="2", ONO99_SSE_HEARTBEAT="1")
    opened: list[http.client.HTTPConnection] = []
    try:
        made = create(server)
        sid, ann = made["session_id"], made["seats"]["ann"]

        def stream_from(address: str) -> int:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10, source_address=(address, 0))
            conn.request("GET", f"/v1/sessions/{sid}/events?after=1",
                         headers={"Accept": "text/event-stream", **auth(ann)})
            opened.append(conn)
            return conn.getresponse().status
        assert [stream_from("127.0.0.1") for _ in range(3)] == [200, 200, 429]  # ONO99_HTTP_WAITERS_PER_PEER=2
        assert stream_from("127.0.0.2") == 200  # another address still gets its own
        for value in ("\u00b2", "12a", str(10**9), "9999999999", "1\u00a0"):
            answer = requests.get(f"{server.url}/v1/sessions/{sid}/events", timeout=10,
                                  headers={"Accept": "text/event-stream", "Last-Event-ID": value, **auth(ann)})
            assert answer.status_code == 400 and answer.json()["field"] == "Last-Event-ID", (value, answer.text)
    finally:
        for conn in opened:
            conn.close()
        server.stop()
