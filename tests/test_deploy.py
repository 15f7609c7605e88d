"""What can be checked of the containers without Docker: linters and schemas for the
Dockerfile, compose file and Kubernetes manifests; that they build and run one image,
tagged and labelled with pyproject's version, from a build context of only what the
Dockerfile copies; and the image's entrypoint commands (and the compose health checks)
run for real outside a container. Nothing here builds or runs the image."""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from tests.conftest import RunningServer, free_port

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
BIN = Path(sys.executable).parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
IMAGE = f"ono99:{PROJECT['version']}"
METRICS_PORT = 9464  # ONO99_METRICS_PORT's default
# SHA-256 of https://www.apache.org/licenses/LICENSE-2.0.txt
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


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


def _compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_compose_builds_the_one_image_its_services_run():
    services = {name: s for name, s in _compose()["services"].items() if name != "redis"}
    assert {"http", "grpc", "timers", "webhooks"} <= set(services)
    for name, service in services.items():
        # A service with an image but no build would make Compose pull it from a registry.
        assert "build" in service, f"{name}: no build"
        assert service["build"] == services["http"]["build"], f"{name}: another build"
        assert service["image"] == IMAGE, name
    build = services["http"]["build"]
    assert (DEPLOY / build["context"]).resolve() == ROOT
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
    assert build["args"]["VERSION"] == PROJECT["version"]


def test_every_compose_service_restarts():
    for name, service in _compose()["services"].items():
        assert service.get("restart") in ("always", "unless-stopped"), name


def _port_mapping(entry: str | int | dict) -> tuple[str, set[int], set[int]]:
    """A ``ports`` entry of a compose file, short or long syntax, as (host address,
    published ports, container ports); no address is every interface ("")."""

    def ports(spec: str | int | None) -> set[int]:
        if spec in (None, ""):
            return set()  # published on a port Docker picks
        first, _, last = str(spec).partition("-")
        return set(range(int(first), int(last or first) + 1))

    if isinstance(entry, dict):
        return entry.get("host_ip", ""), ports(entry.get("published")), ports(entry["target"])
    *host, container = str(entry).split("/")[0].rsplit(":", 2)
    address, published = ["", "", *host][-2:]
    return address.strip("[]"), ports(published), ports(container)


def test_port_mappings_are_read_as_compose_writes_them():
    assert _port_mapping("9464") == ("", set(), {9464})
    assert _port_mapping("9464:9464") == ("", {9464}, {9464})
    assert _port_mapping("127.0.0.1:9464:9464/tcp") == ("127.0.0.1", {9464}, {9464})
    assert _port_mapping("[::1]:9460-9470:9460-9470")[0:2] == ("::1", set(range(9460, 9471)))
    assert _port_mapping("::1:9464:9464") == ("::1", {9464}, {9464})
    assert _port_mapping("127.0.0.1::9464") == ("127.0.0.1", set(), {9464})
    assert _port_mapping({"target": 9464, "published": "9464"}) == ("", {9464}, {9464})


def test_no_service_publishes_the_metrics_port_beyond_this_host():
    for name, service in _compose()["services"].items():
        for entry in service.get("ports", []):
            address, published, container = _port_mapping(entry)
            if METRICS_PORT in published | container:
                assert address in ("127.0.0.1", "::1"), f"{name} publishes {entry!r} on every interface"


def _dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, (INSTRUCTION, arguments), continuation lines joined."""
    instructions, line = [], ""
    for raw in (DEPLOY / "Dockerfile").read_text().splitlines():
        if raw.strip().startswith("#"):
            continue
        line += raw.rstrip()
        if line.endswith("\\"):
            line = line[:-1] + " "
            continue
        if line.strip():
            name, _, args = line.strip().partition(" ")
            instructions.append((name.upper(), args.strip()))
        line = ""
    return instructions


def _labels() -> dict[str, str]:
    return dict(pair.split("=", 1) for name, args in _dockerfile() if name == "LABEL" for pair in shlex.split(args))


def test_the_image_carries_oci_labels_with_the_version_of_pyproject():
    instructions = _dockerfile()
    last_from = max(i for i, (name, _) in enumerate(instructions) if name == "FROM")
    # An ARG is only seen in the stage that declares it: the final one, before the labels.
    arg = next(i for i, (name, args) in enumerate(instructions) if name == "ARG" and args.startswith("VERSION="))
    label = next(i for i, (name, _) in enumerate(instructions) if name == "LABEL")
    assert last_from < arg < label
    assert instructions[arg][1] == f"VERSION={PROJECT['version']}"
    labels = _labels()
    assert labels["org.opencontainers.image.version"] in ("${VERSION}", "$VERSION")
    assert labels["org.opencontainers.image.title"] == PROJECT["name"]
    assert labels["org.opencontainers.image.description"] == PROJECT["description"]
    assert labels["org.opencontainers.image.licenses"] == PROJECT["license"] == "Apache-2.0"
    base = instructions[last_from][1].split()[0]
    assert labels["org.opencontainers.image.base.name"] in (base, f"docker.io/library/{base}")


def test_the_kubernetes_images_and_the_build_command_are_the_version_of_pyproject():
    def images(node):
        if isinstance(node, dict):
            yield from ([node["image"]] if isinstance(node.get("image"), str) else [])
            for value in node.values():
                yield from images(value)
        elif isinstance(node, list):
            for value in node:
                yield from images(value)

    manifests = sorted((DEPLOY / "k8s").glob("*.yaml"))
    k8s = [image for m in manifests for d in yaml.safe_load_all(m.read_text()) for image in images(d)]
    assert k8s and set(k8s) == {IMAGE}
    # The build command in the Dockerfile's header.
    assert set(re.findall(r"-t (ono99:\S+)", (DEPLOY / "Dockerfile").read_text())) == {IMAGE}


def test_the_license_is_the_apache_2_text_in_full_and_declared():
    text = (ROOT / "LICENSE").read_text()
    # The appendix's notice may name the project; the rest is the standard text word for word.
    standard, notices = re.subn(r"^   Copyright .*$", "   Copyright [yyyy] [name of copyright owner]", text, flags=re.M)
    assert notices == 1
    assert hashlib.sha256(standard.encode()).hexdigest() == APACHE_2_SHA256
    assert PROJECT["license"] == "Apache-2.0" and "LICENSE" in PROJECT["license-files"]


def _dockerignore(text: str) -> list[tuple[bool, re.Pattern[str]]]:
    """A .dockerignore as Docker reads it (moby/patternmatcher): lines starting with # are
    comments, a path is cleaned and made relative to the context, ``**`` is any number of
    directories, ``*`` and ``?`` stay within one name, [...] is a character class, and a
    leading ! makes an exception. (is an exception, regex) for each line."""
    patterns = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        line = line.strip()
        exception = line.startswith("!")
        pattern = posixpath.normpath(line[1:].strip() if exception else line).lstrip("/")
        regex, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**", i):
                i += 2 + pattern.startswith("/", i + 2)
                regex += ".*" if i == len(pattern) else "(.*/)?"
                continue
            char = pattern[i]
            if char == "\\" and i + 1 < len(pattern):
                i += 1
                regex += re.escape(pattern[i])
            else:
                regex += {"*": "[^/]*", "?": "[^/]"}.get(char, "\\" + char if char in ".+()|{}$" else char)
            i += 1
        patterns.append((exception, re.compile(regex)))
    return patterns


def _ignored(path: str, patterns: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Whether Docker leaves ``path`` out of the context: the last pattern that matches it or
    one of its parent directories decides."""
    parts = path.split("/")
    candidates = [path] + ["/".join(parts[:n]) for n in range(1, len(parts))]
    ignored = False
    for exception, regex in patterns:
        if any(regex.fullmatch(candidate) for candidate in candidates):
            ignored = not exception
    return ignored


def test_the_dockerignore_reading_follows_dockers_documented_examples():
    def ignores(lines: list[str], *paths: str) -> list[bool]:
        return [_ignored(path, _dockerignore("\n".join(lines))) for path in paths]

    assert ignores(["# comment", "*/temp*"], "somedir/temporary.txt", "somedir/temp/x", "temp", "a/b/temp") == [
        True, True, False, False]
    assert ignores(["*/*/temp*"], "somedir/subdir/temporary.txt", "somedir/temporary.txt") == [True, False]
    assert ignores(["temp?"], "tempa", "temp", "tempab") == [True, False, False]
    assert ignores(["**/*.go"], "a.go", "x/y/b.go", "x/y/b.gone") == [True, True, False]
    assert ignores(["*.md", "!README*.md", "README-secret.md"], "a.md", "README.md", "README-secret.md") == [
        True, False, True]
    assert ignores(["/*", "!engine", "**/__pycache__"], "engine/a.py", "engine/__pycache__/a.pyc", ".git/HEAD") == [
        False, True, True]


def _copied_from_the_context() -> list[str]:
    """The sources of the Dockerfile's COPY and ADD lines that take from the build
    context (not from another stage)."""
    sources = []
    for name, args in _dockerfile():
        if name in ("COPY", "ADD"):
            words = json.loads(args) if args.startswith("[") else shlex.split(args)
            if not any(word.startswith("--from") for word in words):
                sources += [w for w in words if not w.startswith("--")][:-1]
    return sources


def test_the_build_context_holds_what_the_dockerfile_copies_and_nothing_else():
    patterns = _dockerignore((ROOT / ".dockerignore").read_text())
    sources = _copied_from_the_context()
    assert sources
    copied = set()
    for source in sources:
        matches = sorted(ROOT.glob(source))
        assert matches, f"COPY {source}: not in the repository"
        for match in matches:
            copied.add(match.relative_to(ROOT).parts[0])
            files = [match] if match.is_file() else [f for f in match.rglob("*") if f.is_file()]
            for file in files:
                path = file.relative_to(ROOT).as_posix()
                # Bytecode is what the image makes of the sources itself, and a checkout's
                # compiled engine (python3 dev.py build-engine) is not the image's.
                generated = "__pycache__" in path.split("/") or path.endswith(".so") or path == "engine/compiled.json"
                assert _ignored(path, patterns) == generated, path
    for entry in ROOT.iterdir():
        if entry.name not in copied:
            assert _ignored(entry.name, patterns), f"{entry.name} is sent to the build"
    for path in (".venv/bin/python", ".git/HEAD", "tests/test_deploy.py", "docs/OPERATIONS.md", "benchmarks/x.py",
                 ".mypy_cache/x", ".ruff_cache/x", ".pytest_cache/x", ".hypothesis/x", "engine/__pycache__/x.pyc",
                 "service/x.pyc", "engine/game.cpython-311-x86_64-linux-gnu.so", "engine/bots/x.so",
                 "engine/compiled.json"):
        assert _ignored(path, patterns), path


def _image_command(target: str) -> list[str]:
    """ENTRYPOINT + the given CMD, as the Dockerfile's exec form says."""
    text = (DEPLOY / "Dockerfile").read_text()
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M).group(1))
    assert json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1)) == ["http"]
    return [*entrypoint, target]


@pytest.mark.parametrize("target", ["http", "grpc", "timers", "webhooks"])
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
            """The workers that have counted a created game (each worker counts in a file
            of its own; a /healthz of the readiness wait does not count here)."""
            from prometheus_client.mmap_dict import MmapedDict

            return {path.name for path in tmp_path.glob("counter_*.db")
                    if any('"/v1/games"' in key for key, *_ in MmapedDict.read_all_values_from_file(str(path)))}

        # Concurrent requests on new connections, until both workers have answered (the
        # kernel, not the test, decides which worker accepts a connection).
        states = []
        deadline = time.monotonic() + 30
        with ThreadPoolExecutor(8) as pool:
            while len(workers_seen()) < 2 and time.monotonic() < deadline:
                states += pool.map(new_game, range(len(states), len(states) + 16))
        assert len(workers_seen()) == 2, "only one worker answered"
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


def test_the_wheel_the_image_installs_holds_every_module_and_asset(tmp_path):
    """deploy/Dockerfile installs the project as a wheel (``pip install .``), not from the
    checkout: every module of engine/ and service/ and the /docs page's assets must be in it,
    and the compiled engine's extensions where the checkout has them (the image's build
    stage compiles the engine first): installed from the wheel alone, every module
    pyproject.toml lists runs compiled (dev.py check-engine's judgement, as the image's
    build makes it), and without the extensions every one runs interpreted."""
    # Built from a copy of what the Dockerfile copies, as the image's build is: a build/
    # left in the checkout by an earlier in-tree build would hand the wheel its old files.
    source = tmp_path / "source"
    source.mkdir()
    for name in _copied_from_the_context():
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    built = subprocess.run([str(BIN / "python"), "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                            "--wheel-dir", str(tmp_path), "."], cwd=source, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = tmp_path.glob("ono99-*.whl")
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    extensions = [*ROOT.glob("engine/**/*.so"), *ROOT.glob("engine/**/*.pyd")]
    wanted = {p.relative_to(ROOT).as_posix() for p in [*ROOT.glob("engine/**/*.py"), *ROOT.glob("service/**/*.py"),
                                                        *ROOT.glob("service/http_api/docs-assets/*"), *extensions]
              if "__pycache__" not in p.parts}
    assert wanted - names == set()
    import dev

    every = dev.compiled_names()
    compiled = (ROOT / "engine" / "compiled.json").exists()
    assert bool(extensions) == compiled
    for kept in (True, False):  # the wheel as built; the same without its extensions
        installed = tmp_path / f"installed-{kept}"
        zipfile.ZipFile(wheel).extractall(installed, [n for n in names if kept or not n.endswith((".so", ".pyd"))])
        # The wheel's copy is the one imported, not the checkout's (the venv's editable install).
        found = subprocess.run([str(BIN / "python"), "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                                "import engine; print(engine.__file__)", str(installed)],
                               capture_output=True, text=True, timeout=60)
        assert Path(found.stdout.strip()).is_relative_to(installed), found.stdout + found.stderr
        assert dev.uncompiled(str(BIN / "python"), str(installed)) == ([] if compiled and kept else every)


def test_the_image_compiles_its_engine_as_a_checkout_does():
    """The image's build stage runs dev.py's own build (the same source, the locked mypy),
    installs the wheel that holds it, and fails unless the installed copy imports every
    compiled module as one (the runtime stage copies that)."""
    runs = " && ".join(args for name, args in _dockerfile() if name == "RUN")
    assert re.search(r"python dev\.py build-engine\s+&& /opt/ono99/bin/pip install .*--no-deps \.\s+"
                     r"&& python dev\.py check-engine /opt/ono99/bin/python(?: |$)", runs), runs
    assert {"dev.py", "requirements-test.lock", "engine", "service"} <= set(_copied_from_the_context())


def test_check_engine_passes_a_compiled_interpreter_and_names_what_runs_interpreted(tmp_path):
    """dev.py check-engine, as the image's build runs it: exit 0 for this venv's engine
    where the checkout is compiled; 1, naming the modules, where it is not."""
    import dev

    if not (ROOT / "engine" / "compiled.json").exists():
        pytest.skip("the checkout's engine is interpreted (no C compiler)")
    passed = run(sys.executable, "dev.py", "check-engine", str(BIN / "python"))
    assert passed.returncode == 0, passed.stdout + passed.stderr
    # The same interpreter, with a copy of the engine's source ahead of the checkout's.
    shutil.copytree(ROOT / "engine", tmp_path / "engine", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    assert dev.uncompiled(str(BIN / "python"), str(tmp_path)) == dev.compiled_names()
    refused = run(sys.executable, "dev.py", "check-engine", str(BIN / "python"), "extra")
    assert refused.returncode == 2 and "usage" in refused.stderr
