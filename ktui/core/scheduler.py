"""The run queue: one ladder at a time, saves during a run wait their turn, the latest save of a file wins.

A version is queued at most once: a second save while it waits changes nothing (the run snapshots the file when it
starts, so it sees the latest content); a save while it runs queues it again, so the newest content always gets its
own run and no save is dropped.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

from ktui.core.events import EventBus, Notice, QueueChanged, RungStarted
from ktui.core.results import LadderResult
from ktui.core.workspace import KernelRef


class Scheduler:
    """Runs ``run_ladder(kernel)`` for queued versions on a background thread, in submission order."""

    def __init__(self, run_ladder: Callable[..., LadderResult], bus: EventBus):
        self._run_ladder = run_ladder
        self.bus = bus
        self._queue: OrderedDict[str, KernelRef] = OrderedDict()
        self._rungs: dict[str, tuple[str, ...] | None] = {}  # None: the default ladder
        self._running: KernelRef | None = None
        self._rung: str | None = None
        self._cv = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="ktui-scheduler", daemon=True)
        self._unsub = bus.subscribe(self._on_event)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        with self._cv:
            self._stopped = True
            self._queue.clear()
            self._rungs.clear()
            self._cv.notify_all()
        self._unsub()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def submit(self, kernel: KernelRef, rungs: tuple[str, ...] | None = None) -> None:
        """Queue ``kernel`` unless it already waits; ``rungs`` (default: the default ladder) merge with those of a
        run already waiting."""
        with self._cv:
            if self._stopped:
                return
            if kernel.key in self._queue:
                old = self._rungs.get(kernel.key)
                self._rungs[kernel.key] = None if old is None or rungs is None else tuple(dict.fromkeys(old + rungs))
            else:
                self._queue[kernel.key] = kernel
                self._rungs[kernel.key] = rungs
            self._cv.notify_all()
        self._publish()

    @property
    def waiting(self) -> tuple[str, ...]:
        with self._cv:
            return tuple(self._queue)

    @property
    def running(self) -> str | None:
        return self._running.key if self._running else None

    def idle(self) -> bool:
        with self._cv:
            return self._running is None and not self._queue

    def wait_idle(self, timeout_s: float) -> bool:
        """Block until nothing runs or waits (for tests and scripts); False on timeout."""
        with self._cv:
            return self._cv.wait_for(lambda: self._running is None and not self._queue, timeout_s)

    def _publish(self) -> None:
        with self._cv:
            ev = QueueChanged(running=self._running.key if self._running else None, rung=self._rung,
                              waiting=tuple(self._queue))
        self.bus.publish(ev)

    def _on_event(self, ev) -> None:
        if isinstance(ev, RungStarted) and self._running and ev.key == self._running.key:
            with self._cv:
                self._rung = ev.rung
            self._publish()

    def _loop(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._stopped or bool(self._queue))
                if self._stopped:
                    return
                _, kernel = self._queue.popitem(last=False)
                rungs = self._rungs.pop(kernel.key, None)
                self._running, self._rung = kernel, None
            self._publish()
            try:
                if kernel.path.exists():
                    self._run_ladder(kernel, rungs) if rungs else self._run_ladder(kernel)
                else:
                    self.bus.publish(Notice(level="warning", message=f"{kernel.key} was deleted before it ran"))
            except Exception as exc:  # noqa: BLE001 - the queue must survive anything
                self.bus.publish(Notice(level="error", message=f"{kernel.key}: ktui failed to run the ladder: "
                                                               f"{type(exc).__name__}: {exc}"))
            finally:
                with self._cv:
                    self._running, self._rung = None, None
                    self._cv.notify_all()
                self._publish()
