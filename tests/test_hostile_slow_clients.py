"""Slow and idle HTTP clients against a real `ono99 http` (gunicorn, 2 workers).

A connection that trickles its headers holds a greenlet, never a worker process
(service/http_server.py), so other clients keep being answered; a connection that says
nothing is closed after ONO99_HTTP_READ_TIMEOUT.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest
import requests

from tests.conftest import start_http

pytestmark = pytest.mark.slow


SLOW_START = b"POST /v1/games HTTP/1.1\r\nHost: x\r\nX-Slow: "
ATTACKER = ("127.0.0.3", 0)  # another loopback address than the other clients'


def test_256_connections_sending_a_header_byte_every_5_s_leave_99_percent_of_others_answered_within_1_s():
    server = start_http(None, workers=2, ONO99_SESSIONS="false")
    stop = threading.Event()
    reconnects = [0]

    def attacker() -> None:
        """256 connections that send one header byte every 5 s, reconnecting whenever the
        server drops one."""
        slow = [socket.create_connection(("127.0.0.1", server.port), source_address=ATTACKER) for _ in range(256)]
        for s in slow:
            s.sendall(SLOW_START)
        while not stop.wait(5):
            for k, s in enumerate(slow):
                try:
                    s.sendall(b"a")
                    continue
                except OSError:
                    pass
                s.close()
                slow[k] = socket.create_connection(("127.0.0.1", server.port), source_address=ATTACKER)
                slow[k].sendall(SLOW_START)
                reconnects[0] += 1
        for s in slow:
            s.close()

    flood = threading.Thread(target=attacker, daemon=True)
    try:
        flood.start()
        time.sleep(1)
        answered = total = 0
        latencies = []
        session = requests.Session()
        deadline = time.monotonic() + 30
        body = {"rules": {"edition": "2022"}, "players": ["ann", "bob"], "seed": 1}
        while time.monotonic() < deadline:
            total += 1
            started = time.monotonic()
            try:
                if total % 2:
                    response, wanted = session.get(server.url + "/healthz", timeout=1), 200
                else:
                    response, wanted = session.post(server.url + "/v1/games", json=body, timeout=1), 201
                if response.status_code == wanted and time.monotonic() - started <= 1:
                    answered += 1
            except requests.RequestException:
                session = requests.Session()
            latencies.append(time.monotonic() - started)
            time.sleep(0.02)
    finally:
        stop.set()
        flood.join(10)
        server.stop()
    latencies.sort()
    print(f"256 slow connections ({reconnects[0]} reconnects): {answered}/{total} other requests answered "
          f"within 1 s, p99 {latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms")
    assert total > 300 and answered / total >= 0.99


def _closed_after(sock: socket.socket) -> float:
    """Seconds until the server closes ``sock`` (reading and discarding what it sends)."""
    started = time.monotonic()
    while sock.recv(4096):
        pass
    return time.monotonic() - started


def test_a_request_must_send_its_headers_within_the_header_timeout_however_it_paces_its_bytes():
    server = start_http(None, workers=1, ONO99_SESSIONS="false", ONO99_HTTP_HEADER_TIMEOUT="2")
    try:
        idle = socket.create_connection(("127.0.0.1", server.port), timeout=15)
        assert 1.5 <= _closed_after(idle) <= 6  # sends nothing at all
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=15)
        slow.sendall(SLOW_START)
        started = time.monotonic()
        with pytest.raises(OSError):
            while time.monotonic() - started < 10:  # a byte every 0.5 s: never silent for long
                slow.sendall(b"a")
                time.sleep(0.5)
                if slow.recv(4096, socket.MSG_DONTWAIT) == b"":
                    raise OSError("closed")
        assert time.monotonic() - started <= 6
        # Within the limit a request is served.
        assert requests.get(server.url + "/healthz", timeout=2).status_code == 200
    finally:
        server.stop()


def test_a_request_body_that_stops_arriving_is_dropped_after_the_read_timeout():
    server = start_http(None, workers=1, ONO99_SESSIONS="false", ONO99_HTTP_READ_TIMEOUT="1")
    try:
        stalled = socket.create_connection(("127.0.0.1", server.port), timeout=15)
        stalled.sendall(b"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 100\r\n\r\n{")
        assert 0.8 <= _closed_after(stalled) <= 5
        assert requests.get(server.url + "/healthz", timeout=2).status_code == 200
    finally:
        server.stop()


def test_one_address_holds_at_most_its_share_of_connections_and_others_are_still_served():
    server = start_http(None, workers=1, ONO99_SESSIONS="false", ONO99_HTTP_CONNECTIONS_PER_PEER="5",
                        ONO99_HTTP_HEADER_TIMEOUT="30")
    held: list[socket.socket] = []
    try:
        for _ in range(5):
            held.append(socket.create_connection(("127.0.0.1", server.port), source_address=ATTACKER, timeout=10))
            held[-1].sendall(SLOW_START)
        time.sleep(0.5)  # the worker has taken all five
        sixth = socket.create_connection(("127.0.0.1", server.port), source_address=ATTACKER, timeout=10)
        assert _closed_after(sixth) < 2  # closed at once: the address holds its five
        assert requests.get(server.url + "/healthz", timeout=2).status_code == 200  # another address is served
        held.pop().close()
        time.sleep(0.5)
        again = socket.create_connection(("127.0.0.1", server.port), source_address=ATTACKER, timeout=10)
        again.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert again.recv(64).startswith(b"HTTP/1.1 200")  # a freed slot is usable again
    finally:
        for s in held:
            s.close()
        server.stop()


def test_gunicorn_started_on_the_wsgi_app_with_the_worker_takes_its_limits_from_the_environment():
    """OPERATIONS.md's other way to serve: ``gunicorn service.wsgi:app -k
    service.http_server.Worker``; the per-address limit comes from ONO99_* there too."""
    import os
    import subprocess
    import sys

    from tests.conftest import free_port

    port = free_port()
    env = {**os.environ, "ONO99_SESSIONS": "false", "ONO99_HTTP_CONNECTIONS_PER_PEER": "1",
           "ONO99_LOG_LEVEL": "warning"}
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "service.wsgi:app", "-k", "service.http_server.Worker",
                               "-w", "1", "-b", f"127.0.0.1:{port}"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):  # the port listens before the worker answers: a read may time out
            try:
                if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.1)
        else:
            raise AssertionError("gunicorn never answered /healthz")
        first = socket.create_connection(("127.0.0.1", port), source_address=ATTACKER, timeout=10)
        first.sendall(SLOW_START)
        time.sleep(0.5)
        second = socket.create_connection(("127.0.0.1", port), source_address=ATTACKER, timeout=10)
        assert _closed_after(second) < 2  # the address holds its one connection
        first.close()
    finally:
        server.terminate()
        server.wait(10)



def test_a_kept_alive_client_is_served_while_others_flood_the_worker_with_new_connections():
    """A worker shares itself between connections (service/http_server.py,
    Worker.handle_request), and the wait it gives the others is bounded: while sixteen
    clients open a new connection for every request, a client on one kept-alive
    connection is still answered again and again (a wait for an idle event loop with no
    bound answered it once in the whole flood)."""
    server = start_http(None, workers=1, ONO99_SESSIONS="false", ONO99_HTTP_CONNECTIONS_PER_PEER="0")
    stop = threading.Event()

    def flood() -> None:
        while not stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    while s.recv(4096):
                        pass
            except OSError:
                pass

    flooders = [threading.Thread(target=flood, daemon=True) for _ in range(16)]
    try:
        for t in flooders:
            t.start()
        time.sleep(0.5)
        session = requests.Session()
        answered = 0
        ends = time.monotonic() + 4
        while time.monotonic() < ends:
            try:
                if session.get(server.url + "/healthz", timeout=5).status_code == 200:
                    answered += 1
            except requests.RequestException:
                pass
        assert answered >= 10, f"the kept-alive client was answered {answered} times in 4 s"
    finally:
        stop.set()
        for t in flooders:
            t.join(10)
        server.stop()
