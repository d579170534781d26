"""A version without its ``ktui.trace`` region markers: what ``ktui export`` hands to a harness that has no ktui.

The markers compile to nothing outside ktui's trace rung, so removing them changes no instruction; the lines stay
where they were (a marked ``with`` becomes ``if True:``, a ``begin``/``end`` call ``pass``, the import a blank line),
so line numbers in tracebacks and line info still match the version's. ``tests/test_trace_device.py`` compiles each
example both ways and compares the SASS.
"""

from __future__ import annotations

import ast

MODULES = ("ktui.trace.triton", "ktui.trace.cute")
CALLS = ("begin", "end", "region")


class MarkerError(ValueError):
    """Markers this function cannot take out without changing the code (a ``with`` mixing a marker with another
    context manager)."""


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _marker_names(tree: ast.Module) -> tuple[set[str], list[ast.stmt]]:
    """The names a marker call goes by (``kt.region``, ``ktui.trace.triton.begin``, ``region``) and the imports
    that bind them."""
    names: set[str] = set()
    imports: list[ast.stmt] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name in MODULES or a.name == "ktui.trace" for a in node.names):
            imports.append(node)
            for a in node.names:
                if a.name in MODULES:
                    names |= {f"{a.asname or a.name}.{c}" for c in CALLS}
        elif isinstance(node, ast.ImportFrom) and node.module in (*MODULES, "ktui.trace"):
            imports.append(node)
            for a in node.names:
                if node.module == "ktui.trace":
                    names |= {f"{a.asname or a.name}.{c}" for c in CALLS}
                elif a.name in CALLS:
                    names.add(a.asname or a.name)
    return names, imports


def _is_marker(node: ast.expr, names: set[str]) -> bool:
    return isinstance(node, ast.Call) and _dotted(node.func) in names


def strip_markers(source: str) -> str:
    """``source`` with every ``ktui.trace`` marker and its import replaced, line for line, by code that does
    nothing (``if True:``, ``pass``, a blank line). A source without markers comes back unchanged.

    Raises:
        MarkerError: a ``with`` statement whose context managers are markers and something else.
        SyntaxError: ``source`` is not Python.
    """
    tree = ast.parse(source)
    names, imports = _marker_names(tree)
    if not imports:
        return source
    lines = source.splitlines(keepends=True)

    def replace(node: ast.stmt, first: str, last_line: int) -> None:
        start = node.lineno - 1
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        lines[start] = f"{indent}{first}\n" if first else "\n"
        for i in range(start + 1, last_line):
            lines[i] = "\n"

    for node in ast.walk(tree):
        if isinstance(node, ast.With) and any(_is_marker(it.context_expr, names) for it in node.items):
            if not all(_is_marker(it.context_expr, names) and it.optional_vars is None for it in node.items):
                raise MarkerError(f"line {node.lineno}: a with statement mixes ktui.trace markers with other code")
            if node.body[0].lineno == node.lineno:  # ``with kt.region("x"): y = f(x)`` on one line
                line = lines[node.lineno - 1]
                indent = line[: len(line) - len(line.lstrip())]
                lines[node.lineno - 1] = f"{indent}if True: {line[node.body[0].col_offset :]}"
            else:
                replace(node, "if True:", node.body[0].lineno - 1)
        elif isinstance(node, ast.Expr) and _is_marker(node.value, names):
            replace(node, "pass", node.end_lineno or node.lineno)
    for node in imports:
        replace(node, "" if node.col_offset == 0 else "pass", node.end_lineno or node.lineno)
    return "".join(lines)
