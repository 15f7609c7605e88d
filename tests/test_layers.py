"""The import rules between layers: the engine is pure (nothing of the service, no I/O
libraries); the two transports never import each other, nor the session store (they
get everything through the application layer)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def imports_of(path: Path) -> set[str]:
    """Absolute module names a file imports (relative imports resolved)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = f"{base}.{node.module}" if node.level and node.module else (node.module or base)
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def files(folder: str) -> list[Path]:
    return [p for p in (ROOT / folder).rglob("*.py") if "gen" not in p.parts]


FORBIDDEN = {
    "engine": ("service", "flask", "redis", "grpc", "gunicorn", "gevent", "socket", "requests", "prometheus_client"),
    "service/http_api": ("service.grpc_api", "service.store", "grpc", "redis"),
    "service/grpc_api": ("service.http_api", "service.store", "flask", "redis"),
}


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_it_must_not(folder):
    broken = {}
    for path in files(folder):
        bad = sorted(m for m in imports_of(path) if m.split(".")[0] in FORBIDDEN[folder]
                     or any(m == f or m.startswith(f + ".") for f in FORBIDDEN[folder]))
        if bad:
            broken[str(path.relative_to(ROOT))] = bad
    assert not broken


def test_the_rule_checker_sees_relative_imports():
    transport = ROOT / "service" / "grpc_api" / "server.py"
    assert "service.application" in imports_of(transport)
