"""The judge's background work of a ladder, in order of urgency.

The judge is one process and serves one request at a time. While the candidate runs the cases, the judge has two
kinds of work to do for the same run: *prepare* the reference outputs of the cases still to come (in chunks,
``ktui.core.ladder.rungs.compile``), and *compare* the first sweep's outputs as soon as they exist, for the first
verdict (``ktui.core.ladder.rungs.correctness.start_first_verdict``). A plain FIFO executor would make the first
verdict wait for every prepare chunk; here a comparison jumps ahead of the chunks still queued (it waits only for
the chunk under way).
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

URGENT = 0  # a comparison the screen waits on (the first verdict)
BACKGROUND = 1  # references prepared ahead of the cases that need them


class JudgeQueue:
    """One thread that runs submitted calls, most urgent first (``URGENT`` before ``BACKGROUND``), in submission
    order within a priority. ``submit`` returns a ``Future``; ``shutdown`` stops the thread, cancelling what has not
    started when asked."""

    def __init__(self, name: str = "ktui-judge"):
        self._name = name
        self._heap: list[tuple[int, int, Callable[[], Any], Future[Any]]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    def submit(self, fn: Callable[[], T], priority: int = BACKGROUND) -> Future[T]:
        """Queue ``fn`` (no arguments) at ``priority``; its Future gets its result or exception.

        Raises:
            RuntimeError: the queue was shut down.
        """
        fut: Future[T] = Future()
        with self._cv:
            if self._closed:
                raise RuntimeError("the judge queue was shut down")
            heapq.heappush(self._heap, (priority, next(self._seq), fn, fut))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._cv.notify()
        return fut

    def shutdown(self, wait: bool = False, cancel_futures: bool = True) -> None:
        """Stop taking calls; with ``cancel_futures`` the queued ones are cancelled (the one under way finishes)."""
        with self._cv:
            self._closed = True
            if cancel_futures:
                for _, _, _, fut in self._heap:
                    fut.cancel()
                self._heap.clear()
            self._cv.notify_all()
        if wait and self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._heap and not self._closed:
                    self._cv.wait()
                if not self._heap:
                    return
                _, _, fn, fut = heapq.heappop(self._heap)
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as exc:  # the caller's Future carries it
                fut.set_exception(exc)
