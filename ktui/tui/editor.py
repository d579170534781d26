"""Open a version in the user's editor (``e``): ``$EDITOR``, else ``$VISUAL``, run while the app hands the terminal
over (``App.suspend``); the watcher reruns the version once the editor has saved it."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path

from textual.app import App, SuspendNotSupported

NO_EDITOR = "set $EDITOR (or $VISUAL) to open a version in your editor, e.g. export EDITOR=vim"
"""The error when neither variable is set."""


def editor_command(path: Path, env: Mapping[str, str]) -> list[str] | None:
    """The command that opens ``path``: ``$EDITOR`` (else ``$VISUAL``) split as a shell splits it (``code --wait``
    is a program and its option), then the path; None when neither is set (or both are blank).

    Raises:
        ValueError: the variable does not split (an unclosed quote).
    """
    for var in ("EDITOR", "VISUAL"):
        value = env.get(var, "").strip()
        if value:
            return [*shlex.split(value), str(path)]
    return None


def open_in_editor(app: App[None], path: Path, env: Mapping[str, str]) -> int | None:
    """Run the editor on ``path`` with the terminal handed over to it, and wait for it; its exit status, or None
    when it did not run (the reason is a notification: no editor set, a terminal that cannot be handed over, as
    under ``run_test`` or in a browser, or a program that does not start)."""
    try:
        cmd = editor_command(path, env)
    except ValueError as exc:
        app.notify(f"$EDITOR does not parse: {exc}", severity="error")
        return None
    if cmd is None:
        app.notify(NO_EDITOR, severity="error", timeout=8)
        return None
    try:
        with app.suspend():
            return subprocess.call(cmd)
    except SuspendNotSupported:
        app.notify(
            f"this terminal cannot be handed to {cmd[0]} (no suspend here): open {path} yourself",
            severity="error",
            timeout=8,
        )
    except OSError as exc:
        app.notify(f"could not run {cmd[0]}: {exc}", severity="error", timeout=8)
    return None
