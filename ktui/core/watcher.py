"""A watchdog observer on ``kernels/`` and ``references/`` that reports each saved ``.py`` file once per burst.

Editors save in bursts (write, then chmod; or write a temporary file and rename it over the original): events for
one path within ``debounce_s`` collapse into one call, made ``debounce_s`` after the last of them.

A callback that raises does not stop the watcher: the failure goes to the ``ktui.watcher`` log with its traceback
(``.ktui/logs/ktui.log`` once ``ktui.core.log.open_log`` ran) and, given a ``bus``, a ``Notice(level="error")`` says
so on screen, once per kind of failure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktui.core.events import EventBus, Notice
from ktui.core.log import get_logger
from ktui.core.workspace import KERNELS, REFERENCES, STATE, Workspace

if TYPE_CHECKING:
    from watchdog.events import FileSystemEvent

DEFAULT_DEBOUNCE_S = 0.1
RESULTS_MARK = f"/{STATE}/results/"  # results stored by another ktui process (``ktui run`` beside the TUI)


def _observer(watcher: Watcher) -> tuple[Any, Any]:
    """A watchdog observer whose handler reports ``.py`` saves and stored results to ``watcher``. watchdog is
    imported here, not at module level: headless commands (``ktui run``, ``ktui diff``) never watch and run where
    watchdog is not installed (the GPU machine)."""
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    class _Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.is_directory or event.event_type in ("opened", "closed_no_write"):
                return
            paths = [event.src_path]
            if getattr(event, "dest_path", ""):
                paths = [event.dest_path] if event.event_type == "moved" else paths + [event.dest_path]
            for p in paths:
                p = p.decode() if isinstance(p, bytes) else p
                if p.endswith(".py") or (p.endswith(".json") and RESULTS_MARK in p):
                    watcher._touch(Path(p), deleted=event.event_type == "deleted")

    return Observer(), _Handler()


class Watcher:
    """Calls ``on_change(path, deleted)`` on a background thread for every ``.py`` file saved or deleted under
    ``kernels/`` or ``references/``, and every result file stored under ``.ktui/results/`` (debounced).

    Args:
        bus: where a failing ``on_change`` is reported as a ``Notice`` (it is logged either way).
    """

    def __init__(
        self,
        workspace: Workspace,
        on_change: Callable[[Path, bool], None],
        debounce_s: float = DEFAULT_DEBOUNCE_S,
        bus: EventBus | None = None,
    ):
        self.ws = workspace
        self.on_change = on_change
        self.debounce_s = debounce_s
        self.bus = bus
        self.log = get_logger("watcher")
        self._reported: set[tuple[str, str]] = set()
        self._pending: dict[Path, tuple[float, bool]] = {}
        self._cv = threading.Condition()
        self._stopped = False
        self._observer: Any = None  # made by start()
        self._thread = threading.Thread(target=self._loop, name="ktui-watcher", daemon=True)

    def start(self) -> None:
        self._observer, handler = _observer(self)
        self._observer.schedule(handler, str(self.ws.root / KERNELS), recursive=True)
        self._observer.schedule(handler, str(self.ws.root / REFERENCES), recursive=False)
        results = self.ws.state_dir / "results"
        results.mkdir(parents=True, exist_ok=True)
        self._observer.schedule(handler, str(results), recursive=True)
        self._observer.start()
        self._thread.start()

    def stop(self) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify_all()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _touch(self, path: Path, deleted: bool) -> None:
        with self._cv:
            self._pending[path] = (time.monotonic() + self.debounce_s, deleted)
            self._cv.notify_all()

    def _loop(self) -> None:
        while True:
            with self._cv:
                if self._stopped:
                    return
                if not self._pending:
                    self._cv.wait()
                    continue
                now = time.monotonic()
                due = [(p, d) for p, (t, d) in self._pending.items() if t <= now]
                if not due:
                    self._cv.wait(min(t for t, _ in self._pending.values()) - now)
                    continue
                for p, _ in due:
                    del self._pending[p]
            for p, deleted in due:
                try:
                    self.on_change(p, deleted and not p.exists())
                except Exception as exc:
                    self._failed(p, exc)

    def _failed(self, path: Path, exc: Exception) -> None:
        """Log a failed callback; the first failure of each kind also becomes a ``Notice``."""
        self.log.error("the watcher's callback failed on %s", path, exc_info=exc)
        key = (type(exc).__name__, str(exc))
        if self.bus is None or key in self._reported:
            return
        self._reported.add(key)
        self.bus.publish(
            Notice(
                level="error",
                message=f"ktui failed to handle the save of {path.name}: "
                f"{type(exc).__name__}: {exc} (traceback in "
                f".ktui/logs/ktui.log)",
            )
        )


WATCH_LOCK = "watch.lock"  # in ``.ktui/``: held by the session that runs the workspace's saves


def take_watch_lock(state_dir: Path) -> tuple[int | None, str]:
    """Take the workspace's save lock (``.ktui/watch.lock``, ``flock``: released when the holder exits, however it
    ends): ``(fd, '')`` when this process now holds it (``release_watch_lock`` gives it back), ``(None, pid)`` when
    another process does (its pid as it wrote it, '' when unknown). Two TUIs on one workspace both ran every save
    (new-user trial 25, F13): the second one shows results and runs what it is asked, not saves. A folder that
    cannot hold the lock file gives ``(-1, '')``: held by nobody, the caller runs saves."""
    import fcntl
    import os

    path = state_dir / WATCH_LOCK
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return -1, ""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        try:
            holder = os.read(fd, 32).decode(errors="replace").strip()
        except OSError:
            holder = ""
        os.close(fd)
        return None, holder
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd, ""


def release_watch_lock(fd: int | None) -> None:
    """Give back the lock ``take_watch_lock`` took (closing its descriptor releases it)."""
    import os

    if fd is not None and fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass
