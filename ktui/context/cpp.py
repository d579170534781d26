"""C++/CUDA headers and sources by top-level declaration, parsed with tree-sitter (``tree-sitter-cpp``).

tree-sitter has no preprocessor, so the bytes it parses are prepared first (``prepare``); every byte stays in its
place, so the tree's lines are the file's:

- a conditional (``#if``/``#ifdef``/``#ifndef`` ... ``#elif``/``#else`` ... ``#endif``) whose arms each balance their
  braces and parentheses keeps all its arms (an ``#if`` around whole declarations: both are indexed); one whose arms
  do not (``#if A`` ``void f() {`` ``#else`` ``void g() {`` ``#endif``: no parser can balance both) keeps only its
  first arm that is not ``#if 0``. Arms not kept are blanked;
- every preprocessor line is blanked (``#define`` names are read from the text: ``macro`` symbols);
- CUDA's declaration specifiers (``__global__``, ``__device__``, ``__host__``, ``__forceinline__``,
  ``__launch_bounds__(...)``, ``__align__(...)``...) and an upper-case macro in a specifier's place (a name like
  ``CUTE_HOST_DEVICE`` or ``CUTLASS_DEVICE``, ALL_CAPS with an underscore, that follows the start of a declaration
  and precedes a name) are blanked: unexpanded, they read as type names and turn the declaration into an error.

The tree is then walked: namespaces and ``extern "C" { }`` blocks are entered (and the error nodes tree-sitter
recovers with, for the declarations inside them); every other top-level node (a template, a struct/class/union/enum,
a function, a CUDA kernel, an alias, a variable, a prototype) is one chunk with the comment lines right above it.
Its symbols come from the parse: the declared name (``function``, ``kernel`` for a ``__global__`` function,
``struct``, ``class``, ``enum``, ``alias``, ``concept``, ``variable``, ``declaration`` for a prototype or a forward
declaration) and, for a record, its member functions (``Record::member``, ``method``). A record longer than
``MAX_CHUNK_LINES`` is cut into its head and one chunk per member function. Lines no declaration covers that still
hold code (what the parse could not place) become symbol-less chunks, so no code is lost to the full-text search.

When tree-sitter cannot be imported, ``cpp_scan.chunk_cpp`` (a brace scanner) chunks instead; ``chunker()`` says
which one runs (``ktui context list`` prints it).
"""

from __future__ import annotations

import bisect
import re
import threading
from importlib import metadata
from typing import Any

from ktui.context import cpp_scan
from ktui.context.model import MAX_CHUNK_LINES, Chunk, Symbol, lines_text

try:
    import tree_sitter
    import tree_sitter_cpp

    _LANGUAGE: Any = tree_sitter.Language(tree_sitter_cpp.language())
    _IMPORT_ERROR = ""
except Exception as exc:  # ImportError, or a wheel built for another ABI (OSError, ValueError)
    _LANGUAGE = None
    _IMPORT_ERROR = f"{type(exc).__name__}: {exc}"

_local = threading.local()  # one Parser per thread (the index builds in a thread while the TUI searches)


def chunker() -> str:
    """The C++ chunker that runs: ``tree-sitter 0.26.1, tree-sitter-cpp 0.23.4``, or ``scanner (tree-sitter cannot
    be imported: ...)`` for the fallback. Part of the index's meta data: when it changes, C++ files are re-chunked."""
    if _LANGUAGE is None:
        return f"scanner (tree-sitter cannot be imported: {_IMPORT_ERROR})"
    try:
        return f"tree-sitter {metadata.version('tree-sitter')}, tree-sitter-cpp {metadata.version('tree-sitter-cpp')}"
    except metadata.PackageNotFoundError:
        return "tree-sitter"


def fallback_note() -> str:
    """A line for the user when the fallback scanner chunks C++ (tree-sitter cannot be imported), else ""."""
    if _LANGUAGE is not None:
        return ""
    return (
        f"tree-sitter cannot be imported ({_IMPORT_ERROR}): C++/CUDA files are chunked by a brace scanner, and a "
        "#if whose arms each open a brace runs its declaration to the end of the file (pip install tree-sitter "
        "tree-sitter-cpp)"
    )


def chunk_cpp(text: str) -> list[Chunk]:
    """C++/CUDA ``text`` by top-level declaration (the module docstring says how); the scanner's chunks when
    tree-sitter cannot be imported. Never raises for bad C++: what does not parse is kept as symbol-less chunks."""
    if _LANGUAGE is None:
        return cpp_scan.chunk_cpp(text)
    return _Chunker(text).run()


# -- preparing the bytes ----------------------------------------------------------------------------------------------

# comments, string and character literals (skipped whole, so a "#" or "{" inside one counts for nothing), and
# preprocessor lines with their continuations
_TOKENS_RE = re.compile(
    rb"//[^\n]*"
    rb"|/\*.*?(?:\*/|\Z)"
    rb'|"(?:\\.|[^"\\\n])*"?'
    rb"|(?<![\w'])'(?:\\.|[^'\\\n])*'?"
    rb"|^[ \t]*\#(?:\\\r?\n|[^\n])*",
    re.S | re.M,
)
_DIRECTIVE_RE = re.compile(rb"\s*#\s*(\w*)(.*)", re.S)
_NOT_NEWLINE = re.compile(rb"[^\n]")
_CUDA_SPEC_RE = re.compile(
    rb"\b(?:__global__|__device__|__host__|__forceinline__|__noinline__|__inline__|__shared__|__constant__|"
    rb"__managed__|__grid_constant__|__restrict__)\b"
    rb"|\b(?:__launch_bounds__|__align__|__cluster_dims__|__maxnreg__|CUTE_ALIGNAS|CUTLASS_ALIGNAS)\s*"
    rb"\((?:[^()]|\([^()]*\))*\)"
)
_MACRO = rb"_*[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]"  # ALL_CAPS_WITH_UNDERSCORE (CUTE_HOST_DEVICE, __CUTE_REQUIRES)
_PARENS = rb"\((?:[^()]|\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\))*\)"  # balanced, 4 levels deep
_MACRO_RE = re.compile(rb"(?<![\w.:~])" + _MACRO)
_PARENS_RE = re.compile(rb"[ \t]*" + _PARENS)
_SPACE_RE = re.compile(rb"[ \t\r\n]*")
_DECL_BEFORE = frozenset(b";{}>)]:")  # a declaration starts after a statement, a block, a template head, `public:`
_DECL_AFTER_WORD_RE = re.compile(
    rb"(?<![\w])(?:static|inline|constexpr|consteval|virtual|explicit|friend|extern|struct|class|union|enum|"
    rb"typename)$"
)


def _starts_declaration(scan: bytearray, at: int) -> bool:
    """Whether a declaration may start at ``at`` of ``scan`` (comments blanked): after one of ``_DECL_BEFORE`` or a
    specifier keyword (whitespace between), or at the start of the file."""
    before = bytes(scan[max(0, at - 512) : at]).rstrip()
    if not before:
        return True
    return before[-1] in _DECL_BEFORE or bool(_DECL_AFTER_WORD_RE.search(before[-16:]))


def _blank(buf: bytearray, a: int, b: int) -> None:
    """Bytes ``a..b-1`` of ``buf`` to spaces, newlines kept."""
    if b > a:
        buf[a:b] = _NOT_NEWLINE.sub(b" ", bytes(buf[a:b]))


def _is_zero(cond: bytes) -> bool:
    return cond.split(b"//")[0].split(b"/*")[0].strip() in (b"0", b"(0)", b"false")


class _Group:
    """One conditional: its arms as ``[condition or None for #else, body start, body end, nested groups]``."""

    def __init__(self) -> None:
        self.arms: list[list[Any]] = []


def prepare(data: bytes) -> tuple[bytes, bytes]:
    """``(for the parser, code)``: ``data`` with what tree-sitter cannot read blanked (the module docstring lists
    it), and ``data`` with comments, literals, preprocessor lines and the arms not kept blanked (where code is; the
    specifiers kept). Both are as long as ``data``, with its newlines in place."""
    directives: list[tuple[int, int, bytes]] = []

    def blank_token(m: re.Match[bytes]) -> bytes:
        tok = m.group()
        if tok.lstrip(b" \t").startswith(b"#"):
            directives.append((m.start(), m.end(), tok))
        return _NOT_NEWLINE.sub(b" ", tok)

    code = bytearray(_TOKENS_RE.sub(blank_token, data))
    top: list[_Group] = []
    stack: list[_Group] = []
    out = bytearray(data)
    for start, end, tok in directives:
        _blank(out, start, end)
        d = _DIRECTIVE_RE.match(tok)
        kw, arg = (d.group(1), d.group(2)) if d else (b"", b"")
        if kw in (b"if", b"ifdef", b"ifndef"):
            g = _Group()
            g.arms.append([arg if kw == b"if" else b"1", end, -1, []])
            (stack[-1].arms[-1][3] if stack else top).append(g)
            stack.append(g)
        elif kw in (b"elif", b"elifdef", b"elifndef", b"else") and stack:
            g = stack[-1]
            g.arms[-1][2] = start
            g.arms.append([None if kw == b"else" else (arg if kw == b"elif" else b"1"), end, -1, []])
        elif kw == b"endif" and stack:
            stack.pop().arms[-1][2] = start
    for g in stack:  # unterminated: to the end
        g.arms[-1][2] = len(data)

    def balanced(a: int, b: int) -> bool:
        seg = bytes(code[a:b])
        return seg.count(b"{") == seg.count(b"}") and seg.count(b"(") == seg.count(b")")

    def decide(groups: list[_Group]) -> None:
        for g in groups:
            zero = [arm[0] is not None and _is_zero(arm[0]) for arm in g.arms]
            if not any(zero) and all(balanced(arm[1], arm[2]) for arm in g.arms):
                keep = set(range(len(g.arms)))
            else:
                keep = {next((i for i, z in enumerate(zero) if not z), -1)}
            for i, arm in enumerate(g.arms):
                if i in keep:
                    decide(arm[3])
                else:
                    _blank(out, arm[1], arm[2])
                    _blank(code, arm[1], arm[2])

    decide(top)
    scan = bytearray(code)  # code with what is blanked below blanked too: a macro after a specifier starts there
    for m in _CUDA_SPEC_RE.finditer(bytes(scan)):
        _blank(out, m.start(), m.end())
        _blank(scan, m.start(), m.end())
    for m in _MACRO_RE.finditer(bytes(scan)):
        if not _starts_declaration(scan, m.start()):
            continue
        after = _SPACE_RE.match(scan, m.end())
        nxt = after.end() if after else m.end()
        if nxt > m.end() and re.match(rb"(?!final\b)[A-Za-z_~]", scan[nxt : nxt + 6]):
            end = m.end()  # a specifier macro before a name: CUTE_HOST_DEVICE auto f()
        else:
            p = _PARENS_RE.match(scan, m.end())  # a macro invoked as a statement: CUTE_STATIC_ASSERT_V(...);
            if p is None:
                continue
            rest = _SPACE_RE.match(scan, p.end())
            k = rest.end() if rest else p.end()
            if k < len(scan) and not (scan[k : k + 1].isalpha() or scan[k] in b"_}~[;"):
                continue
            end = p.end()
        _blank(out, m.start(), end)
        _blank(scan, m.start(), end)
    return bytes(out), bytes(code)


# -- the tree -----------------------------------------------------------------------------------------------------

_DECL_TYPES = {
    "function_definition", "declaration", "template_declaration", "struct_specifier", "class_specifier",
    "union_specifier", "enum_specifier", "alias_declaration", "type_definition", "concept_definition",
    "namespace_definition", "linkage_specification", "field_declaration", "using_declaration",
    "static_assert_declaration",
}  # fmt: skip
_WRAPPERS = {"reference_declarator", "pointer_declarator", "array_declarator", "parenthesized_declarator"}
_RECORDS = {"struct_specifier": "struct", "class_specifier": "class", "union_specifier": "struct"}
_DEFINE_RE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)")
_NO_CODE_RE = re.compile(r'^(?:[{};\s]*|(?:inline\s+)?namespace\b[\w\s:]*\{?\s*|extern\s+"[^"]*"\s*\{?\s*)$')


def _parser() -> Any:
    p = getattr(_local, "parser", None)
    if p is None:
        p = _local.parser = tree_sitter.Parser(_LANGUAGE)
    return p


def _end_row(node: Any) -> int:
    """The 0-based last row of ``node`` (a node ending at column 0 ends on the row before)."""
    row, col = node.end_point
    return int(row - 1 if col == 0 and row > node.start_point[0] else row)


class _Chunker:
    def __init__(self, text: str):
        self.text = text
        self.lines = text.split("\n")
        self.data = text.encode("utf-8", errors="surrogateescape")
        self.prepared, self.code = prepare(self.data)
        self.newlines = [m.start() for m in re.finditer(b"\n", self.data)]
        self.chunks: list[Chunk] = []

    def _row(self, byte: int) -> int:
        """The 0-based row of byte offset ``byte``."""
        return bisect.bisect_left(self.newlines, byte)

    def run(self) -> list[Chunk]:
        tree = _parser().parse(self.prepared)
        items = self._flatten(tree.root_node, [])
        prev_end = -1
        for i, node in enumerate(items):
            if node.type == "comment":
                continue
            start = self._row(self._start_byte(node))
            k = i - 1  # the comments right above (contiguous, not trailing the previous declaration's line)
            while k >= 0 and items[k].type == "comment" and _end_row(items[k]) >= start - 1:
                if items[k].start_point[0] <= prev_end:
                    break
                start = items[k].start_point[0]
                k -= 1
            self._emit(node, start)
            prev_end = _end_row(node)
        self._macros()
        self._gaps()
        self.chunks.sort(key=lambda c: (c.start, c.end))
        return self._merge_same_lines()

    def _flatten(self, node: Any, out: list[Any]) -> list[Any]:
        """The top-level items: namespaces and ``extern "C"`` blocks entered, error nodes searched for the
        declarations tree-sitter recovered inside them."""
        for child in node.named_children:
            t = child.type
            if t in ("namespace_definition", "linkage_specification"):
                body = child.child_by_field_name("body")
                if body is not None and body.type == "declaration_list":
                    self._flatten(body, out)
                    continue
                if t == "namespace_definition":
                    continue
            if t == "ERROR" or t.startswith("preproc_"):
                self._flatten(child, out)
                continue
            if node.type == "ERROR" and t not in _DECL_TYPES and t != "comment":
                continue  # a stray token of what could not be parsed: its lines become a gap chunk
            out.append(child)
        return out

    # -- symbols ------------------------------------------------------------------------------------------------
    def _text(self, node: Any) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", errors="replace")

    def _start_byte(self, node: Any) -> int:
        """Where ``node``'s declaration starts in the file: before the specifiers ``prepare`` blanked
        (``__global__ void k()`` parses as ``void k()``), after the previous node and any comment."""
        prev = node.prev_sibling
        a = prev.end_byte if prev is not None else (node.parent.start_byte if node.parent is not None else 0)
        seg = self.code[a : node.start_byte]
        stripped = seg.lstrip()
        if b"{" in stripped or b";" in stripped or b"}" in stripped:  # (not past a brace: a namespace's opening)
            return int(node.start_byte)
        return a + len(seg) - len(stripped)

    def _inner(self, node: Any) -> Any:
        """A template's declaration (``template <...> struct X`` -> the struct) and an ``extern "C"``
        declaration's (``extern "C" __global__ void k()`` -> the function), else ``node``."""
        while node is not None and node.type in ("template_declaration", "linkage_specification"):
            if node.type == "linkage_specification":
                node = node.child_by_field_name("body")
                continue
            kids = [c for c in node.named_children if c.type not in ("template_parameter_list", "comment")]
            node = kids[-1] if kids else None
        return node

    def _func_name(self, declarator: Any) -> str:
        """The name a declarator declares a function by (``local_tile``, ``Layout::operator==``, ``~Tensor``), or
        "" when it declares no function."""
        todo = [declarator]
        while todo:
            d = todo.pop(0)
            if d is None:
                continue
            if d.type == "function_declarator":
                n = d.child_by_field_name("declarator")
                if n is None:
                    return ""
                if n.type == "template_function":
                    n = n.child_by_field_name("name") or n
                name = re.sub(r"\s+", "", self._text(n))
                return re.sub(r"<.*>$", "", name) if "operator" not in name else name
            if d.type in ("parameter_list", "compound_statement", "field_declaration_list"):
                continue
            todo.extend(d.named_children)
        return ""

    def _var_name(self, declarator: Any) -> str:
        d = declarator
        while d is not None and d.type not in ("identifier", "field_identifier", "qualified_identifier"):
            nxt = d.child_by_field_name("declarator")
            if nxt is None and d.type in _WRAPPERS and d.named_children:
                nxt = d.named_children[0]
            d = nxt
        return re.sub(r"\s+", "", self._text(d)) if d is not None else ""

    def _symbols(self, node: Any) -> tuple[list[Symbol], Any]:
        """The symbols ``node`` defines, the first its main one, and the record node when it defines one."""
        inner = self._inner(node)
        if inner is None:
            return [], None
        t = inner.type
        if t == "function_definition":
            name = self._func_name(inner.child_by_field_name("declarator"))
            if not name:
                return [], None
            decl = inner.child_by_field_name("declarator")
            head = self.data[self._start_byte(node) : decl.start_byte if decl is not None else inner.end_byte]
            return [_sym(name, "kernel" if b"__global__" in head else "function")], None
        if t in _RECORDS or t == "enum_specifier" or (t == "declaration" and self._record_of(inner) is not None):
            rec = inner if t != "declaration" else self._record_of(inner)
            name_node = rec.child_by_field_name("name")
            if name_node is not None and name_node.type == "template_type":
                name_node = name_node.child_by_field_name("name") or name_node
            name = re.sub(r"\s+", "", self._text(name_node)) if name_node is not None else ""
            body = rec.child_by_field_name("body")
            kind = "enum" if rec.type == "enum_specifier" else _RECORDS[rec.type]
            if body is None:
                return ([_sym(name, "declaration")] if name else []), None
            syms = [_sym(name, kind)] if name else []
            if name and rec.type != "enum_specifier":
                syms += [_sym(f"{name}::{m}", "method") for m, _ in self._members(body)]
            return syms, (rec if name else None)
        if t == "alias_declaration":
            n = inner.child_by_field_name("name")
            return ([_sym(self._text(n), "alias")] if n is not None else []), None
        if t == "concept_definition":
            n = inner.child_by_field_name("name")
            return ([_sym(self._text(n), "concept")] if n is not None else []), None
        if t == "type_definition":
            names = [self._var_name(d) or self._text(d) for d in inner.children_by_field_name("declarator")]
            return [_sym(re.sub(r"\W+", "", n), "alias") for n in names if re.sub(r"\W+", "", n)], None
        if t in ("declaration", "field_declaration"):
            syms = []
            for d in inner.children_by_field_name("declarator"):
                fn = self._func_name(d)
                if fn:
                    syms.append(_sym(fn, "declaration"))
                else:
                    v = self._var_name(d)
                    if v:
                        syms.append(_sym(v, "variable"))
            return syms, None
        return [], None

    def _record_of(self, decl: Any) -> Any:
        t = decl.child_by_field_name("type")
        return t if t is not None and (t.type in _RECORDS or t.type == "enum_specifier") else None

    def _members(self, body: Any) -> list[tuple[str, Any]]:
        """The member functions a record's body defines: ``(name, node)``."""
        out = []
        for m in body.named_children:
            inner = self._inner(m)
            if inner is not None and inner.type == "function_definition":
                name = self._func_name(inner.child_by_field_name("declarator"))
                if name:
                    out.append((name, m))
        return out

    # -- chunks -------------------------------------------------------------------------------------------------
    def _head(self, node: Any) -> str:
        inner = self._inner(node)
        body = inner.child_by_field_name("body") if inner is not None else None
        if body is None and inner is not None and inner.type == "declaration":
            rec = self._record_of(inner)
            body = rec.child_by_field_name("body") if rec is not None else None
        end = body.start_byte if body is not None else node.end_byte
        text = self.data[self._start_byte(node) : end].decode("utf-8", errors="replace")
        return " ".join(text.split())[:200]

    def _emit(self, node: Any, start_row: int) -> None:
        syms, rec = self._symbols(node)
        sl, el = start_row + 1, _end_row(node) + 1
        body = rec.child_by_field_name("body") if rec is not None else None
        members = self._members(body) if body is not None else []
        if rec is not None and el - sl + 1 > MAX_CHUNK_LINES and members:
            # a long record: its head (bases, fields, up to the first member function), then each member function
            # with the comment right above it
            rec_name = syms[0].name
            starts = []
            for _, m in members:
                ms = self._row(self._start_byte(m))
                prev = m.prev_named_sibling
                while prev is not None and prev.type == "comment" and _end_row(prev) >= ms - 1:
                    ms = prev.start_point[0]
                    prev = prev.prev_named_sibling
                starts.append(ms + 1)
            head_end = max(sl, min(starts) - 1)
            self._add(sl, head_end, rec_name, syms[0].kind, self._head(node), [syms[0]])
            for (name, m), ms in zip(members, starts):
                s = _sym(f"{rec_name}::{name}", "method")
                self._add(max(ms, head_end + 1), _end_row(m) + 1, s.name, "method", self._head(m), [s])
            return
        main = syms[0] if syms else None
        self._add(sl, el, main.name if main else "", main.kind if main else "", self._head(node), syms)

    def _add(self, sl: int, el: int, symbol: str, kind: str, head: str, syms: list[Symbol]) -> None:
        el = max(sl, min(el, len(self.lines)))
        self.chunks.append(Chunk(sl, el, "code", lines_text(self.lines, sl, el), symbol, kind, head=head, symbols=syms))

    def _covered(self) -> list[bool]:
        used = [False] * (len(self.lines) + 2)
        for c in self.chunks:
            for x in range(c.start, c.end + 1):
                used[x] = True
        return used

    def _macros(self) -> None:
        """``#define NAME``: a symbol of the chunk it lies in, else a chunk of its own (with its continuations)."""
        by_line: dict[int, Chunk] = {}
        for c in self.chunks:
            for x in range(c.start, c.end + 1):
                by_line.setdefault(x, c)
        for idx, line in enumerate(self.lines, 1):
            m = _DEFINE_RE.match(line)
            if not m:
                continue
            name = m.group(1)
            sym = Symbol(name, name.lower(), "macro")
            if idx in by_line:
                by_line[idx].symbols.append(sym)
                continue
            e = idx
            while e < len(self.lines) and self.lines[e - 1].rstrip().endswith("\\"):
                e += 1
            self._add(idx, e, name, "macro", line.strip()[:200], [sym])

    def _gaps(self) -> None:
        """Runs of lines no chunk covers that hold code (not only comments, preprocessor lines, braces or a
        namespace's opening): symbol-less chunks, from the run's first line to its last line of code."""
        used = self._covered()
        code_lines = self.code.decode("utf-8", errors="replace").split("\n")
        n = len(self.lines)
        i = 1
        while i <= n:
            if used[i]:
                i += 1
                continue
            s = i
            last = 0
            while i <= n and not used[i]:
                if i - 1 < len(code_lines) and not _NO_CODE_RE.match(code_lines[i - 1]):
                    last = i
                i += 1
            if last:
                self._add(s, last, "", "", "", [])

    def _merge_same_lines(self) -> list[Chunk]:
        """Two declarations on one line (``struct A; struct B;``): one chunk with both symbols."""
        out: list[Chunk] = []
        for c in self.chunks:
            if out and c.start <= out[-1].end and not (c.start >= out[-1].start and c.end <= out[-1].end):
                prev = out[-1]
                prev.end = max(prev.end, c.end)
                prev.text = lines_text(self.lines, prev.start, prev.end)
                prev.symbols.extend(c.symbols)
                if not prev.symbol and c.symbol:
                    prev.symbol, prev.sym_kind = c.symbol, c.sym_kind
                continue
            if out and c.start >= out[-1].start and c.end <= out[-1].end:  # nested in the previous one
                out[-1].symbols.extend(s for s in c.symbols if s not in out[-1].symbols)
                continue
            out.append(c)
        return out


def _sym(name: str, kind: str) -> Symbol:
    """A symbol keyed by its last component (``Layout::operator==`` -> ``operator==``), lower case."""
    return Symbol(name, name.split("::")[-1].lower(), kind)
