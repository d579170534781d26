"""C++/CUDA by a brace and declaration scanner: the fallback of ``cpp.py`` when tree-sitter cannot be imported.

Comments, strings and preprocessor lines are blanked, namespaces and ``extern "C"`` blocks are entered, and each
top-level declaration (template, struct/class, function, alias, variable) is one chunk with its leading comment;
``#define NAME`` gives a macro symbol. Its known limit (why tree-sitter is preferred): a ``#if`` whose arms open a
brace each (``#if A`` ``void f() {`` ``#else`` ``void g() {`` ``#endif``) leaves the braces unbalanced, and the
declaration it is in runs to the end of the file.
"""

from __future__ import annotations

import bisect
import re

from ktui.context.model import Chunk, Symbol
from ktui.context.model import lines_text as _lines_text

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
