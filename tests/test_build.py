"""The engine's two builds (pyproject.toml, [tool.ono99] compiled): mypyc's compiled
modules, built by ``python3 dev.py build-engine`` (and by serve and test), or the same
source interpreted. The engine's tests run on both (dev.py test)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import engine
import engine.game
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT))
import dev


def test_a_compiled_engine_is_built_from_the_source_beside_it():
    """A compiled module older than its source would run other rules than the source
    says: its build records each module's digest, which must be the source's now."""
    if engine.BUILD == "interpreted":
        assert engine.game.__file__.endswith(".py")
        return
    recorded = json.loads((ROOT / "engine" / "compiled.json").read_text())
    assert recorded == dev.sources_digest(), "the compiled engine is stale: run python3 dev.py build-engine"
    assert not engine.game.__file__.endswith(".py")


def test_every_module_to_compile_is_an_engine_module():
    modules = dev.compiled_modules()
    assert modules and all(m.startswith("engine/") and (ROOT / m).is_file() for m in modules)


def test_ono99_version_says_which_build_runs():
    done = subprocess.run([sys.executable, "-m", "service.cli", "--version"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("ono99 ") and f"(engine: {engine.BUILD})" in done.stdout


def test_a_failed_build_leaves_the_engine_interpreted_not_stale(tmp_path, monkeypatch):
    """A real mypyc run in a copy of the engine: built once, then a source mypyc refuses
    (a type error) is built again. The build fails, dev.py says the engine runs
    interpreted and exits 0 (the build is optional), and no compiled module older than
    its source is left to be imported instead of it."""
    import shutil

    shutil.copytree(ROOT / "engine", tmp_path / "engine",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "compiled.json"))
    monkeypatch.setattr(dev, "ROOT", tmp_path)
    monkeypatch.setattr(dev, "COMPILED", tmp_path / "engine" / "compiled.json")
    monkeypatch.setattr(dev, "_ensure_venv", lambda extras: None)  # this test's venv is the one to build with
    monkeypatch.setattr(dev, "PY", Path(sys.executable))  # (a copy of the checkout has no .venv of its own)
    monkeypatch.setattr(dev, "compiled_modules", lambda: ["engine/bounds.py"])
    monkeypatch.setenv("ONO99_ENGINE_BUILD", "compiled")
    if dev._c_compiler() is None:
        return  # nothing to compile with: the interpreted branch is the only one
    assert dev.build_engine() == 0 and list((tmp_path / "engine").glob("bounds*.so"))
    with (tmp_path / "engine" / "bounds.py").open("a") as source:
        source.write('\nREFUSED: int = "not an int"\n')
    assert dev.build_engine() == 0
    assert not list((tmp_path / "engine").rglob("*.so")) and not (tmp_path / "engine" / "compiled.json").exists()
