"""Chunkers: a file's text cut into pieces that mean something (a function, a declaration, a section, a kernel).

Every chunker takes the file's text and returns ``list[Chunk]``; it raises ``ChunkError`` when the file cannot be
parsed (a Python syntax error, a notebook that is not JSON), and the index then skips that file and reports it.

- Python (``.py``, ``.pyi``): ``ast``; each top-level function and class, each method (``Class.method``), and the
  module-level code between them; decorators and docstrings kept with their definition.
- C++/CUDA (``.h``, ``.hpp``, ``.cuh``, ``.cu``, ``.cpp``...): ``cpp.py``, by top-level declaration parsed with
  tree-sitter-cpp (namespaces and ``extern "C"`` entered; templates, records, functions, CUDA kernels, aliases),
  with a brace scanner (``cpp_scan.py``) as the fallback when tree-sitter cannot be imported.
- Markdown by ATX heading (outside code fences), reStructuredText by underlined heading.
- HTML (``html.parser``): by heading section; what lies between two headings (a PTX instruction's Syntax,
  Description, Semantics, PTX ISA notes, Target ISA notes, Examples rubrics) stays in one chunk, cited by the
  section's fragment id. Headings ``... Instructions: cp.async.bulk`` give instruction symbols.
- PTX dumps by ``.entry``/``.func``; SASS dumps by ``Function : name`` (cuobjdump) or ``.text.name`` (nvdisasm).
- Notebooks by cell; anything else by windows of lines.

Chunks longer than ``MAX_CHUNK_LINES`` are cut into windows; the first keeps the symbol.
"""

from __future__ import annotations

import ast
import json
import re
from html.parser import HTMLParser

from ktui.context.cpp import chunk_cpp
from ktui.context.model import MAX_CHUNK_LINES, Chunk, ChunkError, Symbol
from ktui.context.model import lines_text as _lines_text

WINDOW_LINES = 60  # plain text and unstructured dumps

CODE_EXT = {".py", ".pyi", ".ipynb", ".h", ".hpp", ".hh", ".hxx", ".cuh", ".cu", ".cpp", ".cc", ".cxx", ".c", ".inl"}
CPP_EXT = {".h", ".hpp", ".hh", ".hxx", ".cuh", ".cu", ".cpp", ".cc", ".cxx", ".c", ".inl"}
DOC_EXT = {".md", ".rst", ".txt", ".html", ".htm"}
DUMP_EXT = {".ptx", ".sass", ".ttgir", ".ttir"}
TEXT_EXT = CODE_EXT | DOC_EXT | DUMP_EXT


def kind_of(ext: str) -> str:
    """The search kind of a file extension (``.py`` -> code, ``.md`` -> docs, ``.ptx`` -> dumps); "" if not text."""
    if ext in CODE_EXT:
        return "code"
    if ext in DOC_EXT:
        return "docs"
    if ext in DUMP_EXT:
        return "dumps"
    return ""


def chunk_file(name: str, text: str) -> list[Chunk]:
    """Chunk ``text``, the content of a file called ``name``, with the chunker its extension selects.

    Raises:
        ChunkError: the file does not parse (Python syntax, notebook JSON).
    """
    ext = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if ext in (".py", ".pyi"):
        chunks = chunk_python(text)
    elif ext == ".ipynb":
        chunks = chunk_notebook(text)
    elif ext in CPP_EXT:
        chunks = chunk_cpp(text)
    elif ext == ".md":
        chunks = chunk_markdown(text)
    elif ext == ".rst":
        chunks = chunk_rst(text)
    elif ext in (".html", ".htm"):
        chunks = chunk_html(text)
    elif ext == ".ptx":
        chunks = chunk_ptx(text)
    elif ext == ".sass":
        chunks = chunk_sass(text)
    else:
        chunks = chunk_windows(text, kind_of(ext) or "docs")
    out: list[Chunk] = []
    for c in chunks:
        out.extend(_split_long(c))
    return [c for c in out if c.text.strip()]


# -- helpers ---------------------------------------------------------------------------------------------------------


def _split_long(c: Chunk) -> list[Chunk]:
    """``c`` cut into windows of ``MAX_CHUNK_LINES`` lines when it is longer (mapped chunks only)."""
    lines = c.text.split("\n")
    if len(lines) <= MAX_CHUNK_LINES:
        return [c]
    out = []
    for i in range(0, len(lines), MAX_CHUNK_LINES):
        part = lines[i : i + MAX_CHUNK_LINES]
        first = i == 0
        start = c.start + i if c.mapped else c.start
        out.append(
            Chunk(
                start=start,
                end=start + len(part) - 1 if c.mapped else c.end,
                kind=c.kind,
                text="\n".join(part),
                symbol=c.symbol,
                sym_kind=c.sym_kind if first else ("part" if c.symbol else ""),
                anchor=c.anchor,
                head=c.head,
                mapped=c.mapped,
                symbols=c.symbols if first else [],
            )
        )
    return out


def chunk_windows(text: str, kind: str, size: int = WINDOW_LINES) -> list[Chunk]:
    """Windows of ``size`` lines (text files, IR dumps)."""
    lines = text.split("\n")
    return [
        Chunk(start=i + 1, end=min(i + size, len(lines)), kind=kind, text="\n".join(lines[i : i + size]))
        for i in range(0, len(lines), size)
    ]


def slug(title: str) -> str:
    """A heading's fragment id as GitHub and Sphinx make it: lower case, runs of other characters to ``-``."""
    s = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return re.sub(r"[\s]+", "-", s)


# -- Python ----------------------------------------------------------------------------------------------------------


def _def_start(node: ast.AST) -> int:
    decos = getattr(node, "decorator_list", [])
    return int(min([getattr(node, "lineno", 1), *(d.lineno for d in decos)]))


def chunk_python(text: str) -> list[Chunk]:
    """Python by definition: each top-level function and class (kind function/class), each method of a top-level
    class (``Class.method``), and the module code between definitions (imports, constants; top-level names
    assigned there become ``variable`` symbols).

    Raises:
        ChunkError: a syntax error (with its line).
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        raise ChunkError(f"Python syntax error{f' at line {line}' if line else ''}: {exc}") from None
    lines = text.split("\n")
    out: list[Chunk] = []
    covered: list[tuple[int, int]] = []

    def head_of(node: ast.AST) -> str:
        return lines[node.lineno - 1].strip()  # type: ignore[attr-defined]

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start, end = _def_start(node), node.end_lineno or node.lineno
            covered.append((start, end))
            is_class = isinstance(node, ast.ClassDef)
            kind = "class" if is_class else "function"
            methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            if is_class and methods and end - start + 1 > MAX_CHUNK_LINES:
                # a long class: its header (bases, docstring, attributes) up to the first method, then each method
                first = _def_start(methods[0])
                out.append(
                    Chunk(
                        start,
                        first - 1,
                        "code",
                        _lines_text(lines, start, first - 1),
                        node.name,
                        kind,
                        head=head_of(node),
                        symbols=[Symbol(node.name, node.name.lower(), kind)],
                    )
                )
                for m in methods:
                    ms = _def_start(m)
                    me = m.end_lineno or m.lineno
                    name = f"{node.name}.{m.name}"
                    out.append(
                        Chunk(
                            ms,
                            me,
                            "code",
                            _lines_text(lines, ms, me),
                            name,
                            "method",
                            head=head_of(m),
                            symbols=[Symbol(name, m.name.lower(), "method")],
                        )
                    )
            else:
                syms = [Symbol(node.name, node.name.lower(), kind)]
                syms += [Symbol(f"{node.name}.{m.name}", m.name.lower(), "method") for m in methods]
                out.append(
                    Chunk(
                        start,
                        end,
                        "code",
                        _lines_text(lines, start, end),
                        node.name,
                        kind,
                        head=head_of(node),
                        symbols=syms,
                    )
                )
    # module code between the definitions, in blocks
    assigned: dict[int, list[str]] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Name):
                assigned.setdefault(node.lineno, []).append(t.id)
    in_def = [False] * (len(lines) + 2)
    for s, e in covered:
        for i in range(s, e + 1):
            in_def[i] = True
    n = 1
    while n <= len(lines):
        if in_def[n]:
            n += 1
            continue
        s = n
        while n <= len(lines) and not in_def[n]:
            n += 1
        e = n - 1
        body = _lines_text(lines, s, e)
        if body.strip():
            names = [nm for ln in range(s, e + 1) for nm in assigned.get(ln, [])]
            out.append(Chunk(s, e, "code", body, "", "", symbols=[Symbol(nm, nm.lower(), "variable") for nm in names]))
    out.sort(key=lambda c: c.start)
    return out


def chunk_notebook(text: str) -> list[Chunk]:
    """A Jupyter notebook by cell (code and markdown), cited ``#cell-N`` (1-based); functions in code cells give
    symbols when the cell parses.

    Raises:
        ChunkError: the file is not a notebook's JSON.
    """
    try:
        cells = json.loads(text)["cells"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ChunkError(f"not a notebook: {exc}") from None
    out = []
    for i, cell in enumerate(cells, 1):
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else str(src)
        if not src.strip():
            continue
        syms: list[Symbol] = []
        if cell.get("cell_type") == "code":
            try:
                for node in ast.parse(src).body:
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        k = "class" if isinstance(node, ast.ClassDef) else "function"
                        syms.append(Symbol(node.name, node.name.lower(), k))
            except (SyntaxError, ValueError):
                pass  # magics (%%time) and shell lines: the cell is still text
        out.append(
            Chunk(
                i,
                i,
                "code",
                src,
                syms[0].name if syms else "",
                syms[0].kind if syms else "",
                anchor=f"cell-{i}",
                mapped=False,
                symbols=syms,
            )
        )
    return out


# -- Markdown / RST --------------------------------------------------------------------------------------------------


def _clean_title(t: str) -> str:
    return re.sub(r"[`*]", "", t).strip().rstrip("#").strip()


def _sections(lines: list[str], heads: list[tuple[int, str]], kind: str) -> list[Chunk]:
    """Chunks from heading positions ``(line, title)`` (1-based): the preamble, then one per heading."""
    out = []
    total = len(lines) - (1 if len(lines) > 1 and lines[-1] == "" else 0)  # a final newline ends the last line
    bounds = [h[0] for h in heads] + [total + 1]
    if heads and heads[0][0] > 1:
        out.append(Chunk(1, heads[0][0] - 1, kind, _lines_text(lines, 1, heads[0][0] - 1)))
    if not heads:
        return chunk_windows("\n".join(lines), kind)
    for (start, title), nxt in zip(heads, bounds[1:]):
        out.append(
            Chunk(
                start,
                nxt - 1,
                kind,
                _lines_text(lines, start, nxt - 1),
                title,
                "heading",
                anchor=slug(title),
                head=title,
                symbols=[Symbol(title, title.lower(), "heading")],
            )
        )
    return out


def chunk_markdown(text: str) -> list[Chunk]:
    """Markdown by ATX heading (``#`` to ``######``; lines inside fenced code blocks are not headings)."""
    lines = text.split("\n")
    heads: list[tuple[int, str]] = []
    fence = ""
    for i, line in enumerate(lines, 1):
        s = line.lstrip()
        if s.startswith(("```", "~~~")):
            f = s[:3]
            fence = "" if fence == f else (fence or f)
            continue
        if not fence:
            m = re.match(r"^ {0,3}#{1,6}\s+(.+)$", line)
            if m:
                heads.append((i, _clean_title(m.group(1))))
    return _sections(lines, heads, "docs")


_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")


def chunk_rst(text: str) -> list[Chunk]:
    """reStructuredText by section title: a line underlined (and optionally overlined) by a run of one punctuation
    character at least as long as the title."""
    lines = text.split("\n")
    heads: list[tuple[int, str]] = []
    for i in range(len(lines) - 1):
        title, under = lines[i], lines[i + 1]
        if (
            title.strip()
            and not title.startswith((" ", "\t", ".."))
            and _RST_UNDERLINE.match(under)
            and len(under.rstrip()) >= len(title.rstrip())
            and not _RST_UNDERLINE.match(title)
        ):
            start = i  # 0-based index of the title
            if i > 0 and _RST_UNDERLINE.match(lines[i - 1]):
                start = i - 1
            heads.append((start + 1, _clean_title(title)))
    return _sections(lines, heads, "docs")


# -- HTML ------------------------------------------------------------------------------------------------------------

_BLOCK = {
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "pre", "section", "dt", "dd", "dl", "h1", "h2", "h3", "h4",
    "h5", "h6", "blockquote", "hr", "article",
}  # fmt: skip
_SKIP = {"script", "style", "nav", "header", "footer", "noscript", "svg", "head"}
# "Data Movement and Conversion Instructions: cp.async.bulk", "Directives: .maxnreg", "Special Registers: %tid";
# several names are separated by ", " or " / " (as compiler-explorer's docenizer-ptx-sass.py reads them)
_INSTR_RE = re.compile(r"(?:Instructions?|Directives?|Special Registers?)\s*:\s*(.+)$")
_NUMBER_RE = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?)\s+")


class _Sections(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[dict[str, object]] = [{"line": 1, "title": "", "anchor": "", "parts": []}]
        self.skip = 0
        self.pre = 0
        self.in_heading = 0
        self.heading_parts: list[str] = []
        self.pending_id = ""
        self.in_headerlink = 0

    def _emit(self, s: str) -> None:
        parts = self.sections[-1]["parts"]
        assert isinstance(parts, list)
        parts.append(s)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in _SKIP:
            self.skip += 1
            return
        if self.skip:
            return
        if tag in ("section", "div", "span", "a") and a.get("id") and not self.in_heading:
            self.pending_id = a["id"] or ""
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            line = self.getpos()[0]
            self.sections.append({"line": line, "title": "", "anchor": a.get("id") or self.pending_id, "parts": []})
            self.pending_id = ""
            self.in_heading += 1
            self.heading_parts = []
        if tag == "a" and "headerlink" in (a.get("class") or ""):
            self.in_headerlink += 1
            href = a.get("href") or ""
            if self.in_heading and href.startswith("#") and not self.sections[-1]["anchor"]:
                self.sections[-1]["anchor"] = href[1:]
        if tag == "pre":
            self.pre += 1
        if tag in ("td", "th"):
            self._emit(" | ")
        if tag in _BLOCK:
            self._emit("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(self.skip - 1, 0)
            return
        if self.skip:
            return
        if tag == "a" and self.in_headerlink:
            self.in_headerlink -= 1
        if tag == "pre":
            self.pre = max(self.pre - 1, 0)
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6") and self.in_heading:
            self.in_heading -= 1
            self.sections[-1]["title"] = " ".join("".join(self.heading_parts).split())
        if tag in _BLOCK:
            self._emit("\n")

    def handle_data(self, data: str) -> None:
        if self.skip or self.in_headerlink:
            return
        if not self.pre:
            data = re.sub(r"\s+", " ", data)
        if self.in_heading:
            self.heading_parts.append(data)
        self._emit(data)


def is_doxygen(text: str) -> bool:
    """True for an HTML page Doxygen generated (its ``generator`` meta tag or its "Generated by Doxygen" footer)."""
    head = text[:4096]
    return (
        'content="Doxygen' in head
        or "Generated by Doxygen" in text
        or bool(re.search(r"Generated by(?:&#160;|\s)*<a[^>]*doxygen", text[-4096:], re.I))
    )


def html_looks_like_ptx(text: str) -> bool:
    """True for the PTX ISA (or a page like it): it names Parallel Thread Execution or has instruction sections."""
    return "Parallel Thread Execution" in text[:200_000] or bool(re.search(r"id=\"[\w-]*-instructions-", text))


def chunk_html(text: str) -> list[Chunk]:
    """An HTML document by heading: each heading and everything up to the next heading (paragraphs, rubrics such as
    Syntax, Semantics, PTX ISA Notes and Target ISA Notes, tables, ``<pre>`` examples) is one chunk, cited by the
    heading's line and its section's fragment id. On a PTX-like page (``html_looks_like_ptx``) chunks are of kind
    ``ptx`` and a heading ``9.7.9.25.4. Data Movement and Conversion Instructions: cp.async.bulk`` defines the
    instruction symbol ``cp.async.bulk`` (several when the heading lists several). Navigation, scripts and styles
    are dropped.

    Raises:
        ChunkError: the parser failed.
    """
    p = _Sections()
    try:
        p.feed(text)
        p.close()
    except Exception as exc:  # html.parser raises little, but a broken page must not stop the index
        raise ChunkError(f"HTML parse error: {exc}") from None
    kind = "ptx" if html_looks_like_ptx(text) else "docs"
    total = text.count("\n") + 1
    out = []
    secs = p.sections
    for idx, sec in enumerate(secs):
        parts = sec["parts"]
        assert isinstance(parts, list)
        body_lines = [" ".join(ln.split()) if "\t" not in ln else ln.rstrip() for ln in "".join(parts).split("\n")]
        body = "\n".join(ln for ln in body_lines if ln.strip())
        if not body.strip():
            continue
        title = str(sec["title"])
        start = int(str(sec["line"]))
        end = int(str(secs[idx + 1]["line"])) - 1 if idx + 1 < len(secs) else total
        bare = _NUMBER_RE.sub("", title)
        syms: list[Symbol] = []
        m = _INSTR_RE.search(bare) if kind == "ptx" else None
        if m:
            for nm in re.split(r",\s*|\s*/\s*|\s+and\s+", m.group(1)):
                nm = nm.strip()
                if re.match(r"^[.%]?[a-z][\w.:]*$", nm, re.I):
                    syms.append(Symbol(nm, nm.lower().lstrip(".%"), "instruction"))
        if title and not syms:
            syms.append(Symbol(bare, bare.lower(), "heading"))
        out.append(
            Chunk(
                start,
                max(end, start),
                kind,
                body,
                syms[0].name if syms else "",
                syms[0].kind if syms else "",
                anchor=str(sec["anchor"]),
                head=title,
                mapped=False,
                symbols=syms,
            )
        )
    return out


# -- dumps -----------------------------------------------------------------------------------------------------------

_PTX_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)?\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)")
_SASS_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)|^//-+\s*\.text\.(\S+)\s*-+")


def _by_headers(text: str, pattern: re.Pattern[str], kind: str, sym_kind: str) -> list[Chunk]:
    lines = text.split("\n")
    heads = []
    for i, line in enumerate(lines, 1):
        m = pattern.match(line)
        if m:
            name = next(g for g in reversed(m.groups()) if g)
            heads.append((i, name))
    if not heads:
        return chunk_windows(text, kind)
    out = []
    if heads[0][0] > 1:
        out.append(Chunk(1, heads[0][0] - 1, kind, _lines_text(lines, 1, heads[0][0] - 1)))
    bounds = [h[0] for h in heads[1:]] + [len(lines) + 1]
    for (s, name), nxt in zip(heads, bounds):
        out.append(
            Chunk(
                s,
                nxt - 1,
                kind,
                _lines_text(lines, s, nxt - 1),
                name,
                sym_kind,
                head=lines[s - 1].strip()[:200],
                symbols=[Symbol(name, name.lower(), sym_kind)],
            )
        )
    return out


def chunk_ptx(text: str) -> list[Chunk]:
    """A PTX dump by ``.entry`` / ``.visible .entry`` / ``.func``: each kernel (and device function) to the next."""
    return _by_headers(text, _PTX_ENTRY, "dumps", "kernel")


def chunk_sass(text: str) -> list[Chunk]:
    """A SASS dump by function: ``Function : name`` headers (cuobjdump -sass) or ``//---- .text.name ----`` headers
    (nvdisasm)."""
    return _by_headers(text, _SASS_FUNC, "dumps", "kernel")
