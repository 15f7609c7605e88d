"""The engine's two builds (pyproject.toml, [tool.ono99] compiled): mypyc's compiled
modules, built by ``python3 dev.py build-engine`` (and by serve and test), or the same
source interpreted. The engine's tests run on both (dev.py test)."""

from __future__ import annotations

import json
import subprocess
import sys

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
