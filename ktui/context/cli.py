"""``ktui context``: fill the context directory and search it.

    ktui context add <git url | path> [--name N]     a shallow clone into context/<name>, or a link to a folder
    ktui context add-docs <file | folder> [--name N] documents (HTML such as the PTX ISA page, Markdown, RST, text)
    ktui context list [--json]                       every source: files, chunks, skipped, failed
    ktui context remove NAME                         a source added by `add` / `add-docs` (its clone or link)
    ktui context reindex [--json]                    bring the index in step (incremental by file hash)
    ktui context search "QUERY" [--kind code|docs|ptx|dumps] [--json] [-n N]

Every command takes ``--workspace DIR`` (default: the workspace above the current folder). What ``add`` and
``add-docs`` made is recorded in ``context/.sources.json``; clones, links and copies under ``context/`` are
git-ignored. Errors raise ``ContextError`` (one line; ``ktui`` prints it and exits 2). ``--json`` prints the
envelope of ``ktui.core.envelope`` (command ``context list``, ``context reindex`` or ``context search``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

from ktui.context import cpp
from ktui.context.index import (
    KIND_HELP,
    KINDS,
    ContextError,
    ContextIndex,
    Hit,
    HitJson,
    Progress,
    SourceStatsJson,
    UpdateJson,
    UpdateStats,
    no_source_of,
)
from ktui.core import envelope
from ktui.core.workspace import Workspace, WorkspaceError

MANIFEST = ".sources.json"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_URL_RE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.I)


class SearchJson(TypedDict):
    """The ranked hits of one query (``ktui context search --json``'s data).

    Attributes:
        query: the query as given.
        kind: the kind searched (``--kind``), null for every kind.
        hits: best first.
        notes: why a search can find nothing (``nothing of kind ptx is indexed (...): save NVIDIA's PTX ISA ... and
            add it: ktui context add-docs ptx-isa.html``) and what the index cannot do here; [] when nothing to say.
    """

    query: str
    kind: str | None
    hits: list[HitJson]
    notes: list[str]


class ReindexJson(UpdateJson):
    """What the update did (``ktui context reindex --json``'s data) and the index's notes.

    Attributes:
        seen: files looked at.
        chunked: files (re)chunked: new or changed.
        unchanged: files whose hash had not changed (not read again).
        removed: files gone since the last update.
        chunks: chunks written.
        skipped: files passed over: [cited path, reason].
        failed: files that failed to parse: [cited path, reason].
        seconds: how long it took, s.
        notes: what the index cannot do here (no trigram tokenizer: substrings inside names are not found).
    """

    notes: list[str]


class SourceJson(SourceStatsJson):
    """A source of the index and how it came.

    Attributes:
        name: unique (``cutlass``, ``references``, ``package:triton``).
        prefix: how its files are cited (``context/cutlass/``, ``triton:``).
        root: its folder.
        origin: ``context``, ``workspace`` or ``package``.
        files: files indexed.
        chunks: chunks in the index.
        skipped: files passed over.
        failed: files that failed to parse.
        added: ``clone``, ``link`` or ``docs`` for a source ``ktui context add`` or ``add-docs`` made, '' for the
            others.
        source: what it was made from (the URL or folder given), ''.
    """

    added: str
    source: str


class ListJson(TypedDict):
    """Every source of the index (``ktui context list --json``'s data).

    Attributes:
        sources: the sources, by origin then name.
        failed: every file that failed to parse: [cited path, reason].
        cpp_chunker: the C++ chunker in use: ``tree-sitter X, tree-sitter-cpp Y``, or ``scanner (...)`` when
            tree-sitter cannot be imported.
        notes: what the index cannot do here.
    """

    sources: list[SourceJson]
    failed: list[tuple[str, str]]
    cpp_chunker: str
    notes: list[str]


def parser() -> argparse.ArgumentParser:
    p = envelope.ArgumentParser(prog="ktui context", description="The context directory: add sources, search them.")
    p.add_argument("--workspace", default=".", help="the workspace (default: the one above the current folder)")
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add", help="clone (shallow) a git repository into context/<name>, or link a folder")
    a.add_argument("source", help="a git URL (https://, git@, file://) or a local folder")
    a.add_argument("--name", help="the folder under context/ (default: the repository's or folder's name)")
    d = sub.add_parser("add-docs", help="add documents: a file is copied to context/docs/, a folder is linked")
    d.add_argument("source", help="an HTML, Markdown, RST or text file, or a folder of them")
    d.add_argument("--name", help="the name under context/ (a folder) or context/docs/ (a file)")
    ls = sub.add_parser("list", help="every source of the index")
    ls.add_argument("--json", action="store_true", help="one JSON object: the envelope (`ktui schema context list`)")
    r = sub.add_parser("remove", help="remove a source that add or add-docs made")
    r.add_argument("name", help="a name from `ktui context list` (docs/<file> for one added document)")
    ri = sub.add_parser("reindex", help="update the index (unchanged files are not re-read)")
    ri.add_argument("--json", action="store_true", help="one JSON object: the envelope (`ktui schema context reindex`)")
    s = sub.add_parser("search", help="ranked hits with path:line and a snippet")
    s.add_argument(
        "query",
        help="a name or words, not a regex: a symbol (cute.local_tile, cp.async.bulk, tl.dot) ranks its definition "
        "first, then full-text hits",
    )
    s.add_argument(
        "--kind",
        choices=KINDS,
        help="search one kind only: " + "; ".join(f"{k}: {what}" for k, what in KIND_HELP.items()),
    )
    s.add_argument("--json", action="store_true", help="one JSON object: the envelope (`ktui schema context search`)")
    s.add_argument("-n", type=int, default=10, help="how many hits (default 10)")
    return p


def cli(argv: list[str]) -> int:
    """Run ``ktui context ARGV``; 0 on success (``search``: also with no hit; a ``--kind`` of which nothing is
    indexed says so and how to add a source of it).

    Raises:
        ContextError: bad input (unknown source, a clone that failed, not a workspace).
    """
    args = parser().parse_args(argv)
    try:
        ws = Workspace.find(args.workspace)
    except WorkspaceError as exc:
        raise ContextError(str(exc)) from None
    try:
        return _run(ws.root, args)
    except (OSError, sqlite3.Error) as exc:  # a read-only workspace, a full disk, a locked index
        raise ContextError(f"the context index failed: {exc}") from None


def _run(ws_root: Path, args: argparse.Namespace) -> int:
    if args.cmd == "add":
        return add(ws_root, args.source, args.name)
    if args.cmd == "add-docs":
        return add_docs(ws_root, args.source, args.name)
    if args.cmd == "remove":
        return remove(ws_root, args.name)
    ix = ContextIndex.for_workspace(ws_root)
    try:
        if args.cmd == "list":
            return list_sources(ix, args.json)
        if args.cmd == "reindex":
            st = ix.update(progress=None if args.json else StderrProgress())
            if args.json:
                data: ReindexJson = {**st.as_dict(), "notes": ix.notes}
                return envelope.emit("context reindex", data)
            _print_stats(st, ix)
            return 0
        first = ix.chunk_count() == 0
        if first and not args.json:
            print("building the context index (first use; later searches update it incrementally)", file=sys.stderr)
        ix.update(progress=None if args.json else StderrProgress())
        hits = ix.search(args.query, kind=args.kind, n=args.n)
        missing = no_source_of(args.kind) if args.kind and not hits and not ix.has_kind(args.kind) else ""
        if args.json:
            found: SearchJson = {
                "query": args.query,
                "kind": args.kind,
                "hits": [h.as_dict() for h in hits],
                "notes": ([missing] if missing else []) + list(ix.notes),
            }
            return envelope.emit("context search", found)
        print(render_hits(args.query, hits))
        if missing:
            print(missing)
        for note in ix.notes:
            print(f"note: {note}", file=sys.stderr)
        return 0
    finally:
        ix.close()


class StderrProgress:
    """An update's progress on stderr: ``indexing 1200/5400 files (context/cutlass/)`` once a second, from the first
    second on (an update with nothing to read prints nothing), and ``indexed 5400 files`` at the end."""

    def __init__(self, every: float = 1.0):
        self.every = every
        self.t0 = self.last = time.monotonic()
        self.printed = False

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        if p.total and p.done == p.total and not p.waiting:
            if self.printed:
                print(f"indexed {p.total} files in {now - self.t0:.1f} s", file=sys.stderr, flush=True)
            return
        if now - self.t0 >= self.every and now - self.last >= self.every:
            print(p.line(), file=sys.stderr, flush=True)
            self.last, self.printed = now, True


def render_hits(query: str, hits: list[Hit]) -> str:
    """Hits as text: ``N. path:line[#anchor]  [kind symbol]`` then the snippet indented. ``(no hit for Q)``."""
    if not hits:
        return f"(no hit for {query!r})"
    out = []
    for i, h in enumerate(hits, 1):
        tag = f"{h.kind}" + (f" {h.sym_kind} {h.symbol}" if h.symbol and h.sym_kind not in ("", "part") else "")
        out.append(f"{i}. {h.cite}  [{tag}]" + (f"  ({h.why})" if h.why in ("definition", "some words") else ""))
        out += [f"     {ln}" for ln in h.snippet.split("\n") if ln]
    return "\n".join(out)


def _print_stats(st: UpdateStats, ix: ContextIndex) -> None:
    print(
        f"{st.seen} files: {st.chunked} chunked ({st.chunks} chunks), {st.unchanged} unchanged, {st.removed} removed, "
        f"{len(st.skipped)} skipped, {len(st.failed)} failed to parse, in {st.seconds:.1f} s; index "
        f"{ix.chunk_count()} chunks, {ix.path.stat().st_size / 2**20:.1f} MiB at {ix.path}"
    )
    for path, why in st.failed:
        print(f"  failed: {path}: {why}")
    for note in ix.notes:
        print(f"note: {note}")


def list_sources(ix: ContextIndex, as_json: bool) -> int:
    """Print every source (updating the index first, so the counts are true) and the C++ chunker in use (a note
    when it is the fallback scanner: tree-sitter cannot be imported)."""
    ix.update(progress=None if as_json else StderrProgress())
    manifest = _read_manifest(ix.path.parent.parent / "context")
    rows: list[SourceJson] = [
        {
            **r,
            "added": str(manifest.get(r["name"], {}).get("type", "")),
            "source": str(manifest.get(r["name"], {}).get("origin", "")),
        }
        for r in ix.source_stats()
    ]
    if as_json:
        data: ListJson = {"sources": rows, "failed": ix.failures(), "cpp_chunker": cpp.chunker(), "notes": ix.notes}
        return envelope.emit("context list", data)
    for r in rows:
        extra = f" ({r['added']} of {r['source']})" if r["added"] else ""
        print(
            f"{r['name']:<20} {r['prefix']:<28} {r['files']:>6} files {r['chunks']:>7} chunks "
            f"{r['skipped']:>5} skipped {r['failed']:>3} failed{extra}"
        )
    for path, why in ix.failures():
        print(f"  failed: {path}: {why}")
    print(f"C++/CUDA chunker: {cpp.chunker()}")
    for note in ix.notes:
        print(f"note: {note}")
    return 0


# -- adding and removing ---------------------------------------------------------------------------------------------


def _read_manifest(ctx: Path) -> dict[str, Any]:
    try:
        data = json.loads((ctx / MANIFEST).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_manifest(ctx: Path, data: dict[str, Any]) -> None:
    tmp = ctx / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, ctx / MANIFEST)


def _name_for(source: str, name: str | None) -> str:
    n = name or re.sub(r"\.git$", "", source.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1])
    if not _NAME_RE.match(n) or n in ("docs", "README.md", "context"):
        raise ContextError(f"{n!r} cannot name a context source: give --name (letters, digits, _ . -)")
    return n


def is_git_url(source: str) -> bool:
    """True for what ``git clone`` takes as a remote: ``https://``, ``ssh://``, ``file://``, ``git@host:path``."""
    return bool(_URL_RE.match(source))


def add(root: Path, source: str, name: str | None = None) -> int:
    """``ktui context add``: a git URL is cloned with ``--depth 1`` into ``context/<name>``; a local folder is
    linked there (a symbolic link); a local file is added as a document (``add_docs``). The new source is indexed.

    Raises:
        ContextError: the name is taken, the path does not exist, ``git clone`` failed.
    """
    ctx = root / "context"
    ctx.mkdir(exist_ok=True)
    manifest = _read_manifest(ctx)
    if not is_git_url(source):
        p = Path(source).expanduser()
        if p.is_file():
            return add_docs(root, source, name)
        if not p.is_dir():
            raise ContextError(f"{source} is neither a git URL nor an existing folder")
        n = _name_for(str(p.resolve()), name)
        dest = ctx / n
        if dest.exists() or dest.is_symlink():
            raise ContextError(f"context/{n} exists already: `ktui context remove {n}` first, or give --name")
        dest.symlink_to(p.resolve(), target_is_directory=True)
        manifest[n] = {"type": "link", "origin": str(p.resolve())}
    else:
        n = _name_for(source, name)
        dest = ctx / n
        if dest.exists() or dest.is_symlink():
            raise ContextError(f"context/{n} exists already: `ktui context remove {n}` first, or give --name")
        proc = subprocess.run(
            ["git", "clone", "--depth", "1", "--quiet", source, str(dest)],
            capture_output=True,
            text=True,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
        if proc.returncode != 0:
            shutil.rmtree(dest, ignore_errors=True)
            last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise ContextError(f"git clone {source} failed: {last}")
        manifest[n] = {"type": "clone", "origin": source}
    _write_manifest(ctx, manifest)
    return _index_one(root, n)


def add_docs(root: Path, source: str, name: str | None = None) -> int:
    """``ktui context add-docs``: a file is copied into ``context/docs/`` (``--name`` renames it); a folder is
    linked as ``context/<name>``. The documents are indexed.

    Raises:
        ContextError: the path does not exist or the name is taken.
    """
    p = Path(source).expanduser()
    if p.is_dir():
        return add(root, str(p), name)
    if not p.is_file():
        raise ContextError(f"no such file or folder: {source}")
    ctx = root / "context"
    docs = ctx / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    fn = name or p.name
    if "/" in fn or fn.startswith("."):
        raise ContextError(f"{fn!r} cannot name a document")
    shutil.copyfile(p, docs / fn)
    manifest = _read_manifest(ctx)
    entry = manifest.setdefault("docs", {"type": "docs", "origin": "add-docs", "files": {}})
    entry.setdefault("files", {})[fn] = str(p.resolve())
    _write_manifest(ctx, manifest)
    return _index_one(root, "docs")


def _index_one(root: Path, name: str) -> int:
    ix = ContextIndex.for_workspace(root)
    try:
        st = ix.update(only=[name])
        _print_stats(st, ix)
    finally:
        ix.close()
    return 0


def remove(root: Path, name: str) -> int:
    """``ktui context remove NAME``: delete the clone, link or copied documents ``add``/``add-docs`` made (a link
    is removed, never what it points to) and drop them from the index. ``docs/<file>`` removes one document.

    Raises:
        ContextError: NAME was not added by ``ktui context add`` or ``add-docs`` (a folder you put in context/
            yourself is yours to delete).
    """
    ctx = root / "context"
    manifest = _read_manifest(ctx)
    if name.startswith("docs/") and "docs" in manifest:
        fn = name.split("/", 1)[1]
        files = manifest["docs"].get("files", {})
        if fn not in files:
            raise ContextError(f"no document {fn!r} in context/docs/ (added: {', '.join(files) or 'none'})")
        (ctx / "docs" / fn).unlink(missing_ok=True)
        del files[fn]
    else:
        entry = manifest.get(name)
        if entry is None:
            known = ", ".join(sorted(manifest)) or "none"
            raise ContextError(
                f"{name!r} was not added by `ktui context add` (added: {known}); delete context/{name} yourself"
            )
        dest = ctx / name
        if dest.is_symlink():
            dest.unlink()
        elif dest.is_dir():
            shutil.rmtree(dest)
        del manifest[name]
    _write_manifest(ctx, manifest)
    ix = ContextIndex.for_workspace(root)
    try:
        if name.startswith("docs/"):
            dropped = ix.update(only=["docs"]).removed if "docs" in ix.sources else ix.drop_source("docs")
        else:
            dropped = ix.drop_source(name)
        print(f"removed {name}; {dropped} files dropped from the index ({ix.chunk_count()} chunks left)")
    finally:
        ix.close()
    return 0
