"""A sign of life from inside one long case on the CPU: the Triton interpreter finished a program of a grid.

A worker call's time limit is on time without progress (``ktui.core.workers.client``), and a finished case or
spec is progress. On the CPU one case of a large fuzzed size can run its programs in the interpreter for longer
than the limit (new-user trial 23, F6: a varlen pooling's 33,759-token case, 7 programs of 2,100 loop trips each,
took 51 s against a limit of 30 s derived from an earlier run; F19: a split version with 8x the programs): the
worker restarted an honest kernel as "may hang". ``interp_bounds`` calls ``beat`` as each program of a grid
starts (``InterpreterBuilder.set_grid_idx``: the one before it ended), and the request under way sends a
``heartbeat`` line at most every ``BEAT_S``; the client takes it as progress. A program that never ends (a loop
that does not exit) sends none, so a hang is still caught, and a call still ends at its limit in all.
"""

from __future__ import annotations

import time
from collections.abc import Callable

BEAT_S = 1.0  # at most one heartbeat line per this many seconds
_sender: list[Callable[[], None]] = []
_last = [0.0]


def sending(send: Callable[[], None] | None) -> None:
    """Send heartbeats with ``send`` from now on (the request under way's), or none (``None``: between requests)."""
    _sender.clear()
    if send is not None:
        _sender.append(send)
        _last[0] = time.monotonic()


def beat() -> None:
    """A program finished: send a heartbeat if none went out in the last ``BEAT_S`` seconds and a request runs."""
    if not _sender:
        return
    now = time.monotonic()
    if now - _last[0] >= BEAT_S:
        _last[0] = now
        _sender[0]()
