"""GPU MODE problems (gpu-mode/reference-kernels, ``problems/<set>/<problem>/``) as ktui problems.

A problem folder holds ``reference.py`` (``generate_input(**spec)`` with ``seed`` among the spec's fields,
``ref_kernel(data)``, ``check_implementation(data, output)``), ``task.py`` (``input_t``, ``output_t``, ``TestSpec``),
``task.yml`` (``tests``, ``benchmarks``, ``ranking_by``...), and often ``solutions/{correct,wrong}/*.py``. The importer
reads them with ``ast`` and PyYAML (nothing upstream is imported here) and writes:

- ``references/gm_<set>_<problem>.py``: the set's ``utils.py``, ``task.py`` and ``reference.py`` inlined in that order
  (their ``from utils import ...`` / ``from task import ...`` lines dropped: the names are defined above them), then
  ktui's ``generate_input(seed, **spec)``, which calls the upstream one with ``seed=`` the case's seed: the
  ``seed`` values of ``task.yml`` are left out of the specs (kept in ``ktui_import``), since ktui draws fresh seeds
  per case; ``tests`` and ``benchmarks`` are ``task.yml``'s; ``outputs`` names the tensors of ``generate_input``'s
  result that it makes with ``torch.empty`` and never fills (the output buffers ktui fills with NaN); ``fuzz``
  bounds every integer field to 1..2x its largest test (a ``size`` is often a square's side); ``contiguous_only``
  when ``generate_input`` makes every tensor it returns ``.contiguous()`` (that is upstream's contract, and ktui's
  strided layout cases would fail solutions that are right under it).
- **Devices**: upstream code names the GPU (``device="cuda"``, ``torch.Generator(device="cuda")``, ``.cuda()``).
  Each such literal is rewritten, at its place in the source (comments and layout kept), to ``_ktui_device()``:
  torch's default device inside ``generate_input`` (ktui generates inside ``torch.device(<device under test>)``),
  else the device of the last data ktui generated or referenced in this process. The same data thus lands on the
  CPU under ``--device cpu`` and on the GPU otherwise; other mentions of ``"cuda"`` are left as they are and listed.
- ``kernels/gm_<set>_<problem>/vN.py``: each ``solutions/*/*.py`` (in name order), with ``task.py`` inlined in
  place of ``from task import ...`` (between markers the export undoes) and device literals rewritten to
  ``("cuda" if torch.cuda.is_available() else "cpu")``; a first line names the solution and whether upstream files it
  as correct or wrong (``ktui eval`` shows it).

The problem's own ``check_implementation`` is inlined as written: the judge runs it beside ktui's verdict on the
upstream problem's own cases (``ktui.worker.upstream``) and both verdicts are shown; ktui's decides. Where
``ref_kernel`` returns a tensor that differs in dtype or shape from the output buffer (pmpp_v2 prefixsum returns
float64 beside a float32 buffer), the import says so: ktui judges what ``ref_kernel`` returns.
"""

from __future__ import annotations

import ast
import hashlib
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ktui.importers.common import (
    ImporterError,
    Written,
    check_workspace,
    functions,
    probe,
    problem_name,
    read_source,
    write_new,
)
from ktui.importers.markers import MarkerError, strip_markers

TASK_BEGIN = "# ==== ktui: task.py inlined for: "
TASK_END = "# ==== end of task.py ===="
SOLUTION_HEAD = "# ktui-import: gpumode solution="
_FACTORY_EMPTY = {"empty", "empty_like", "empty_strided"}


@dataclass
class GMProblem:
    """One parsed GPU MODE problem folder."""

    folder: Path
    set_name: str
    name: str
    reference: str
    task: str
    utils: str
    config: dict[str, Any]
    seeded: bool
    outputs: list[int] = field(default_factory=list)
    params: list[str] = field(default_factory=list)
    contiguous: bool = False

    @property
    def problem(self) -> str:
        return problem_name(f"gm_{self.set_name}_{self.name}")


def _utils_path(folder: Path, config: dict[str, Any]) -> Path | None:
    for f in config.get("files") or []:
        if isinstance(f, dict) and f.get("name") == "utils.py" and isinstance(f.get("source"), str):
            return Path(folder / str(f["source"])).resolve()
    for cand in (folder / "utils.py", folder.parent / "utils.py"):
        if cand.is_file():
            return cand
    return None


def parse(folder: Path) -> GMProblem:
    """Read a problem folder.

    Raises:
        ImporterError: a file is missing or malformed (``task.yml`` without ``tests``, a CUDA ``lang: cu`` task,
            ``reference.py`` without ``generate_input``/``ref_kernel``).
    """
    import yaml  # here: ktui eval reads imported versions (solution_of) on machines without PyYAML

    folder = folder.resolve()
    missing = [f for f in ("reference.py", "task.yml") if not (folder / f).is_file()]
    if missing:
        raise ImporterError(f"{folder} is not a GPU MODE problem folder: no {' and no '.join(missing)}")
    try:
        config = yaml.safe_load((folder / "task.yml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ImporterError(f"{folder / 'task.yml'}: {exc}") from None
    if not isinstance(config, dict) or not isinstance(config.get("tests"), list) or not config["tests"]:
        raise ImporterError(f"{folder / 'task.yml'} has no tests")
    if config.get("lang", "py") != "py":
        raise ImporterError(f"{folder.name}: lang {config.get('lang')!r}: ktui imports Python tasks only (lang: py)")
    ref_text, ref_tree = read_source(folder / "reference.py")
    funcs = functions(ref_tree)
    lacking = [f for f in ("generate_input", "ref_kernel") if f not in funcs and not _assigned(ref_tree, f)]
    if lacking:
        raise ImporterError(f"{folder / 'reference.py'} does not define {', '.join(lacking)}")
    task_text = (folder / "task.py").read_text(encoding="utf-8") if (folder / "task.py").is_file() else ""
    up = _utils_path(folder, config)
    utils_text = up.read_text(encoding="utf-8") if up and up.is_file() else ""
    gen = funcs.get("generate_input")
    params = [a.arg for a in gen.args.args] if gen else []
    p = GMProblem(
        folder=folder,
        set_name=folder.parent.name,
        name=folder.name,
        reference=ref_text,
        task=task_text,
        utils=utils_text,
        config=config,
        seeded="seed" in params or bool(gen and gen.args.kwarg),
        params=[a for a in params if a != "seed"],
    )
    if gen:
        p.outputs = output_buffers(gen)
        p.contiguous = all_contiguous(gen, skip=set(p.outputs))
    return p


def _ends_contiguous(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "contiguous"
        and not node.args
    )


def all_contiguous(gen: ast.FunctionDef, skip: set[int] | None = None) -> bool:
    """Whether every tensor ``generate_input`` returns is made ``.contiguous()`` (directly, or the name it returns was
    last assigned such a value), the elements at the indices in ``skip`` aside (output buffers, ``output_buffers``:
    a ``torch.empty`` needs no ``.contiguous()``, new-user trial 20 M3): the upstream contract is contiguous
    inputs, so ktui's strided layout cases (which upstream never gives) are left out (``contiguous_only``)."""
    last: dict[str, ast.AST] = {}
    for node in ast.walk(gen):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            last[node.targets[0].id] = node.value
    rets = [n for n in ast.walk(gen) if isinstance(n, ast.Return)]
    if len(rets) != 1 or rets[0].value is None:
        return False
    value = rets[0].value
    elts = value.elts if isinstance(value, ast.Tuple) else [value]
    skip = skip or set()
    return bool(elts) and all(
        i in skip or _ends_contiguous(e) or (isinstance(e, ast.Name) and _ends_contiguous(last.get(e.id)))
        for i, e in enumerate(elts)
    )


def _assigned(tree: ast.Module, name: str) -> bool:
    return any(
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
        for n in tree.body
    )


def _root_call(node: ast.AST) -> ast.Call | None:
    """The innermost call of a chain ``torch.empty(...).contiguous()``: the ``torch.empty`` call."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call):
        node = node.func.value
    return node if isinstance(node, ast.Call) else None


def _is_empty(node: ast.AST) -> bool:
    call = _root_call(node)
    return bool(
        call is not None
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in _FACTORY_EMPTY
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "torch"
    )


def output_buffers(gen: ast.FunctionDef) -> list[int]:
    """The indices of ``generate_input``'s returned tuple that are output buffers: made by ``torch.empty*`` (or
    ``.contiguous()`` of one) and never used in between (not filled by ``uniform_``, not written by subscript)."""
    empties: dict[str, ast.AST] = {}
    uses: dict[str, int] = {}
    for node in ast.walk(gen):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if _is_empty(node.value):
                empties[node.targets[0].id] = node
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            uses[node.id] = uses.get(node.id, 0) + 1
    rets = [n for n in ast.walk(gen) if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)]
    if len(rets) != 1:
        return []
    assert isinstance(rets[0].value, ast.Tuple)
    out = []
    for i, e in enumerate(rets[0].value.elts):
        base = _root_call(e)
        name = e.id if isinstance(e, ast.Name) else None
        if base is not None and isinstance(base.func, ast.Attribute) and isinstance(base.func.value, ast.Name):
            name = name or base.func.value.id
        if (name in empties and uses.get(name, 0) == 1) or _is_empty(e):
            out.append(i)
    return out


def rewrite_devices(source: str, replacement: str) -> tuple[str, list[str]]:
    """``source`` with every literal naming the GPU rewritten at its place: a ``device="cuda"`` (or ``"cuda:0"``)
    keyword's value, ``.cuda()`` as ``.to(<replacement>)``, ``.to("cuda")``'s and ``torch.device("cuda")``'s
    argument (new-user trial 21 F11: a helper's ``torch.device("cuda")`` was left). Returns the new text and the
    lines of other ``"cuda"`` strings left as they were (``line 12``)."""
    tree = ast.parse(source)
    edits: list[tuple[int, int, int, int, str]] = []
    handled: set[int] = set()

    def is_cuda(n: ast.AST) -> bool:
        return (
            isinstance(n, ast.Constant)
            and isinstance(n.value, str)
            and re.fullmatch(r"cuda(:\d+)?", n.value) is not None
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "device" and is_cuda(node.value):
            v = node.value
            edits.append((v.lineno, v.col_offset, v.end_lineno or v.lineno, v.end_col_offset or 0, replacement))
            handled.add(id(v))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "cuda" and not node.args and not node.keywords:
                f = node.func
                start_line, start_col = f.value.end_lineno or f.lineno, f.value.end_col_offset or 0
                edits.append(
                    (start_line, start_col, node.end_lineno or 0, node.end_col_offset or 0, f".to({replacement})")
                )
            elif node.func.attr in ("to", "device") and node.args and is_cuda(node.args[0]):  # torch.device("cuda")
                v = node.args[0]
                edits.append((v.lineno, v.col_offset, v.end_lineno or v.lineno, v.end_col_offset or 0, replacement))
                handled.add(id(v))
    left = sorted(
        {
            f"line {n.lineno}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and is_cuda(n) and id(n) not in handled
        },
        key=lambda s: int(s.split()[1]),
    )
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))

    def pos(line: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets
        return offsets[line - 1] + len(lines[line - 1].encode()[:col].decode(errors="ignore"))

    text = source
    for sl, sc, el, ec, rep in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        a, b = pos(sl, sc), pos(el, ec)
        text = text[:a] + rep + text[b:]
    return text, left


def drop_imports(source: str, modules: tuple[str, ...]) -> str:
    """``source`` with each ``from <module> import ...`` of ``modules`` replaced by a comment (same line count)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in modules and node.level == 0:
            first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
            lines[first] = f"# (ktui: inlined above) {lines[first].strip()}\n"
            for i in range(first + 1, last + 1):
                lines[i] = "#\n"
    return "".join(lines)


DEVICE_HELPER = '''import torch as _ktui_torch

_ktui_current = [None]  # the device of the data ktui last generated or referenced in this process


def _ktui_device():
    """Where upstream code said "cuda": torch's default device inside generate_input (ktui generates inside
    torch.device(<device under test>)), else the device of the last data ktui generated or referenced here."""
    d = _ktui_torch.get_default_device()
    return d if d.type != "cpu" or _ktui_current[0] is None else _ktui_current[0]
'''


_SECTION = re.compile(r"^# ==== GPU MODE [^/\n]*/(\S+), verbatim")


def upstream_place(error: str, text: str) -> str:
    """``error`` (the probe's one line, ``... (at gm_x.py:41)``) with the place in the generated reference
    ``text`` given as the upstream file and its line (``(at task.py:5)``): each inlined file starts after its
    section line and keeps its lines (new-user trial 20 L10: a ``task.py`` error named neither file nor line)."""
    m = re.search(r" \(at [^:()]+:(\d+)\)$", error)
    if m is None:
        return error
    lineno, start, label = int(m.group(1)), 0, ""
    for i, line in enumerate(text.splitlines()[:lineno], 1):
        hit = _SECTION.match(line)
        if hit:
            start, label = i, hit.group(1)
    if not label or lineno <= start:
        return error
    return f"{error[: m.start()]} (at {label}:{lineno - start})"


def render(p: GMProblem, allow_torch: bool) -> tuple[str, list[str]]:
    """The generated reference's text, and notes (``"cuda"`` strings left as they were)."""
    notes: list[str] = []
    parts = []
    for label, text in (("utils.py", p.utils), ("task.py", p.task), ("reference.py", p.reference)):
        if not text:
            continue
        text = drop_imports(text, ("utils", "task"))
        text, left = rewrite_devices(text, "_ktui_device()")
        if left:
            notes.append(
                f'{label}: "cuda" left as written at {", ".join(left)} (not a device= argument, .cuda(), .to("cuda") '
                'or torch.device("cuda"): ktui rewrites those to the machine\'s device; on a machine without a GPU '
                "only code that reaches this string fails)"
            )
        parts.append(f"# ==== GPU MODE {p.set_name}/{label}, verbatim but for device literals ====\n{text.rstrip()}\n")
    tests, benchmarks = _unseeded(p.config.get("tests")), _unseeded(p.config.get("benchmarks"))
    meta = {
        "format": "gpumode",
        "set": p.set_name,
        "problem": p.name,
        "source": str(p.folder),
        "sha256": hashlib.sha256(p.reference.encode()).hexdigest(),
        "seeds": {
            "tests": [s.get("seed") for s in p.config["tests"]],
            "benchmarks": [s.get("seed") for s in p.config.get("benchmarks") or [] if isinstance(s, dict)],
        },
        "ranking_by": p.config.get("ranking_by", ""),
    }
    seed_arg = ", seed=seed" if p.seeded else ""
    body = [
        f'"""GPU MODE problem {p.set_name}/{p.name}, imported by `ktui import gpumode`.',
        "",
        "Below: the set's utils.py, then task.py and reference.py, verbatim except that their imports of each other",
        'are commented out and every device="cuda" is _ktui_device() (the device ktui generates on). ktui\'s',
        "generate_input(seed, **spec) calls the upstream one with seed= the case's seed (the seeds of task.yml are",
        "not used: ktui draws its own per case). The upstream check_implementation runs in ktui's judge beside",
        "ktui's own verdict (both shown; ktui's decides).",
        '"""',
        "",
        f"ktui_import = {meta!r}",
        "",
        DEVICE_HELPER,
        *parts,
        "# ==== ktui ====",
        "_ktui_upstream_generate_input = generate_input",
        "_ktui_upstream_ref_kernel = ref_kernel",
        f"tests = {tests!r}",
        f"benchmarks = {benchmarks!r}",
    ]
    ints = sorted({k for t in tests for k, v in t.items() if isinstance(v, int) and not isinstance(v, bool)})
    if ints:
        # fuzzed sizes stay within 2x the tests: a GPU MODE size may be a square's side (size x size), which ktui's
        # fuzz, drawing up to the benchmark's value, would make 2**28 elements on the CPU (4x: a 2047 x 2047 case
        # under the Triton interpreter outlasted run's limit)
        bounds = {k: (1, 2 * max(t[k] for t in tests if k in t)) for k in ints}
        body.append(f"fuzz = {bounds!r}")
    if p.outputs:
        body.append(f"outputs = {tuple(p.outputs)!r}  # output buffers: made by torch.empty, never filled")
    if p.contiguous:
        body.append("contiguous_only = True  # generate_input makes every input .contiguous(): upstream's contract")
    if allow_torch:
        body.append("allow_torch = True  # imported with --allow-torch: versions may compute in torch alone")
    body += [
        "",
        "",
        "def generate_input(seed, **spec):  # noqa: F811",
        '    """The upstream generate_input(**spec) with the case\'s seed, on ktui\'s device."""',
        "    _ktui_current[0] = _ktui_torch.get_default_device()",
        f"    return _ktui_upstream_generate_input(**spec{seed_arg})",
        "",
        "",
        "def ref_kernel(data):  # noqa: F811",
        '    """The upstream ref_kernel, with _ktui_device() the device of data."""',
        "    for leaf in data if isinstance(data, (tuple, list)) else (data,):",
        "        if isinstance(leaf, _ktui_torch.Tensor):",
        "            _ktui_current[0] = leaf.device",
        "            break",
        "    return _ktui_upstream_ref_kernel(data)",
    ]
    return "\n".join(body) + "\n", notes


def _unseeded(specs: Any) -> list[dict[str, Any]]:
    """``task.yml``'s specs without their ``seed`` (ktui draws the seeds)."""
    return [{k: v for k, v in s.items() if k != "seed"} for s in specs or [] if isinstance(s, dict)]


def adapt_solution(source: str, task: str, rel: str, expected: str) -> str:
    """A solution as a ktui version: a first line naming it, ``task.py`` inlined in place of ``from task import``
    (between markers), device literals rewritten to the GPU when there is one, else the CPU."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for node in reversed(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module == "task" and node.level == 0:
            first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
            original = "".join(lines[first : last + 1]).strip().replace("\n", " ")
            block = f"{TASK_BEGIN}{original}\n{task.rstrip()}\n{TASK_END}\n"
            lines[first : last + 1] = [block]
    text = "".join(lines)
    text, _ = rewrite_devices(text, '("cuda" if _ktui_torch.cuda.is_available() else "cpu")')
    head = f"{SOLUTION_HEAD}{rel} expected={expected}\n"
    body = text.splitlines(keepends=True)
    n = 0
    while n < len(body) and body[n].startswith("#!"):  # ``#!POPCORN leaderboard ...`` stays on top
        n += 1
    return head + "".join(body[:n]) + "import torch as _ktui_torch  # noqa: E402,F401\n" + "".join(body[n:])


def export(version_text: str, version_name: str) -> str:
    """A GPU MODE ``submission.py`` from a version: its source with ktui's header lines removed and an inlined
    ``task.py`` put back as the ``from task import ...`` line it replaced.

    Its ``ktui.trace`` region markers are taken out (``ktui.importers.markers``): the harness has no ktui.

    Raises:
        ImporterError: the version defines no ``custom_kernel``, or markers that cannot be taken out.
    """
    try:
        version_text = strip_markers(version_text)
    except MarkerError as exc:
        raise ImporterError(f"{version_name}: {exc}") from None
    tree = ast.parse(version_text)
    if "custom_kernel" not in functions(tree) and not _assigned(tree, "custom_kernel"):
        raise ImporterError(f"{version_name} defines no custom_kernel")
    out: list[str] = []
    skipping = False
    for line in version_text.splitlines(keepends=True):
        if line.startswith(SOLUTION_HEAD):
            continue
        if line.startswith(TASK_BEGIN):
            out.append(line[len(TASK_BEGIN) :].rstrip("\n") + "\n")
            skipping = True
            continue
        if skipping:
            skipping = not line.startswith(TASK_END)
            continue
        out.append(line)
    return "".join(out)


def import_problem(
    folder: Path, root: Path, force: bool = False, check: bool = True, allow_torch: bool = False
) -> Written:
    """Import a GPU MODE problem folder into the workspace ``root``: the reference and each solution as a version.

    With ``check`` the tests are tried in a child process first (``common.probe``); a test that raises is an error
    (GPU MODE's tests are the problem's own: none is dropped).

    Raises:
        ImporterError: see ``parse``; the reference exists and ``force`` is False; the module does not load or a
            test raises on the CPU.
    """
    p = parse(folder)
    check_workspace(root)
    ref = root / "references" / f"{p.problem}.py"
    if ref.exists() and not force:
        raise ImporterError(f"{ref} exists: pass --force to overwrite it")
    text, notes = render(p, allow_torch)
    if not p.contiguous:  # new-user trial 20 M3: the import said nothing, and solutions failed on strided inputs
        notes.append(
            "strided layouts are tested (transposed, padded, offset, expanded inputs): generate_input returns an "
            "input not made .contiguous(); add contiguous_only = True to the reference if upstream's contract is "
            "contiguous inputs"
        )
    tests = [{k: v for k, v in s.items() if k != "seed"} for s in p.config["tests"]]
    if check:
        with tempfile.TemporaryDirectory(prefix="ktui-probe-") as scratch:  # outside the workspace: no watcher sees it
            tmp = Path(scratch) / f"{p.problem}.py"
            write_new(tmp, text, force=True)
            answer, buffers = probe([(tmp, "ref_kernel", tests), (tmp, "output_buffers", tests[:1])])
        if isinstance(answer, str):
            raise ImporterError(f"{p.name}: the generated reference does not load: {upstream_place(answer, text)}")
        bad = [f"{t}: {e}" for t, e in zip(tests, answer) if e]
        if bad:
            raise ImporterError(f"{p.name}: a test raises on the CPU: {bad[0]}")
        if isinstance(buffers, list) and buffers and buffers[0]:
            notes.append(
                f"{buffers[0]}: ktui judges the dtype and shape ref_kernel returns, so a version that fills and "
                "returns the buffer fails on that; ktui run and ktui eval show what upstream's check_implementation "
                "says of it beside ktui's verdict"
            )
    write_new(ref, text, force=True)
    versions: list[Path] = []
    sols = sorted((p.folder / "solutions").glob("*/*.py")) if (p.folder / "solutions").is_dir() else []
    kdir = root / "kernels" / p.problem
    for n, sol in enumerate(sols, 1):
        rel = str(sol.relative_to(p.folder))
        expected = sol.parent.name if sol.parent.name in ("correct", "wrong") else "unknown"
        src, _ = read_source(sol)
        if (
            expected == "correct"
            and not allow_torch
            and not re.search(r"^\s*(import|from)\s+(triton|cutlass)", src, re.M)
        ):
            notes.append(  # new-user trial 21 F11: the first imported problem showed its "correct" solution red
                f'{rel} (v{n}) computes in torch alone (no Triton or CuTeDSL import): ktui fails it as "times '
                "torch, not a kernel\" while upstream's check passes it; kept to compare the two verdicts, or import "
                "with --allow-torch to judge torch versions as kernels"
            )
        out = kdir / f"v{n}.py"
        write_new(out, adapt_solution(src, p.task, rel, expected), force)
        versions.append(out)
    if not sols:
        kdir.mkdir(parents=True, exist_ok=True)
    return Written(p.problem, ref, versions, [], notes)


def solution_of(version_text: str) -> tuple[str, str] | None:
    """(the solution's path in the problem folder, ``correct``/``wrong``/``unknown``) of an imported solution, from
    its first line; None for a version ktui did not import."""
    first = version_text.split("\n", 1)[0]
    if not first.startswith(SOLUTION_HEAD):
        return None
    rest = first[len(SOLUTION_HEAD) :]
    rel, _, exp = rest.rpartition(" expected=")
    return rel, exp
