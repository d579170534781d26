"""KernelBench problems (ScalingIntelligence/KernelBench, ``KernelBench/level{N}/{id}_{Name}.py``) as ktui problems.

A KernelBench file defines ``class Model(nn.Module)``, ``get_inputs()`` (``forward``'s arguments),
``get_init_inputs()`` (the constructor's) and module-level sizes (``batch_size = 4096``). The importer reads it with
``ast`` (never imports it) and writes ``references/<name>.py``: the file verbatim, then ktui's part:

- **data** = ``(inputs, init_inputs, state)``: ``get_inputs()``, ``get_init_inputs()`` and the model's parameters and
  buffers by name as plain tensors. The weights are drawn by KernelBench's protocol (``src/kernelbench/eval.py``:
  seed, ``get_init_inputs()``, seed again, ``Model(*init_inputs)``), then handed to the candidate in ``state``: a
  ``custom_kernel(data)`` gets them as tensors, and a ``ModelNew`` runs through an adapter that passes them to it by
  name (``torch.func.functional_call``), so no candidate has to reproduce the RNG draws. ktui checks them like any
  input (layouts, distributions, not modified).
- **ref_kernel** runs ``Model(*init_inputs)`` with ``state`` (``functional_call``), as KernelBench does: a fresh
  model (training mode), under ``no_grad``; ktui computes it in float64.
- **specs**: the fields are the file's sizes that shape ``get_inputs()``'s tensors, and constructor sizes of 16 or
  more that ``get_init_inputs()`` passes (``in_features``, ``out_features``); smaller constructor arguments
  (``kernel_size``, ``stride``, a reduction ``dim``) stay as written. The official sizes are the benchmark; the
  tests are the official shape scaled down (halving the largest size until the largest input has at most 2**14
  elements), a small shape, all ones, and tails (1 and 129 for innermost sizes, 1 and 17 for the others), each kept
  only when the probe (``common.probe``) could run it.
- **tolerance**: ktui's default policy (float32: atol = rtol = 1e-5 or 8x what fp32 arithmetic gets on the op),
  which is stricter than KernelBench's ``torch.allclose(atol=rtol=1e-4)`` for fp32 (1e-2 in KernelBench v0/v0.1),
  so no tolerance is written; KernelBench's figure is kept in ``ktui_import``.
- **input_distributions**: ``["native"]`` when ``get_inputs()`` draws integers, indices or masks (``randint``,
  ``bool``, ``long``...): ktui's other distributions would put targets out of range;
- **bytes_moved** (the roofline): the bytes of the inputs, the weights and the output, computed on the meta device,
  when the probe could compute them.

Level 4 (Hugging Face models: ``from_pretrained`` at import, needs the network and the weights) is refused.
"""

from __future__ import annotations

import ast
import hashlib
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ktui.core.inspect.adapters import MODELNEW_ADAPTER
from ktui.importers.common import (
    ImporterError,
    Written,
    check_workspace,
    classes,
    functions,
    names_in,
    next_version,
    probe,
    problem_name,
    read_meta,
    read_source,
    static_value,
    write_new,
)
from ktui.importers.markers import MarkerError, strip_markers

BEGIN = "# ==== KernelBench's file, verbatim ===="
END = "# ==== end of KernelBench's file ===="
KB_TOLERANCE = {
    "float32": 1e-4,
    "float16": 1e-2,
    "bfloat16": 1e-2,
}  # src/kernelbench/eval.py get_tolerance_for_precision

# Tensor factories whose positional arguments are sizes (``torch.rand(N, N)``); randint's size is its last one.
_FACTORIES = {"rand", "randn", "zeros", "ones", "empty", "full", "randint", "randperm", "arange", "tensor"}
ELEMENT_BUDGET = 1 << 14  # the scaled-down test's largest input, elements
TAIL_BUDGET = 1 << 15
_FILE_RE = re.compile(r"^(\d+)_(.+)\.py$")


@dataclass
class KBFile:
    """One parsed KernelBench file.

    Attributes:
        sizes: the spec fields and their official values (ints), in file order.
        derived: module-level assignments recomputed after the sizes are set (``input_shape = (num_classes,)``):
            (name, source of the value).
        shapes: the size expressions of ``get_inputs()``'s tensor factories (each a list of ast nodes).
        first, inner: sizes that are some tensor's first / last dimension.
    """

    path: Path
    level: int
    pid: int
    title: str
    source: str
    sizes: dict[str, int] = field(default_factory=dict)
    derived: list[tuple[str, str]] = field(default_factory=list)
    consts: dict[str, Any] = field(default_factory=dict)
    shapes: list[list[ast.expr]] = field(default_factory=list)
    first: set[str] = field(default_factory=set)
    inner: set[str] = field(default_factory=set)
    native_only: bool = False

    @property
    def name(self) -> str:
        return problem_name(f"kb{self.level}_{self.pid}_{self.title}")


def refuse_reason(source: str, tree: ast.Module, level: int) -> str:
    """Why a file cannot be imported offline ('' when it can): level 4, ``from_pretrained`` or ``transformers``."""
    uses_hf = "from_pretrained" in source or any(
        isinstance(n, (ast.Import, ast.ImportFrom))
        and any((a.name if isinstance(n, ast.Import) else (n.module or "")).startswith("transformers") for a in n.names)
        for n in ast.walk(tree)
    )
    if level == 4 or uses_hf:
        return (
            "KernelBench level 4 problems are Hugging Face models: the file calls from_pretrained at import, which "
            "needs the network and the model's weights; ktui imports levels 1-3 only"
        )
    return ""


def parse(path: Path, level: int | None = None) -> KBFile:
    """Read one KernelBench file with ``ast``.

    Raises:
        ImporterError: not a ``{id}_{Name}.py`` file, a level 4 problem, no ``Model``/``get_inputs``/
            ``get_init_inputs``, or not valid Python.
    """
    m = _FILE_RE.match(path.name)
    if not m:
        raise ImporterError(f"{path.name} is not a KernelBench problem file ({{id}}_{{Name}}.py)")
    if level is None:
        lm = re.match(r"level(\d+)$", path.parent.name)
        level = int(lm.group(1)) if lm else 0
    source, tree = read_source(path)
    why = refuse_reason(source, tree, level)
    if why:
        raise ImporterError(f"{path.name}: {why}")
    funcs = functions(tree)
    missing = [n for n in ("get_inputs", "get_init_inputs") if n not in funcs]
    if "Model" not in classes(tree):
        missing.insert(0, "class Model")
    if missing:
        raise ImporterError(f"{path.name} does not define {', '.join(missing)}")
    kb = KBFile(path=path, level=level, pid=int(m.group(1)), title=m.group(2), source=source)
    _find_sizes(kb, tree, funcs)
    return kb


def _find_sizes(kb: KBFile, tree: ast.Module, funcs: dict[str, ast.FunctionDef]) -> None:
    assigns: list[tuple[str, ast.expr]] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigns.append((node.targets[0].id, node.value))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            assigns.append((node.target.id, node.value))
    env: dict[str, Any] = {}
    deps: dict[str, set[str]] = {}
    for name, value in assigns:
        deps[name] = names_in(value)
        try:
            env[name] = static_value(value, env)
        except ValueError:
            env.pop(name, None)
    kb.consts = env
    # integer, index or mask inputs (targets of a loss, a mask): ktui's distributions would make them out of range
    gi = ast.get_source_segment(kb.source, funcs["get_inputs"]) or ""
    kb.native_only = bool(re.search(r"randint|randperm|\bbool\b|\blong\b|int64|int32|int8|uint8", gi))

    def expand(names: set[str]) -> set[str]:
        seen: set[str] = set()
        todo = list(names)
        while todo:
            n = todo.pop()
            if n in seen or n not in deps:
                continue
            seen.add(n)
            todo.extend(deps[n])
        return seen

    size_names: set[str] = set()
    for call in ast.walk(funcs["get_inputs"]):
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in _FACTORIES
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "torch"
        ):
            continue
        args = list(call.args)
        if call.func.attr == "randint":
            args = args[-1:]
        elif call.func.attr == "full":
            args = args[:1]
        args += [k.value for k in call.keywords if k.arg == "size"]
        if not args:
            continue
        kb.shapes.append(args)
        for n in names_in(args[0]):
            kb.first |= expand({n})
        for n in names_in(args[-1]):
            kb.inner |= expand({n})
        for a in args:
            size_names |= expand(names_in(a))
    init = funcs["get_init_inputs"]
    for ret in ast.walk(init):
        if isinstance(ret, ast.Return) and isinstance(ret.value, (ast.List, ast.Tuple)):
            for e in ret.value.elts:
                if isinstance(e, ast.Name) and isinstance(env.get(e.id), int) and not isinstance(env[e.id], bool):
                    if env[e.id] >= 16:
                        size_names |= expand({e.id})
    base = [
        n
        for n, value in assigns
        if n in size_names and not deps[n] and isinstance(env.get(n), int) and not isinstance(env[n], bool)
    ]
    kb.sizes = {n: int(env[n]) for n in dict.fromkeys(base) if env[n] > 0}
    changed = set(kb.sizes)
    for n, _value in assigns:  # a literal shape tuple (``input_shape = (32768,)``): one field per element
        v = env.get(n)
        if n not in size_names or deps[n] or not isinstance(v, tuple) or not v:
            continue
        if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in v):
            continue
        names = [f"{n}_{i}" for i in range(len(v))]
        kb.sizes.update({f: int(d) for f, d in zip(names, v)})
        kb.derived.append((n, "(" + ", ".join(names) + ",)"))
        if n in kb.inner:
            kb.inner.add(names[-1])
        changed.add(n)
    for name, value in assigns:
        if name not in kb.sizes and deps[name] & changed:
            seg = ast.get_source_segment(kb.source, value)
            if seg is None:
                continue
            kb.derived.append((name, seg))
            changed.add(name)


def _env_for(kb: KBFile, spec: dict[str, int]) -> dict[str, Any]:
    env = dict(kb.consts)
    env.update(spec)
    for name, seg in kb.derived:
        try:
            env[name] = static_value(ast.parse(seg, mode="eval").body, env)
        except (ValueError, SyntaxError):
            env.pop(name, None)
    return env


def elements(kb: KBFile, spec: dict[str, int]) -> int | None:
    """The element count of ``get_inputs()``'s largest tensor at ``spec``, None when a shape is not a constant
    expression."""
    env = _env_for(kb, spec)
    best = 0
    for args in kb.shapes:
        n = 1
        try:
            for a in args:
                v = static_value(a.value if isinstance(a, ast.Starred) else a, env)
                for d in v if isinstance(v, (tuple, list)) else (v,):
                    if not isinstance(d, int):
                        return None
                    n *= max(d, 0)
        except ValueError:
            return None
        best = max(best, n)
    return best


def specs(kb: KBFile) -> tuple[list[dict[str, int]], list[dict[str, int]]]:
    """The candidate test specs (before the probe) and the benchmark (the official sizes)."""
    official = dict(kb.sizes)
    if not official:
        return [{}], [{}]
    scaled = dict(official)
    for _ in range(200):
        n = elements(kb, scaled)
        if n is None:
            scaled = {k: min(v, 64) for k, v in official.items()}
            break
        if n <= ELEMENT_BUDGET:
            break
        big = max(scaled, key=lambda k: scaled[k])
        if scaled[big] <= 1:
            break
        scaled[big] = (scaled[big] + 1) // 2

    def small_of(k: str, v: int) -> int:
        if k in kb.inner:
            return min(v, 64)
        if k in kb.first:
            return min(v, 2)
        return min(v, 8 if k in kb.first | kb.inner or _in_shapes(kb, k) else 16)

    small = {k: small_of(k, v) for k, v in official.items()}
    out = [scaled, small, {k: 1 for k in official}]
    for k, v in official.items():
        for t in (1, 129) if k in kb.inner else (1, 17):
            if t <= v or t == 1:
                out.append({**small, k: t})
    seen: list[dict[str, int]] = []
    for s in out:
        n = elements(kb, s)
        if s not in seen and (n is None or n <= TAIL_BUDGET or s is scaled):
            seen.append(s)
    return seen, [official]


def _in_shapes(kb: KBFile, k: str) -> bool:
    return any(k in names_in(a) for args in kb.shapes for a in args)


def render(
    kb: KBFile,
    tests: list[dict[str, int]],
    benchmarks: list[dict[str, int]],
    meta_bytes: bool,
    allow_torch: bool = False,
) -> str:
    """The generated reference module's text (``allow_torch``: versions may compute in torch alone)."""
    sha = hashlib.sha256(kb.source.encode()).hexdigest()
    fields = list(kb.sizes)
    meta = {
        "format": "kernelbench",
        "level": kb.level,
        "problem_id": kb.pid,
        "title": kb.title,
        "source": str(kb.path),
        "sha256": sha,
        "official": benchmarks[0] if benchmarks else {},
        "kernelbench_tolerance": KB_TOLERANCE,
    }
    params = "".join(f", {f}: int" for f in fields)
    glob = f"    global {', '.join([*fields, *(n for n, _ in kb.derived)])}\n" if fields else ""
    sets = "".join(f"    {f} = sizes[{f!r}]\n" for f in fields)
    sets += "".join(f"    {n} = {seg}  # recomputed from the file's own expression\n" for n, seg in kb.derived)
    call = ", ".join(f"{f}={f}" for f in fields)
    doc_fields = ", ".join(f"{f} (official {v})" for f, v in kb.sizes.items()) or "none (the file has no sizes)"
    lines = [
        f'"""KernelBench level {kb.level} problem {kb.pid}: {kb.title}, imported by `ktui import kernelbench`.',
        "",
        f"From {kb.path.name} (sha256 {sha[:12]}). Everything between the two markers below is that file, verbatim;",
        "ktui's part follows it. What a version gets and returns:",
        "",
        "    data = (inputs, init_inputs, state)",
        "        inputs       tuple: what get_inputs() returns (Model.forward's arguments)",
        "        init_inputs  tuple: what get_init_inputs() returns (Model's constructor arguments)",
        "        state        dict: Model's parameters and buffers by name, as plain tensors",
        "    custom_kernel(data) returns what Model(*init_inputs).forward(*inputs) returns with those weights.",
        "",
        "The weights follow KernelBench's seeding (src/kernelbench/eval.py): ktui seeds torch with the case's seed,",
        "generate_input calls get_init_inputs(), seeds torch again with the same seed and builds Model(*init_inputs);",
        "get_inputs() then draws from the same stream. A candidate never has to redraw them: it gets them in `state`,",
        "and a KernelBench ModelNew runs through the adapter of `ktui import modelnew`, which passes `state` to",
        "ModelNew by parameter name (torch.func.functional_call). The reference is a fresh Model, in training mode",
        "as KernelBench runs it, under no_grad.",
        "",
        f"Spec fields: {doc_fields}. The official sizes are the benchmark; the tests scale them down (see",
        "ktui/importers/kernelbench.py). Tolerance: ktui's default (stricter than KernelBench's allclose with",
        "atol = rtol = 1e-4 for fp32).",
        '"""',
        "",
        f"{'ktui_import'} = {meta!r}",
        "",
        BEGIN,
        kb.source.rstrip("\n"),
        END,
        "",
        "import torch as _ktui_torch  # noqa: E402",
        "",
        f"tests = {tests!r}",
        *(
            ["input_distributions = ['native']  # integer or mask inputs: only as get_inputs() draws them"]
            if kb.native_only
            else []
        ),
        f"benchmarks = {benchmarks!r}",
        *(
            ["allow_torch = True  # imported with --allow-torch: versions may compute in torch alone"]
            if allow_torch
            else []
        ),
        "",
        "",
        "def _ktui_set_sizes(sizes):",
        glob + sets + "    return None",
        "",
        "",
        f"def generate_input(seed: int{params}):",
        '    """(inputs, init_inputs, state) at these sizes: see the module\'s docstring."""',
        f"    _ktui_set_sizes(dict({call}))",
        "    with _ktui_torch.no_grad():",
        "        init_inputs = tuple(get_init_inputs())",
        "        _ktui_torch.manual_seed(seed)  # reseeded before the weights, as KernelBench does",
        "        model = Model(*init_inputs)",
        "        state = {k: v.detach() for k, v in model.named_parameters()}",
        "        state.update({k: v.detach() for k, v in model.named_buffers()})",
        "        inputs = tuple(get_inputs())",
        "    return inputs, init_inputs, state",
        "",
        "",
        "_ktui_models = {}",
        "",
        "",
        "def _ktui_model(init_inputs, device):",
        "    key = (repr(init_inputs), str(device))",
        "    plain = not any(isinstance(x, _ktui_torch.Tensor) for x in init_inputs)",
        "    if plain and key in _ktui_models:",
        "        return _ktui_models[key]",
        "    with _ktui_torch.random.fork_rng(devices=[]), _ktui_torch.no_grad(), _ktui_torch.device(device):",
        "        model = Model(*init_inputs)",
        "    if plain:",
        "        _ktui_models[key] = model",
        "    return model",
        "",
        "",
        "def _ktui_device(inputs, state):",
        "    for t in (*inputs, *state.values()):",
        "        if isinstance(t, _ktui_torch.Tensor):",
        "            return t.device",
        "    return _ktui_torch.get_default_device()",
        "",
        "",
        "def ref_kernel(data):",
        '    """Model(*init_inputs).forward(*inputs) with the weights in state (torch.func.functional_call)."""',
        "    inputs, init_inputs, state = data",
        "    model = _ktui_model(init_inputs, _ktui_device(inputs, state))",
        "    with _ktui_torch.no_grad():",
        "        return _ktui_torch.func.functional_call(model, dict(state), tuple(inputs))",
        "",
        "",
        "_ktui_eager_models = {}",
        "",
        "",
        "def eager(data):",
        '    """Model(*init_inputs)(*inputs) in torch eager, the tensors of state bound as its own parameters and',
        "    buffers (the same tensors, no copy): KernelBench's eager baseline, without ref_kernel's functional_call.",
        '    ktui eval times it, and torch.compile of it, beside the reference."""',
        "    inputs, init_inputs, state = data",
        "    plain = not any(isinstance(x, _ktui_torch.Tensor) for x in init_inputs)",
        "    bound = tuple((k, v.data_ptr(), tuple(v.shape), str(v.dtype)) for k, v in state.items())",
        "    key = (repr(init_inputs), bound)",
        "    model = _ktui_eager_models.get(key) if plain else None",
        "    if model is None:",
        "        with _ktui_torch.random.fork_rng(devices=[]), _ktui_torch.no_grad():",
        "            with _ktui_torch.device(_ktui_device(inputs, state)):",
        "                model = Model(*init_inputs)",
        "        for name, tensor in state.items():",
        "            owner, _, leaf = name.rpartition('.')",
        "            module = model.get_submodule(owner)",
        "            if leaf in module._parameters:",
        "                module._parameters[leaf] = _ktui_torch.nn.Parameter(tensor, requires_grad=False)",
        "            else:",
        "                module._buffers[leaf] = tensor",
        "        if plain:",
        "            if len(_ktui_eager_models) > 8:",
        "                _ktui_eager_models.clear()",
        "            _ktui_eager_models[key] = model",
        "    with _ktui_torch.no_grad():",
        "        return model(*inputs)",
    ]
    if meta_bytes:
        lines += [
            "",
            "",
            f"def bytes_moved({', '.join(f'{f}: int' for f in fields)}):",
            '    """Bytes of the inputs, weights and output (each read or written once), on the meta device."""',
            "    with _ktui_torch.random.fork_rng(devices=[]), _ktui_torch.device('meta'):",
            f"        data = generate_input(0, {call})",
            "        out = ref_kernel(data)",
            "    leaves = [*data[0], *data[2].values(), *(out if isinstance(out, (tuple, list)) else (out,))]",
            "    return sum(t.numel() * t.element_size() for t in leaves if isinstance(t, _ktui_torch.Tensor))",
        ]
    return "\n".join(lines) + "\n"


def import_files(
    paths: list[Path],
    root: Path,
    level: int | None = None,
    force: bool = False,
    check: bool = True,
    allow_torch: bool = False,
) -> tuple[list[Written], list[str]]:
    """Import KernelBench files into the workspace ``root``, each as ``references/kb{level}_{id}_{name}.py``.

    With ``check`` every file's specs are tried in one child process (``common.probe``): test specs that raise are
    dropped (listed in ``Written.dropped``), a file none of whose tests runs is not written, and ``bytes_moved`` is
    kept when the meta device computes it for the benchmark and the tests. A file that cannot be imported is
    skipped with its reason.

    Returns:
        (what was written, one line per file not imported: ``19_ReLU.py: why``).

    Raises:
        ImporterError: a reference exists and ``force`` is False.
    """
    check_workspace(root)
    parsed: list[tuple[KBFile, list[dict[str, int]], list[dict[str, int]]]] = []
    failed: list[str] = []
    for path in paths:
        try:
            kb = parse(path, level)
        except ImporterError as exc:
            failed.append(str(exc))
            continue
        ref = root / "references" / f"{kb.name}.py"
        if ref.exists() and not force:
            raise ImporterError(f"{ref} exists: pass --force to overwrite it")
        tests, benchmarks = specs(kb)
        parsed.append((kb, tests, benchmarks))
    answers: list[tuple[list[str] | str, list[str] | str]] = []
    if check and parsed:
        with tempfile.TemporaryDirectory(prefix="ktui-probe-") as scratch:  # outside the workspace: no watcher sees it
            jobs: list[tuple[Path, str, list[dict[str, Any]]]] = []
            for kb, tests, benchmarks in parsed:
                tmp = Path(scratch) / f"{kb.name}.py"
                write_new(tmp, render(kb, tests, benchmarks, True), force=True)
                jobs += [(tmp, "ref_kernel", list(tests)), (tmp, "bytes_moved", [*benchmarks, *tests])]
            flat = probe(jobs)
        answers = [(flat[2 * i], flat[2 * i + 1]) for i in range(len(parsed))]
    written: list[Written] = []
    for i, (kb, tests, benchmarks) in enumerate(parsed):
        dropped: list[str] = []
        notes: list[str] = []
        meta_bytes = False
        if answers:
            errs, byte_errs = answers[i]
            if isinstance(errs, str):
                failed.append(f"{kb.path.name}: does not load: {errs}")
                continue
            dropped = [f"{spec_text(t)}: {e}" for t, e in zip(tests, errs) if e]
            kept = [t for t, e in zip(tests, errs) if not e]
            if not kept:
                failed.append(f"{kb.path.name}: no test spec runs on the CPU ({dropped[0]})")
                continue
            runs = [not e for e in errs]
            meta_bytes = (
                isinstance(byte_errs, list)
                and not byte_errs[0]
                and all(not e for e, ok in zip(byte_errs[len(benchmarks) :], runs) if ok)
            )
            if not meta_bytes:
                notes.append("no bytes_moved (no roofline): the meta device cannot run the model")
            tests = kept
        ref = root / "references" / f"{kb.name}.py"
        write_new(ref, render(kb, tests, benchmarks, meta_bytes, allow_torch), force=True)
        written.append(Written(kb.name, ref, [], dropped, notes))
    return written, failed


def spec_text(spec: dict[str, Any]) -> str:
    """``batch_size=1, dim=1``: a spec in one line."""
    return ", ".join(f"{k}={v}" for k, v in spec.items()) or "(no sizes)"


def select(folder: Path, ids: list[int] | None) -> list[Path]:
    """The problem files of a level folder, by id (all when ``ids`` is None), in id order.

    Raises:
        ImporterError: an id has no file.
    """
    files = {int(m.group(1)): p for p in folder.glob("*.py") if (m := _FILE_RE.match(p.name))}
    if ids is None:
        return [files[i] for i in sorted(files)]
    missing = [i for i in ids if i not in files]
    if missing:
        raise ImporterError(f"{folder} has no problem {', '.join(map(str, missing))}")
    return [files[i] for i in ids]


def level_folder(path: Path, level: int | None) -> tuple[Path, int | None]:
    """The ``level{N}`` folder named by ``path`` (a KernelBench clone, its ``KernelBench/`` folder or a level folder)
    and the level.

    Raises:
        ImporterError: no such folder, or a clone without ``--level``.
    """
    if path.is_file():
        return path.parent, level
    m = re.match(r"level(\d+)$", path.name)
    if m:
        return path, level or int(m.group(1))
    if level is None:
        raise ImporterError(f"{path} is not a level folder: pass --level N")
    for cand in (path / f"level{level}", path / "KernelBench" / f"level{level}"):
        if cand.is_dir():
            return cand, level
    raise ImporterError(f"no level{level} folder under {path}")


# -- ModelNew candidates and the export ---------------------------------------------------------------------------
ADAPTER = MODELNEW_ADAPTER  # (ktui.core.inspect.adapters: the scan leaves ktui's own code out)


def adapt_modelnew(source: str, origin: str) -> str:
    """A version file from a KernelBench ``ModelNew`` module: its source verbatim, then ``custom_kernel(data)`` that
    builds ``ModelNew(*init_inputs)`` once per constructor arguments and device and calls it with Model's weights.
    A ``ModelNew`` whose own parameter names are not Model's fails with a message naming both.

    Raises:
        ImporterError: the source defines no ``ModelNew`` class, or already a ``custom_kernel``.
    """
    tree = ast.parse(source)
    if "ModelNew" not in classes(tree):
        raise ImporterError(f"{origin} defines no class ModelNew")
    if "custom_kernel" in functions(tree):
        raise ImporterError(f"{origin} defines custom_kernel already: copy it to kernels/<problem>/ as it is")
    head = f"# A KernelBench ModelNew ({origin}) with ktui's adapter at the end (ktui import modelnew).\n"
    return head + source.rstrip("\n") + "\n" + ADAPTER


def import_modelnew(path: Path, root: Path, problem: str, version: str | None = None, force: bool = False) -> Path:
    """Write ``kernels/<problem>/<version>.py`` (the next free ``vN`` by default) from the ModelNew file ``path``.

    Raises:
        ImporterError: no such problem, not a KernelBench problem, or see ``adapt_modelnew``.
    """
    ref = root / "references" / f"{problem}.py"
    meta = read_meta(ref) if ref.is_file() else None
    if meta is None or meta.get("format") != "kernelbench":
        raise ImporterError(f"references/{problem}.py is not a problem imported from KernelBench")
    source, _ = read_source(path)
    text = adapt_modelnew(source, path.name)
    out = root / "kernels" / problem / f"{version or next_version(root, problem)}.py"
    write_new(out, text, force)
    return out


EXPORT_TAIL = '''

# ==== ktui export: ModelNew for KernelBench's harness ====
import torch as _ktui_torch  # noqa: E402


class ModelNew(_ktui_torch.nn.Module):
    """Model's constructor, Model's weights (drawn as Model draws them: KernelBench seeds before building each), and
    forward through the version's custom_kernel((inputs, init_inputs, state))."""

    def __init__(self, *init_inputs):
        super().__init__()
        self._ktui_init = tuple(init_inputs)
        self.model = _ktui_Model(*init_inputs)

    def forward(self, *inputs):
        state = {k: v.detach() for k, v in self.model.named_parameters()}
        state.update({k: v.detach() for k, v in self.model.named_buffers()})
        return custom_kernel((tuple(inputs), self._ktui_init, state))
'''


def export(reference_text: str, version_text: str, version_name: str) -> str:
    """A KernelBench ``ModelNew`` module from a version (``custom_kernel(data)``) of an imported problem: the
    KernelBench file (for Model, whose construction draws the weights), ``_ktui_Model = Model``, the version's source,
    then ``class ModelNew`` calling ``custom_kernel``. A version that is already a ModelNew adapter is exported as
    its ModelNew source.

    Its ``ktui.trace`` region markers are taken out (``ktui.importers.markers``): the harness has no ktui.

    Raises:
        ImporterError: the reference does not hold the KernelBench file, the version defines no custom_kernel, or
            it has markers that cannot be taken out.
    """
    try:
        version_text = strip_markers(version_text)
    except MarkerError as exc:
        raise ImporterError(f"{version_name}: {exc}") from None
    if "# ==== ktui adapter: a KernelBench ModelNew" in version_text:
        return version_text.split("\n\n# ==== ktui adapter", 1)[0].split("\n", 1)[1].rstrip("\n") + "\n"
    if BEGIN not in reference_text or END not in reference_text:
        raise ImporterError("the reference does not hold a KernelBench file (no markers): was it imported by ktui?")
    upstream = reference_text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")
    if "custom_kernel" not in functions(ast.parse(version_text)):
        raise ImporterError(f"{version_name} defines no custom_kernel")
    return (
        f"# KernelBench ModelNew exported by `ktui export kernelbench` from {version_name}.\n"
        "# ==== the problem's KernelBench file (Model draws the weights) ====\n"
        f"{upstream}\n\n_ktui_Model = Model\n\n# ==== the version ====\n{version_text.rstrip()}\n{EXPORT_TAIL}"
    )


def parse_ids(text: str) -> list[int]:
    """``1,19,23`` or ``1-5,19`` as ids.

    Raises:
        ImporterError: not a list of ids.
    """
    out: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            if "-" in part:
                a, b = part.split("-", 1)
                out.extend(range(int(a), int(b) + 1))
            else:
                out.append(int(part))
    except ValueError:
        raise ImporterError(f"--problems takes ids like 1,19,23 or 1-5 (got {text!r})") from None
    return out
