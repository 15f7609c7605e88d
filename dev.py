#!/usr/bin/env python3
"""Set-up and entry points for a fresh machine with nothing but Python 3.11+.

    python3 dev.py serve   # install into .venv, build the engine, run the service on its embedded defaults
    python3 dev.py test    # install into .venv with the test tools, build the engine, run lint, types and
                           # tests (the engine's tests once more on the interpreted engine)
    python3 dev.py build-engine   # compile the engine's modules with mypyc (needs a C compiler)
    python3 dev.py check-engine PYTHON   # fail unless PYTHON imports every one of them compiled
    python3 dev.py lock    # resolve the locks again from pyproject.toml (uv); options go to uv,
                           # e.g. --upgrade-package grpcio, or --upgrade for every package

Dependencies are installed from the hash-pinned locks, requirements.lock (runtime) and
requirements-test.lock (runtime and the test extras), then the project itself without
dependencies. The virtual environment is brought in line again whenever pyproject.toml or
the lock it was installed from changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
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


# The compiled engine's record: the digest of each compiled module's source, so a build
# older than its source is found (tests/test_build.py) and built again.
COMPILED = ROOT / "engine" / "compiled.json"
# The engine's own tests, run once more on the interpreted engine when it is compiled.
ENGINE_TESTS = ["tests/test_codec.py", "tests/test_special_cards.py", "tests/test_rule_ids.py",
                "tests/test_random_play.py", "tests/test_scoring.py", "tests/test_bots.py", "tests/test_golden.py",
                "tests/test_rules_divergences.py", "tests/test_state_fields.py", "tests/test_leaving.py",
                "tests/test_fairness.py", "tests/test_records.py", "tests/test_build.py"]
_MYPYC_SETUP = ("import sys; from setuptools import setup; from mypyc.build import mypycify; "
                "setup(name='ono99-engine', ext_modules=mypycify(sys.argv[1:], group_name='engine.native', "
                "opt_level='3'), script_args=['build_ext', '--inplace', '--quiet'])")


def compiled_modules() -> list[str]:
    """The engine modules mypyc compiles (pyproject.toml, [tool.ono99] compiled)."""
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ono99"]["compiled"])


def compiled_names() -> list[str]:
    """The modules compiled_modules() lists, by their import names (engine.game, ...)."""
    return [module.removesuffix(".py").replace("/", ".") for module in compiled_modules()]


def sources_digest() -> dict[str, str]:
    """What a compiled build is made from: SHA-256 of every engine module's source (the
    compiled ones, and the interpreted ones whose classes they compile against), and of
    the lock that pins the mypy compiling them."""
    found = {p.relative_to(ROOT).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted((ROOT / "engine").rglob("*.py")) if "__pycache__" not in p.parts}
    return {**found, LOCKS["test"].name: hashlib.sha256(LOCKS["test"].read_bytes()).hexdigest()}


# What a compiled build writes into engine/: its extensions (.so; .pyd on Windows) and its record.
_EXTENSIONS = ("*.so", "*.pyd")
_BUILT = (*_EXTENSIONS, COMPILED.name)


def _compiled_files(root: Path) -> list[Path]:
    return sorted(path for pattern in _EXTENSIONS for path in (root / "engine").rglob(pattern))


def _c_compiler() -> str | None:
    words = shlex.split(sysconfig.get_config_var("CC") or "cc")
    return shutil.which(words[0]) if words else None


def build_engine(args: list[str] | None = None) -> int:
    """Compile the engine's modules with mypyc into engine/ (C extensions beside their
    source, which Python imports first), unless the build there is of the same source.
    Without a C compiler, or with ONO99_ENGINE_BUILD=interpreted, the engine stays
    interpreted (any compiled files are removed). Exit status 0 either way."""
    _ensure_venv("test")
    wanted = os.environ.get("ONO99_ENGINE_BUILD", "compiled")
    if wanted == "interpreted" or _c_compiler() is None:
        for path in _compiled_files(ROOT):
            path.unlink()
        COMPILED.unlink(missing_ok=True)
        reason = "ONO99_ENGINE_BUILD=interpreted" if wanted == "interpreted" else "no C compiler found"
        print(f"dev.py: the engine runs interpreted ({reason})", flush=True)
        return 0
    digest = sources_digest()
    if COMPILED.exists() and json.loads(COMPILED.read_text()) == digest and _compiled_files(ROOT):
        return 0
    print("dev.py: compiling the engine with mypyc", flush=True)
    with tempfile.TemporaryDirectory(prefix="ono99-mypyc-") as work:
        shutil.copytree(ROOT / "engine", Path(work) / "engine",
                        ignore=shutil.ignore_patterns("__pycache__", *_BUILT))
        done = subprocess.run([str(PY), "-c", _MYPYC_SETUP, *compiled_modules()], cwd=work,
                              capture_output=True, text=True)
        for path in _compiled_files(ROOT):
            path.unlink()  # whatever happens next, no build older than the source stays
        COMPILED.unlink(missing_ok=True)
        if done.returncode != 0:
            print(done.stdout[-3000:] + done.stderr[-3000:], file=sys.stderr)
            print("dev.py: mypyc failed (above); the engine runs interpreted", file=sys.stderr)
            return 0
        for path in _compiled_files(Path(work)):
            shutil.copy2(path, ROOT / path.relative_to(work))
    COMPILED.write_text(json.dumps(digest, indent=1) + "\n")
    return 0


_UNCOMPILED = """import importlib, sys
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
for name in sys.argv[2:]:
    if importlib.import_module(name).__file__.endswith(".py"):
        print(name)
"""


def uncompiled(python: str, path: str = "") -> list[str]:
    """The modules pyproject.toml lists as compiled that ``python`` imports from their
    source: isolated (-I), so not from the working directory; ``path`` first on its path
    when given. Raises RuntimeError when one does not import at all."""
    found = subprocess.run([python, "-I", "-c", _UNCOMPILED, path, *compiled_names()], capture_output=True,
                           text=True)
    if found.returncode != 0:
        raise RuntimeError(f"{python} could not import the engine:\n{found.stderr}")
    return found.stdout.split()


def check_engine(args: list[str]) -> int:
    """Exit 1 naming the engine modules the interpreter ``args[0]`` imports uncompiled
    (deploy/Dockerfile runs it on the image's installed copy)."""
    if len(args) != 1:
        print("usage: python3 dev.py check-engine PYTHON", file=sys.stderr)
        return 2
    left = uncompiled(args[0])
    if left:
        print(f"dev.py: {args[0]} runs these engine modules interpreted: {', '.join(left)}", file=sys.stderr)
        return 1
    return 0


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
    if build_engine() != 0:
        return 1
    workers = os.environ.get("TEST_WORKERS", "3")  # many tests wait on servers: 3 keep 2 cores busy
    code = _run(str(PY), "-m", "pytest", "-n", workers, *args)
    if code != 0 or args or not COMPILED.exists():
        return code
    # The same engine tests on the interpreted engine: a copy of the checkout without the
    # compiled files (its root comes first on the tests' import path).
    print("dev.py: the engine's tests again, on the interpreted engine", flush=True)
    with tempfile.TemporaryDirectory(prefix="ono99-interpreted-") as work:
        copy = Path(work) / "checkout"
        shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(
            ".git", ".venv", "__pycache__", ".*_cache", ".hypothesis", *_BUILT))
        return subprocess.run([str(PY), "-m", "pytest", "-n", workers, "-p", "no:cacheprovider", *ENGINE_TESTS],
                              cwd=copy).returncode


def serve(args: list[str]) -> int:
    """Run the service on its embedded defaults, on the compiled engine where a C compiler is."""
    build_engine()
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
    commands = {"test": test, "serve": serve, "lock": lock, "build-engine": build_engine,
                "check-engine": check_engine}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(__doc__)
        return 2
    return commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
