"""Source lines of the compiler's stages: which Python line each line of a TTIR, TTGIR, LLIR, PTX or SASS dump
comes from, by the line info the compiler keeps in it.

- TTIR / TTGIR (MLIR): an op ends with ``loc(#locN)`` (or an inline ``loc(...)``); ``#locN = loc("file":L:C)``,
  ``loc("name"(#locM))``, ``loc(callsite(#callee at #caller))`` and ``loc(fused[...])`` resolve to file:line pairs.
- LLIR: an instruction carries ``!dbg !N``; ``!N = !DILocation(line: L, scope: !S, inlinedAt: !M)``, the scope's
  ``file: !F`` names a ``!DIFile(filename:, directory:)``.
- PTX: ``.loc F L C`` (optionally ``, inlined_at F2 L2 C2``) holds for the lines after it up to the next ``.loc``
  or the end of the function; ``.file F "path"`` (or ``"dir" "name"``) names file F.
- SASS (``nvdisasm -g``): ``//## File "path", line L`` (optionally ``inlined at "path", line L2``) holds for the
  instructions after it.

Each stage's line info may name a position in Triton's own library (an inlined ``tl.sum``) or in the caller: the
first position in ``source`` of the innermost-first chain is the line kept, as ``ktui.core.inspect.sass.line_map``
does. A file is ``source`` when it is the same path, has the same name, or is a ktui snapshot of the same content
(``<version>-<sha12>.py``: Triton's cache may have compiled the same content from another snapshot's path).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import PurePath
from typing import Any

STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")  # the text stages of a dump, in the order the compiler makes them


def same_source(path: str, source: str) -> bool:
    """True when a line-info file name ``path`` names the kernel ``source`` (see the module's docstring)."""
    if not path:
        return False
    if path == source:
        return True
    name, other = PurePath(source).name, PurePath(path).name
    if other == name:
        return True
    content = name.rsplit("-", 1)[-1] if "-" in name else None
    return content is not None and other.endswith("-" + content)


def _first(chain: Sequence[tuple[str, int]], source: str) -> int | None:
    return next((line for path, line in chain if same_source(path, source)), None)


# -- MLIR (TTIR, TTGIR) ---------------------------------------------------------------------------------------------
_MLIR_DEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_MLIR_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):\d+|(#loc\d*)')


def mlir_lines(text: str, source: str) -> list[int | None]:
    """Per line of a TTIR or TTGIR dump, the line of ``source`` its op comes from (None: no such line info, or a
    ``#loc`` definition)."""
    lines = text.splitlines()
    defs: dict[str, str] = {}
    for ln in lines:
        m = _MLIR_DEF.match(ln)
        if m:
            defs[m.group(1)] = m.group(2)
    memo: dict[str, list[tuple[str, int]]] = {}

    def chain(body: str, depth: int = 0) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        if depth > 64:  # a cycle, or nesting no compiler writes
            return out
        for m in _MLIR_TOKEN.finditer(body):
            if m.group(3) is None:
                out.append((m.group(1), int(m.group(2))))
            elif (ref := m.group(3)) in defs:
                if ref not in memo:
                    memo[ref] = []  # a cycle reads as nothing
                    memo[ref] = chain(defs[ref], depth + 1)
                out.extend(memo[ref])
        return out

    out: list[int | None] = []
    for ln in lines:
        i = ln.rfind("loc(")
        if i < 0 or _MLIR_DEF.match(ln):
            out.append(None)
            continue
        out.append(_first(chain(ln[i + 4 :]), source))
    return [line or None for line in out]  # line 0: code the compiler made, of no line


# -- LLVM IR --------------------------------------------------------------------------------------------------------
_LL_META = re.compile(r"^!(\d+)\s*=\s*(?:distinct\s+)?!(\w+)\((.*)\)\s*$")
_LL_DBG = re.compile(r"!dbg !(\d+)")
_LL_FIELD = {
    k: re.compile(rf"\b{k}: {v}")
    for k, v in (
        ("line", r"(\d+)"),
        ("scope", r"!(\d+)"),
        ("file", r"!(\d+)"),
        ("inlinedAt", r"!(\d+)"),
        ("filename", r'"((?:[^"\\]|\\.)*)"'),
        ("directory", r'"((?:[^"\\]|\\.)*)"'),
    )
}


def llvm_lines(text: str, source: str) -> list[int | None]:
    """Per line of an LLIR dump, the line of ``source`` that its ``!dbg`` location (or its inlining chain) names;
    a ``define`` with ``!dbg`` names its function's first line."""
    lines = text.splitlines()
    meta: dict[str, tuple[str, str]] = {}
    for ln in lines:
        m = _LL_META.match(ln)
        if m:
            meta[m.group(1)] = (m.group(2), m.group(3))

    def field(node: str, name: str) -> str | None:
        m = _LL_FIELD[name].search(meta.get(node, ("", ""))[1])
        return m.group(1) if m else None

    def file_of(node: str | None, depth: int = 0) -> str:
        while node is not None and depth < 64:
            kind, _ = meta.get(node, ("", ""))
            if kind == "DIFile":
                name, folder = field(node, "filename") or "", field(node, "directory") or ""
                return f"{folder}/{name}" if folder and not name.startswith("/") else name
            f = field(node, "file")
            node = f if f is not None else field(node, "scope")
            depth += 1
        return ""

    def chain(node: str | None) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        seen: set[str] = set()
        while node is not None and node not in seen and node in meta:
            seen.add(node)
            line = field(node, "line")
            if line is not None:
                scope = field(node, "scope") if meta[node][0] == "DILocation" else node
                out.append((file_of(scope), int(line)))
            node = field(node, "inlinedAt")
        return out

    out: list[int | None] = []
    for ln in lines:
        m = _LL_DBG.search(ln)
        out.append(_first(chain(m.group(1)), source) if m and not _LL_META.match(ln) else None)
    return [line or None for line in out]  # line 0: code the compiler made, of no line


# -- PTX ------------------------------------------------------------------------------------------------------------
_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"(?:\s*,?\s*"((?:[^"\\]|\\.)*)")?')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)$")
_PTX_INLINED = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")


def ptx_lines(text: str, source: str) -> list[int | None]:
    """Per line of a PTX dump, the line of ``source`` that the ``.loc`` in force names (through its ``inlined_at``
    position when the ``.loc`` itself is in another file: a position an earlier ``.loc`` resolved, or one in
    ``source``); None outside functions and before the first ``.loc``."""
    lines = text.splitlines()
    files: dict[str, str] = {}
    for ln in lines:
        m = _PTX_FILE.match(ln)
        if m:
            files[m.group(1)] = f"{m.group(2)}/{m.group(3)}" if m.group(3) else m.group(2)
    resolved: dict[tuple[str, str, str], int | None] = {}  # (file, line, column) -> the source line it stands for
    out: list[int | None] = []
    current: int | None = None
    for ln in lines:
        m = _PTX_LOC.match(ln)
        if m:
            f, line, col, rest = m.groups()
            current = int(line) if same_source(files.get(f, ""), source) else None
            inlined = _PTX_INLINED.search(rest)
            if current is None and inlined is not None:
                f2, line2, col2 = inlined.groups()
                current = int(line2) if same_source(files.get(f2, ""), source) else resolved.get((f2, line2, col2))
            resolved.setdefault((f, line, col), current)
        elif ln.startswith("}"):
            out.append(current)
            current = None
            continue
        out.append(current)
    return [line or None for line in out]  # line 0: code the compiler made, of no line


# -- SASS -----------------------------------------------------------------------------------------------------------
_SASS_FILE = re.compile(r'^\s*//## File "((?:[^"\\]|\\.)*)", line (\d+)(.*)$')
_SASS_INLINED = re.compile(r'inlined at "((?:[^"\\]|\\.)*)", line (\d+)')
_SASS_FUNC = re.compile(r"^//-+ \.text\.")


def sass_lines(text: str, source: str) -> list[int | None]:
    """Per line of a SASS dump (``nvdisasm -g``), the line of ``source`` that the ``//## File`` comment in force
    names (its ``inlined at`` chain when the comment itself names another file); a function's header resets it."""
    out: list[int | None] = []
    current: int | None = None
    for ln in text.splitlines():
        m = _SASS_FILE.match(ln)
        if m:
            chain = [(m.group(1), int(m.group(2)))]
            chain += [(f, int(line)) for f, line in _SASS_INLINED.findall(m.group(3))]
            current = _first(chain, source)
        elif _SASS_FUNC.match(ln):
            current = None
        out.append(current)
    return [line or None for line in out]  # line 0: code the compiler made, of no line


LINES_OF: dict[str, Callable[[str, str], list[int | None]]] = {
    "ttir": mlir_lines,
    "ttgir": mlir_lines,
    "llir": llvm_lines,
    "ptx": ptx_lines,
    "sass": sass_lines,
}


def source_lines(stage: str, text: str, source: str) -> list[int | None]:
    """Per line of ``text`` (a dump of ``stage``: one of ``STAGES``), the line of the kernel file ``source`` (1-based)
    it comes from, or None; ``len(result) == len(text.splitlines())``. A stage without a reader maps nothing."""
    reader = LINES_OF.get(stage)
    return reader(text, source) if reader else [None] * len(text.splitlines())


def line_map(per_line: Sequence[int | None]) -> dict[str, Any]:
    """``{"lines": {source line: [row...]}, "instrs": per_line}``: the shape of the SASS tab's line map
    (``ktui.core.inspect.sass.line_map``), rows being 0-based line numbers of the stage's text."""
    lines: dict[int, list[int]] = {}
    for row, line in enumerate(per_line):
        if line is not None:
            lines.setdefault(line, []).append(row)
    return {"lines": {str(k): v for k, v in sorted(lines.items())}, "instrs": list(per_line)}


# -- normalized text, for diffs --------------------------------------------------------------------------------------
_MLIR_LOC = re.compile(r"\s*\bloc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
_PTX_DROP = re.compile(r"^\s*(?:\.loc|\.file|//|\$L__)|^\s*$")
_PTX_REG = re.compile(r"%(r|rd|rs|f|fd|p|h|hh|b|bf)\d+\b")
_PTX_COMMENT = re.compile(r"\s*//.*$")
_LL_DBG_ATTR = re.compile(r",?\s*!dbg !\d+")


def normalized_lines(stage: str, text: str) -> list[str]:
    """The lines of a ``stage`` dump with what differs between two compiles of the same code removed, for a diff:
    SASS as ``ktui.core.inspect.sass.normalized_text_lines`` (registers, addresses, encodings); PTX without
    ``.loc``/``.file`` directives, comments, ``$L__`` labels, the debug sections and register numbers (``%r12`` ->
    ``%r``); TTIR/TTGIR without ``loc(...)`` and ``#loc`` definitions (which name the snapshot file); LLIR without
    ``!dbg`` attachments, metadata and the module's header (``; ModuleID``, ``source_filename``). Blank lines go.

    Raises:
        ValueError: ``stage`` is not one of ``STAGES``.
    """
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}: one of {', '.join(STAGES)}")
    if stage == "sass":
        from ktui.core.inspect.sass import normalized_text_lines

        return normalized_text_lines(text)
    out: list[str] = []
    for ln in text.splitlines():
        if stage == "ptx":
            if ln.lstrip().startswith(".section") and ".debug" in ln:
                break  # the DWARF sections: file paths and offsets
            if _PTX_DROP.match(ln):
                continue
            ln = _PTX_REG.sub(r"%\1", _PTX_COMMENT.sub("", ln))
        elif stage in ("ttir", "ttgir"):
            if _MLIR_DEF.match(ln):
                continue
            ln = _MLIR_LOC.sub("", ln)
        else:  # llir
            if ln.startswith(("!", "; ModuleID", "source_filename")):
                continue
            ln = _LL_DBG_ATTR.sub("", ln)
        ln = ln.rstrip()
        if ln.strip():
            out.append(ln)
    return out
