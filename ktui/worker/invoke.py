"""The one path of the kernel's code: its import, and every call of ``custom_kernel`` (dry, checked, burst,
event-timed, host-loop and the CPU's verified stretch) alike.

A kernel must not be able to tell a checked call from real use (cases.md watched; red team round 10, W3: a kernel
right only off the main thread, where ktui's checked calls used to run). So the kernel's code runs the same way in
every mode, and where a user's script runs it:

- on the process's main thread. A kernel is usually called from the main thread of a script, a test or a training
  loop, so that is the thread every call sees: the worker's entry point (``ktui.worker.__main__``) runs ``serve``
  on its main thread and reads requests on a second one, which hands the work over (``calls``, ``run``) and waits.
  In a process where nothing serves (tests in-process), the work runs on the caller's thread instead;
- from a loop of C callables (``iter(jobs.get, STOP)`` feeding ``map(operator.call, ...)`` into a ``deque`` of
  length 0, each job one stretch of calls run the same way): while the kernel runs, the frames under it are the
  main thread's ``serve`` and what called it (``ktui.worker.__main__``), the same in every mode, with no frame of
  the checking or timing code (``do_execute``, ``bench``...) and none of their locals;
- as the same steps: on CUDA a start event recorded, ``time.perf_counter``, the call, ``time.perf_counter``, an end
  event recorded; a checked call records events too (scratch ones), a timed call reads them. What ktui does between
  calls (fresh inputs, the L2 flush, keeping an output) runs before or after those steps, never under the call;
- with the same ``torch.empty``: ``ktui.worker.allocation.install`` wraps torch's allocators once, here, for the
  worker's whole life; the wrapper poisons only while a checked call has armed it (``poisoned_allocations``).

A stretch of n calls is one hand-over, not n: a thread wake-up per call starved the GPU between timed calls on an
H200 (softmax/v2's median 133 -> 188 us, IQR 1.7 -> 92 us), so the timed loop runs on the main thread whole. The
caller's ``contextvars`` context travels with each job. An exception of the kernel (``SystemExit`` included) is
caught by ``serve`` and raised again on the caller's thread, minus this module's frames; the loop goes on. What a
kernel could still read is the requests thread's frames (``sys._current_frames``), the allocator's armed state or
the bytes around a guarded buffer: detection stays possible in Python, so timed calls' outputs, and on the CPU a
stretch of unguarded calls, are verified in full as well (``ktui.worker.timed``), which makes it worthless.
"""

from __future__ import annotations

import collections
import contextvars
import functools
import operator
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import torch

from ktui.worker import allocation
from ktui.worker.errors import KernelThreadEnded

_STOP = object()  # the job that ends ``serve``'s loop (``stop``)
_jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()  # each job: a C callable that runs one stretch of calls
_results: queue.SimpleQueue[Any] = queue.SimpleQueue()  # each: the job's return value, or _Failed
_serving: list[threading.Thread] = []  # the thread ``serve`` runs on, while it runs
_pending = [0]  # jobs handed over and not yet answered (an exception while none is pending is not a job's)
_scratch: dict[str, tuple[Any, Any]] = {}  # device -> the events a call records when its caller keeps none


class _Failed:
    """The exception a job raised (a type a job's return value never is)."""

    def __init__(self, exc: BaseException):
        self.exc = exc


def serve(then: Callable[[], Any] | None = None) -> None:
    """Run the jobs handed over by ``calls`` on this thread (the worker's main thread) until ``stop``; ``then()``
    first (start the thread that makes the calls), once this thread is the one every call goes to.

    The loop is C callables only; an exception of a job is handed back to its caller and the loop goes on. A
    ``KeyboardInterrupt`` while no job is pending (a signal to the idle worker) ends it, as it ended the request loop
    that ran on the main thread before.
    """
    _serving[:] = [threading.current_thread()]
    try:
        if then is not None:
            then()
        while True:
            try:
                collections.deque(map(_results.put, map(operator.call, iter(_jobs.get, _STOP))), 0)
                return
            except BaseException as exc:
                if not _pending[0]:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    continue
                _results.put(_Failed(exc))
    finally:
        _serving.clear()


def stop() -> None:
    """End ``serve``'s loop once the job it runs (if any) returns."""
    _jobs.put(_STOP)


def serving() -> threading.Thread | None:
    """The thread that runs the kernel's code (``serve``'s), None when nothing serves (the caller's own then)."""
    return _serving[0] if _serving else None


def _events(device: str) -> tuple[Any, Any]:
    if device not in _scratch:
        # torch.cuda.Event.__new__ has no annotations in torch's sources (a stub gap, not an untyped call of ours).
        _scratch[device] = (
            torch.cuda.Event(enable_timing=True),  # type: ignore[no-untyped-call]
            torch.cuda.Event(enable_timing=True),  # type: ignore[no-untyped-call]
        )
    return _scratch[device]


def _steps(
    fn: Callable[[Any], Any],
    data: Any,
    device: str,
    n: int,
    before: Callable[[int], Any] | None,
    after: Callable[[int, Any, float], Any] | None,
    events: Callable[[int], tuple[Any, Any]] | None,
    got: list[Any],
) -> Iterator[Callable[[], Any]]:
    """The steps of ``n`` calls, one at a time; ``got`` receives each step's result as it returns (the loop's sink),
    so when the generator resumes after a call's last step, the call's output and timer readings are in it. ``before``
    and ``after`` run here, between calls: this generator is suspended, off the stack, while a step runs."""
    kernel = functools.partial(fn, data)
    cuda = device.startswith("cuda")
    for i in range(n):
        if before is not None:
            before(i)
        got.clear()
        if cuda:
            start, end = events(i) if events is not None else _events(device)
            yield start.record
        yield time.perf_counter
        yield kernel
        yield time.perf_counter
        if cuda:
            yield end.record
        t0, out, t1 = got[1:4] if cuda else got
        got.clear()
        seconds = t1 - t0
        if after is not None:
            after(i, out, seconds)
        del out


def calls(
    fn: Callable[[Any], Any],
    data: Any,
    device: str,
    n: int = 1,
    *,
    before: Callable[[int], Any] | None = None,
    after: Callable[[int, Any, float], Any] | None = None,
    events: Callable[[int], tuple[Any, Any]] | None = None,
) -> None:
    """``n`` calls of ``fn(data)`` in a row on the thread that runs the kernel's code (``serve``'s: the main
    thread), handed over as one job, each call the same steps: on a CUDA ``device`` ``start.record``,
    ``time.perf_counter``, the call, ``time.perf_counter``, ``end.record``, the events ``events(i)`` gives for call
    ``i`` (scratch events of this module when None: they are recorded all the same); on the CPU the same without the
    events. ``before(i)`` runs before call ``i``'s steps, ``after(i, output, host_seconds)`` after them (the seconds
    between the two ``perf_counter`` readings: the host's time inside the call), both on that thread, between calls.

    Whatever ``fn``, ``before`` or ``after`` raises ends the stretch and is raised here, without this module's
    frames. Blocks until the stretch ends (a kernel that hangs is ended by the worker's time limit).

    Raises:
        KernelThreadEnded: the serving loop ended during the job without handing back a result or an exception.
    """
    got: list[Any] = []
    steps = _steps(fn, data, device, n, before, after, events, got)
    job = functools.partial(
        contextvars.copy_context().run, collections.deque, map(got.append, map(operator.call, steps)), 0
    )
    _run_job(job)


def call(fn: Callable[[Any], Any], data: Any, device: str, start: Any = None, end: Any = None) -> tuple[Any, float]:
    """One call of ``fn(data)`` as ``calls`` makes it (with the CUDA events ``start`` and ``end`` when given).
    Returns (its output, the seconds the host spent inside the call)."""
    kept: list[Any] = []
    ev = None if start is None or end is None else (lambda i: (start, end))
    calls(fn, data, device, 1, after=lambda i, out, s: kept.extend((out, s)), events=ev)
    return kept[0], kept[1]


def run(fn: Callable[[], Any]) -> Any:
    """``fn()`` on the thread that runs the kernel's code, as one job (the kernel module's import: its top-level
    code runs where its calls do). Returns its result; raises what it raises."""
    return call(lambda _: fn(), None, "cpu")[0]


def _run_job(job: Callable[[], Any]) -> Any:
    """Run ``job`` on the serving thread (on this one when nothing serves, or when this is it) and return its
    result, or raise its exception with this module's leading frames removed from the traceback."""
    server = _serving[0] if _serving else None
    if server is None or server is threading.current_thread():
        try:
            return job()
        except BaseException as exc:
            _reraise(exc)
    _pending[0] += 1
    try:
        _jobs.put(job)
        got = _wait(server)
    finally:
        _pending[0] -= 1
    if isinstance(got, _Failed):
        _reraise(got.exc)
    return got


def _reraise(exc: BaseException) -> NoReturn:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    raise exc.with_traceback(tb)


POLL_S = 0.1  # how often a waiting call looks whether the serving loop still runs (its detection delay)


def _wait(server: threading.Thread) -> Any:
    """The next result of the serving loop, or ``_Failed(KernelThreadEnded)`` at once when the loop ended with
    neither (the kernel ended it: stopped it through ktui's own queue, or ended the thread), instead of waiting for
    the call's time limit. Looks every ``POLL_S`` seconds."""
    while True:
        try:
            return _results.get(timeout=POLL_S)
        except queue.Empty:
            if _serving and server.is_alive():
                continue
        try:
            return _results.get_nowait()  # handed back just before the loop ended
        except queue.Empty:
            return _Failed(
                KernelThreadEnded(
                    "custom_kernel ended the loop that runs it (on the worker's main thread) without returning or "
                    "raising"
                )
            )


allocation.install()
