"""Live events: how soon each kind of reader hears of a new version, and what idle event
streams cost the worker that holds them.

    python benchmarks/live.py [--moves 200] [--idle 2000]

One gunicorn worker (the service's gevent worker) and one gRPC process over an embedded
Valkey. A session is played move by move (a person's action, answered after the bot
seat's reply); for each move, the delay from just before the action is sent until each
reader has the action's version: an SSE stream, a long poll (``wait``) asked again after
each answer, a gRPC ``WatchEvents`` stream, and a webhook endpoint (an HTTP receiver in
this process, sent the version's ``turn.started`` by an ``ono99 webhooks`` deliverer).
Then ``--idle`` SSE streams are opened on the worker and left idle (their clients never
read), and ``GET /healthz`` and a session read are timed beside them against the same
without.

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402
import requests  # noqa: E402

from service.grpc_api.gen import ono99_pb2 as pb  # noqa: E402
from service.grpc_api.gen import ono99_pb2_grpc as pb_grpc  # noqa: E402
from tests.conftest import SERVICE_KEY, start_grpc, start_http  # noqa: E402
from tests.test_webhooks import Receiver, start_deliverer  # noqa: E402


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p99_ms": round(ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000, 2)}


class Heard:
    """When each reader first had each version."""

    def __init__(self) -> None:
        self.at: dict[str, dict[int, float]] = {"sse": {}, "long_poll": {}, "grpc_stream": {}, "webhook": {}}
        self.lock = threading.Lock()

    def heard(self, reader: str, version: int) -> None:
        with self.lock:
            self.at[reader].setdefault(version, time.perf_counter())


def sse_reader(url: str, sid: str, token: str, heard: Heard, stop: threading.Event) -> None:
    with requests.get(f"{url}/v1/sessions/{sid}/events", params={"after": 1}, stream=True, timeout=60,
                      headers={"Accept": "text/event-stream", "Authorization": f"Bearer {token}"}) as stream:
        for line in stream.iter_lines():
            if stop.is_set():
                return
            if line.startswith(b"id: "):
                heard.heard("sse", int(line[4:]))


def long_poll_reader(url: str, sid: str, token: str, heard: Heard, stop: threading.Event) -> None:
    after, session = 1, requests.Session()
    while not stop.is_set():
        try:
            answer = session.get(f"{url}/v1/sessions/{sid}/events", params={"after": after, "wait": 5},
                                 headers={"Authorization": f"Bearer {token}"}, timeout=30)
        except requests.RequestException:
            return  # the server stopped
        for event in answer.json().get("events", []):
            heard.heard("long_poll", event["version"])
            after = max(after, event["version"])


def grpc_reader(address: str, sid: str, token: str, heard: Heard, stop: threading.Event) -> None:
    with grpc.insecure_channel(address) as channel:
        stream = pb_grpc.SessionServiceStub(channel).WatchEvents(
            pb.WatchEventsRequest(session_id=sid, after_version=1), metadata=[("authorization", f"Bearer {token}")])
        try:
            for event in stream:
                heard.heard("grpc_stream", event.version)
                if stop.is_set():
                    stream.cancel()
                    return
        except grpc.RpcError:
            return  # cancelled at the end, or the server stopped


def delivery(http_url: str, grpc_address: str, moves: int) -> dict[str, float]:
    """Per reader kind, p50 and p99 of the delay from an action's send to its version heard."""
    heard, stop, sent = Heard(), threading.Event(), {}
    delays: dict[str, list[float]] = {name: [] for name in heard.at}
    receiver, playing = Receiver(), {"sid": ""}
    receiver.on_post = lambda payload: (payload["data"]["session_id"] == playing["sid"]
                                        and heard.heard("webhook", payload["data"]["version"]))
    requests.post(f"{http_url}/v1/webhooks", json={"url": receiver.url, "events": ["turn.started"]},
                  headers={"Authorization": f"Bearer {SERVICE_KEY}"}, timeout=10).raise_for_status()
    while sum(len(d) for d in delays.values()) < moves * len(delays):
        made = requests.post(f"{http_url}/v1/sessions", json={
            "rules": {"edition": "2022"}, "players": ["ann", {"id": "cpu", "bot": {"kind": "heuristic"}}]},
            timeout=10).json()
        sid, ann = made["session_id"], made["seats"]["ann"]
        playing["sid"] = sid
        readers = [threading.Thread(target=sse_reader, args=(http_url, sid, ann, heard, stop), daemon=True),
                   threading.Thread(target=long_poll_reader, args=(http_url, sid, ann, heard, stop), daemon=True),
                   threading.Thread(target=grpc_reader, args=(grpc_address, sid, ann, heard, stop), daemon=True)]
        for reader in readers:
            reader.start()
        time.sleep(1.0)  # every reader is waiting
        heard.at = {name: {} for name in heard.at}
        sent.clear()
        while True:
            view = requests.get(f"{http_url}/v1/sessions/{sid}", headers={"Authorization": f"Bearer {ann}"},
                                timeout=10).json()["view"]
            if view["status"] != "playing" or not view["legal_actions"]:
                break
            version = requests.get(f"{http_url}/v1/sessions/{sid}", timeout=10,
                                   headers={"Authorization": f"Bearer {SERVICE_KEY}"}).json()["version"] + 1
            sent[version] = time.perf_counter()
            requests.post(f"{http_url}/v1/sessions/{sid}/actions", json={"action": view["legal_actions"][0]},
                          headers={"Authorization": f"Bearer {ann}"}, timeout=10)
            time.sleep(0.2)  # every reader has it, and waits again
        for name, at in heard.at.items():
            delays[name] += [at[v] - t for v, t in sent.items() if v in at]
    stop.set()
    return {f"{name}_{k}": v for name, values in delays.items() for k, v in percentiles(values).items()}


def idle_streams(url: str, sid: str, token: str, count: int) -> list[socket.socket]:
    """``count`` SSE streams whose clients send the request and never read."""
    held = []
    request = (f"GET /v1/sessions/{sid}/events?after=1 HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
               f"Authorization: Bearer {token}\r\n\r\n").encode()
    port = int(url.rsplit(":", 1)[1])
    while len(held) < count:
        # Opened a hundred at a time: each opening reads the session (a burst of thousands
        # at once would wait for the worker's Redis connections, and get 503 past
        # ONO99_REDIS_TIMEOUT); an idle stream then holds no connection.
        batch = [socket.create_connection(("127.0.0.1", port)) for _ in range(min(100, count - len(held)))]
        for sock in batch:
            sock.sendall(request)
        for sock in batch:  # each stream has started (its answer's first bytes); then nobody reads
            sock.settimeout(30)
            assert sock.recv(12) == b"HTTP/1.1 200", "an idle stream was refused"
        held += batch
    return held


def timed(url: str, path: str, headers: dict[str, str], calls: int = 300) -> dict[str, float]:
    session = requests.Session()
    durations = []
    for _ in range(calls):
        started = time.perf_counter()
        assert session.get(f"{url}{path}", headers=headers, timeout=10).status_code == 200
        durations.append(time.perf_counter() - started)
    return percentiles(durations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=200, help="moves timed per reader kind")
    parser.add_argument("--idle", type=int, default=2000, help="idle SSE streams held on the worker")
    args = parser.parse_args()
    from service.embedded_redis import start_embedded

    store = start_embedded()
    limits = {"ONO99_CREATES_PER_MINUTE": "0", "ONO99_ACTIONS_PER_SECOND": "0", "ONO99_LOG_LEVEL": "warning",
              "ONO99_HTTP_CONNECTIONS": str(args.idle + 200), "ONO99_HTTP_CONNECTIONS_PER_PEER": "0",
              "ONO99_HTTP_WAITERS": str(args.idle + 100), "ONO99_HTTP_WAITERS_PER_PEER": "0"}
    http = start_http(store.connection_url, workers=1, **limits)
    rpc = start_grpc(store.connection_url, **limits)
    deliverer = start_deliverer(store.connection_url)
    figures: dict[str, object] = {}
    try:
        figures.update(delivery(http.url, rpc.url, args.moves))
        print("delivery, send to heard: " + ", ".join(f"{k} {v} ms" for k, v in figures.items()), flush=True)
        made = requests.post(f"{http.url}/v1/sessions", json={"rules": {"edition": "2022"},
                                                              "players": ["ann", "bob"]}, timeout=10).json()
        sid, ann = made["session_id"], made["seats"]["ann"]
        seat = {"Authorization": f"Bearer {ann}"}
        quiet = {"healthz": timed(http.url, "/healthz", {}), "read": timed(http.url, f"/v1/sessions/{sid}", seat)}
        held = idle_streams(http.url, sid, ann, args.idle)
        busy = {"healthz": timed(http.url, "/healthz", {}), "read": timed(http.url, f"/v1/sessions/{sid}", seat)}
        for sock in held:
            sock.close()
        for name in quiet:
            for k in ("p50_ms", "p99_ms"):
                figures[f"{name}_{k}_quiet"] = quiet[name][k]
                figures[f"{name}_{k}_with_idle_streams"] = busy[name][k]
        figures["idle_streams"] = args.idle
        print(f"with {args.idle} idle SSE streams: healthz p99 {busy['healthz']['p99_ms']} ms "
              f"(without: {quiet['healthz']['p99_ms']} ms), session read p99 {busy['read']['p99_ms']} ms "
              f"(without: {quiet['read']['p99_ms']} ms)", flush=True)
    finally:
        deliverer.stop()
        rpc.stop()
        http.stop()
        store.stop()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
