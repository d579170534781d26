"""The context index: every source's chunks in one SQLite file, searched by symbol, trigram and word.

Schema (``.ktui/context.sqlite`` in the workspace, git-ignored with ``.ktui/``):

- ``sources(name, prefix, root, origin)``; ``files(source, path, sha256, size, mtime_ns, status, reason,
  n_chunks)`` (status ``ok``, ``skipped`` (binary, generated, over the size cap) or ``failed`` (did not parse));
- ``chunks(file_id, start, end, kind, symbol, sym_kind, anchor, head, body, mapped)``: each chunk's text stored once;
- ``fts_tri`` (tokenizer ``trigram``: substrings of dotted and underscored names such as ``cp.async.bulk`` or
  ``tiled_copy`` in ``make_tiled_copy``) and ``fts_word`` (``unicode61`` with ``_`` a token character: short tokens
  such as ``ld`` that a trigram cannot match): two external-content FTS5 tables over ``chunks``, kept in step by
  triggers;
- ``symbols(key, name, kind, chunk_id)``: what each chunk defines (a ``def``, a struct, a PTX instruction's
  section), so that an exact symbol's definition ranks first (plain BM25 ranks callers and examples above it).

Updates are incremental: a file whose size and mtime are unchanged is not read; one whose sha256 is unchanged is not
re-chunked; files gone from their source are dropped, and sources gone from the workspace too. A file that fails to
parse is recorded as ``failed`` with its reason and skipped; the rest is indexed.

Sources: each entry of ``context/`` (a clone, a link, ``docs/``), the workspace's ``references/``, ``kernels/`` and
``.ktui/dumps/``, and the installed ``triton`` and ``cutlass`` (CuTeDSL) packages, found with
``importlib.util.find_spec`` and read from disk (never imported). ``KTUI_CONTEXT_PACKAGES`` (comma-separated;
empty for none) replaces the package list.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from ktui.context import cpp
from ktui.context.chunk import CPP_EXT, TEXT_EXT, chunk_file, is_doxygen
from ktui.context.model import Chunk, ChunkError

DB_NAME = "context.sqlite"
SIZE_CAP = 2 * 1024 * 1024  # bytes: larger source files are generated tables or data
HTML_SIZE_CAP = 32 * 1024 * 1024  # the PTX ISA is one HTML page of ~10 MB
DEFAULT_PACKAGES = ("triton", "cutlass")
SKIP_DIRS = {"__pycache__", "node_modules", "test", "tests", "_sources", "_static", "_modules", "site-packages"}
KINDS = ("code", "docs", "ptx", "dumps")
KIND_HELP = {
    "code": "Python, C++ and CUDA sources (the installed triton and cutlass packages, context/, your kernels)",
    "docs": "documents: Markdown, RST, HTML and text (ktui context add-docs)",
    "ptx": "the PTX ISA, one hit per instruction (NVIDIA's PTX ISA page, added with ktui context add-docs)",
    "dumps": "the PTX and SASS of your versions' dumps rung (.ktui/dumps/)",
}
"""What each kind of chunk holds (``ktui context search --kind``'s help)."""
ADD_KIND = {
    "code": "add a repository or folder: ktui context add URL|FOLDER (the installed packages are indexed when "
    "importable: KTUI_CONTEXT_PACKAGES)",
    "docs": "add documents: ktui context add-docs FILE|FOLDER (HTML, Markdown, RST, text)",
    "ptx": "save NVIDIA's one-page PTX ISA (docs.nvidia.com/cuda/parallel-thread-execution/index.html, "
    '"Save page as") and add it: ktui context add-docs ptx-isa.html',
    "dumps": "the dumps rung writes them: ktui run KERNEL_FILE (or --rungs dumps), then search again",
}
"""How to give the index a source of each kind, for a search of a kind it has none of."""


def no_source_of(kind: str) -> str:
    """``nothing of kind ptx is indexed: no PTX ISA document was added; save ...``: why a search of ``kind`` can find
    nothing, and how to add a source of it."""
    what = {"ptx": "no PTX ISA document was added", "docs": "no document was added"}.get(kind, "no source has any")
    return f"nothing of kind {kind} is indexed ({what}): {ADD_KIND[kind]}"


SCHEMA_VERSION = "1"
COMMIT_FILES = 200  # an update commits after this many files read ...
COMMIT_SECONDS = 0.5  # ... or this long after its last commit: searches meanwhile see what is indexed so far
# definitions before other named chunks: the order of an exact symbol's hits
SYM_RANK = {
    "function": 0,
    "class": 0,
    "struct": 0,
    "instruction": 0,
    "kernel": 0,
    "alias": 1,
    "macro": 1,
    "enum": 1,
    "union": 1,
    "method": 1,
    "variable": 2,
    "declaration": 2,
    "concept": 1,
    "heading": 3,
}
RRF_K = 60  # reciprocal rank fusion constant (Cormack, Clarke, Buettcher 2009)


class ContextError(Exception):
    """The index cannot be opened or built (no FTS5 in this SQLite, an unknown source); one line for the user."""


@dataclass(frozen=True)
class Source:
    """A folder of files to index.

    Attributes:
        name: unique (``cutlass`` for ``context/cutlass``, ``references``, ``package:triton``).
        root: the folder.
        prefix: how its files' paths are shown and cited (``context/cutlass/``, ``triton:``).
        origin: ``context``, ``workspace`` or ``package``.
        exts: the file extensions indexed.
    """

    name: str
    root: Path
    prefix: str
    origin: str
    exts: frozenset[str] = frozenset(TEXT_EXT)


class UpdateJson(TypedDict):
    """What one update of the index did.

    Attributes:
        seen: files looked at.
        chunked: files (re)chunked: new or changed.
        unchanged: files whose hash had not changed (not read again).
        removed: files gone since the last update.
        chunks: chunks written.
        skipped: files passed over: [cited path, reason].
        failed: files that failed to parse: [cited path, reason].
        seconds: how long it took, s.
    """

    seen: int
    chunked: int
    unchanged: int
    removed: int
    chunks: int
    skipped: list[tuple[str, str]]
    failed: list[tuple[str, str]]
    seconds: float


class HitJson(TypedDict):
    """One search hit.

    Attributes:
        cite: ``path:line`` (with ``#anchor`` for a document section): what to cite.
        path: the file as cited (``context/cutlass/include/cute/tensor_impl.hpp``, ``triton:language/core.py``).
        line: the line cited (a symbol's definition, else the best matching line; an HTML section's heading).
        end: the chunk's last line.
        anchor: the document section's fragment id (HTML, Markdown, RST) or ``cell-N``, else ''.
        kind: ``code``, ``docs``, ``ptx`` or ``dumps``.
        symbol: what the chunk defines ('' when nothing).
        sym_kind: the kind of that definition (``function``, ``class``...), ''.
        why: ``definition`` (an exact symbol), ``text`` (every word of the query) or ``some words`` (no chunk held
            every word: the chunks holding some of them).
        score: higher is better (definitions first, then reciprocal rank fusion of the two full-text rankings).
        snippet: up to three lines around ``line``.
    """

    cite: str
    path: str
    line: int
    end: int
    anchor: str
    kind: str
    symbol: str
    sym_kind: str
    why: str
    score: float
    snippet: str


class SourceStatsJson(TypedDict):
    """One source of the index.

    Attributes:
        name: unique (``cutlass``, ``references``, ``package:triton``).
        prefix: how its files are cited (``context/cutlass/``, ``triton:``).
        root: its folder.
        origin: ``context``, ``workspace`` or ``package``.
        files: files indexed.
        chunks: chunks in the index.
        skipped: files passed over.
        failed: files that failed to parse.
    """

    name: str
    prefix: str
    root: str
    origin: str
    files: int
    chunks: int
    skipped: int
    failed: int


@dataclass
class UpdateStats:
    """What one ``update`` did: files seen, re-chunked, unchanged, removed; chunks written; skipped and failed files
    (``(cited path, reason)``); seconds taken."""

    seen: int = 0
    chunked: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> UpdateJson:
        return {
            "seen": self.seen,
            "chunked": self.chunked,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "chunks": self.chunks,
            "skipped": list(self.skipped),
            "failed": list(self.failed),
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class Progress:
    """Where an update is: ``done`` of ``total`` files checked (read again or found unchanged), in the source
    ``source`` (its cited prefix, ``context/cutlass/``); ``waiting`` when this process waits for another one's update
    (``done``/``total`` are then that one's, from the index's meta table)."""

    done: int
    total: int
    source: str = ""
    waiting: bool = False

    def line(self) -> str:
        """``indexing 1200/5400 files (context/cutlass/)``."""
        where = f" ({self.source})" if self.source else ""
        who = "another ktui is indexing" if self.waiting else "indexing"
        if not self.total:
            return f"{who} (listing the files)"
        return f"{who} {self.done}/{self.total} files{where}"


@dataclass
class Hit:
    """One search result.

    Attributes:
        path: the file as cited (``context/cutlass/include/cute/tensor_impl.hpp``, ``triton:language/core.py``).
        line: the line cited (the definition's line for a symbol hit, the best matching line otherwise; the heading's
            line for an HTML section).
        end: the chunk's last line.
        anchor: the document section's fragment id (HTML, Markdown, RST) or ``cell-N``, else "".
        kind: code, docs, ptx or dumps. symbol, sym_kind: what the chunk defines ("" if nothing).
        snippet: up to three lines around ``line``. why: ``definition`` (exact symbol) or ``text``.
        score: higher is better (definitions first, then reciprocal rank fusion of the two full-text rankings).
    """

    path: str
    line: int
    end: int
    anchor: str
    kind: str
    symbol: str
    sym_kind: str
    snippet: str
    why: str
    score: float

    @property
    def cite(self) -> str:
        """``path:line``, with ``#anchor`` for a document section."""
        return f"{self.path}:{self.line}" + (f"#{self.anchor}" if self.anchor else "")

    def as_dict(self) -> HitJson:
        return {
            "cite": self.cite,
            "path": self.path,
            "line": self.line,
            "end": self.end,
            "anchor": self.anchor,
            "kind": self.kind,
            "symbol": self.symbol,
            "sym_kind": self.sym_kind,
            "why": self.why,
            "score": round(self.score, 6),
            "snippet": self.snippet,
        }


# -- sources -----------------------------------------------------------------------------------------------------


def package_root(name: str) -> Path | None:
    """The folder of the installed package ``name`` (``find_spec(name).submodule_search_locations[0]``), without
    importing it; None when it is not installed or is a single module."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    locs = list(spec.submodule_search_locations or []) if spec else []
    return Path(locs[0]) if locs else None


def configured_packages() -> tuple[str, ...]:
    """The built-in packages: ``KTUI_CONTEXT_PACKAGES`` (comma-separated, empty for none) or triton and cutlass."""
    env = os.environ.get("KTUI_CONTEXT_PACKAGES")
    if env is None:
        return DEFAULT_PACKAGES
    return tuple(p.strip() for p in env.split(",") if p.strip())


def workspace_sources(root: Path, packages: Iterable[str] | None = None) -> list[Source]:
    """Every source of the workspace at ``root``: each entry of ``context/`` (folders and links to folders; loose
    files there make the source ``context/``; ``context/README.md`` and dotfiles excluded), ``references/``,
    ``kernels/``, ``.ktui/dumps/`` (PTX, SASS, TTGIR only), and the installed packages (``configured_packages()``
    when ``packages`` is None; Python and docs files)."""
    out: list[Source] = []
    ctx = root / "context"
    if ctx.is_dir():
        loose = False
        for entry in sorted(ctx.iterdir()):
            if entry.name.startswith(".") or entry.name == "README.md":
                continue
            if entry.is_dir():
                out.append(Source(entry.name, entry, f"context/{entry.name}/", "context"))
            elif entry.is_file():
                loose = True
        if loose:  # (a name no folder can have)
            out.append(Source("context/", ctx, "context/", "context"))
    for name in ("references", "kernels"):
        if (root / name).is_dir():
            out.append(Source(name, root / name, f"{name}/", "workspace"))
    dumps = root / ".ktui" / "dumps"
    if dumps.is_dir():
        out.append(Source("dumps", dumps, ".ktui/dumps/", "workspace", frozenset({".ptx", ".sass", ".ttgir"})))
    for pkg in configured_packages() if packages is None else packages:
        proot = package_root(pkg)
        if proot is not None and proot.is_dir():
            out.append(Source(f"package:{pkg}", proot, f"{pkg}:", "package", frozenset({".py", ".md", ".rst"})))
    return out


def _walk(src: Source) -> Iterator[tuple[Path, str]]:
    """``(path, relative posix path)`` of every candidate file of ``src``: hidden folders, ``__pycache__``, test
    folders and Sphinx build output (a folder with ``searchindex.js``) pruned; links below the root not followed.
    A loose-file ``context`` source lists only the files directly in ``context/``."""
    if src.name == "context/" and src.origin == "context":
        for p in sorted(src.root.iterdir()):
            if p.is_file() and not p.name.startswith(".") and p.name != "README.md" and p.suffix.lower() in src.exts:
                yield p, p.name
        return
    for dirpath, dirnames, filenames in os.walk(src.root, followlinks=False):
        if "searchindex.js" in filenames:  # built Sphinx HTML: the .rst sources are indexed instead
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
        base = Path(dirpath)
        for fn in sorted(filenames):
            if fn.startswith(".") or fn == "CMakeLists.txt":  # build scripts: noise for every query on CUTLASS
                continue
            ext = os.path.splitext(fn)[1].lower()
            if ext not in src.exts:
                continue
            p = base / fn
            if p.is_symlink() and not p.is_file():
                continue
            yield p, p.relative_to(src.root).as_posix()


def _generated(name: str, text: str) -> str:
    """Why a file's text is generated output not worth indexing, or ""."""
    if name.endswith((".html", ".htm")) and is_doxygen(text):
        return "generated (Doxygen)"
    if name.endswith((".py", ".pyi")) and re.search(
        r"Autogenerated by|DO NOT EDIT|automatically generated", text[:600], re.I
    ):
        return "generated (a code generator's output)"
    return ""


# -- the index -----------------------------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS sources(name TEXT PRIMARY KEY, prefix TEXT, root TEXT, origin TEXT);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY, source TEXT NOT NULL, path TEXT NOT NULL, sha TEXT, size INTEGER, mtime_ns INTEGER,
    status TEXT, reason TEXT, n_chunks INTEGER, UNIQUE(source, path));
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, start INTEGER, end INTEGER, kind TEXT, symbol TEXT,
    sym_kind TEXT, anchor TEXT, head TEXT, body TEXT, mapped INTEGER);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id);
CREATE TABLE IF NOT EXISTS symbols(key TEXT NOT NULL, name TEXT, kind TEXT, chunk_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS symbols_key ON symbols(key);
CREATE INDEX IF NOT EXISTS symbols_chunk ON symbols(chunk_id);
"""


def _fts_schema(table: str, tokenize: str) -> str:
    return f"""
CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(
    symbol, head, body, content='chunks', content_rowid='id', tokenize="{tokenize}");
CREATE TRIGGER IF NOT EXISTS {table}_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO {table}(rowid, symbol, head, body) VALUES (new.id, new.symbol, new.head, new.body);
END;
CREATE TRIGGER IF NOT EXISTS {table}_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO {table}({table}, rowid, symbol, head, body) VALUES ('delete', old.id, old.symbol, old.head, old.body);
END;
"""


@functools.lru_cache(maxsize=1)
def fts5_support() -> tuple[bool, bool]:
    """``(fts5, trigram)``: whether this Python's SQLite has FTS5 and its trigram tokenizer (SQLite >= 3.34)."""
    con = sqlite3.connect(":memory:")
    try:
        try:
            con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        except sqlite3.OperationalError:
            return False, False
        try:
            con.execute("CREATE VIRTUAL TABLE t3 USING fts5(x, tokenize='trigram')")
        except sqlite3.OperationalError:
            return True, False
        return True, True
    finally:
        con.close()


def db_path(root: Path) -> Path:
    """The index file of the workspace at ``root``: ``.ktui/context.sqlite`` (``KTUI_CONTEXT_DB`` overrides)."""
    env = os.environ.get("KTUI_CONTEXT_DB")
    return Path(env) if env else root / ".ktui" / DB_NAME


class _Ticker:
    """Counts an update's files: after each, calls its ``progress`` and commits (with the progress in the meta table)
    every ``COMMIT_FILES`` files or ``COMMIT_SECONDS`` seconds."""

    def __init__(self, ix: ContextIndex, total: int, progress: Callable[[Progress], None] | None):
        self.ix, self.total, self.progress = ix, total, progress
        self.done = self.pending = 0
        self.source = ""
        self.last = time.monotonic()

    def enter(self, source: str) -> None:
        """A source begins (its cited prefix): said at once, and committed."""
        self.source = source
        self._commit()
        if self.progress is not None:
            self.progress(Progress(self.done, self.total, source))

    def __call__(self) -> None:
        """A file of the current source is done."""
        self.done += 1
        self.pending += 1
        if self.pending >= COMMIT_FILES or time.monotonic() - self.last >= COMMIT_SECONDS:
            self._commit()
        if self.progress is not None:
            self.progress(Progress(self.done, self.total, self.source))

    def _commit(self) -> None:
        self.ix._set_progress(Progress(self.done, self.total, self.source))
        self.ix.con.commit()
        self.pending, self.last = 0, time.monotonic()


class ContextIndex:
    """The index of ``sources`` in the SQLite file ``path`` (created with its folder when missing).

    Raises:
        ContextError: this SQLite has no FTS5. Without the trigram tokenizer (SQLite < 3.34) the index works with the
            word table alone and ``trigram`` is False (substrings inside names are then not found; ``notes`` says so).
    """

    def __init__(self, path: Path, sources: list[Source]):
        fts5, trigram = fts5_support()
        if not fts5:
            raise ContextError(
                f"SQLite {sqlite3.sqlite_version} in this Python has no FTS5: the context index needs it"
            )
        self.trigram = trigram
        self.notes: list[str] = []
        if not trigram:
            self.notes.append(
                f"SQLite {sqlite3.sqlite_version} has no trigram tokenizer (needs >= 3.34): the word index alone "
                "answers, so parts of names (tiled_copy in make_tiled_copy) are not found"
            )
        if cpp.fallback_note():
            self.notes.append(cpp.fallback_note())
        self.path = path
        self.sources = {s.name: s for s in sources}
        self.root: Path | None = None
        self.packages: Iterable[str] | None = None
        path.parent.mkdir(parents=True, exist_ok=True)
        self.con = self._connect()
        if not self._schema_current():
            # (a second process must not see the tables before their meta rows, and rebuild): one creator at a time
            with self._lock("schema"):
                self._create()
        if self.con.execute("SELECT value FROM meta WHERE key='cpp'").fetchone() != (cpp.chunker(),):
            with self._lock("update"):  # another C++ chunker than the one that chunked them: read them again
                self._rechunk_cpp()

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        con.execute("PRAGMA cache_size=-65536")  # 64 MiB of page cache while FTS5 merges its segments
        return con

    @classmethod
    def for_workspace(cls, root: Path, packages: Iterable[str] | None = None) -> ContextIndex:
        """The index of the workspace at ``root`` over ``workspace_sources(root, packages)`` (not updated yet)."""
        ix = cls(db_path(root), workspace_sources(root, packages))
        ix.root, ix.packages = root, packages
        return ix

    def rescan(self) -> None:
        """Recompute the sources of the workspace (a folder added to context/, dumps written since): only for an
        index made by ``for_workspace``."""
        if self.root is not None:
            self.sources = {s.name: s for s in workspace_sources(self.root, self.packages)}

    def _lock_path(self, which: str) -> str:
        return str(self.path) + (".lock" if which == "update" else f".{which}.lock")

    @contextlib.contextmanager
    def _lock(self, which: str, waiting: Callable[[], None] | None = None) -> Iterator[None]:
        """An exclusive lock (``flock``) on ``<index>.lock`` (``update``: held while an update writes; searches need
        none, WAL readers see the last commit) or ``<index>.schema.lock`` (``schema``: while the tables are checked
        or made). ``waiting`` is called about twice a second while another holder keeps it."""
        with open(self._lock_path(which), "a+") as lock:
            if waiting is None:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            else:
                while True:
                    try:
                        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        waiting()
                        time.sleep(0.5)
            try:
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def indexing(self) -> Progress | None:
        """Where the update under way is (this process's or another's: the update lock is held), from the progress
        it commits to the meta table; None when none runs."""
        with open(self._lock_path("update"), "a+") as lock:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return self.committed_progress()
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
            return None

    def committed_progress(self) -> Progress:
        """The progress the last commit of an update wrote (``done total source``), ``0/0`` before its first."""
        row = self.con.execute("SELECT value FROM meta WHERE key='progress'").fetchone()
        parts = (row[0] if row else "0 0").split(" ", 2)
        try:
            return Progress(int(parts[0]), int(parts[1]), parts[2] if len(parts) > 2 else "")
        except (ValueError, IndexError):
            return Progress(0, 0)

    def _schema_current(self) -> bool:
        try:
            got = dict(self.con.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.OperationalError:  # no meta table yet
            return False
        return got.get("schema") == SCHEMA_VERSION and got.get("trigram") == str(int(self.trigram))

    def _create(self) -> None:
        """Create the tables; an index written by another schema version (or with another trigram setting) is
        deleted and rebuilt (it is a cache of the sources), once no update writes to it."""
        if self.con.execute("SELECT name FROM sqlite_master WHERE name='meta'").fetchone():
            if self._schema_current():
                return  # another process made them while this one waited
            with self._lock("update"):
                self.con.close()
                for suffix in ("", "-wal", "-shm"):
                    Path(str(self.path) + suffix).unlink(missing_ok=True)
                self.con = self._connect()
        self.con.executescript(_SCHEMA)
        self.con.executescript(_fts_schema("fts_word", "unicode61 tokenchars '_'"))
        if self.trigram:
            self.con.executescript(_fts_schema("fts_tri", "trigram"))
        self.con.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        self.con.execute("INSERT OR REPLACE INTO meta VALUES ('trigram', ?)", (str(int(self.trigram)),))
        self.con.execute("INSERT OR REPLACE INTO meta VALUES ('cpp', ?)", (cpp.chunker(),))
        self.con.commit()

    def _rechunk_cpp(self) -> None:
        """Forget the C++ files' size and hash, so that the next update reads and chunks them again (the C++ chunker
        changed: tree-sitter installed or gone), and record the chunker now in use."""
        if self.con.execute("SELECT value FROM meta WHERE key='cpp'").fetchone() == (cpp.chunker(),):
            return  # another process did it while this one waited
        likes = " OR ".join("path LIKE ?" for _ in CPP_EXT)
        self.con.execute(f"UPDATE files SET sha='', size=-1 WHERE {likes}", [f"%{e}" for e in sorted(CPP_EXT)])
        self.con.execute("INSERT OR REPLACE INTO meta VALUES ('cpp', ?)", (cpp.chunker(),))
        self.con.commit()

    def close(self) -> None:
        self.con.close()

    # -- updates -------------------------------------------------------------------------------------------------
    def update(
        self, only: Iterable[str] | None = None, progress: Callable[[Progress], None] | None = None
    ) -> UpdateStats:
        """Bring the index in step with the sources (only those named in ``only``, when given; sources no longer
        present are dropped only by a full update). ``progress`` is called after each file with the files checked
        so far of all the update's files (and about twice a second, ``waiting``, while another process's update
        holds the index). The update commits every ``COMMIT_FILES`` files or ``COMMIT_SECONDS``: searches meanwhile
        answer from what is committed, and ``indexing()`` says how far it is.

        Raises:
            ContextError: a name in ``only`` is not a source.
        """
        t0 = time.perf_counter()
        stats = UpdateStats()
        names = list(self.sources) if only is None else list(only)
        unknown = [n for n in names if n not in self.sources]
        if unknown:
            raise ContextError(f"no context source {unknown[0]!r} (sources: {', '.join(self.sources) or 'none'})")

        def waiting() -> None:
            if progress is not None:
                p = self.committed_progress()
                progress(Progress(p.done, p.total, p.source, waiting=True))

        # one updater at a time (the agent's first search and the TUI's panel may start together): the second waits
        # here, then finds the files unchanged
        with self._lock("update", waiting if progress is not None else None):
            self._update(names, only is None, stats, progress)
        stats.seconds = time.perf_counter() - t0
        return stats

    def _update(
        self, names: list[str], full: bool, stats: UpdateStats, progress: Callable[[Progress], None] | None
    ) -> None:
        files = {name: list(_walk(self.sources[name])) for name in names}
        total = sum(len(v) for v in files.values())
        self._set_progress(Progress(0, total))
        self.con.commit()
        tick = _Ticker(self, total, progress)
        for name in names:
            self._update_source(self.sources[name], files[name], stats, tick)
        if full:
            gone = [
                r[0]
                for r in self.con.execute("SELECT DISTINCT source FROM files").fetchall()
                if r[0] not in self.sources
            ]
            for name in gone:
                for (fid,) in self.con.execute("SELECT id FROM files WHERE source=?", (name,)).fetchall():
                    self._drop_file(fid)
                    stats.removed += 1
                self.con.execute("DELETE FROM sources WHERE name=?", (name,))
        self._set_progress(Progress(total, total))
        self.con.commit()

    def _set_progress(self, p: Progress) -> None:
        self.con.execute("INSERT OR REPLACE INTO meta VALUES ('progress', ?)", (f"{p.done} {p.total} {p.source}",))

    def _update_source(self, src: Source, files: list[tuple[Path, str]], stats: UpdateStats, tick: _Ticker) -> None:
        self.con.execute(
            "INSERT OR REPLACE INTO sources VALUES (?, ?, ?, ?)", (src.name, src.prefix, str(src.root), src.origin)
        )
        known = {
            r[1]: r
            for r in self.con.execute(
                "SELECT id, path, sha, size, mtime_ns, status FROM files WHERE source=?", (src.name,)
            ).fetchall()
        }
        seen: set[str] = set()
        tick.enter(src.prefix)
        for p, rel in files:
            seen.add(rel)
            stats.seen += 1
            self._update_file(src, p, rel, known.get(rel), stats)
            tick()
        for rel, row in known.items():
            if rel not in seen:
                self._drop_file(row[0])
                stats.removed += 1
        self.con.commit()

    def _update_file(self, src: Source, p: Path, rel: str, row: tuple[Any, ...] | None, stats: UpdateStats) -> None:
        """Bring one file's rows in step: unchanged (size and mtime, else hash) or read, chunked and written."""
        try:
            st = p.stat()
        except OSError:
            return
        if row is not None and row[3] == st.st_size and row[4] == st.st_mtime_ns:
            stats.unchanged += 1
            return
        cap = HTML_SIZE_CAP if rel.endswith((".html", ".htm")) else SIZE_CAP
        cited = src.prefix + rel
        if st.st_size > cap:
            self._record(src.name, rel, row, "", st, "skipped", f"over the size cap ({st.st_size} > {cap} bytes)")
            stats.skipped.append((cited, "over the size cap"))
            return
        try:
            data = p.read_bytes()
        except OSError as exc:
            stats.skipped.append((cited, f"unreadable: {exc}"))
            return
        sha = hashlib.sha256(data).hexdigest()
        if row is not None and row[2] == sha:
            self.con.execute("UPDATE files SET size=?, mtime_ns=? WHERE id=?", (st.st_size, st.st_mtime_ns, row[0]))
            stats.unchanged += 1
            return
        if b"\0" in data[:8192]:
            self._record(src.name, rel, row, sha, st, "skipped", "binary")
            stats.skipped.append((cited, "binary"))
            return
        text = data.decode("utf-8", errors="replace")
        why = _generated(rel, text)
        if why:
            self._record(src.name, rel, row, sha, st, "skipped", why)
            stats.skipped.append((cited, why))
            return
        try:
            chunks = chunk_file(rel, text)
        except ChunkError as exc:
            self._record(src.name, rel, row, sha, st, "failed", str(exc))
            stats.failed.append((cited, str(exc)))
            return
        except RecursionError:
            self._record(src.name, rel, row, sha, st, "failed", "too deeply nested to parse")
            stats.failed.append((cited, "too deeply nested to parse"))
            return
        fid = self._record(src.name, rel, row, sha, st, "ok", "", len(chunks))
        self._insert(fid, chunks)
        stats.chunked += 1
        stats.chunks += len(chunks)

    def _record(
        self,
        source: str,
        rel: str,
        row: tuple[Any, ...] | None,
        sha: str,
        st: os.stat_result,
        status: str,
        reason: str,
        n_chunks: int = 0,
    ) -> int:
        """Write a file's row (its old chunks dropped); its id."""
        if row is not None:
            self._drop_chunks(row[0])
            self.con.execute(
                "UPDATE files SET sha=?, size=?, mtime_ns=?, status=?, reason=?, n_chunks=? WHERE id=?",
                (sha, st.st_size, st.st_mtime_ns, status, reason, n_chunks, row[0]),
            )
            return int(row[0])
        cur = self.con.execute(
            "INSERT INTO files(source, path, sha, size, mtime_ns, status, reason, n_chunks) VALUES (?,?,?,?,?,?,?,?)",
            (source, rel, sha, st.st_size, st.st_mtime_ns, status, reason, n_chunks),
        )
        return int(cur.lastrowid or 0)

    def _insert(self, fid: int, chunks: list[Chunk]) -> None:
        syms: list[tuple[str, str, str, int]] = []
        for c in chunks:
            cur = self.con.execute(
                "INSERT INTO chunks(file_id, start, end, kind, symbol, sym_kind, anchor, head, body, mapped) "
                "VALUES (?,?,?,?,?,?,?,?,?,?)",
                (fid, c.start, c.end, c.kind, c.symbol, c.sym_kind, c.anchor, c.head, c.text, int(c.mapped)),
            )
            cid = int(cur.lastrowid or 0)
            syms.extend((s.key, s.name, s.kind, cid) for s in c.symbols if s.key)
        self.con.executemany("INSERT INTO symbols(key, name, kind, chunk_id) VALUES (?,?,?,?)", syms)

    def _drop_chunks(self, fid: int) -> None:
        self.con.execute("DELETE FROM symbols WHERE chunk_id IN (SELECT id FROM chunks WHERE file_id=?)", (fid,))
        self.con.execute("DELETE FROM chunks WHERE file_id=?", (fid,))

    def _drop_file(self, fid: int) -> None:
        self._drop_chunks(fid)
        self.con.execute("DELETE FROM files WHERE id=?", (fid,))

    def drop_source(self, name: str) -> int:
        """Drop a source's files and chunks from the index (its files on disk are untouched); the files dropped."""
        ids = [r[0] for r in self.con.execute("SELECT id FROM files WHERE source=?", (name,)).fetchall()]
        for fid in ids:
            self._drop_file(fid)
        self.con.execute("DELETE FROM sources WHERE name=?", (name,))
        self.con.commit()
        return len(ids)

    # -- reading -------------------------------------------------------------------------------------------------
    def source_stats(self) -> list[SourceStatsJson]:
        """Per source in the index: name, prefix, root, origin, files (indexed), chunks, skipped, failed."""
        out: list[SourceStatsJson] = []
        for name, prefix, root, origin in self.con.execute(
            "SELECT name, prefix, root, origin FROM sources ORDER BY origin, name"
        ).fetchall():
            counts = dict(
                self.con.execute(
                    "SELECT status, COUNT(*) FROM files WHERE source=? GROUP BY status", (name,)
                ).fetchall()
            )
            (chunks,) = self.con.execute(
                "SELECT COALESCE(SUM(n_chunks), 0) FROM files WHERE source=?", (name,)
            ).fetchone()
            out.append(
                {
                    "name": name,
                    "prefix": prefix,
                    "root": root,
                    "origin": origin,
                    "files": counts.get("ok", 0),
                    "chunks": int(chunks),
                    "skipped": counts.get("skipped", 0),
                    "failed": counts.get("failed", 0),
                }
            )
        return out

    def failures(self) -> list[tuple[str, str]]:
        """Every file that failed to parse: ``(cited path, reason)``."""
        return [
            (prefix + path, reason)
            for prefix, path, reason in self.con.execute(
                "SELECT s.prefix, f.path, f.reason FROM files f JOIN sources s ON s.name=f.source "
                "WHERE f.status='failed' ORDER BY f.source, f.path"
            ).fetchall()
        ]

    def chunk_count(self) -> int:
        return int(self.con.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def has_kind(self, kind: str) -> bool:
        """Whether any chunk of ``kind`` (one of KINDS) is indexed (a search of another kind finds nothing)."""
        return self.con.execute("SELECT 1 FROM chunks WHERE kind=? LIMIT 1", (kind,)).fetchone() is not None

    # -- search --------------------------------------------------------------------------------------------------
    def search(self, query: str, kind: str | None = None, n: int = 10) -> list[Hit]:
        """The ``n`` best hits for ``query``: first the chunks that define it as an exact symbol (case-insensitive;
        for ``cute.local_tile`` or ``cute::local_tile`` also the last component), definitions before methods,
        variables and headings; then the full-text hits of the trigram and word tables fused by reciprocal rank
        (each ranked by BM25 with weights 10 on the symbol, 4 on the head line, 1 on the body), every word required,
        or where no chunk holds them all, any of them (``why``: ``some words``). ``kind`` (code, docs, ptx, dumps)
        filters.

        Raises:
            ContextError: ``kind`` is not one of KINDS.
        """
        if kind is not None and kind not in KINDS:
            raise ContextError(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
        q = query.strip()
        if not q:
            return []
        n = max(1, min(int(n), 200))
        scores: dict[int, float] = {}
        why: dict[int, str] = {}
        for cid, rank in self._symbol_hits(q, kind, n):
            scores[cid] = 10.0 - rank * 1e-3
            why[cid] = "definition"
        terms = q.split()
        lim = max(50, 4 * n)
        ranked = self._text_hits(terms, kind, lim, " AND ")
        found = "text"
        if len(terms) > 1 and not any(ranked):
            # no chunk holds every word ("online softmax": none says "online"): the chunks holding some of them,
            # BM25 ranking those with more and rarer words first, marked so (new-user trial 29, F9: such queries were
            # all empty)
            ranked, found = self._text_hits(terms, kind, lim, " OR "), "some words"
        for ids in ranked:
            for r, cid in enumerate(ids):
                scores[cid] = scores.get(cid, 0.0) + 1.0 / (RRF_K + r + 1)
                why.setdefault(cid, found)
        best = sorted(scores, key=lambda c: -scores[c])[: 3 * n]
        rows = self._rows(best)
        out: list[Hit] = []
        shown: set[str] = set()
        for c in best:
            if c not in rows or rows[c][9] in shown:  # the same text twice (a package and its clone): once
                continue
            shown.add(rows[c][9])
            out.append(self._hit(rows[c], terms, why[c], scores[c]))
            if len(out) == n:
                break
        return out

    def _text_hits(self, terms: list[str], kind: str | None, lim: int, join: str) -> list[list[int]]:
        """The full-text hits of ``terms`` joined by ``join`` (`` AND `` or `` OR ``): the word table's, then the
        trigram table's for what the word table keeps whole or splits: names with _ . : (parts of make_tiled_copy,
        cp.async.bulk), and plain words it found too few times. A plain common word ("tensor") is answered by the word
        table alone: its trigrams' posting lists are the slowest query (~30 ms on CUTLASS)."""
        words = self._word_expr(terms, join)
        ranked = [self._fts("fts_word", words, kind, lim)] if words else [[]]
        tri = self._tri_expr(terms, join)
        if tri and self.trigram and (any(re.search(r"[^\w]|_", t) for t in terms) or len(ranked[0]) < lim):
            ranked.append(self._fts("fts_tri", tri, kind, lim))
        return ranked

    def _symbol_hits(self, q: str, kind: str | None, n: int) -> list[tuple[int, int]]:
        keys = [q.lower()]
        if q[0] in ".%" and len(q) > 1:  # a PTX directive or special register: .maxnreg, %tid
            keys = [q.lower().lstrip(".%")]
        last = re.split(r"::|\.", q)[-1].lower()
        if last and last != keys[0] and not self._has_symbol(keys[0]):
            keys.append(last)
        out: list[tuple[tuple[int, int, int, int], int]] = []
        for key in keys:
            sql = (
                "SELECT s.chunk_id, s.name, s.kind, c.kind, f.path FROM symbols s JOIN chunks c ON c.id=s.chunk_id "
                "JOIN files f ON f.id=c.file_id WHERE s.key=?" + (" AND c.kind=?" if kind else "") + " LIMIT 500"
            )
            for cid, name, skind, _ckind, path in self.con.execute(sql, (key, kind) if kind else (key,)).fetchall():
                exact = 0 if name == q or name.endswith(("." + q, "::" + q)) or name == last else 1
                out.append(((key != keys[0], SYM_RANK.get(skind, 4), exact, len(path)), cid))
            if out:
                break
        out.sort()
        seen: list[int] = []
        for _, cid in out:
            if cid not in seen:
                seen.append(cid)
        return [(cid, r) for r, cid in enumerate(seen[:n])]

    def _has_symbol(self, key: str) -> bool:
        return self.con.execute("SELECT 1 FROM symbols WHERE key=? LIMIT 1", (key,)).fetchone() is not None

    @staticmethod
    def _quote(t: str) -> str:
        return '"' + t.replace('"', '""') + '"'

    def _term(self, t: str, ok: Callable[[str], bool]) -> str:
        """One term of a query: a dotted name (``tl.cumsum``, ``cute::local_tile``) matches itself or its last
        component, which is how a definition's text names it (new-user trial 20 L9: ``tl.cumsum reverse`` found
        nothing where ``cumsum reverse`` found ``def cumsum(..., reverse=False)``)."""
        last = re.split(r"::|\.", t)[-1]
        if last and last != t and ok(last) and len(re.split(r"::|\.", t)) > 1 and t[0] not in ".%":
            return f"({self._quote(t)} OR {self._quote(last)})"
        return self._quote(t)

    def _tri_expr(self, terms: list[str], join: str = " AND ") -> str:
        # a trigram index matches substrings of 3 characters or more; shorter terms are left to the word index
        def ok(t: str) -> bool:
            return len(t) >= 3

        return join.join(self._term(t, ok) for t in terms if ok(t))

    def _word_expr(self, terms: list[str], join: str = " AND ") -> str:
        def ok(t: str) -> bool:
            return re.search(r"\w", t) is not None

        return join.join(self._term(t, ok) for t in terms if ok(t))

    def _fts(self, table: str, expr: str, kind: str | None, lim: int) -> list[int]:
        sql = (
            f"SELECT t.rowid FROM {table} t"
            + (" JOIN chunks c ON c.id=t.rowid" if kind else "")
            + f" WHERE {table} MATCH ?"
            + (" AND c.kind=?" if kind else "")
            + f" ORDER BY bm25({table}, 10.0, 4.0, 1.0) LIMIT ?"
        )
        try:
            return [r[0] for r in self.con.execute(sql, (expr, kind, lim) if kind else (expr, lim)).fetchall()]
        except sqlite3.OperationalError:
            return []  # a query FTS5 cannot parse (only punctuation): no hits from this table

    def _rows(self, ids: list[int]) -> dict[int, tuple[Any, ...]]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        sql = (
            "SELECT c.id, s.prefix || f.path, c.start, c.end, c.kind, c.symbol, c.sym_kind, c.anchor, c.head, c.body, "
            "c.mapped FROM chunks c JOIN files f ON f.id=c.file_id JOIN sources s ON s.name=f.source "
            f"WHERE c.id IN ({marks})"
        )
        return {r[0]: r for r in self.con.execute(sql, ids).fetchall()}

    @staticmethod
    def _hit(row: tuple[Any, ...], terms: list[str], why: str, score: float) -> Hit:
        _, path, start, end, kind, symbol, sym_kind, anchor, head, body, mapped = row
        lines = body.split("\n")
        low = [t.lower() for t in terms]
        idx = 0
        if why == "definition" and symbol:
            short = re.split(r"::|\.", symbol)[-1]
            pat = re.compile(
                r"\b(def|class|struct|using)\s+" + re.escape(short) + r"\b|\b" + re.escape(short) + r"\s*[(<]"
            )
            idx = next((i for i, ln in enumerate(lines) if pat.search(ln)), 0)
        else:
            best = 0
            for i, ln in enumerate(lines):
                lo = ln.lower()
                k = sum(1 for t in low if t in lo)
                if k > best:
                    best, idx = k, i
                    if k == len(low):
                        break
        shown = [ln.strip()[:160] for ln in lines[idx : idx + 3] if ln.strip()]
        if not mapped and head and (not shown or shown[0] != head.strip()[:160]):
            shown = [head.strip()[:160], *shown[:2]]
        line = start + idx if mapped else start
        return Hit(path, line, end, anchor, kind, symbol, sym_kind, "\n".join(shown), why, score)


# -- citations -----------------------------------------------------------------------------------------------------


def resolve_citation(root: Path, cited: str, packages: Iterable[str] | None = None) -> Path | None:
    """The file a cited path names when it lies outside the workspace but inside a context source: ``triton:x.py``
    or ``cutlass:cute/core.py`` (an installed package), or ``context/<name>/...`` where ``context/<name>`` links out
    of the workspace. None when ``cited`` is neither, or leads out of its source (``..``). For reading only."""
    m = re.match(r"^([A-Za-z_][\w.-]*):(?!//)(.+)$", cited)
    if m and "/" not in m.group(1):
        pkgs = configured_packages() if packages is None else tuple(packages)
        if m.group(1) in pkgs:
            base = package_root(m.group(1))
            if base is not None:
                return _inside(base, m.group(2))
        return None
    parts = Path(cited).parts
    if len(parts) >= 3 and parts[0] == "context":
        base = root / "context" / parts[1]
        if base.is_symlink() or base.is_dir():
            return _inside(base, str(Path(*parts[2:])))
    return None


def _inside(base: Path, rel: str) -> Path | None:
    b = base.resolve()
    p = (b / rel).resolve()
    return p if (p == b or b in p.parents) and p.is_file() else None
