"""The agent's tools: read the workspace, search the context directory, write kernel versions, run the ladder.

Every path is resolved and must stay inside the workspace: ``..`` and symbolic links that lead out are refused with
a ``ToolError`` whose message goes back to the model. Writes go only to ``kernels/<problem>/<version>.py``. Nothing
the model writes is executed except through the ladder (in the worker processes).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ktui.core import report
from ktui.core.figures import dumps_of
from ktui.core.results import RUNG_ORDER, LadderResult, Status
from ktui.core.store import atomic_write
from ktui.core.workspace import KERNELS, KernelRef, Workspace

NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")
SKIP_DIRS = {".git", ".ktui", ".venv", "__pycache__", ".device", ".whl", "node_modules", ".pytest_cache"}
MAX_READ_CHARS = 40_000
CONTEXT_WAIT_S = 3.0  # search_context waits this long for the index update under way, then answers partially


class ToolError(Exception):
    """A tool call the agent got wrong (bad path, unknown problem...): the message is the tool's result."""


TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": "List files of the workspace under a folder (default: the workspace root).",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "a folder relative to the workspace root"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file of the workspace (a kernel, a reference, a context document).",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "relative to the workspace root"},
                    "start_line": {"type": "integer"},
                    "end_line": {"type": "integer"},
                },
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_context",
            "description": "Search the context index: the installed Triton and CuTeDSL (cutlass) packages, what the "
            "human added under context/ (CUTLASS clones, the PTX ISA), the workspace's references, kernels and "
            "PTX/SASS dumps. An exact symbol (local_tile, make_tiled_copy, cp.async.bulk) returns its definition "
            "first; other queries match words and parts of names. Returns ranked hits as path:line with a snippet; "
            "open one with read_file(path, start_line, end_line) and cite path:line for what you use.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "a symbol or words (not a regex); prefix with kind:code, kind:docs, kind:ptx "
                        "or kind:dumps to search one kind only",
                    },
                    "max_results": {"type": "integer", "description": "default 10, at most 50"},
                },
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_kernel",
            "description": "Write a kernel version: the complete source of kernels/<problem>/<version>.py. Without "
            "version, a new version at the next free vN; with an existing version, replaces it. "
            "The ladder (compile, run, correctness, benchmark) runs it and you get the results.",
            "parameters": {
                "type": "object",
                "properties": {
                    "problem": {"type": "string"},
                    "source": {"type": "string", "description": "the whole file"},
                    "version": {"type": "string", "description": "e.g. v3; omit for a new version"},
                },
                "required": ["problem", "source"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_dump",
            "description": "Read what the compiler made of a version (its latest dumps rung): the resource summary and "
            "instruction mix (stage 'summary'), or one stage's text: ttir, ttgir, llir, ptx, sass.",
            "parameters": {
                "type": "object",
                "properties": {
                    "problem": {"type": "string"},
                    "version": {"type": "string"},
                    "stage": {"type": "string", "enum": ["summary", "ttir", "ttgir", "llir", "ptx", "sass"]},
                },
                "required": ["problem", "version"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_ladder",
            "description": "Run the rung ladder on a version now and return its results. With rungs, only those "
            "(and what they need): ['trace'] times the kernel's ktui.trace regions per warp and CTA (each region's "
            "median, spread and share, CTA imbalance and tail, the critical path, a timeline per SM; a traced "
            "call, never the benchmark's time); ['profile'] runs Nsight Compute on one call, with the hottest "
            "Python lines and their stall reasons. Both need a GPU (on the CPU they say so).",
            "parameters": {
                "type": "object",
                "properties": {
                    "problem": {"type": "string"},
                    "version": {"type": "string"},
                    "rungs": {
                        "type": "array",
                        "items": {"type": "string", "enum": list(RUNG_ORDER)},
                        "description": 'e.g. ["trace"] or ["profile"]; omit for the default ladder',
                    },
                },
                "required": ["problem", "version"],
            },
        },
    },
]


def tool_names() -> list[str]:
    return [t["function"]["name"] for t in TOOLS]


@dataclass
class PendingWrite:
    """A write the agent asked for: where, the new source, and the unified diff against the version it is derived
    from.

    Attributes:
        kernel: the version written.
        source: its new text.
        diff: a unified diff from ``base``'s text (the empty file when ``base`` is None) to ``source``, or
            ``(no change)``.
        new_file: True when ``kernel`` does not exist yet.
        base: the version the diff is against: ``kernel`` itself when it exists, else the version the new one is
            derived from (``prepare_write``'s ``base``), None for the empty file.
        added, removed: the diff's ``+`` and ``-`` lines (its ``+++``/``---`` headers not counted).
    """

    kernel: KernelRef
    source: str
    diff: str
    new_file: bool
    base: KernelRef | None = None
    added: int = 0
    removed: int = 0


def diff_counts(diff: str) -> tuple[int, int]:
    """The lines a unified diff of one file adds and removes: ``(added, removed)``. Only lines inside its hunks
    count (after the first ``@@``): the ``---``/``+++`` file headers do not, a removed line ``-- x`` (``--- x`` in the
    diff) does. ``(0, 0)`` for ``(no change)``."""
    added = removed = 0
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
    return added, removed


class Workbench:
    """The tools, bound to one workspace."""

    def __init__(self, workspace: Workspace):
        self.ws = workspace
        self.root = workspace.root.resolve()

    # -- paths ---------------------------------------------------------------------------------------------------
    def resolve(self, rel: str) -> Path:
        """``rel`` inside the workspace, symlinks resolved. Raises ToolError when it leads out."""
        if not isinstance(rel, str) or rel.startswith("~"):
            raise ToolError(f"path {rel!r} is not a path relative to the workspace")
        p = (self.root / rel).resolve()
        if p != self.root and self.root not in p.parents:
            raise ToolError(f"refused: {rel!r} resolves to {p}, outside the workspace {self.root}")
        return p

    def _rel(self, p: Path) -> str:
        return str(p.relative_to(self.root))

    # -- tools ---------------------------------------------------------------------------------------------------
    def list_files(self, path: str = ".") -> str:
        base = self.resolve(path or ".")
        if not base.is_dir():
            raise ToolError(f"{path!r} is not a folder")
        out = []
        for p in sorted(base.rglob("*")):
            parts = set(p.relative_to(base).parts)
            if parts & SKIP_DIRS or not p.is_file():
                continue
            if p.resolve() != p and self.root not in p.resolve().parents:
                continue  # a link out of the workspace is not listed
            out.append(self._rel(p))
            if len(out) >= 500:
                out.append("... (more files not listed)")
                break
        return "\n".join(out) or "(no files)"

    def read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """A file of the workspace, or (read-only) a context hit outside it: ``triton:language/core.py`` (an
        installed package) or ``context/<name>/...`` linked out of the workspace. A cited ``path:line`` reads from
        that line. Raises ToolError for a path outside both."""
        m = re.match(r"^(.+?):(\d+)(?:#[\w.-]*)?$", path) if isinstance(path, str) else None
        if m:  # a citation as search_context gives it
            path, start_line = m.group(1), start_line or int(m.group(2))
        from ktui.context.index import resolve_citation

        p = resolve_citation(self.root, path) if isinstance(path, str) else None
        if p is None:
            p = self.resolve(path)
        if not p.is_file():
            raise ToolError(f"no such file: {path}")
        text = p.read_text(errors="replace")
        if start_line or end_line:
            lines = text.splitlines()
            text = "\n".join(lines[max((start_line or 1) - 1, 0) : end_line or len(lines)])
        if len(text) > MAX_READ_CHARS:
            text = text[:MAX_READ_CHARS] + f"\n... (truncated at {MAX_READ_CHARS} characters; read a line range)"
        return text

    def search_context(self, query: str, max_results: int = 10) -> str:
        """Ranked hits of the context index (``ktui.context.index``) as ``N. path:line [kind symbol]`` and a
        snippet. The index is updated in the background (``ktui.context.background``): every source on the first
        call (the installed packages, context/, the workspace), the workspace's references, kernels and dumps on each
        later one. The call waits at most ``CONTEXT_WAIT_S`` for the update; one still under way (the first build
        over a CUTLASS clone takes ~30 s) leaves the answer partial, from what is indexed so far, and its first line
        says so (``(partial: indexing 1200/5400 files ...)``). ``kind:code|docs|ptx|dumps`` at the start of
        ``query`` filters."""
        import sqlite3

        from ktui.context.background import BackgroundIndex
        from ktui.context.cli import render_hits
        from ktui.context.index import KINDS, ContextError, no_source_of

        if not isinstance(query, str) or not query.strip():
            raise ToolError("give a query: a symbol or words")
        kind = None
        m = re.match(r"^\s*kind:(\w+)\s+(.*)$", query)
        if m:
            if m.group(1) not in KINDS:
                raise ToolError(f"unknown kind {m.group(1)!r}: one of {', '.join(KINDS)}")
            kind, query = m.group(1), m.group(2)
        try:
            bg = BackgroundIndex.for_workspace(self.root)
            if not bg.started:
                bg.start()
            elif not bg.running:
                bg.start(only=["references", "kernels", "dumps"])  # what the agent and the ladder write
            bg.wait(CONTEXT_WAIT_S)
            res = bg.search(query, kind=kind, n=max(1, min(int(max_results), 50)))
        except (ContextError, OSError, sqlite3.Error) as exc:
            raise ToolError(f"the context index failed: {exc}") from None
        if bg.error and not res.hits:
            raise ToolError(f"the context index failed: {bg.error}")
        text = render_hits(query, res.hits) + ("\n(cite what you use as path:line)" if res.hits else "")
        if kind and not res.hits and res.partial is None and not bg.has_kind(kind):
            text += "\n" + no_source_of(kind)  # (say so to the user: only they can add the source)
        if res.partial is not None:
            text = f"({res.label()}; search again later for complete results)\n{text}"
        return text

    def read_dump(self, problem: str, version: str, stage: str = "summary") -> str:
        """The dumps of a version's latest ladder result: a summary, or one stage's text (truncated)."""
        from ktui.core.store import ResultStore

        if problem not in self.ws.problems():
            raise ToolError(f"unknown problem {problem!r}")
        res = ResultStore(self.ws).load(problem, version)
        rung = res.rung("dumps") if res else None
        if rung is None or rung.status is not Status.OK:
            raise ToolError(f"{problem}/{version} has no dumps yet: its ladder writes them (run_ladder)")
        kernels = dumps_of(rung.figures).get("kernels", [])
        if stage == "summary":
            lines = [f"dumps of {problem}/{version} for {rung.figures.get('arch')} at spec {rung.figures.get('spec')}"]
            for k in kernels:
                lines.append(f"{k.get('kernel')}: resources {k.get('resources')}; mix {k.get('mix')}")
                lines += [f"  warning: {w}" for w in k.get("warnings", [])]
            return "\n".join(lines)
        texts = []
        for k in kernels:
            f = k.get("files", {}).get(stage)
            if f:
                texts.append(f"// {k.get('kernel')} ({stage})\n" + self.read_file(f))
        if not texts:
            raise ToolError(
                f"no {stage} in the dumps of {problem}/{version} (stages: "
                f"{', '.join(sorted({s for k in kernels for s in k.get('files', {})}))})"
            )
        return "\n\n".join(texts)

    def prepare_write(
        self, problem: object, source: object, version: object = None, base: KernelRef | None = None
    ) -> PendingWrite:
        """Check a write and compute its diff; nothing is written yet (the human may refuse it). The arguments are
        the model's, unchecked: anything that is not a name (or a module, for ``source``) is refused.

        The diff is against the file written when it exists; for a new version, against ``base`` (the version it is
        derived from: the one the model read, or the front end's choice) when ``base`` is a file of the same
        problem, else against the empty file.

        Raises:
            ToolError: a bad name, an unknown problem, a source without ``custom_kernel``, a path that leads out.
        """
        if not isinstance(problem, str) or not NAME_RE.match(problem):
            raise ToolError(f"refused: {problem!r} is not a problem name (letters, digits, _)")
        if problem not in self.ws.problems():
            raise ToolError(f"unknown problem {problem!r}; problems: {', '.join(self.ws.problems())}")
        if version is not None and (not isinstance(version, str) or not NAME_RE.match(version)):
            raise ToolError(f"refused: {version!r} is not a version name (e.g. v3)")
        if not isinstance(source, str) or "custom_kernel" not in source:
            raise ToolError("the source must be the whole module and define custom_kernel(data)")
        name = version if isinstance(version, str) else self.ws.next_version_name(problem)  # (NAME_RE refuses "")
        kernel = KernelRef(problem, name, self.root)
        target = kernel.path
        folder = target.parent
        if folder.exists() and (folder.resolve() != folder or self.root not in folder.resolve().parents):
            raise ToolError(f"refused: kernels/{problem} leads outside the workspace")
        if target.is_symlink():
            raise ToolError(f"refused: {self._rel(target)} is a symbolic link")
        self.resolve(str(target.relative_to(self.root)))
        new_file = not target.exists()
        if not new_file:
            base = kernel
        elif base is not None and (
            base.problem != problem
            or base.root.resolve() != self.root
            or base.path.is_symlink()
            or not base.path.is_file()
        ):
            base = None  # not a version of this problem in this workspace: the diff is against the empty file
        old = base.path.read_text(errors="replace") if base is not None else ""
        diff = "".join(
            difflib.unified_diff(
                old.splitlines(True),
                source.splitlines(True),
                f"a/{KERNELS}/{base.problem}/{base.version}.py" if base is not None else "/dev/null",
                f"b/{kernel.path.relative_to(self.root)}",
            )
        )
        added, removed = diff_counts(diff)
        return PendingWrite(kernel, source, diff or "(no change)", new_file, base, added, removed)

    def apply_write(self, w: PendingWrite) -> None:
        w.kernel.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(w.kernel.path, w.source.encode())


def results_for_model(result: LadderResult) -> str:
    """The ladder result as the model reads it (``ktui.core.report.for_model``): one line per rung, warnings,
    trimmed tracebacks, the failed correctness specs."""
    return report.for_model(result)
