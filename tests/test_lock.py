"""The locks (requirements.lock, requirements-test.lock) agree with pyproject.toml and with
the virtual environment the tests run in: every dependency is pinned exactly with its
hashes, so grpcio and everything else the servers rely on change only with a new lock
(python3 dev.py lock)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
RUNTIME_LOCK, TEST_LOCK = ROOT / "requirements.lock", ROOT / "requirements-test.lock"


def read_lock(path: Path) -> dict[str, tuple[Requirement, list[str]]]:
    """Each entry of a hash-pinned requirements file: name -> (requirement, hashes)."""
    entries: dict[str, tuple[Requirement, list[str]]] = {}
    text = re.sub(r"\\\n", " ", path.read_text())  # join continuation lines
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        hashes = re.findall(r"--hash=(sha256:[0-9a-f]{64})", line)
        requirement = Requirement(re.sub(r"--hash=\S+", "", line).strip())
        name = canonicalize_name(requirement.name)
        assert name not in entries, f"{path.name}: {name} twice"
        entries[name] = (requirement, hashes)
    return entries


def applies(requirement: Requirement, extras: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether a requirement's marker holds here (for the given extras of its package)."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({**default_environment(), "extra": extra}) for extra in extras or {""})


def pinned(requirement: Requirement) -> Version:
    (spec,) = requirement.specifier
    assert spec.operator == "==", f"{requirement} is not pinned exactly"
    return Version(spec.version)


def closure(roots: list[str]) -> set[str]:
    """The installed distributions that ``roots`` (requirement strings) need here, transitively."""
    seen: set[tuple[str, frozenset[str]]] = set()
    todo: list[tuple[Requirement, set[str]]] = [(Requirement(r), set()) for r in roots]
    while todo:
        requirement, extras = todo.pop()
        name = canonicalize_name(requirement.name)
        if not applies(requirement, extras) or (name, frozenset(requirement.extras)) in seen:
            continue
        seen.add((name, frozenset(requirement.extras)))
        todo += [(Requirement(r), set(requirement.extras)) for r in metadata.requires(name) or ()]
    return {name for name, _ in seen}


@pytest.mark.parametrize("lock, dependencies", [
    (RUNTIME_LOCK, PROJECT["dependencies"]),
    (TEST_LOCK, PROJECT["dependencies"] + PROJECT["optional-dependencies"]["test"]),
], ids=["runtime", "test"])
def test_every_dependency_of_pyproject_is_pinned_in_the_lock_with_hashes(lock, dependencies):
    entries = read_lock(lock)
    for dependency in map(Requirement, dependencies):
        name = canonicalize_name(dependency.name)
        assert name in entries, f"{name} ({dependency}) is missing from {lock.name}: run python3 dev.py lock"
        requirement, _ = entries[name]
        assert dependency.specifier.contains(pinned(requirement), prereleases=True), (
            f"{lock.name} pins {requirement}, outside pyproject's {dependency}: run python3 dev.py lock")
    # What those dependencies need in turn (as installed here), extras such as redis[hiredis] included.
    missing = sorted(closure(dependencies) - set(entries))
    assert missing == [], f"{lock.name} lacks {missing}: run python3 dev.py lock"
    for name, (requirement, hashes) in entries.items():
        pinned(requirement)
        assert hashes, f"{lock.name}: {name} has no hash"


def test_the_test_lock_pins_the_runtime_lock_at_the_same_versions():
    runtime, test = read_lock(RUNTIME_LOCK), read_lock(TEST_LOCK)
    for name, (requirement, hashes) in runtime.items():
        assert name in test, f"{name} is in {RUNTIME_LOCK.name} only"
        assert str(test[name][0]) == str(requirement), (test[name][0], requirement)
        assert set(test[name][1]) == set(hashes), f"{name}: the locks have different hashes"


def test_the_installed_versions_are_the_locked_ones():
    """Holds in the venv `python3 dev.py test` installs from requirements-test.lock."""
    wrong = {}
    for name, (requirement, _) in read_lock(TEST_LOCK).items():
        if not applies(requirement):
            continue
        try:
            installed = Version(metadata.version(name))
        except metadata.PackageNotFoundError:
            installed = None
        if installed != pinned(requirement):
            wrong[name] = f"locked {pinned(requirement)}, installed {installed}"
    assert wrong == {}, f"the venv differs from {TEST_LOCK.name} (python3 dev.py test reinstalls it): {wrong}"


def test_the_grpc_packages_are_locked():
    runtime = read_lock(RUNTIME_LOCK)
    for name in ("grpcio", "grpcio-status", "grpcio-health-checking", "grpcio-reflection", "protobuf"):
        assert metadata.version(name) == str(pinned(runtime[name][0])), name


def test_the_image_installs_from_the_runtime_lock():
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    assert "COPY requirements.lock ./" in dockerfile
    assert re.search(r"pip install [^\n]*--require-hashes -r requirements\.lock", dockerfile)
    assert re.search(r"pip install [^\n]*--no-deps \.\s", dockerfile)  # the project, with none of its dependencies


def test_dev_py_installs_from_the_lock_again_when_the_lock_or_pyproject_changes(tmp_path, monkeypatch):
    import dev

    for name in ("pyproject.toml", RUNTIME_LOCK.name, TEST_LOCK.name):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    monkeypatch.setattr(dev, "ROOT", tmp_path)
    monkeypatch.setattr(dev, "VENV", venv)
    monkeypatch.setattr(dev, "PY", venv / "bin" / "python")
    monkeypatch.setattr(dev, "LOCKS", {"": tmp_path / RUNTIME_LOCK.name, "test": tmp_path / TEST_LOCK.name})
    ran: list[list[str]] = []
    monkeypatch.setattr(dev.subprocess, "run", lambda cmd, **kw: ran.append(cmd))

    def installs(extras: str) -> list[list[str]]:
        ran.clear()
        dev._ensure_venv(extras)
        return [cmd[cmd.index("install") + 1:] for cmd in ran]

    from_test_lock = [["--quiet", "--disable-pip-version-check", "--upgrade", "pip"],
                      ["--quiet", "--disable-pip-version-check", "--require-hashes", "-r", str(dev.LOCKS["test"])],
                      ["--quiet", "--disable-pip-version-check", "--no-deps", "-e", "."]]
    assert installs("test") == from_test_lock
    assert installs("test") == []
    assert installs("") == []  # the test lock holds the runtime's pins
    with dev.LOCKS["test"].open("a") as lock:
        lock.write("\n")
    assert installs("test") == from_test_lock
    assert installs("test") == []
    with (tmp_path / "pyproject.toml").open("a") as pyproject:
        pyproject.write("\n")
    assert installs("")[1] == ["--quiet", "--disable-pip-version-check", "--require-hashes", "-r",
                               str(dev.LOCKS[""])]
    assert installs("") == []
