"""The context index built in the background: searches answer meanwhile, from what is indexed so far, marked partial.

The first build over the installed packages and a CUTLASS clone reads tens of thousands of files (about 30 s of one
CPU); neither the TUI's event loop nor the agent's turn may wait for it. ``BackgroundIndex`` runs
``ContextIndex.update`` in a daemon thread (its own SQLite connection, committing every ``COMMIT_FILES`` files or
``COMMIT_SECONDS``) and searches on another connection (WAL: a reader sees the last commit, never a half-written
file). A search made while an update runs, in this process or another (the update lock is held), comes back with
``partial`` set to where the update is (``indexing 1200/5400 files``).

One ``BackgroundIndex`` per index file and package list in a process (``for_workspace``): the Context tab and the
agent's ``search_context`` share the build.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ktui.context.index import ContextIndex, Hit, Progress, UpdateStats, db_path


@dataclass(frozen=True)
class SearchResult:
    """Hits, and ``partial``: where the update under way was when the search ran (None: the index was complete)."""

    hits: list[Hit]
    partial: Progress | None

    def label(self) -> str:
        """``partial: indexing 1200/5400 files (context/cutlass/)``, or "" for a complete answer."""
        if self.partial is None:
            return ""
        return f"partial: {self.partial.line()}; hits come from what is indexed so far"


class BackgroundIndex:
    """The index of the workspace at ``root`` (``ContextIndex.for_workspace(root, packages)``), updated in a thread.

    Attributes:
        stats: the last finished update's ``UpdateStats`` (None before the first ends).
        error: why the last update failed (one line), or "".
        chunks, failed: the index's chunks and the files that failed to parse, after the last update.
        started: whether an update was ever started here.
    """

    _shared: dict[tuple[str, tuple[str, ...] | None], BackgroundIndex] = {}
    _shared_lock = threading.Lock()

    def __init__(self, root: Path, packages: Iterable[str] | None = None):
        self.root = root
        self.packages = tuple(packages) if packages is not None else None
        self.stats: UpdateStats | None = None
        self.error = ""
        self.chunks = 0  # chunks in the index after the last update
        self.failed = 0  # files that failed to parse, after the last update
        self.started = False
        self._progress: Progress | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # the state above, and the start of a thread
        self._reader: ContextIndex | None = None
        self._reader_lock = threading.Lock()  # one search at a time on the reader's connection

    @classmethod
    def for_workspace(cls, root: Path, packages: Iterable[str] | None = None) -> BackgroundIndex:
        """The process's ``BackgroundIndex`` of this workspace's index file (``db_path(root)``) and packages."""
        key = (str(db_path(root).resolve()), tuple(packages) if packages is not None else None)
        with cls._shared_lock:
            bg = cls._shared.get(key)
            if bg is None:
                bg = cls._shared[key] = cls(root, packages)
            return bg

    # -- the update ------------------------------------------------------------------------------------------------
    def start(self, only: Iterable[str] | None = None) -> bool:
        """Start an update in a daemon thread (of the sources in ``only``, when given and present: names as in
        ``ContextIndex.sources``; the sources are recomputed first, so a folder added to context/ is found). False
        when one runs already (nothing started)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return False
            self.started = True
            self._progress = Progress(0, 0)
            names = list(only) if only is not None else None
            self._thread = threading.Thread(target=self._run, args=(names,), name="ktui-context-index", daemon=True)
            self._thread.start()
            return True

    def _run(self, only: list[str] | None) -> None:
        stats: UpdateStats | None = None
        error = ""
        try:
            ix = ContextIndex.for_workspace(self.root, self.packages)
            try:
                names = None if only is None else [n for n in only if n in ix.sources]
                stats = ix.update(only=names, progress=self._set_progress)
                self.chunks, self.failed = ix.chunk_count(), len(ix.failures())
            finally:
                ix.close()
        except Exception as exc:  # the thread must end and say why: an unreadable index, a full disk
            error = f"{type(exc).__name__}: {exc}"
        with self._lock:
            self._progress = None
            if stats is not None:
                self.stats = stats
            self.error = error

    def _set_progress(self, p: Progress) -> None:
        self._progress = p  # (one reference assignment: read without the lock)

    @property
    def running(self) -> bool:
        """Whether this process's update thread runs."""
        t = self._thread
        return t is not None and t.is_alive()

    def progress(self) -> Progress | None:
        """Where this process's update is (``0/0`` before it has counted the files), or None when none runs."""
        return self._progress if self.running else None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for this process's update to end (at most ``timeout`` seconds); True when none runs now."""
        t = self._thread
        if t is not None:
            t.join(timeout)
        return not self.running

    # -- searching -------------------------------------------------------------------------------------------------
    def search(self, query: str, kind: str | None = None, n: int = 10) -> SearchResult:
        """``ContextIndex.search`` on what is committed now, with ``partial`` set while an update runs here or in
        another process.

        Raises:
            ContextError: ``kind`` is unknown; the index cannot be opened.
        """
        with self._reader_lock:
            if self._reader is None:
                self._reader = ContextIndex.for_workspace(self.root, self.packages)
            ix = self._reader
            partial = self.progress()
            hits = ix.search(query, kind=kind, n=n)
            if partial is None:
                partial = ix.indexing()
            return SearchResult(hits, partial)

    def has_kind(self, kind: str) -> bool:
        """Whether any chunk of ``kind`` is committed now (``ContextIndex.has_kind``)."""
        with self._reader_lock:
            if self._reader is None:
                self._reader = ContextIndex.for_workspace(self.root, self.packages)
            return self._reader.has_kind(kind)

    def notes(self) -> list[str]:
        """The index's notes (no trigram tokenizer, the fallback C++ chunker)."""
        with self._reader_lock:
            if self._reader is None:
                self._reader = ContextIndex.for_workspace(self.root, self.packages)
            return list(self._reader.notes)

    def close(self) -> None:
        """Close the reader's connection (an update under way goes on)."""
        with self._reader_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
