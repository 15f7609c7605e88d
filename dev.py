#!/usr/bin/env python3
"""Set-up and entry points for a fresh machine with nothing but Python 3.11+.

    python3 dev.py serve   # install into .venv, run the service on its embedded defaults
    python3 dev.py test    # install into .venv with the test tools, run lint, types and tests
    python3 dev.py lock    # resolve the locks again from pyproject.toml (uv); options go to uv,
                           # e.g. --upgrade-package grpcio, or --upgrade for every package

Dependencies are installed from the hash-pinned locks, requirements.lock (runtime) and
requirements-test.lock (runtime and the test extras), then the project itself without
dependencies. The virtual environment is brought in line again whenever pyproject.toml or
the lock it was installed from changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"


# The lock of each set of extras; the test lock pins the runtime's packages to the same
# versions (tests/test_lock.py), so a venv installed from it serves as well.
LOCKS = {"": ROOT / "requirements.lock", "test": ROOT / "requirements-test.lock"}


def _stamp(extras: str) -> tuple[Path, str]:
    """The stamp file of ``extras`` and what it must hold: the digest of pyproject.toml and the lock."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    digest.update(LOCKS[extras].read_bytes())
    return VENV / f".installed-{extras or 'base'}", digest.hexdigest()


def _ensure_venv(extras: str) -> None:
    if PY.exists() and any(path.exists() and path.read_text() == want
                           for path, want in map(_stamp, {extras, "test"})):
        return
    if not PY.exists():
        print(f"dev.py: creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    for other in LOCKS:
        _stamp(other)[0].unlink(missing_ok=True)
    lock = LOCKS[extras]
    print(f"dev.py: installing {lock.name} and the project into {VENV}", flush=True)
    pip = [str(PY), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "--require-hashes", "-r", str(lock)], check=True, cwd=ROOT)
    subprocess.run([*pip, "--no-deps", "-e", "."], check=True, cwd=ROOT)
    path, want = _stamp(extras)
    path.write_text(want)


def _run(*cmd: str) -> int:
    print("dev.py: $", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode


def test(args: list[str]) -> int:
    """Lint, type-check and run the whole test suite."""
    _ensure_venv("test")
    for cmd in ([str(BIN / "ruff"), "check", "engine", "service", "tests", "benchmarks", "dev.py"],
                [str(BIN / "mypy")]):
        if _run(*cmd) != 0:
            return 1
    workers = os.environ.get("TEST_WORKERS", "2")
    return _run(str(PY), "-m", "pytest", "-n", workers, *args)


def serve(args: list[str]) -> int:
    """Run the service on its embedded defaults."""
    _ensure_venv("")
    os.execv(str(BIN / "ono99"), [str(BIN / "ono99"), "serve", *args])


def lock(args: list[str]) -> int:
    """Resolve requirements-test.lock, then requirements.lock within it, from pyproject.toml.

    Pins already in a lock are kept unless uv's --upgrade or --upgrade-package says otherwise.
    """
    _ensure_venv("test")
    compile_ = [str(BIN / "uv"), "pip", "compile", "pyproject.toml", "--quiet", "--universal",
                "--python-version", "3.11", "--generate-hashes", *args]
    os.environ["UV_CUSTOM_COMPILE_COMMAND"] = "python3 dev.py lock"  # the command the locks' header names
    test_lock, runtime_lock = (LOCKS[k].name for k in ("test", ""))
    if _run(*compile_, "--extra", "test", "--output-file", test_lock) != 0:
        return 1
    return _run(*compile_, "--constraint", test_lock, "--output-file", runtime_lock)


def main() -> int:
    commands = {"test": test, "serve": serve, "lock": lock}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(__doc__)
        return 2
    return commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
