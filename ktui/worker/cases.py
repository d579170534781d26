"""Correctness cases: the inputs of one check, rebuilt identically in the candidate and the judge.

A case is a JSON dict: ``spec_index``, ``seed`` and optionally ``dist`` (input distribution), ``layout`` (memory
layout of the inputs), ``config`` (autotune configs to pin, or "auto": ``ktui.worker.capture.pinned_config``) and
``repeat`` (calls on identical inputs, to catch nondeterminism). Both processes call
``build_input(problem, case, device)`` and get the same tensors, bit for bit.

Distributions refill every floating input tensor (never integer tensors, which often hold indices, and never declared
output buffers), from a generator seeded by the case seed:

- ``native``: what ``generate_input`` made;
- ``normal``: mean ~ U(-2, 2), scale ~ 10**U(-1, 1), then mean + scale * N(0, 1);
- ``uniform``: 10**U(-1, 1) * U[0, 1) (all positive: sums grow, cancellation cannot hide errors);
- ``heavy``: Student's t with 2 degrees of freedom (rare values far out), clamped to +-1e4;
- ``shifted``: normal values around +-100..200, the sign alternating by row (by half for a vector): exp() of them
  overflows or underflows unless the kernel subtracts the max, and a masked lane padded with 0 becomes the max;
- ``constant``: every element 1.0 (a long bf16 accumulation of ones stalls at 256; cases.md bf16-accum);
- the special values of ``ktui.worker.special`` (``zeros``, ``masked``, ``large``, ``extreme``, ``nonfinite``, and
  ``intrange`` and ``indices``, which refill integer tensors instead of floats), offered where the reference stays
  valid on them.

Inputs the reference declares ``structured_inputs`` (sorted boundaries, row pointers) are never refilled nor
near-duplicated.

A case with ``near_dup`` gets the inputs of the same spec, seed and distribution with a few interior elements swapped
(``special.near_duplicate_``); a case with ``spec`` (a fuzzed spec, ``ktui.worker.fuzz``) uses that spec instead of
``tests[spec_index]``.

Layouts give the same values in other memory layouts (cases.md strides): ``transposed`` (column-major storage for 2-D
and up; for 1-D a stride-2 view, reported as ``strided``), ``padded`` (the first columns of a wider buffer: a row stride
above the row length; for 1-D a contiguous view into a longer buffer), ``offset`` (a view one element into a larger
buffer: misaligned for vector loads), ``expanded`` (stride 0 along the first dimension, every row equal to the first; a
1-D integer tensor, offsets or ids, is left as it is). ``mixed`` lays the inputs out differently from each other
(cases.md strides, mixed): the tensors of the inputs are each contiguous or one strided layout (``transposed``, or
``padded`` for 2-D and up), by the case seed (``mixed_layouts``): over ``mixed_variants`` consecutive seeds every two
inputs are laid out differently, each way round, so a kernel that takes one input's strides or contiguity for another's
meets it. ``permuted`` (inputs of three dimensions or more) stores the first two dimensions swapped: the innermost
stride is 1 and nothing is broadcast, but the leading dimensions cannot be flattened into rows of one stride (a
head-permuted ``q``).
"""

from __future__ import annotations

import hashlib
import random
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any

import torch

from ktui.protocol import Case, mixed_variants, spec_label
from ktui.worker.problem import DISTRIBUTIONS, Problem
from ktui.worker.special import SPECIAL, near_duplicate_, refill_special
from ktui.worker.tensors import dataclass_fields, with_fields

__all__ = [
    "DISTRIBUTIONS",
    "LAYOUTS",
    "build_input",
    "case_label",
    "float_input_paths",
    "label_of",
    "layout_detail",
    "layout_of",
    "round_to_tf32",
    "spec_of",
]
LAYOUTS = ("transposed", "padded", "offset", "expanded", "mixed", "permuted", "channels_last")


def case_label(spec_label: str, case: Mapping[str, Any]) -> str:
    """``spec=(4, 129) seed=5 dist=heavy layout=offset config=softmax_kernel:2,reduce_kernel:0 fill=decoy
    grad=no_grad``: how
    failures name the case; a ``layout_detail`` in ``case`` (``layout_detail``: each input's layout and strides, the
    judge's) follows the layout in parentheses. ``config`` lists the config each autotuned kernel launched
    (``configs``, recorded by the candidate: index into the kernel's ``configs``), ``config=auto(softmax_kernel:2)``
    where the autotuner chose, or the case's own ``config`` before the call has run (``config=1``,
    ``config=auto``)."""
    parts = [f"spec={spec_label}", f"seed={case['seed']}"]
    for key in ("dist", "layout", "config", "fill", "grad"):
        if key == "dist" and case.get("vary"):  # the int and bool arguments the scalars case moved
            parts.append(f"dist={case.get('dist')} vary={','.join(p + m for p, m in case['vary'].items())}")
            continue
        if key == "dist" and case.get("inputs"):  # a special distribution refilling some inputs only
            parts.append(f"dist={case.get('dist')}({','.join('in' + p for p in case['inputs'])})")
            continue
        if key == "config":
            shown = _configs_label(case)
            if shown:
                parts.append(f"config={shown}")
        elif case.get(key) not in (None, "native", "contiguous"):
            detail = case.get("layout_detail") if key == "layout" else None
            parts.append(f"{key}={case[key]}" + (f" ({detail})" if detail else ""))
    if case.get("frozen_path"):  # the input a requires_grad case kept frozen (``grad_modes.frozen_path``)
        parts.append(f"frozen={case['frozen_path']}")
    if case.get("near_dup"):
        parts.append("near-duplicate")
    return " ".join(parts)


def _configs_label(case: Mapping[str, Any]) -> str:
    ran = ",".join(f"{name}:{index}" for name, index in (case.get("configs") or {}).items())
    if case.get("config") == "auto":
        return f"auto({ran})" if ran else "auto"
    if ran:
        return ran
    return str(case["config"]) if case.get("config") not in (None, 0) else ""


def spec_of(problem: Problem, case: Mapping[str, Any]) -> dict[str, Any]:
    """The spec a case runs: its own ``spec`` (a fuzzed one) or the reference's ``tests[spec_index]``."""
    spec = case.get("spec")
    if spec is None:
        return dict(problem.tests[case["spec_index"]])
    # a fuzzed spec crossed JSON, which makes tuples lists: a field the tests give as a tuple is one again
    tuples = {k for s in problem.tests for k, v in s.items() if isinstance(v, tuple)}
    return {k: tuple(v) if k in tuples and isinstance(v, list) else v for k, v in spec.items()}


def empty_spec(spec: Mapping[str, Any]) -> bool:
    """Whether an integer field of ``spec`` is 0 (an empty batch, segment or row: ``fuzz._draw_empty``)."""
    return any(isinstance(v, int) and not isinstance(v, bool) and v == 0 for v in spec.values())


def label_of(problem: Problem, case: Mapping[str, Any]) -> str:
    """The spec's label, ``fuzzed(4, 8200, fp32)`` for a fuzzed spec (the labels of ``describe``)."""
    return ("fuzzed" if case.get("spec") is not None else "") + spec_label(spec_of(problem, case))


def _generator(device: str | torch.device, seed: int, salt: str) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed((seed * 1_000_003 + int(hashlib.sha256(salt.encode()).hexdigest()[:8], 16)) % (2**63 - 1))
    return g


def _refill(t: torch.Tensor, dist: str, seed: int, salt: str) -> None:
    g = _generator(t.device, seed, f"{dist}:{salt}")
    shape, dev = t.shape, t.device

    def u(*s: int) -> torch.Tensor:
        return torch.rand(s or shape, generator=g, device=dev, dtype=torch.float32)

    if dist == "normal":
        mean = float(u(1)) * 4 - 2
        scale = 10 ** (float(u(1)) * 2 - 1)
        vals = mean + scale * torch.randn(shape, generator=g, device=dev, dtype=torch.float32)
    elif dist == "uniform":
        vals = 10 ** (float(u(1)) * 2 - 1) * u()
    elif dist == "heavy":
        z = torch.randn(shape, generator=g, device=dev, dtype=torch.float32)
        chi2_over_2 = -torch.log(u().clamp_min(1e-12))  # chi-squared(2) / 2 = Exp(1)
        vals = (z / chi2_over_2.sqrt()).clamp(-1e4, 1e4)
    elif dist == "shifted":
        # Far from zero: each row (each half of a vector) offset by 100..200, the sign alternating, so one case
        # holds rows whose exp() overflows and rows whose exp() underflows without a max subtracted.
        lead = shape[0] if len(shape) >= 2 else 2
        sign = 1.0 - 2.0 * (torch.arange(lead, device=dev) % 2).to(torch.float32)
        offset = sign * (100 + 100 * u(lead))
        if len(shape) >= 2:
            offset = offset.reshape(lead, *([1] * (len(shape) - 1)))
        else:
            offset = (
                offset.repeat_interleave(torch.tensor([(shape[0] + 1) // 2, shape[0] // 2], device=dev))
                if shape[0]
                else offset[:0]
            )
        vals = offset + 10 ** (float(u(1)) * 2 - 1) * torch.randn(shape, generator=g, device=dev, dtype=torch.float32)
    elif dist == "constant":
        vals = torch.ones(shape, device=dev, dtype=torch.float32)
    else:
        raise ValueError(f"unknown input distribution {dist!r}; known: {', '.join(DISTRIBUTIONS)}")
    t.copy_(vals.to(t.dtype))


def _relayout(t: torch.Tensor, layout: str) -> torch.Tensor:
    if t.ndim == 0 or t.numel() == 0:
        return t
    if layout == "transposed":
        if t.ndim >= 2:
            swapped = t.transpose(-1, -2).contiguous().transpose(-1, -2)
            if not swapped.is_contiguous() or t.shape[-1] == 1:
                return swapped
            # every leading dimension 1 (a decode step's (1, K) row): the transpose is the same addresses, so the
            # innermost dimension is given a stride of 2 instead, as x = y[:, :, -1] of a (1, C, T) tensor has one
            # (red team round 27, #4: a GEMV path reading x as contiguous passed every layout)
        buf = torch.empty(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device)
        return buf[..., ::2].copy_(t)
    if layout == "padded":  # rows of a wider buffer: x[..., :cols] with a row stride of cols + 3
        buf = torch.empty(*t.shape[:-1], t.shape[-1] + 3, dtype=t.dtype, device=t.device)
        return buf[..., : t.shape[-1]].copy_(t)
    if layout == "offset":
        buf = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
        return buf[1:].view(t.shape).copy_(t)
    if layout == "expanded":
        if t.ndim == 1 and not (t.is_floating_point() or t.is_complex()):
            # one integer repeated is other values, not another layout of them (red team round 13 F3: offsets
            # [0, 3, 7, 12] became [0, 0, 0, 0], the reference raised, and every version failed)
            return t
        return t[:1].expand(t.shape)
    if layout == "permuted":  # the first two dims stored swapped: unit inner stride, leading dims not one row dim
        return t.transpose(0, 1).contiguous().transpose(0, 1) if t.ndim >= 3 else t
    if layout == "channels_last":  # dim 1 stored innermost: torch.channels_last for NCHW, channels_last_3d for 5-D
        # (red team round 23, F3: a kernel's NHWC fast path, taken for x.is_contiguous(memory_format=
        # torch.channels_last), wrote every element to the wrong place and no layout ever took it)
        return t.movedim(1, -1).contiguous().movedim(-1, 1) if t.ndim >= 3 else t
    raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}")


def _is_tensor(leaf: Any) -> bool:
    return isinstance(leaf, torch.Tensor)


def _map_inputs(
    data: Any,
    outputs: tuple[Any, ...],
    fn: Callable[[Any, str], Any],
    path: str = "",
    leaf: Callable[[Any], bool] = _is_tensor,
) -> Any:
    """Apply ``fn(value, path)`` to every leaf of ``data`` that ``leaf`` picks (tensors by default) except
    declared output buffers."""
    if isinstance(data, (tuple, list)):
        n = len(data)
        out = [
            v if (i in outputs or i - n in outputs) and not path else _map_inputs(v, outputs, fn, f"{path}[{i}]", leaf)
            for i, v in enumerate(data)
        ]
        if isinstance(data, tuple):  # a named tuple takes its fields as arguments
            return type(data)(*out) if hasattr(type(data), "_fields") else type(data)(out)
        return out
    if isinstance(data, dict):
        return {
            k: v if k in outputs and not path else _map_inputs(v, outputs, fn, f"{path}[{k!r}]", leaf)
            for k, v in data.items()
        }
    if leaf(data):
        return fn(data, path)
    fields = dataclass_fields(data)
    if fields is not None:
        return with_fields(data, {k: _map_inputs(v, (), fn, f"{path}.{k}", leaf) for k, v in fields})
    return data


def float_input_paths(problem: Problem, data: Any) -> list[str]:
    """The paths (``[3]``, ``['mask']``) of the floating-point input tensors of ``data`` that the distributions
    refill (neither declared outputs nor ``structured_inputs``), in order."""
    paths: list[str] = []

    def note(t: torch.Tensor, path: str) -> torch.Tensor:
        if t.is_floating_point():
            paths.append(path)
        return t

    _map_inputs(data, (*problem.outputs, *problem.structured), note)
    return paths


def build_input(problem: Problem, case: Mapping[str, Any], device: str) -> Any:
    """The inputs of ``case``: ``generate_input(seed, **spec)``, refilled for its distribution, re-laid-out.

    Raises:
        ProblemError: generate_input raised.
        ValueError: an unknown distribution or layout.
    """
    spec = spec_of(problem, case)
    seed = case["seed"]
    data = problem.generate(seed, spec, device)
    dist = case.get("dist", "native")
    kept = (*problem.outputs, *problem.structured)  # left as generated by every refill (``structured_inputs``)
    if dist == "scalars":
        vary = case.get("vary") or {}
        # a case that moves a float scales none: the move alone differs from generate_input's values, so the
        # order of two floats is what ``arguments._crosses`` checked (a range's ends never cross)
        if any(m in FLOAT_MOVES for m in vary.values()):
            data = move_ints(data, problem.outputs, vary)
        else:
            data = move_ints(scale_scalars(data, problem.outputs, seed, set(vary)), problem.outputs, vary)
    elif dist == "edges":
        data = plant_edges(data, kept, seed, case.get("inputs"))
    elif dist in SPECIAL:
        only = case.get("inputs")  # the inputs it refills where it refills some only (``Case.inputs``)

        def special(t: torch.Tensor, path: str) -> torch.Tensor:
            if only is not None and path not in only:
                return t
            own, shared = _generator(t.device, seed, f"{dist}:{path}"), _generator(t.device, seed, f"{dist}:shared")
            refill_special(t, dist, own, problem.allow_nan, shared)
            return t

        data = _map_inputs(data, kept, special)
    elif dist != "native":

        def refill(t: torch.Tensor, path: str) -> torch.Tensor:
            if t.is_floating_point():
                _refill(t, dist, seed, path)
            return t

        data = _map_inputs(data, kept, refill)
    if case.get("near_dup"):

        def perturb(t: torch.Tensor, path: str) -> torch.Tensor:
            near_duplicate_(t, _generator("cpu", seed, f"near_dup:{path}"))
            return t

        data = _map_inputs(data, kept, perturb)
    layout = case.get("layout", "contiguous")
    if layout == "mixed":
        count = 0

        def counted(t: torch.Tensor, path: str) -> torch.Tensor:
            nonlocal count
            count += t.ndim > 0 and t.numel() > 1
            return t

        _map_inputs(data, problem.outputs, counted)
        order = mixed_layouts(seed, count)
        k = 0

        def alternate(t: torch.Tensor, path: str) -> torch.Tensor:
            nonlocal k
            if t.ndim == 0 or t.numel() <= 1:
                return t
            lay = order[k]
            k += 1
            if lay == "padded" and t.ndim < 2:
                lay = "transposed"  # a 1-D padded view is contiguous: the strided one is the stride-2 view
            return t if lay == "contiguous" else _relayout(t, lay)

        data = _map_inputs(data, problem.outputs, alternate)
    elif layout == "expanded":  # an in-place input is written: one memory location per element, never stride 0
        data = _map_inputs(data, (*problem.outputs, *problem.inplace), lambda t, path: _relayout(t, layout))
    elif layout != "contiguous":
        data = _map_inputs(data, problem.outputs, lambda t, path: _relayout(t, layout))
    # Declared output buffers (``outputs``) stay as generate_input makes them, whatever the layout: GPU MODE's
    # contract, under which its correct solutions write them with flat offsets (laid out like the inputs, three
    # honest kernels failed: red team round 17's W2, a kernel ignoring a caller's strided buffer, stays open)
    return data


SCALAR_FACTORS = (0.5, 2.0)  # ``scalars``: each Python float argument times a factor drawn in this range


def _is_float(leaf: Any) -> bool:
    """A Python float or a NumPy floating scalar (``np.float64(1 / np.sqrt(8))``: red team round 11 W1), not a bool
    or an int: those are often sizes, axes or flags, moved apart (``move_ints``)."""
    return type(leaf) is float or _is_numpy(leaf, "floating")


def _is_complex(leaf: Any) -> bool:
    """A Python complex or a NumPy complex scalar (a phase ``cmath.exp(0.3j)``: folded into constants, it passed
    unmoved; red team round 26, #4): scaled and moved as a float is, never ordered."""
    return type(leaf) is complex or _is_numpy(leaf, "complexfloating")


def _is_bool(leaf: Any) -> bool:
    """A Python bool or a NumPy bool (``np.bool_``, from a NumPy config array: red team round 26, #4)."""
    return type(leaf) is bool or _is_numpy(leaf, "bool_")


def _is_numpy(leaf: Any, kind: str) -> bool:
    """``leaf`` is a NumPy scalar of the abstract type ``kind`` (``floating``, ``integer``); NumPy is not imported
    for it (a problem that hands NumPy scalars has imported it)."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(leaf, getattr(np, kind))


def scale_scalars(data: Any, outputs: tuple[Any, ...], seed: int, moving: Collection[str] = ()) -> Any:
    """``data`` with every Python float leaf (not a bool or an int: those are often sizes, axes or flags) times one
    factor drawn in ``SCALAR_FACTORS`` from ``seed``, the same for all (the ``scalars`` distribution: a kernel
    that folds ``alpha`` or ``eps`` into a constant is wrong on any other value); the leaves at the paths in
    ``moving`` are left for ``move_ints`` (a float negated or times 8: ``FLOAT_MOVES``); tensors and declared output
    buffers as they are."""
    lo, hi = SCALAR_FACTORS
    # one factor for every float of the case: their order is kept (``clamp(x, lo, hi)`` with 0.9 and 1.0 scaled
    # apart could cross, where torch and an honest min/max disagree: red team round 17b)
    factor = lo + (hi - lo) * random.Random(f"{seed}:scalars").random()

    def scaled(x: Any, path: str) -> Any:
        if path in moving:
            return x
        return x * factor

    return _map_inputs(data, outputs, scaled, leaf=lambda x: _is_float(x) or _is_complex(x))


INT_MOVES = ("+1", "-1", "x2")  # ``scalars``: how a Python int argument may move (``ktui.worker.arguments``)
BOOL_MOVES = ("flip",)  # and a bool
# and a float, besides the scaling by 0.5..2x (``scale_scalars``), which never changes its sign nor takes 0.2 past 1
# (red team round 16, M4: a leaky ReLU as max(x, slope * x), right for 0 <= slope <= 1 only, passed): negated, or
# times 8, or plus 1.0 (red team round 17: 0.0, cuBLAS's usual beta, stays 0.0 under every scaling, negation and
# multiple, so ``beta * y`` folded away passed), each kept where the reference stays a valid target
# (``ktui.worker.arguments``)
FLOAT_MOVES = ("neg", "x8", "+1.0")


def is_moved_arg(leaf: Any) -> bool:
    """A leaf ``move_ints`` moves: an int or bool argument (``is_int_arg``) or a float or complex one
    (``_is_float``, ``_is_complex``)."""
    return is_int_arg(leaf) or _is_float(leaf) or _is_complex(leaf)


def is_int_arg(leaf: Any) -> bool:
    """A Python int or bool leaf, or a NumPy integer scalar (not a tensor, not an int subclass such as an enum):
    what ``move_ints`` moves."""
    return type(leaf) is int or _is_bool(leaf) or _is_numpy(leaf, "integer")


RELABEL = "relabel:"  # ``relabel:-101``: an int argument and its occurrences in the integer inputs, made -101
HELD = "held"  # ``relabel:held``: made the value the integer inputs hold most often besides it (``held_value``)


def relabel_to(move: str) -> int | str | None:
    """The value a ``relabel:`` move gives (``RELABEL``; ``HELD`` for ``relabel:held``), None for any other move."""
    if not move.startswith(RELABEL):
        return None
    to = move[len(RELABEL) :]
    return to if to == HELD else int(to)


def moved(value: Any, move: str) -> Any:
    """``value`` moved by ``move`` (``INT_MOVES``: ``+1``, ``-1``, ``x2``; ``BOOL_MOVES``: ``flip``;
    ``FLOAT_MOVES``: ``neg``, ``x8``, ``+1.0``; an int's ``relabel:W``: W, its occurrences in the integer inputs
    made W too by ``move_ints``; its type kept).

    Raises:
        ValueError: an unknown move, or one that does not apply to the value's type.
    """
    if _is_bool(value) and move == "flip":
        return type(value)(not value)
    to = relabel_to(move)
    if (type(value) is int or _is_numpy(value, "integer")) and isinstance(to, int):
        return type(value)(to)
    if (type(value) is int or _is_numpy(value, "integer")) and move in INT_MOVES:
        return value + 1 if move == "+1" else value - 1 if move == "-1" else 2 * value
    if (_is_float(value) or _is_complex(value)) and move in FLOAT_MOVES:
        return -value if move == "neg" else value * 8 if move == "x8" else value + type(value)(1.0)
    raise ValueError(f"cannot move {type(value).__name__} {value!r} by {move!r}")


def move_ints(data: Any, outputs: tuple[Any, ...], vary: Mapping[str, str]) -> Any:
    """``data`` with each Python int, bool or float leaf whose path (``[1]``, ``['k']``) is in ``vary`` moved by its
    move (``moved``): the ``scalars`` case's other values of an int exponent or a flag (red team round 10: a kernel
    that folds ``p = 3`` into ``x * x * x`` passed), a float negated or times 8 (round 16, M4).
    Which moves the reference accepts is the judge's
    (``ktui.worker.arguments``); the case carries them (``Case.vary``). Other leaves as they are."""
    if not vary:
        return data
    renamed: dict[int, int] = {}  # a ``relabel:`` move's old value -> its new one, in the integer inputs too
    found: dict[str, Any] = {}
    _map_inputs(data, outputs, lambda x, path: found.setdefault(path, x), leaf=is_moved_arg)
    to = {path: relabel_to(m) for path, m in vary.items()}
    for path, value in found.items():
        if to.get(path) == HELD:
            to[path] = held_value(data, outputs, int(value))
        if isinstance(to.get(path), int):
            renamed[int(value)] = int(to[path])  # type: ignore[arg-type]  # (an int, just checked)

    def move(x: Any, path: str) -> Any:
        if path not in vary:
            return x
        return type(x)(to[path]) if isinstance(to[path], int) else moved(x, vary[path])

    data = _map_inputs(data, outputs, move, leaf=is_moved_arg)
    if renamed:
        data = _map_inputs(data, outputs, lambda t, path: relabeled(t, renamed))
    return data


def is_int_tensor(t: Any) -> bool:
    """An integer tensor (not bool, float or complex): what a ``relabel:`` move renames in."""
    return isinstance(t, torch.Tensor) and not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool)


def held_value(data: Any, outputs: tuple[Any, ...], value: int) -> int:
    """What ``relabel:held`` makes the int argument ``value``: the value other than it that the integer input
    tensors of ``data`` holding it hold most often (all of them when none holds it; ties: the smallest), so that
    the positions it tags are tagged too; ``value`` itself when they hold no other."""
    tensors: list[torch.Tensor] = []
    _map_inputs(data, outputs, lambda t, path: tensors.append(t) if is_int_tensor(t) else None)
    holding = [t for t in tensors if bool((t == value).any())] or tensors
    counts: dict[int, int] = {}
    for t in holding:
        vs, ns = torch.unique(t.detach().cpu(), return_counts=True)
        for v, n in zip(vs.tolist(), ns.tolist(), strict=True):
            if v != value:
                counts[v] = counts.get(v, 0) + n
    return min(counts, key=lambda v: (-counts[v], v)) if counts else value


def relabeled(t: torch.Tensor, renamed: Mapping[int, int]) -> torch.Tensor:
    """``t`` (an integer tensor; others as they are) with each element equal to a key of ``renamed`` made its value,
    in a copy of the same layout (``t`` itself untouched: the judge tries moves on one set of inputs)."""
    if not is_int_tensor(t):
        return t
    out = t.clone()
    for old, new in renamed.items():
        out[t == old] = new
    return out


EDGE_SHARE = 32  # ``edges``: one element in this many of a float input takes each float argument's value


def float_values(data: Any) -> list[float]:
    """The Python float leaves of ``data`` (its float arguments), in order, each once."""
    values: list[float] = []

    def seen(x: float, path: str) -> float:
        if x not in values:
            values.append(x)
        return x

    _map_inputs(data, (), seen, leaf=_is_float)
    return values


def plant_edges(data: Any, kept: tuple[str, ...], seed: int, only: list[str] | None = None) -> Any:
    """The ``edges`` distribution (red team round 30, #9: a ``histc`` dropping x == hi passed, the bound met by no
    input): every float argument's value (``float_values``: a histogram's bounds, a clamp's limits, a threshold)
    planted in each float input tensor (but ``kept``: outputs, ``structured_inputs``; with ``only``, those inputs
    alone) at one element in ``EDGE_SHARE`` (at least one) drawn for it, rounded to the tensor's dtype; the rest as
    generated. In place; returns ``data``."""
    values = float_values(data)

    def plant(t: torch.Tensor, path: str) -> torch.Tensor:
        if not values or not t.is_floating_point() or t.numel() == 0 or (only is not None and path not in only):
            return t
        flat = t.reshape(-1).clone()  # (in row-major order, whatever the layout generate_input made)
        g = _generator("cpu", seed, f"edges:{path}")
        k = max(1, t.numel() // EDGE_SHARE)
        for v in values:
            flat[torch.randint(t.numel(), (k,), generator=g).to(t.device)] = v
        t.copy_(flat.view(t.shape))
        return t

    return _map_inputs(data, kept, plant)


def float_scalars(data: Any) -> int:
    """How many Python float leaves ``data`` holds (what ``scale_scalars`` changes)."""
    count = 0

    def counted(x: float, path: str) -> float:
        nonlocal count
        count += 1
        return x

    _map_inputs(data, (), counted, leaf=_is_float)
    return count


def mixed_layouts(seed: int, tensors: int) -> list[str]:
    """The layout of each of ``tensors`` input tensors (those of more than one element, in the order of the inputs)
    in the ``mixed`` case of ``seed``: contiguous or one strided layout, ``transposed`` or ``padded`` (by
    ``seed // mixed_variants(tensors)``). With m = ``seed % mixed_variants(tensors)``, tensor k is strided when
    bit ``m // 2`` of k differs from ``m % 2``: over ``mixed_variants`` consecutive seeds every two tensors differ
    in some case, each way round (a kernel that reads the third input with the first one's strides meets it)."""
    n = mixed_variants(tensors)
    m = seed % n
    strided = ("transposed", "padded")[(seed // n) % 2]
    return [strided if ((k >> (m // 2)) & 1) ^ (m & 1) else "contiguous" for k in range(tensors)]


def round_to_tf32(t: torch.Tensor) -> torch.Tensor:
    """float32 values rounded to TF32 (10 explicit mantissa bits, as the tensor cores read fp32 operands in TF32
    mode; NVIDIA A100 whitepaper). Round half away from zero on the magnitude; NaN and inf pass through."""
    x = t.to(torch.float32).contiguous()
    bits = x.view(torch.int32)
    rounded = ((bits + 0x1000) & ~0x1FFF).view(torch.float32)
    return torch.where(torch.isfinite(x), rounded, x)


LAYOUT_DETAIL_LEAVES = 4  # ``layout_detail``: the input tensors named at most


def layout_detail(inputs: Any) -> str:
    """Each input tensor of a laid-out case with its layout and strides, for the failure's name:
    ``in[0] transposed, strides (1, 2); in[1] strided, strides (2,)`` (the first ``LAYOUT_DETAIL_LEAVES`` tensors of
    more than one element; '' when there are none). A new user's bug was in the 1-D weight's stride, and the case
    named only the first input's layout."""
    from ktui.worker.tensors import flatten

    parts = []
    for path, t in flatten(inputs, "in"):
        if isinstance(t, torch.Tensor) and t.numel() > 1:
            parts.append(f"{path} {layout_of(t)}, strides {tuple(t.stride())}")
    more = f"; and {len(parts) - LAYOUT_DETAIL_LEAVES} more" if len(parts) > LAYOUT_DETAIL_LEAVES else ""
    return "; ".join(parts[:LAYOUT_DETAIL_LEAVES]) + more


def layout_of(t: torch.Tensor) -> str:
    """``contiguous``, ``transposed``, ``padded``, ``offset``, ``expanded``, ``permuted``, ``channels_last`` or
    ``strided``: for messages."""
    if 0 in t.stride() and t.numel() > 1:
        return "expanded"
    if t.storage_offset():
        return "offset"
    if t.is_contiguous():
        return "contiguous"
    if t.ndim >= 3 and t.stride(-1) == 1 and t.stride(0) < t.stride(1):
        return "permuted"
    if t.ndim >= 3 and t.stride(1) == 1 and t.movedim(1, -1).is_contiguous():
        return "channels_last"
    if t.ndim >= 2 and t.stride(-1) == 1:
        return "padded"
    return "transposed" if t.ndim >= 2 else "strided"


def intrange_hint(case: Case, inputs: list[tuple[str, Any]]) -> str:
    """What a failed ``relabel:`` scalars case adds to its message (the argument moved with its occurrences), or
    what a failed ``intrange`` case adds (new-user trial 30, F2; red team round 30, #7: offsets and
    lengths refilled over int64's range, which a reference that masks and clamps takes, failed an honest kernel with
    a bare out-of-bounds access): which integer inputs the distribution refilled, and how a reference says such
    values are outside the problem. '' for another case. ``inputs``: the case's input leaves (``flatten(.., "in")``)."""
    relabeled = [(p, m) for p, m in (case.get("vary") or {}).items() if relabel_to(m) is not None]
    if relabeled:  # (new-user trial 35, F5: a hard-coded -100 read class -101; the hint was about strides)
        p, m = relabeled[0]
        return (
            f" [this case moved the int argument in{p} and its occurrences in the integer inputs ({m}): a kernel "
            "that compares the integer inputs with the argument's usual value as a constant (ignore_index = -100 "
            "written into the kernel) treats the moved ones as ordinary values: take the argument]"
        )
    if case.get("dist") != "intrange":
        return ""
    refilled = [
        f"{p} ({str(t.dtype).removeprefix('torch.')}{list(t.shape)})"
        for p, t in inputs
        if isinstance(t, torch.Tensor) and not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool
    ]
    return (
        f" [dist=intrange refilled the integer input{'s' if len(refilled) != 1 else ''} {', '.join(refilled[:4])} "
        "with values across the dtype's range, and ref_kernel took them (its output stayed valid); if the problem "
        "never holds such values (lengths up to T, offsets within [0, M]), have ref_kernel raise on them "
        "(assert (lengths <= x.shape[1]).all()): ktui then leaves the distribution out]"
    )
