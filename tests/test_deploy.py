"""What can be checked of the containers without Docker: linters and schemas for the
Dockerfile, compose file and Kubernetes manifests, and the image's entrypoint commands
(and the compose health checks) run for real outside a container."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from tests.conftest import RunningServer, free_port

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
BIN = Path(sys.executable).parent


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_hadolint_passes_the_dockerfile():
    result = run(str(BIN / "hadolint"), "deploy/Dockerfile")
    assert result.returncode == 0, result.stdout + result.stderr


def test_yamllint_passes_every_yaml_file():
    result = run(str(BIN / "yamllint"), "-s", "-c", "deploy/.yamllint.yaml", "deploy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_kubernetes_manifests_validate_strictly():
    manifests = sorted(str(p) for p in (DEPLOY / "k8s").glob("*.yaml"))
    result = run(str(BIN / "kubernetes-validate"), "--strict", *manifests)
    assert result.returncode == 0, result.stdout + result.stderr
    kinds = {d["kind"] for m in manifests for d in yaml.safe_load_all(Path(m).read_text())}
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "ConfigMap"} <= kinds


def test_compose_file_matches_the_compose_schema():
    result = run(str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec", "deploy/compose.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def _image_command(target: str) -> list[str]:
    """ENTRYPOINT + the given CMD, as the Dockerfile's exec form says."""
    text = (DEPLOY / "Dockerfile").read_text()
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M).group(1))
    assert json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1)) == ["http"]
    return [*entrypoint, target]


@pytest.mark.parametrize("target", ["http", "grpc", "timers"])
def test_the_images_commands_serve_and_stop_cleanly_on_sigterm(target, throwaway_redis):
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    port, metrics_port = free_port(), free_port()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "REDIS_URL": throwaway_redis,
           "ONO99_STATE_SECRET": "s", "ONO99_HTTP_PORT": str(port), "ONO99_GRPC_PORT": str(port),
           "ONO99_METRICS_PORT": str(metrics_port), "ONO99_HOST": "127.0.0.1"}
    command = _image_command(target)
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # The compose health check of that service, pointed at this port.
        check = [arg.replace("8080", str(port)).replace("50051", str(port)).replace("9464", str(metrics_port))
                 for arg in compose["services"][target]["healthcheck"]["test"][1:]]
        for _ in range(100):
            if subprocess.run(check, env=env, capture_output=True).returncode == 0:
                break
            assert server.poll() is None, server.stderr.read().decode()
            time.sleep(0.2)
        else:
            pytest.fail(f"{shlex.join(check)} never passed")
    finally:
        server.terminate()
        assert server.wait(timeout=30) == 0, server.stderr.read().decode()[-2000:]


def test_metrics_add_up_across_two_gunicorn_workers(tmp_path, throwaway_redis):
    import requests

    port = free_port()
    server = RunningServer(["http", "--http-port", str(port), "--workers", "2"],
                           {"REDIS_URL": throwaway_redis, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
                            "ONO99_LOG_LEVEL": "warning"}, port)
    try:
        server.wait_ready()

        def new_game(seed):
            r = requests.post(f"{server.url}/v1/games", json={"rules": {"edition": "1980"}, "players": ["a", "b"],
                                                              "seed": seed}, headers={"Connection": "close"})
            assert r.status_code == 201
            return r.json()["state"]

        def workers_seen():
            return {p.name.split("_")[-1] for p in tmp_path.glob("counter_*.db")}

        # Concurrent requests on new connections, until both workers have answered (the
        # kernel, not the test, decides which worker accepts a connection).
        states = []
        deadline = time.monotonic() + 30
        with ThreadPoolExecutor(8) as pool:
            while len(workers_seen()) < 2 and time.monotonic() < deadline:
                states += pool.map(new_game, range(len(states), len(states) + 16))
        assert len(workers_seen()) >= 2, "only one worker answered"
        n_games, n_illegal = len(states), 7
        for state in states[:n_illegal]:
            r = requests.post(f"{server.url}/v1/games/apply", headers={"Connection": "close"},
                              json={"state": state, "action": {"player": "b", "type": "play", "card": "ono99"}})
            assert r.status_code == 422
        text = requests.get(f"{server.url}/metrics").text
    finally:
        server.stop()

    def value(name, **labels):
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in text.splitlines():
            if line.startswith(name + "{"):
                got = ",".join(sorted(line[len(name) + 1:line.index("}")].split(",")))
                if got == want:
                    return float(line.rsplit(" ", 1)[1])
        return 0.0

    assert value("ono99_requests_total", transport="http", route="/v1/games", status="201") == n_games
    assert value("ono99_requests_total", transport="http", route="/v1/games/apply", status="422") == n_illegal
    assert value("ono99_actions_total", mode="stateless", outcome="rejected", reason="not_your_turn") == n_illegal
    assert value("ono99_request_duration_seconds_count", transport="http", route="/v1/games") == n_games
