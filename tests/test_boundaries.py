"""The process boundaries of the architecture: ktui's own process never imports torch (the workers own it), and the
core never imports Textual. Each check runs in a fresh interpreter so that nothing imported by pytest leaks in."""

from __future__ import annotations

import subprocess
import sys

import pytest

CORE = ["ktui.core.workspace", "ktui.core.results", "ktui.core.events", "ktui.core.ladder", "ktui.core.scheduler", "ktui.core.session",
        "ktui.core.watcher", "ktui.core.store", "ktui.worker.tolerance", "ktui.core.workers.client", "ktui.cli", "ktui.core.inspect.scan",
        "ktui.agent.agent", "ktui.agent.config", "ktui.agent.tools", "ktui.agent.transcript"]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("module", CORE)
def test_core_imports_neither_textual_nor_torch(module):
    mods = _modules_after(f"import {module}")
    assert "textual" not in mods
    assert "torch" not in mods and "triton" not in mods
    assert "litellm" not in mods  # seconds to import: only when a model is configured, off the UI thread


def test_the_tui_app_does_not_import_torch():
    mods = _modules_after("import ktui.tui.app")
    assert "textual" in mods
    assert "torch" not in mods and "triton" not in mods and "numpy" not in mods and "litellm" not in mods
