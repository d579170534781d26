"""The real app in tmux, as a user sees it: start ``ktui`` at 80x24 on a small workspace, read the screen with
``capture-pane``, press keys with ``send-keys``. Skipped where tmux is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def _ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "references").mkdir(parents=True)
    (root / "kernels/vector_add").mkdir(parents=True)
    shutil.copy(ROOT / "references/vector_add.py", root / "references/vector_add.py")
    shutil.copy(ROOT / "kernels/vector_add/v2.py", root / "kernels/vector_add/v1.py")
    return root


class Tmux:
    def __init__(self, command: str, width: int, height: int):
        self.name = f"ktui-test-{uuid.uuid4().hex[:8]}"
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height), command],
            check=True,
            env={**os.environ, "KTUI_FORCE_CPU": "1", "TERM": "xterm-256color"},
        )

    def screen(self) -> str:
        p = subprocess.run(["tmux", "capture-pane", "-t", self.name, "-p"], capture_output=True, text=True)
        return p.stdout

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, text: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.5)
        raise AssertionError(f"{text!r} not on the screen after {timeout:g} s:\n{self.screen()}")

    def alive(self) -> bool:
        return subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True).returncode == 0

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def test_the_real_app_at_80x24_shows_its_keys_runs_a_version_with_a_first_verdict_and_quits(tmp_path):
    root = _ws(tmp_path)
    t = Tmux(f"{sys.executable} -m ktui {root} --device cpu", 80, 24)
    try:
        t.wait_for("not run", 120)  # the tree, with the version's badge
        screen = t.wait_for("m Maximize", 30)  # the footer
        lines = screen.rstrip("\n").splitlines()
        assert len(lines) <= 24 and all(len(ln) <= 80 for ln in lines)
        footer = next(ln for ln in lines if "m Maximize" in ln)
        for key in ("? Keys", "r Rerun", "e Edit", "n New version", "q Quit", "m Maximize"):  # the everyday keys
            assert key in footer, footer
        assert "chat · no model" in screen  # no model: the chat is one line
        t.keys("r")
        screen = t.wait_for("first ok (", 240)  # the first verdict, while the rest of the cases run or just after
        t.wait_for("✓", 300)  # the full verdict in the tree
        t.keys("q")
        deadline = time.monotonic() + 30
        while t.alive() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not t.alive(), t.screen()
    finally:
        t.kill()


def _tree(pid: int) -> set[int]:
    """``pid`` and every process below it."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").glob("[0-9]*"):
        try:
            ppid = int(Path(d, "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d.name))
    out, todo = {pid}, [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_killing_the_tmux_session_ends_ktui_and_its_workers(tmp_path):
    """The terminal goes away under the TUI while it quits (``q``, then ``tmux kill-session``: SIGHUP): ktui stops
    its workers and ends, even when Textual cannot write its last escape codes to the closed terminal (it used to
    block there for ever, reparented to PID 1)."""
    root = _ws(tmp_path)
    t = Tmux(f"{sys.executable} -m ktui {root} --device cpu", 80, 24)
    try:
        t.wait_for("not run", 120)
        pane = int(
            subprocess.run(
                ["tmux", "display", "-p", "-t", t.name, "#{pane_pid}"], capture_output=True, text=True
            ).stdout.strip()
        )
        deadline = time.monotonic() + 120
        while len(_tree(pane)) < 4 and time.monotonic() < deadline:  # ktui and its three workers
            time.sleep(0.5)
        everything = _tree(pane)
        assert len(everything) >= 4, everything
        t.keys("q")  # quitting, and the terminal closes under it meanwhile
        time.sleep(0.3)
    finally:
        t.kill()
    deadline = time.monotonic() + 20
    while any(_running(p) for p in everything) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in everything if _running(p)]
    assert not left, [(p, Path(f"/proc/{p}/cmdline").read_bytes()[:120]) for p in left]
