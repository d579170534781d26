"""The one path of every ``custom_kernel`` call: checked, burst, event-timed and host-loop calls alike.

A kernel must not be able to tell a checked call from a timed one (cases.md watched): a kernel right only while it
sees the check takes its wrong path where the check cannot see it. So every call runs the same way:

- on one kernel thread, started when this module is imported (before any kernel is imported), whose loop is made of
  C callables only (``iter(jobs.get, None)`` feeding ``map(operator.call, ...)`` into a ``deque`` of length 0): the
  kernel's stack is ``threading.Thread.run`` and nothing of ktui's, in every mode, so neither a frame of ktui's nor
  its locals say whether, or how, the call is checked;
- as the same steps: on CUDA a start event recorded, ``time.perf_counter``, the call, ``time.perf_counter``, an end
  event recorded; a checked call records events too (scratch ones), a timed call reads them;
- with the same ``torch.empty``: ``ktui.worker.allocation.install`` wraps torch's allocators once, here, for the
  worker's whole life; the wrapper poisons only while a checked call has armed it (``poisoned_allocations``).

The caller's ``contextvars`` context travels with each call, so state kept in context variables (a launch recorder)
is seen by the kernel thread. An exception of the kernel ends the thread (``threading.excepthook`` hands it back
here, minus the thread's own frames) and the next call starts a new one. What the kernel could still do is read the
main thread's frames (``sys._current_frames``) or the allocator's armed state: detection stays possible in Python,
so the timed calls' outputs are verified in full as well (``ktui.worker.timing``), which makes it worthless.
"""

from __future__ import annotations

import collections
import contextvars
import functools
import operator
import queue
import threading
import time
import types
from collections.abc import Callable
from typing import Any

import torch

from ktui.worker import allocation
from ktui.worker.errors import KernelThreadEnded

_jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()  # each job: a C callable that runs one call's steps
_results: queue.SimpleQueue[Any] = queue.SimpleQueue()  # each: the list of the steps' results, or _Failed
_kernel_thread: list[threading.Thread] = []  # the live kernel thread (one at a time)
_scratch: dict[str, tuple[Any, Any]] = {}  # device -> the events a call records when its caller keeps none


class _Failed:
    """The exception that ended the kernel thread (a type the steps' results never are: they come as a list)."""

    def __init__(self, exc: BaseException):
        self.exc = exc


def _excepthook(args: Any) -> None:
    if _kernel_thread and args.thread is _kernel_thread[0] and args.exc_value is not None:
        _results.put(_Failed(args.exc_value))
        return
    _previous_hook[0](args)


_previous_hook: list[Callable[[Any], Any]] = [threading.excepthook]


def _chain(previous: Callable[[Any], Any]) -> None:
    """Make ``_excepthook`` the thread hook, handing every other thread's exceptions to ``previous``."""
    _previous_hook[0] = previous
    threading.excepthook = _excepthook


def _start() -> None:
    """Start the kernel thread: a loop of C callables that takes jobs until the process ends."""
    loop: Callable[[], Any] = functools.partial(
        collections.deque, map(_results.put, map(operator.call, iter(_jobs.get, None))), 0
    )
    thread = threading.Thread(target=loop, daemon=True)
    _kernel_thread[:] = [thread]
    thread.start()


def _events(device: str) -> tuple[Any, Any]:
    if device not in _scratch:
        # torch.cuda.Event.__new__ has no annotations in torch's sources (a stub gap, not an untyped call of ours).
        _scratch[device] = (
            torch.cuda.Event(enable_timing=True),  # type: ignore[no-untyped-call]
            torch.cuda.Event(enable_timing=True),  # type: ignore[no-untyped-call]
        )
    return _scratch[device]


def call(fn: Callable[[Any], Any], data: Any, device: str, start: Any = None, end: Any = None) -> tuple[Any, float]:
    """``fn(data)`` on the kernel thread, the same way in every mode. Returns (its output, the seconds the host spent
    inside the call: ``time.perf_counter`` on the kernel thread, from just before the call to just after it).

    On a CUDA ``device`` the CUDA events ``start`` and ``end`` are recorded on the kernel thread's current stream
    right before and right after the call (scratch events of this module when the caller passes none: a checked
    call records them too). Whatever ``fn`` raises is raised here, with the kernel thread's own frames removed from
    its traceback; the thread is then replaced. Blocks until the call returns (a kernel that hangs is ended by the
    worker's time limit).
    """
    if threading.excepthook is not _excepthook:  # replaced since (by a kernel): chain it, keep ours first
        _chain(threading.excepthook)
    if not _kernel_thread or not _kernel_thread[0].is_alive():
        if _kernel_thread:
            _kernel_thread[0].join()
        _start()
    kernel = functools.partial(fn, data)
    if device.startswith("cuda"):
        if start is None or end is None:
            start, end = _events(device)
        steps: tuple[Callable[[], Any], ...] = (start.record, time.perf_counter, kernel, time.perf_counter, end.record)
    else:
        steps = (time.perf_counter, kernel, time.perf_counter)
    _jobs.put(functools.partial(contextvars.copy_context().run, list, map(operator.call, steps)))
    got = _wait(_kernel_thread[0])
    if isinstance(got, _Failed):
        _kernel_thread[0].join()
        _start()  # at once: the count of live threads stays what it was (``threads_left`` of the run rung)
        exc = got.exc
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == threading.__file__:
            tb = tb.tb_next
        raise exc.with_traceback(tb)
    mid = len(got) // 2  # the call's result, between the two perf_counter readings
    return got[mid], got[mid + 1] - got[mid - 1]


POLL_S = 0.1  # how often a waiting call looks whether the kernel thread is still alive (its detection delay)


def _wait(thread: threading.Thread) -> Any:
    """The next result of the kernel thread: the steps' results, ``_Failed`` from ``_excepthook``, or, when the
    thread ended with neither (the kernel replaced ``threading.excepthook`` during the call and then raised or
    called ``sys.exit`` there: its exception went to that hook, not to ktui), ``_Failed(KernelThreadEnded)`` at
    once instead of waiting for the call's time limit. Looks every ``POLL_S`` seconds, from this thread only (the
    kernel's thread and what it sees are the same in every mode)."""
    while True:
        try:
            return _results.get(timeout=POLL_S)
        except queue.Empty:
            if thread.is_alive():
                continue
        try:
            return _results.get_nowait()  # handed back just before the thread ended
        except queue.Empty:
            hook = threading.excepthook
            name = hook.__qualname__ if isinstance(hook, types.FunctionType) else type(hook).__name__
            return _Failed(
                KernelThreadEnded(
                    "custom_kernel ended the thread it runs on without returning, and its exception never reached "
                    f"ktui: threading.excepthook was replaced (by {name}) during the call and received it instead"
                    if hook is not _excepthook
                    else "custom_kernel ended the thread it runs on without returning or raising"
                )
            )


def kernel_thread() -> threading.Thread | None:
    """The live kernel thread (for tests and for counting threads a kernel left running)."""
    return _kernel_thread[0] if _kernel_thread else None


allocation.install()
_chain(threading.excepthook)
_start()
