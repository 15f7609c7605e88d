"""`ono99 serve` is up whole or not at all.

A port that cannot be bound stops the command at once with one log line naming the
port and its setting; when a process serve started (the gRPC server, the embedded
Redis) dies, serve stops the HTTP half too and exits non-zero, saying which one died.
Before this, a second serve whose gRPC process died on the taken metrics port kept
answering /readyz as ready.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
import requests

from tests.conftest import ROOT, free_port

pytestmark = pytest.mark.slow


class Serve:
    """``ono99 serve`` in a process group of its own (so its children go with it)."""

    def __init__(self, http_port: int, grpc_port: int, metrics_port: int, *extra: str) -> None:
        self.http_port, self.grpc_port = http_port, grpc_port
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        env.update(PYTHONPATH=str(ROOT), ONO99_METRICS_PORT=str(metrics_port), ONO99_LOG_LEVEL="warning",
                   ONO99_WORKERS="1")
        self.log = Path(os.environ.get("TMPDIR", "/tmp")) / f"ono99-serve-{http_port}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "serve", "--http-port", str(http_port),
             "--grpc-port", str(grpc_port), *extra],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=self.log.open("wb"), start_new_session=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def ready(self) -> bool:
        try:
            return requests.get(f"http://127.0.0.1:{self.http_port}/readyz", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready():
            assert self.proc.poll() is None, self.output()[-3000:]
            assert time.monotonic() < deadline, "serve did not become ready: " + self.output()[-3000:]
            time.sleep(0.1)
        with grpc.insecure_channel(f"127.0.0.1:{self.grpc_port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=timeout)

    def exit_code(self, within: float) -> int | None:
        """serve's exit code if it ends within ``within`` seconds, else None."""
        try:
            return self.proc.wait(timeout=within)
        except subprocess.TimeoutExpired:
            return None

    def children(self) -> dict[int, str]:
        """The processes serve started: pid to command line."""
        found = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
                if ppid == self.proc.pid:
                    found[int(stat.parent.name)] = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (OSError, ValueError, IndexError):
                continue
        return found

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            if self.exit_code(30) is None:
                self.proc.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # anything of its group left behind
        self.proc.wait()


def check(target: str) -> int:
    """Exit code of ``ono99 check target``."""
    return subprocess.run([sys.executable, "-m", "service.cli", "check", target, "--timeout", "1"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True).returncode


def test_a_second_serve_sharing_only_the_metrics_port_exits_non_zero_naming_it():
    metrics = free_port()  # the same for both, as the default 9464 would be
    first = Serve(free_port(), free_port(), metrics)
    second = None
    try:
        first.wait_ready()
        second = Serve(free_port(), free_port(), metrics)
        code = second.exit_code(within=8)
        assert code is not None and code != 0, (
            f"the second serve kept running (ready: {second.ready()}): {second.output()[-2000:]}")
        out = second.output()
        assert str(metrics) in out and "ONO99_METRICS_PORT" in out, out[-2000:]
        # The first one is untouched.
        assert first.ready() and check(f"grpc://127.0.0.1:{first.grpc_port}") == 0
    finally:
        if second is not None:
            second.stop()
        first.stop()


SETTINGS = {"http": "ONO99_HTTP_PORT", "grpc": "ONO99_GRPC_PORT", "metrics": "ONO99_METRICS_PORT"}


@pytest.mark.parametrize(("command", "taken"), [("serve", "http"), ("serve", "grpc"), ("serve", "metrics"),
                                                ("http", "http"), ("grpc", "grpc"), ("grpc", "metrics")])
def test_a_taken_port_is_one_clear_error_at_start(command, taken):
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        ports = {"http": free_port(), "grpc": free_port(), "metrics": free_port(), taken: port}
        args = {"serve": ["--http-port", str(ports["http"]), "--grpc-port", str(ports["grpc"])],
                "http": ["--http-port", str(ports["http"]), "--no-sessions"],
                "grpc": ["--grpc-port", str(ports["grpc"]), "--no-sessions"]}[command]
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        env.update(PYTHONPATH=str(ROOT), ONO99_METRICS_PORT=str(ports["metrics"]), ONO99_LOG_LEVEL="warning")
        proc = subprocess.Popen([sys.executable, "-m", "service.cli", command, *args], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
            raise AssertionError(f"still running after 5 s: {err[-2000:]}") from None
        assert proc.returncode != 0, err[-2000:]
        lines = [line for line in err.splitlines() if SETTINGS[taken] in line]
        assert len(lines) == 1 and str(port) in lines[0], err[-2000:]


@pytest.mark.parametrize(("child", "named"), [("service.cli grpc", "gRPC"), ("valkey", "Redis")])
def test_serve_exits_non_zero_when_a_process_it_started_dies(child, named):
    serve = Serve(free_port(), free_port(), free_port())
    try:
        serve.wait_ready()
        assert check(f"http://127.0.0.1:{serve.http_port}/readyz") == 0
        assert check(f"grpc://127.0.0.1:{serve.grpc_port}") == 0
        victims = [pid for pid, cmdline in serve.children().items() if child in cmdline]
        assert len(victims) == 1, serve.children()
        os.kill(victims[0], signal.SIGKILL)
        code = serve.exit_code(within=10)
        assert code is not None and code != 0, f"serve kept running (ready: {serve.ready()}): {serve.output()[-2000:]}"
        died = [line for line in serve.output().splitlines() if "died" in line]
        assert died and named in died[0], serve.output()[-2000:]
        # Neither half claims to be ready any more.
        assert check(f"http://127.0.0.1:{serve.http_port}/readyz") != 0
        assert check(f"grpc://127.0.0.1:{serve.grpc_port}") != 0
    finally:
        serve.stop()


def test_a_gunicorn_worker_dying_is_gunicorns_to_replace_and_leaves_the_rest_running():
    serve = Serve(free_port(), free_port(), free_port())
    try:
        serve.wait_ready()
        workers = [pid for pid, cmdline in serve.children().items() if "service.cli serve" in cmdline]
        assert workers, serve.children()
        os.kill(workers[0], signal.SIGTERM)  # a worker's own graceful exit runs its interpreter's exit handlers
        deadline = time.monotonic() + 10
        while workers[0] in serve.children() or not serve.ready():
            assert serve.proc.poll() is None, serve.output()[-2000:]
            assert time.monotonic() < deadline, serve.output()[-2000:]
            time.sleep(0.1)
        # Sessions still work: the worker's exit left the embedded Redis and the gRPC server alone.
        for _ in range(4):  # reach both workers
            made = requests.post(f"http://127.0.0.1:{serve.http_port}/v1/sessions",
                                 json={"rules": {"edition": "2022"}, "players": ["ann", "bob"]}, timeout=5)
            assert made.status_code == 201, made.text
        assert serve.exit_code(within=1) is None and "died" not in serve.output()
        assert check(f"grpc://127.0.0.1:{serve.grpc_port}") == 0
    finally:
        serve.stop()
