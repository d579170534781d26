"""Processes a kernel leaves behind: a worker killed after a crash, a hang or a ladder can have started children
(a double fork and ``setsid`` escape the kill of its process group; ``os.execv`` or ``subprocess.Popen`` give them
any command line). ktui becomes their subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux), so that they are
re-parented to it when the worker dies, and kills every such adopted process, whatever it runs.

ktui tells them from its own children by session: every worker runs in a session of its own (``LocalTransport``),
so whatever a kernel starts is in that session or in one it made with ``setsid``, never in ktui's; the tools ktui
runs itself (``nvdisasm``, ``ncu``) stay in ktui's session. Live workers register their pids here (every pool of
the process) and are never touched. Elsewhere than Linux these are no-ops.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
KILL_ROUNDS = 8  # a killed orphan's own children are re-parented to ktui in turn: this many generations a sweep
_DONE = False
_LIVE: set[int] = set()  # pids of the live worker processes of this ktui process, every pool's
_LOCK = threading.RLock()  # a spawn registers its pid before any sweep can see the new process


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


@contextmanager
def spawning() -> Iterator[None]:
    """Hold while starting a worker and registering its pid: a sweep in another thread waits, so it never takes
    a worker just started for an orphan."""
    with _LOCK:
        yield


def register(pid: int) -> None:
    """``pid`` is a live worker process (``WorkerProcess.start``): sweeps leave it alone."""
    with _LOCK:
        _LIVE.add(pid)


def unregister(pid: int) -> None:
    """The worker ``pid`` was killed and reaped (``WorkerProcess.kill``)."""
    with _LOCK:
        _LIVE.discard(pid)


def _children() -> list[tuple[int, int, bytes]]:
    """(pid, session id, command line) of every child of this process, zombies included."""
    me = os.getpid()
    out = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()  # state ppid pgrp session ...
            if int(fields[1]) != me:
                continue
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                cmd = b""
            out.append((int(d.name), int(fields[3]), cmd))
        except (OSError, ValueError, IndexError):
            continue
    return out


def adopted() -> list[int]:
    """Children of this process that ktui did not start: outside ktui's session and not a live worker (any
    command line: an ``exec``'d program, a ``Popen`` child, a double-forked sleeper)."""
    mine = os.getsid(0)
    with _LOCK:
        return [pid for pid, sid, _ in _children() if sid != mine and pid not in _LIVE]


def adopted_workers() -> list[int]:
    """The adopted children whose command line is ktui's worker program (``-m ktui.worker``): a worker's fork."""
    found = set(adopted())
    return [pid for pid, _, cmd in _children() if pid in found and b"ktui.worker" in cmd.split(b"\0")]


def kill_adopted(keep: set[int]) -> list[int]:
    """SIGKILL and reap every adopted process (``adopted``) not in ``keep``, and those their deaths hand to ktui in
    turn (up to ``KILL_ROUNDS`` generations). Returns the pids killed."""
    killed: list[int] = []
    with _LOCK:
        for _ in range(KILL_ROUNDS):
            victims = [pid for pid in adopted() if pid not in keep]
            if not victims:
                break
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for pid in victims:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
            killed += victims
    return killed
