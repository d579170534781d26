"""What both importers share: the error they raise, problem names, writing the files, reading a generated
reference's ``ktui_import`` record, a static evaluator for size expressions, and the probe (a subprocess that tries
the generated specs).

Nothing here imports torch or upstream code: sources are parsed with ``ast``; the probe runs in a child process.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The record a generated reference carries: ``ktui_import = {...}`` (a literal, read back with ``ast``).
META_NAME = "ktui_import"


class ImporterError(Exception):
    """An upstream file or folder cannot be imported (or a version exported); the message is one line for the user."""


def problem_name(text: str) -> str:
    """A problem name (a Python identifier, lower case) from ``text``: ``19_ReLU`` -> ``kb1_19_relu`` is made by the
    caller; here non-identifier characters become ``_``, runs of them collapse, and a leading digit gets ``p``."""
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", text).strip("_").lower()
    name = re.sub(r"_+", "_", name)
    if not name or name[0].isdigit():
        name = "p" + name
    return name


def read_source(path: Path) -> tuple[str, ast.Module]:
    """The text of ``path`` and its parse tree.

    Raises:
        ImporterError: the file cannot be read or is not valid Python (the message names the line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImporterError(f"cannot read {path}: {exc}") from None
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise ImporterError(f"{path}:{exc.lineno}: not valid Python ({exc.msg})") from None
    return text, tree


def functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """The module-level functions of ``tree`` by name."""
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    """The module-level classes of ``tree`` by name."""
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


_BINOPS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b if abs(b) < 64 else None,
    ast.LShift: lambda a, b: a << b if 0 <= b < 64 else None,
}


def static_value(node: ast.AST, env: dict[str, Any]) -> Any:
    """The value of a constant expression: numbers, strings, tuples and lists of them, names in ``env``, ``+ - * //
    / % ** <<`` and unary minus (``2048 * 2``, ``(num_classes,)``, ``[dim1, dim2]``).

    Raises:
        ValueError: anything else (a call, an unknown name): the expression is not a constant.
    """
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise ValueError(node.id)
    if isinstance(node, (ast.Tuple, ast.List)):
        vals: list[Any] = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                inner = static_value(e.value, env)
                if not isinstance(inner, (tuple, list)):
                    raise ValueError("starred")
                vals.extend(inner)
            else:
                vals.append(static_value(e, env))
        return tuple(vals) if isinstance(node, ast.Tuple) else vals
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = static_value(node.operand, env)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
        raise ValueError("unary")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = static_value(node.left, env), static_value(node.right, env)
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
            raise ValueError("binop")
        try:
            v = _BINOPS[type(node.op)](a, b)
        except (ZeroDivisionError, OverflowError):
            raise ValueError("arith") from None
        if v is None:
            raise ValueError("arith")
        return v
    raise ValueError(type(node).__name__)


def names_in(node: ast.AST) -> set[str]:
    """Every name read in ``node``."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def read_meta(reference: Path) -> dict[str, Any] | None:
    """The ``ktui_import`` record of a reference that an importer wrote (``format``, upstream path, sha256...), or
    None when the module has none (a reference of ktui's own) or cannot be parsed. Read with ``ast``: the module is
    not imported."""
    try:
        tree = ast.parse(reference.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == META_NAME for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


@dataclass
class Written:
    """What an import wrote: the problem's name, its reference and versions (paths inside the workspace), the specs
    the probe dropped (with why) and notes for the user."""

    problem: str
    reference: Path
    versions: list[Path]
    dropped: list[str]
    notes: list[str]


def check_workspace(root: Path) -> None:
    """Make ``references/`` and ``kernels/`` under ``root`` when missing.

    Raises:
        ImporterError: ``root`` is not a folder.
    """
    if not root.is_dir():
        raise ImporterError(f"no such folder: {root}")
    (root / "references").mkdir(exist_ok=True)
    (root / "kernels").mkdir(exist_ok=True)


def write_new(path: Path, text: str, force: bool) -> None:
    """Write ``text`` to ``path`` (making its folder), refusing to overwrite an existing file unless ``force``.

    Raises:
        ImporterError: the file exists and ``force`` is False.
    """
    if path.exists() and not force:
        raise ImporterError(f"{path} exists: pass --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def next_version(root: Path, problem: str) -> str:
    """The first free ``vN`` name under ``kernels/<problem>/``."""
    folder = root / "kernels" / problem
    n = 1
    while (folder / f"v{n}.py").exists():
        n += 1
    return f"v{n}"


def probe(jobs: list[tuple[Path, str, list[dict[str, Any]]]], timeout: float | None = None) -> list[list[str] | str]:
    """Try generated references in one child process (``python -m ktui.importers.probe``; upstream code never runs
    in ktui's own process). Each job is ``(reference, call, specs)``: with ``call="ref_kernel"`` the child runs
    ``generate_input(0, **spec)`` then ``ref_kernel`` on the CPU for each spec, with ``"bytes_moved"`` it calls
    ``bytes_moved(**spec)``. Returns per job either the module's import error (a str) or one entry per spec: ''
    when it ran, else the error in one line.

    Raises:
        ImporterError: the child could not run, timed out after ``timeout`` s (default 120 s + 10 s a job), or
            printed no answer.
    """
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    timeout = timeout if timeout is not None else 120.0 + 10.0 * len(jobs)
    payload = [{"path": str(p), "call": c, "specs": s} for p, c, s in jobs]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ktui.importers.probe"],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=str(jobs[0][0].parent) if jobs else None,
        )
    except subprocess.TimeoutExpired:
        raise ImporterError(f"trying the generated specs took more than {timeout:.0f} s") from None
    except OSError as exc:
        raise ImporterError(f"cannot start the probe: {exc}") from None
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("[")]
    if not lines:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ImporterError(f"the probe of the generated references failed: {tail}")
    answer: list[list[str] | str] = json.loads(lines[-1])
    return answer
