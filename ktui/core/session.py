"""A live ktui session: workers, ladder, run queue, file watcher and result store, wired to one event bus.

The TUI draws what this publishes; a headless driver (tests, scripts) can use it the same way. Nothing here imports
torch or Textual.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ktui.core.device import resolve_device
from ktui.core.events import EventBus, FileChanged, LadderFinished, Notice, ResultStored
from ktui.core.ladder import Ladder, LadderOptions, WorkerPool
from ktui.core.results import LadderResult
from ktui.core.scheduler import Scheduler
from ktui.core.store import ResultStore, sha256
from ktui.core.watcher import DEFAULT_DEBOUNCE_S, Watcher
from ktui.core.workspace import KernelRef, Workspace


class Session:
    """Everything a ``ktui`` process runs besides the screen.

    Args:
        workspace: the folder being worked on.
        device: ``auto``, ``cpu`` or ``cuda``.
        watch: start the file watcher (saving a kernel reruns its ladder; a reference reruns all its versions).
    """

    def __init__(self, workspace: Workspace, device: str = "auto", bus: EventBus | None = None,
                 options: LadderOptions | None = None, watch: bool = True,
                 debounce_s: float = DEFAULT_DEBOUNCE_S):
        self.ws = workspace
        self.device = resolve_device(device)
        self.bus = bus or EventBus()
        self.store = ResultStore(workspace)
        self.pool = WorkerPool(workspace, self.device, self.bus)
        self.ladder = Ladder(workspace, self.pool, self.bus, options, self.store)
        self.scheduler = Scheduler(self.ladder.run, self.bus)
        self.watcher = Watcher(workspace, self._on_file, debounce_s) if watch else None
        self._started = False
        self._latest: dict[str, LadderResult] = {}
        self._cv = threading.Condition()
        self.bus.subscribe(self._remember)

    def start(self) -> None:
        """Spawn the workers (torch imports in the background), start the queue and the watcher. Returns at once."""
        if self._started:
            return
        self._started = True
        self.pool.start()
        self.scheduler.start()
        if self.watcher:
            self.watcher.start()

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        if self.watcher:
            self.watcher.stop()
        for w in self.pool.workers:  # a ladder under way fails its current call now instead of finishing
            w.close()
        self.scheduler.stop(timeout_s=0.0)
        self.pool.stop()
        self.ladder.close()
        self.scheduler.stop()

    # -- actions -----------------------------------------------------------------------------------------------
    def submit(self, kernel: KernelRef, rungs: tuple[str, ...] | None = None) -> None:
        """Queue a run of ``kernel``'s ladder (``rungs``: only those, with what they need)."""
        self.scheduler.submit(kernel, rungs)

    def submit_problem(self, problem: str) -> None:
        for k in self.ws.versions(problem):
            self.scheduler.submit(k)

    def latest(self, kernel: KernelRef) -> LadderResult | None:
        with self._cv:
            r = self._latest.get(kernel.key)
        return r or self.store.load(kernel.problem, kernel.version)

    def results(self) -> dict[str, LadderResult]:
        """The latest result of every version (this session's runs first, then the stored ones)."""
        out = {}
        for k in self.ws.all_versions():
            r = self.latest(k)
            if r is not None:
                out[k.key] = r
        return out

    def _remember(self, ev) -> None:
        if isinstance(ev, LadderFinished):
            with self._cv:
                self._latest[ev.key] = ev.result
                self._cv.notify_all()

    def result_for(self, kernel: KernelRef, timeout_s: float = 1800.0) -> LadderResult:
        """The ladder result of ``kernel``'s current content: the latest one when it ran on that content already,
        else the run the watcher queued after the save, else a run queued now. Blocks until it finishes.

        Raises:
            TimeoutError: no result within ``timeout_s``.
        """
        sha = sha256(kernel.path.read_bytes())

        def current() -> LadderResult | None:
            r = self._latest.get(kernel.key)
            return r if r is not None and r.source_sha256 == sha else None

        deadline = time.monotonic() + timeout_s
        with self._cv:
            if current():
                return current()
        # The watcher queues a saved file within its debounce; queue it ourselves if it did not.
        time.sleep(0.3 if self.watcher else 0.0)
        if kernel.key not in self.scheduler.waiting and self.scheduler.running != kernel.key:
            self.scheduler.submit(kernel)
        with self._cv:
            while not current():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no ladder result for {kernel.key} within {timeout_s:g} s")
                self._cv.wait(min(left, 1.0))
                if kernel.key not in self.scheduler.waiting and self.scheduler.running != kernel.key \
                        and not current():
                    self.scheduler.submit(kernel)  # e.g. it ran on older content just before the save
            return current()

    def new_version(self, source: KernelRef) -> KernelRef:
        """Copy ``source`` to the next free ``vN.py`` (the watcher then runs it)."""
        return self.ws.new_version(source)

    # -- file events -------------------------------------------------------------------------------------------
    def _on_file(self, path: Path, deleted: bool) -> None:
        if path.suffix == ".json":
            try:
                rel = path.resolve().relative_to(self.store.root.resolve())
            except ValueError:
                return
            if len(rel.parts) == 2 and not deleted:
                self.bus.publish(ResultStored(problem=rel.parts[0], version=Path(rel.parts[1]).stem))
            return
        what = self.ws.classify(path)
        if what is None:
            return
        self.bus.publish(FileChanged(path=str(path)))
        if deleted:
            return
        problem, version = what
        if not self.ws.reference_path(problem).is_file():
            self.bus.publish(Notice(level="warning", message=f"{path.name}: no references/{problem}.py, not run"))
            return
        if version is None:
            self.submit_problem(problem)
        else:
            self.scheduler.submit(KernelRef(problem, version, self.ws.root))
