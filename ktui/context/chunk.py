"""Chunkers: a file's text cut into pieces that mean something (a function, a declaration, a section, a kernel).

Every chunker takes the file's text and returns ``list[Chunk]``; it raises ``ChunkError`` when the file cannot be
parsed (a Python syntax error, a notebook that is not JSON), and the index then skips that file and reports it.

- Python (``.py``, ``.pyi``): ``ast``; each top-level function and class, each method (``Class.method``), and the
  module-level code between them; decorators and docstrings kept with their definition.
- C++/CUDA (``.h``, ``.hpp``, ``.cuh``, ``.cu``, ``.cpp``...): a brace and declaration scanner (tree-sitter is not
  installed in ktui's environment): comments, strings and preprocessor lines are blanked, namespaces and
  ``extern "C"`` blocks are entered, and each top-level declaration (template, struct/class, function, alias,
  variable) is one chunk with its leading comment. ``#define NAME`` gives a macro symbol.
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
import bisect
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

MAX_CHUNK_LINES = 160  # a window of a long definition: long enough for a function, short enough to read as a hit
WINDOW_LINES = 60  # plain text and unstructured dumps

CODE_EXT = {".py", ".pyi", ".ipynb", ".h", ".hpp", ".hh", ".hxx", ".cuh", ".cu", ".cpp", ".cc", ".cxx", ".c", ".inl"}
CPP_EXT = {".h", ".hpp", ".hh", ".hxx", ".cuh", ".cu", ".cpp", ".cc", ".cxx", ".c", ".inl"}
DOC_EXT = {".md", ".rst", ".txt", ".html", ".htm"}
DUMP_EXT = {".ptx", ".sass", ".ttgir", ".ttir"}
TEXT_EXT = CODE_EXT | DOC_EXT | DUMP_EXT


class ChunkError(Exception):
    """The file could not be parsed by its chunker; the message is one line (the index reports it)."""


@dataclass
class Symbol:
    """A name a chunk defines: ``name`` as written (``local_tile``, ``TiledCopy.retile``, ``cp.async.bulk``),
    ``key`` the lower-case lookup key (the last component for methods and qualified C++ names), ``kind`` one of
    function, class, method, struct, alias, variable, macro, instruction, kernel, heading."""

    name: str
    key: str
    kind: str


@dataclass
class Chunk:
    """One piece of a file.

    Attributes:
        start, end: 1-based inclusive line range in the file.
        kind: code, docs, ptx or dumps (what ``--kind`` filters on).
        symbol: the main name the chunk defines, or "" (module code, a window).
        sym_kind: the symbol's kind (see ``Symbol``), or "".
        anchor: a document's section fragment id (HTML, Markdown, RST) or ``cell-N`` (notebooks), else "".
        head: the signature line or heading (weighted above the body in ranking).
        text: the chunk's text. When ``mapped`` its lines are the file's lines ``start..end``; HTML and notebook
            chunks hold extracted text (``mapped`` False) and are cited by ``start`` and ``anchor``.
        symbols: every name the chunk defines (the symbol table's rows).
    """

    start: int
    end: int
    kind: str
    text: str
    symbol: str = ""
    sym_kind: str = ""
    anchor: str = ""
    head: str = ""
    mapped: bool = True
    symbols: list[Symbol] = field(default_factory=list)


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


def _lines_text(lines: list[str], start: int, end: int) -> str:
    """Lines ``start..end`` (1-based, inclusive) of ``lines`` joined."""
    return "\n".join(lines[start - 1 : end])


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


# -- C++ / CUDA ------------------------------------------------------------------------------------------------------

_NS_RE = re.compile(r'^\s*(?:inline\s+)?(?:namespace\b[\w\s:]*|extern\s+"[^"]*"\s*)$', re.S)
_NEXT_DECL = re.compile(r"[^\s;]")
_BRACE_SEMI = re.compile(r"[{};]")
_DEFINE_RE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)")
_RECORD_RE = re.compile(r"\b(struct|class|union|enum)\b(?:\s+(?:class|struct))?")
_ATTR_RE = re.compile(r"\b(?:alignas|__align__|CUTE_ALIGNAS|__declspec|__attribute__)\s*\((?:[^()]|\([^()]*\))*\)")
_FUNC_NAME_RE = re.compile(r"((?:[A-Za-z_]\w*\s*::\s*)*(?:operator\s*[^\s\w(]+|operator\s+\w+|~?[A-Za-z_]\w*))\s*$")
_NOT_A_NAME = {
    "alignas",
    "decltype",
    "__attribute__",
    "__declspec",
    "__launch_bounds__",
    "sizeof",
    "noexcept",
    "requires",
    "static_assert",
    "if",
    "defined",
    "__align__",
}


_BLANK_RE = re.compile(
    r"//[^\n]*"  # a line comment
    r"|/\*.*?(?:\*/|\Z)"  # a block comment (unterminated: to the end)
    r'|"(?:\\.|[^"\\\n])*"?'  # a string literal
    r"|(?<![\w'])'(?:\\.|[^'\\\n])*'?"  # a character literal (not a digit separator: 1'000)
    r"|^[ \t]*\#(?:\\\n|[^\n])*",  # a preprocessor line with its continuations
    re.S | re.M,
)


def _blank_match(m: re.Match[str]) -> str:
    s = m.group()
    if s[0] == '"' and len(s) >= 2 and s[-1] == '"':
        return '"' + " " * (len(s) - 2) + '"'  # quotes kept: extern "C" stays recognizable
    return "\n".join(" " * len(part) for part in s.split("\n"))


def _blank_cpp(text: str) -> str:
    """``text`` with comments, string and character literals and preprocessor lines replaced by spaces (newlines
    kept, so offsets and lines are the same), so that braces and semicolons can be counted."""
    return _BLANK_RE.sub(_blank_match, text)


def _strip_templates(header: str) -> str:
    """``header`` without its ``template <...>`` prefixes (angle brackets balanced)."""
    h = header.lstrip()
    while True:
        m = re.match(r"template\s*<", h)
        if not m:
            return h
        depth, i = 1, m.end()
        while i < len(h) and depth:
            depth += {"<": 1, ">": -1}.get(h[i], 0)
            i += 1
        h = h[i:].lstrip()


def cpp_symbol(header: str) -> tuple[str, str]:
    """The name and kind a C++ declaration's header defines (``("make_tiled_copy", "function")``,
    ``("Copy_Atom", "struct")``, ``("Layout", "alias")``), or ``("", "")``. ``header`` is the declaration's text up
    to its body's ``{`` or its ``;``, comments and strings blanked."""
    h = _strip_templates(header)
    h = re.sub(r"\[\[.*?\]\]", " ", h)
    m = re.match(r"\s*using\s+(\w+)\s*=", h)
    if m:
        return m.group(1), "alias"
    if re.match(r"\s*(using|static_assert|friend)\b", h):
        return "", ""
    if re.match(r"\s*typedef\b", h):
        m = re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*;?\s*$", h)
        return (m.group(1), "alias") if m else ("", "")
    paren = _first_call_paren(h)
    eq = re.search(r"(?<![=!<>])=(?!=)", h[: paren if paren >= 0 else len(h)])
    if eq and "operator" not in h[: eq.start()]:
        m = re.search(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*$", h[: eq.start()])
        return (m.group(1), "variable") if m else ("", "")
    rec = _RECORD_RE.search(h)
    if rec and (paren < 0 or rec.start() < paren):
        rest = re.sub(_ATTR_RE, " ", h[rec.end() :])
        names = []
        for tok in re.finditer(r"[A-Za-z_]\w*|[<:{;(]", rest):
            t = tok.group(0)
            if t in "<:{;(":
                break
            if t != "final":
                names.append(t)  # macros (CUTLASS_API) come before the name: the last word is the name
        kind = "struct" if rec.group(1) in ("struct", "union") else rec.group(1)
        return (names[-1], kind) if names else ("", "")
    if paren >= 0:
        before = _strip_trailing_args(h[:paren].rstrip())
        m = re.search(_FUNC_NAME_RE, before)
        if m:
            return re.sub(r"\s+", "", m.group(1)), "function"
        return "", ""
    m = re.search(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*(?:=|\{|;|$)", h)
    if m and not h.strip().startswith(("return", "namespace")):
        return m.group(1), "variable"
    return "", ""


def _strip_trailing_args(s: str) -> str:
    """``s`` without a trailing balanced ``<...>`` (``root_pi< complex<float> >`` -> ``root_pi``)."""
    if not s.endswith(">") or s.endswith("operator>") or s.endswith("->"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        depth += {">": 1, "<": -1}.get(s[i], 0)
        if depth == 0:
            return s[:i].rstrip()
    return s


def _first_call_paren(h: str) -> int:
    """Index of the first ``(`` of ``h`` outside angle brackets that is not a macro's or attribute's, or -1."""
    depth = 0
    for m in re.finditer(r"[<>()]|\boperator\s*(?:\(\)|[^\s\w(]+)\s*\(|[A-Za-z_]\w*\s*\(", h):
        t = m.group(0)
        if t == "<":
            depth += 1
        elif t == ">":
            depth = max(depth - 1, 0)
        elif t == "(":
            if depth == 0 and h[: m.start()].rstrip().endswith(">"):
                return m.start()  # an explicit specialization: two<double>()
        elif t == ")":
            continue
        elif depth == 0:
            word = t.rstrip("( \t\n")
            if word in _NOT_A_NAME or (word.isupper() and len(word) > 3 and "_" in word):
                continue
            return m.end() - 1
    return -1


def chunk_cpp(text: str) -> list[Chunk]:
    """C++/CUDA by top-level declaration (inside namespaces and ``extern "C"`` blocks), each with the comment lines
    right above it; the text between declarations (includes, license headers) is dropped unless it holds
    ``#define`` lines, which become a chunk with macro symbols. Unbalanced braces (a ``#if`` arm that opens one)
    end the last declaration at the end of the file."""
    lines = text.split("\n")
    clean = _blank_cpp(text)
    newlines = [m.start() for m in re.finditer("\n", clean)]

    def line_of(pos: int) -> int:
        return bisect.bisect_left(newlines, pos) + 1

    ns_depth = body_depth = 0  # namespaces enclose bodies, never the reverse: the stack is ns* body*
    decls: list[tuple[int, int, str]] = []  # (start offset, end offset, header)
    start = -1
    header_end = -1
    i, n = 0, len(clean)
    while i < n:
        if body_depth == 0 and start < 0:  # between declarations: skip to the next one
            m = _NEXT_DECL.search(clean, i)
            if m is None:
                break
            i = m.start()
            if clean[i] == "}":  # a namespace closes
                ns_depth = max(ns_depth - 1, 0)
                i += 1
                continue
            start, header_end = i, -1
        m = _BRACE_SEMI.search(clean, i)
        if m is None:
            break
        i = m.start()
        ch = clean[i]
        if ch == "{":
            if body_depth == 0:
                if _NS_RE.match(clean[start:i]):
                    ns_depth += 1
                    start = -1
                    i += 1
                    continue
                header_end = i
            body_depth += 1
        elif ch == "}":
            if body_depth == 0:  # a namespace closes: a declaration left open (no `;`) ends before it
                ns_depth = max(ns_depth - 1, 0)
                if start >= 0:
                    decls.append((start, max(i - 1, start), clean[start:i]))
                    start = -1
                i += 1
                continue
            body_depth -= 1
            if body_depth == 0 and start >= 0:
                j = i + 1
                while j < n and clean[j] in " \t":
                    j += 1
                end = j if j < n and clean[j] == ";" else i
                decls.append((start, end, clean[start:header_end] if header_end >= 0 else clean[start:i]))
                start = -1
                i = end + 1
                continue
        elif body_depth == 0 and start >= 0:  # ";" ends a declaration without a body
            decls.append((start, i, clean[start:i]))
            start = -1
        i += 1
    if start >= 0:
        decls.append((start, n - 1, clean[start : header_end if header_end >= 0 else n]))
    out: list[Chunk] = []
    used = [False] * (len(lines) + 2)
    for s, e, header in decls:
        sl, el = line_of(s), line_of(min(e, n - 1)) if n else 1
        # the comment block right above
        k = sl - 1
        while k >= 1 and not used[k] and lines[k - 1].strip().startswith(("//", "/*", "*", "*/")):
            k -= 1
        sl2 = k + 1
        name, skind = cpp_symbol(header)
        if out and sl2 <= out[-1].end:  # two declarations on one line: merge into the previous chunk
            prev = out[-1]
            prev.end = max(prev.end, el)
            prev.text = _lines_text(lines, prev.start, prev.end)
            if name:
                prev.symbols.append(Symbol(name, name.split("::")[-1].lower(), skind))
            continue
        for x in range(sl2, el + 1):
            used[x] = True
        head = " ".join(header.split())[:200]
        out.append(
            Chunk(
                sl2,
                el,
                "code",
                _lines_text(lines, sl2, el),
                name,
                skind,
                head=head,
                symbols=[Symbol(name, name.split("::")[-1].lower(), skind)] if name else [],
            )
        )
    # #define lines outside the declarations
    macros: list[tuple[int, str]] = []
    for idx, line in enumerate(lines, 1):
        m = _DEFINE_RE.match(line)
        if m and not used[idx]:
            macros.append((idx, m.group(1)))
    for idx, name in macros:
        e = idx
        while e < len(lines) and lines[e - 1].rstrip().endswith("\\"):
            e += 1
        out.append(
            Chunk(
                idx,
                e,
                "code",
                _lines_text(lines, idx, e),
                name,
                "macro",
                head=lines[idx - 1].strip()[:200],
                symbols=[Symbol(name, name.lower(), "macro")],
            )
        )
    out.sort(key=lambda c: c.start)
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
            for nm in re.split(r",\s*|\s+/\s+|\s+and\s+", m.group(1)):
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
