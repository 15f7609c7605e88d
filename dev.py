#!/usr/bin/env python3
"""Set-up and entry points for a fresh machine with nothing but Python 3.11+.

    python3 dev.py serve   # install into .venv, run the service on its embedded defaults
    python3 dev.py test    # install into .venv with the test tools, run lint, types and tests

The virtual environment is (re)built whenever pyproject.toml changes.
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


def _ensure_venv(extras: str) -> None:
    stamp = VENV / f".installed-{extras or 'base'}"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == want and PY.exists():
        return
    if not PY.exists():
        print(f"dev.py: creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    target = f".[{extras}]" if extras else "."
    print(f"dev.py: installing {target} into {VENV}", flush=True)
    subprocess.run([str(PY), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
    subprocess.run([str(PY), "-m", "pip", "install", "--quiet", "-e", target], check=True, cwd=ROOT)
    stamp.write_text(want)


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


def main() -> int:
    commands = {"test": test, "serve": serve}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(__doc__)
        return 2
    return commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
