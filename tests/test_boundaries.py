"""The process boundaries of the architecture: ktui's own process never imports torch (the workers own it), and the
core never imports Textual. Each check runs in a fresh interpreter so that nothing imported by pytest leaks in.

The same rules are import-linter contracts in ``pyproject.toml`` (``lint-imports`` in ``.ci/run``): those read the
import statements; these prove at run time that the imports a module defers really are deferred.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import ktui.agent
import ktui.core


def _walk(package) -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + "."))


# Every module of ktui's own process: the core, the wire, the CLI and the agent (litellm only when a model is used).
CORE = ["ktui", "ktui.core", "ktui.protocol", "ktui.cli", *_walk(ktui.core)]
AGENT = ["ktui.agent", *_walk(ktui.agent)]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


def test_the_core_list_is_complete():
    """The walk finds the modules that matter: a rename that empties it must fail here, not pass silently."""
    for name in ("ktui.core.session", "ktui.core.ladder", "ktui.core.workers.client", "ktui.core.inspect.sass"):
        assert name in CORE
    assert len(CORE) >= 20


@pytest.mark.parametrize("module", CORE + AGENT)
def test_core_imports_neither_textual_nor_torch(module):
    mods = _modules_after(f"import {module}")
    assert "textual" not in mods
    assert "torch" not in mods and "triton" not in mods and "numpy" not in mods
    assert "litellm" not in mods  # seconds to import: only when a model is configured, off the UI thread


def test_the_tui_app_does_not_import_torch():
    mods = _modules_after("import ktui.tui.app")
    assert "textual" in mods
    assert "torch" not in mods and "triton" not in mods and "numpy" not in mods and "litellm" not in mods


def test_the_wire_imports_no_side():
    mods = _modules_after("import ktui.protocol")
    assert not any(m.startswith(("ktui.core", "ktui.worker", "ktui.tui", "ktui.agent")) for m in mods)


def test_headless_commands_do_not_need_watchdog():
    """`ktui run` and `ktui diff` go through a Session that never watches: they run where watchdog is missing."""
    mods = _modules_after("import ktui.cli, ktui.core.session, ktui.core.watcher")
    assert "watchdog" not in mods
