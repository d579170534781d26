"""Documentation that must not drift from the code: the catalog of wrong kernels (docs/cases.md) against
tests/cases/, and the input distributions the agent's prompt lists against those the worker offers."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import ROOT

CATALOG = ROOT / "docs" / "cases.md"
CASE_KERNELS = ROOT / "tests" / "cases" / "kernels"
TESTS = ROOT / "tests"


def _ticked(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", text)


def _resolve(name: str) -> Path:
    """A file the catalog names: a path with a folder is from the repository root, a bare ``test_*.py`` a test
    module, any other bare name a case kernel."""
    if "/" in name:
        return ROOT / name
    return TESTS / name if name.startswith("test_") else CASE_KERNELS / name


def test_every_bad_case_kernel_is_in_the_catalog_with_a_test():
    text = CATALOG.read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("|")]
    named = {t for ln in rows for t in _ticked(ln)}
    bad = sorted(p.name for p in CASE_KERNELS.glob("*_bad.py"))
    assert len(bad) > 50  # the glob found the folder
    missing = [b for b in bad if b not in named]
    assert not missing, f"docs/cases.md does not name {missing}: add each with its honest twin and its test"
    for b in bad:  # each bad kernel's row names at least one test
        row = next(ln for ln in rows if f"`{b}`" in ln)
        assert re.search(r"`test_\w+\.py::test_\w+`", row), (b, row)


def test_every_file_and_test_the_catalog_names_exists():
    text = CATALOG.read_text()
    files, tests = set(), set()
    for token in _ticked(text):
        if "::" in token:
            tests.add(token)
        elif token.endswith(".py") and " " not in token and "*" not in token:
            files.add(token)
    assert len(files) > 80 and len(tests) > 60, (len(files), len(tests))
    gone = sorted(f for f in files if not _resolve(f).is_file())
    assert not gone, f"docs/cases.md names files that do not exist: {gone}"
    unknown = []
    for t in sorted(tests):
        file, name = t.split("::")
        path = TESTS / file
        if not path.is_file() or not re.search(rf"^(async )?def {re.escape(name)}\(", path.read_text(), re.M):
            unknown.append(t)
    assert not unknown, f"docs/cases.md names tests that do not exist: {unknown}"


def test_the_readme_points_at_the_catalog_in_the_repository():
    readme = (ROOT / "README.md").read_text()
    assert "docs/cases.md" in readme
    assert "shared/cases.md" not in readme  # a file outside the repository


def test_the_agents_prompt_names_every_distribution_the_worker_offers(make_ws):
    from ktui.agent.prompts import system_prompt
    from ktui.worker.problem import DISTRIBUTIONS
    from ktui.worker.special import SPECIAL

    ws = make_ws(["vector_add"])
    text = system_prompt(ws, "vector_add", {})
    assert "{distributions}" not in text
    assert "shifted" in DISTRIBUTIONS and set(SPECIAL) < set(DISTRIBUTIONS)
    missing = [d for d in DISTRIBUTIONS if f"`{d}`" not in text]
    assert not missing, missing
    assert "`shifted`: normal around +-100..200" in text


def test_every_slow_test_listed_exists():
    """``tests/slow.txt`` names tests that exist (a renamed test would silently come back into CI's run)."""
    from .conftest import slow_tests

    slow = slow_tests()
    assert len(slow) > 20
    missing = []
    for node in slow:
        file, name = node.split("::", 1)
        path = ROOT / file
        base = name.split("[", 1)[0]
        if not path.is_file() or not re.search(rf"^(async )?def {re.escape(base)}\(", path.read_text(), re.M):
            missing.append(node)
    assert not missing, f"tests/slow.txt names tests that do not exist: {missing}"
