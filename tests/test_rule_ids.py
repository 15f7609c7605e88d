"""Every rule id in the repository's docs/RULES.md is cited by a test, and tests cite
only ids that exist there. docs/RULES.md is the project's own statement of the rules,
its decisions included."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "docs" / "RULES.md"
DEFINED = re.compile(r"\*\*(R-[A-Z0-9]+(?:-[A-Z0-9]+)*)")
CITED = re.compile(r"""mark\.rules\(([^)]*)\)""")


def defined_ids() -> set[str]:
    return set(DEFINED.findall(RULES.read_text()))


def cited_ids() -> set[str]:
    cited: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        for args in CITED.findall(path.read_text()):
            cited.update(re.findall(r"R-[A-Z0-9]+(?:-[A-Z0-9]+)*", args))
    return cited


def test_every_rule_id_is_cited_by_a_test():
    defined = defined_ids()
    assert len(defined) > 40
    missing = sorted(defined - cited_ids())
    assert not missing, f"rule ids no test cites: {missing}"


def test_tests_cite_only_rule_ids_that_exist():
    unknown = sorted(cited_ids() - defined_ids())
    assert not unknown, f"cited ids that RULES.md does not define: {unknown}"
