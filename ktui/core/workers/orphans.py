"""Processes a kernel leaves behind: a worker killed after a crash, a hang or a ladder can have started children
(a double fork and ``setsid`` escapes the kill of its process group). ktui becomes their subreaper
(``prctl(PR_SET_CHILD_SUBREAPER)``, Linux) so that they are re-parented to it when the worker dies, and kills those
that run ktui's worker program but are no live worker. Elsewhere these are no-ops."""

from __future__ import annotations

import ctypes
import os
import signal
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
_DONE = False


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants (once; False where the kernel does not support it)."""
    global _DONE
    if _DONE:
        return True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _DONE = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        _DONE = False
    return _DONE


def adopted_workers() -> list[int]:
    """Children of this process whose command line is ktui's worker program (``-m ktui.worker``)."""
    me = os.getpid()
    out = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            stat = (d / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid != me:
                continue
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if b"ktui.worker" in cmd:
            out.append(int(d.name))
    return out


def kill_adopted(keep: set[int]) -> list[int]:
    """SIGKILL and reap adopted worker-program processes that are not in ``keep`` (the live workers' pids)."""
    killed = []
    for pid in adopted_workers():
        if pid in keep:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except ProcessLookupError:
            continue
    for pid in killed:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    return killed
