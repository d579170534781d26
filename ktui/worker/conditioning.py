"""Where an output's float64 truth is ill-conditioned: elements the gross bound cannot be asked of.

Low precision's gross bound (``ktui.worker.tolerance``: no element off by more than 32 u max(|ref|, rms(ref))) holds for
an op whose output moves by about its inputs' relative error. Where the output is a step of its inputs (a rounding, a
fake quantization ``round(x / s) * s``, a comparison), an honest kernel that computes the step's argument in fp32 lands
on the other side of the step wherever the float64 truth is within fp32's rounding of it: one step, which can be far
above 32 u rms(ref) (measured: an fp32 fake quantization with s = 0.3 to bf16 puts 57 of 65,536 elements, 0.09%, a full
step off; PSNR, cosine and the 1% allowance pass it). Those elements are found by moving the inputs: ``truth_slack``
runs the float64 reference on the case's inputs with each float element scaled by ``1 + m u`` or ``1 - m u`` (u the
output's unit roundoff, a random sign and a magnitude m in [3/4, 1] per element) and again with every sign flipped, and
gives per element how far the truth moved (the larger of the two). The gross bound at each element grows by twice that
(``GROSS_SLACK``: the kernel's own roundings may compound over the op's steps): one step more at a rounding, about 2u
|ref| more at a well-conditioned element, so a zeroed, dropped or negated element of a well-conditioned op still fails.
The off rule's bound (8 u |ref|) and the firm rule's grow by twice the truth's move at float32's unit roundoff (the
precision an honest kernel computes in; the output's u would cover an fp16 accumulator's errors), and the L1 error
counts only the error beyond it: a prefix sum that cancels against an input of 4e37 (the extreme family) moves by about
2**-24 x 4e37 there, and the float64 truth itself loses the prefix, so an honest blocked scan lands where the sequential
float64 one does not (new-user trial 20: 517 of 1,537 bf16 elements "off"). Computed only for an output that failed one
of those rules.

The float64 truth is itself a computation: a reference written ``0.5 * b * (1 + tanh(y))`` (the tanh GELU, as torch
and Liger write it) cancels in float64 too where b is far below zero (1 + tanh(y) ~ 1e-15, one ulp of tanh near -1 is
7% of it), and an honest kernel computing ``b * sigmoid(2y)`` lands nearer the exact value than the float64 truth does
(new-user trial 21: a=-4.125, b=-6.9375: kernel 1.9984e-14, float64 "truth" 2.06514e-14, exact 2.00288e-14; 4 of 381
bf16 elements "off"). Moving the inputs does not show it (the rounding of tanh's result does not change), so
``truth_slack`` also runs the float64 reference twice under ``RoundingNoise`` (Monte Carlo arithmetic's random
rounding: every float64 result of an op that rounds moved one ulp up or down at random; Parker, "Monte Carlo
Arithmetic", 1997; Denis et al., "Verificarlo", 2016) and takes how far those runs land from the truth as part of its
move: where the truth's own roundings decide an element, the element is not judged beyond them; anywhere else one ulp
of float64 moves nothing.

Only what a kernel rounds may move (red team rounds 20b W2 and 21b F1): a fake quantization with a power-of-two scale
(MX's shared exponent) divides a bf16 input exactly, so each exact tie of ``round(x / s)`` is decided exactly and alike
by every honest kernel, and a kernel rounding halves up is wrong on every one (2.6% of the elements a step off). The
moved inputs pushed each tie a step away and the noise jittered ``exp2(k)``, so it passed as "ill-conditioned". The
noise leaves a result that float32 holds exactly alone (an exact operation: a rounded float64 result ends in 29 zero
bits with probability 2**-29), and the runs on moved inputs keep each product or quotient by a power of two of a
float32 value as the unmoved run computed it (``ExactScaling``: exact in any precision however a kernel writes it,
``x / s`` or ``x * (1 / s)``); a step of 0.3 stays inexact and keeps its slack.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ktui.worker.problem import Problem, _map
from ktui.worker.tensors import flatten
from ktui.worker.tolerance import Tolerance
from ktui.worker.unordered import UnorderedGroup, canonical_

GROSS_SLACK = 2.0  # the gross bound grows by this many times the truth's move under u-relative input changes
SEED = 20261203  # the random signs (any fixed seed: the marks must not depend on the run)


def _moved(data: Any, u: float, sign: float) -> Any:
    """``data`` with each float tensor in float64, every element times ``1 + sign * s * u`` (``s`` drawn from
    ``SEED``, the same for both signs: a random sign times a magnitude between 3/4 and 1, so that two equal and
    opposite inputs do not move alike and keep cancelling exactly in both runs), other leaves as they are."""
    gen = torch.Generator().manual_seed(SEED)

    def move(x: Any) -> Any:
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() == 0:
            return x
        s = torch.randint(0, 2, x.shape, generator=gen).to(x.device, torch.float64) * 2 - 1
        s = s * (0.75 + 0.25 * torch.rand(x.shape, generator=gen, dtype=torch.float64).to(x.device))
        return x.to(torch.float64) * (1 + sign * u * s)

    return _map(data, move)


EXACT_OPS = frozenset(
    {  # aten ops whose float results are exact (data movement, selection, sign and magnitude): never jittered
        "_to_copy", "alias", "abs", "amax", "amin", "argmax", "argmin", "cat", "ceil", "clamp", "clamp_max",
        "clamp_min", "clone", "constant_pad_nd", "contiguous", "copy", "copy_", "detach", "empty", "empty_like",
        "empty_strided", "expand", "fill", "fill_", "flip", "floor", "full", "full_like", "gather", "index",
        "index_put", "index_put_", "index_select", "lift_fresh", "lift_fresh_copy", "masked_fill", "masked_fill_",
        "masked_select", "max", "maximum", "min", "minimum", "neg", "new_empty", "new_empty_strided", "new_full",
        "new_ones", "new_zeros", "nonzero", "ones", "ones_like", "relu", "repeat", "repeat_interleave", "roll",
        "round", "scalar_tensor", "scatter", "scatter_", "select_scatter", "sign", "slice_scatter", "sort", "stack",
        "topk", "tril", "triu", "trunc", "unbind", "where", "zero_", "zeros", "zeros_like", "_unsafe_view",
    }
)  # fmt: skip


class RoundingNoise(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Inside it every float64 tensor an op returns (not a view, not an op of ``EXACT_OPS``) has each finite element
    moved one ulp down, kept, or moved one ulp up, at random (``seed``, or the generators of the ``parent`` mode it
    runs inside; each with probability 1/3): the float64 reference's own roundings made visible (the module's
    docstring). A fused pointwise op with a decomposition in torch (``F.gelu(approximate="tanh")``) runs as its
    decomposition, each step jittered: its one result would hide the cancellation inside it."""

    def __init__(self, seed: int, parent: RoundingNoise | None = None, unit: float = 0.0, flip: bool = False) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        # ``unit`` > 0: each result moved by ``unit`` relative, up or down (never kept), instead of one float64 ulp: the
        # roundings of a program computing in that precision; ``flip``: every move the other way (an antithetic run)
        self.unit: float = parent.unit if parent is not None else unit
        self.flip: bool = parent.flip if parent is not None else flip
        # inside a decomposition (``parent``): the same draws go on, from the same generators
        self.gen: torch.Generator = parent.gen if parent is not None else torch.Generator().manual_seed(seed)
        self._on: dict[str, torch.Generator] = parent._on if parent is not None else {}  # one per device, from gen

    def _generator(self, device: torch.device) -> torch.Generator:
        """The picks are drawn where the tensor is (a GPU output of 67M elements: no int64 draw on the host and copy):
        one generator per device, seeded from ``gen`` the first time."""
        key = str(device)
        if key not in self._on:
            seed = int(torch.randint(0, 2**62, (1,), generator=self.gen))
            self._on[key] = self.gen if device.type == "cpu" else torch.Generator(device=device).manual_seed(seed)
        return self._on[key]

    def _jitter(self, t: torch.Tensor) -> None:
        if self.unit:  # up or down by ``unit`` relative (``flip``: the other way)
            pick = torch.randint(0, 2, t.shape, generator=self._generator(t.device), device=t.device, dtype=torch.uint8)
            moved = t * (1 + self.unit * (pick.to(torch.float64) * 2 - 1) * (-1.0 if self.flip else 1.0))
        else:  # one float64 ulp down, kept or up
            pick = torch.randint(0, 3, t.shape, generator=self._generator(t.device), device=t.device, dtype=torch.uint8)
            up = torch.nextafter(t, torch.full_like(t, math.inf))
            down = torch.nextafter(t, torch.full_like(t, -math.inf))
            moved = torch.where(pick == 0, down, torch.where(pick == 2, up, t))
        # an exact result is not moved (MCA's random rounding leaves exact operations exact): a float64 result that
        # float32 holds has 29 trailing zero bits, which a rounded one has with probability 2**-29 (red team 21b F1:
        # exp2(k) and x / 2**k jittered put every exact tie of a fake quantization a step away)
        t.copy_(torch.where(torch.isfinite(t) & ~_float32_exact(t), moved, t))

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "is_view", False) or func.overloadpacket.__name__ in EXACT_OPS:
            return func(*args, **kwargs)
        decompose = _decompositions().get(func) if torch.Tag.pointwise in getattr(func, "tags", ()) else None
        if decompose is not None:  # a fused pointwise op (F.gelu's tanh form): its steps' roundings, each jittered
            with RoundingNoise(0, parent=self):
                return decompose(*args, **kwargs)
        out = func(*args, **kwargs)
        for _, t in flatten(out):
            if isinstance(t, torch.Tensor) and t.dtype == torch.float64 and t.numel() and t._base is None:
                self._jitter(t)
        return out


def _float32_exact(t: torch.Tensor) -> torch.Tensor:
    """Where float64 ``t`` holds a value float32 represents exactly, zero or normal (a float32 subnormal may flush)."""
    f = t.to(torch.float32)
    return (f.to(torch.float64) == t) & ((f == 0) | (f.abs() >= torch.finfo(torch.float32).tiny))


def _power_of_two(x: Any) -> Any:
    """Where ``x`` (a tensor or a Python number) is +-2**k: a product or quotient by it is exact in any binary
    precision (barring overflow and underflow), however a kernel writes it (``x / s``, ``x * (1 / s)``)."""
    if isinstance(x, torch.Tensor):
        if not x.is_floating_point():
            x = x.to(torch.float64)
        mantissa, _ = torch.frexp(x)
        return mantissa.abs() == 0.5
    if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x != 0:
        return abs(math.frexp(x)[0]) == 0.5
    return False


SCALINGS = frozenset({"mul", "mul_", "div", "div_"})  # the ops ``ExactScaling`` watches


def _exact_scaling(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], out: torch.Tensor) -> torch.Tensor | None:
    """Where ``out`` of ``name(*args)`` (a product or quotient, no rounding mode) is a scaling by a power of two of a
    float32 value, landing on a normal float32 value: exact in float32 whatever the kernel's formulation (the
    ``ExactScaling`` docstring). None when no element is."""
    if kwargs.get("rounding_mode") is not None or len(args) < 2 or out.dtype != torch.float64:
        return None
    a, b = args[0], args[1]
    pairs = [(a, b)] if name.startswith("div") else [(a, b), (b, a)]
    mask: Any = False
    for value, scale in pairs:
        two = _power_of_two(scale)
        if two is False:
            continue
        held = _float32_exact(value.to(torch.float64)) if isinstance(value, torch.Tensor) else True
        mask = mask | (two & held)
    if mask is False:
        return None
    mask = torch.as_tensor(mask, device=out.device).expand(out.shape) & _float32_exact(out)
    return mask if bool(mask.any()) else None


class ExactScaling(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """The runs on moved inputs keep the products and quotients that are exact for any honest kernel (red team
    rounds 20b W2 and 21b F1): a fake quantization ``round(x / s) * s`` with a power-of-two scale (MX's shared
    exponent) divides a bf16 input exactly, so every tie is decided exactly, identically by every kernel; moving the
    input put each tie a step away, and a kernel rounding halves up passed. Recording (``recorded`` None), it keeps
    each such op's exact elements, in call order; replaying (``recorded``: a recording's list), the same op's
    elements are put back to them where the call matches (the same op and shape), so the moves reach only what a
    kernel rounds."""

    def __init__(self, recorded: list[tuple[str, torch.Size, Any]] | None = None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.replaying = recorded is not None
        self.calls: list[tuple[str, torch.Size, Any]] = recorded if recorded is not None else []
        self.n = 0

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if name not in SCALINGS or not isinstance(out, torch.Tensor) or out.dtype != torch.float64:
            return out
        k, self.n = self.n, self.n + 1
        if not self.replaying:
            mask = _exact_scaling(name, args, kwargs, out)
            self.calls.append((name, out.shape, None if mask is None else (mask, out.clone())))
        elif k < len(self.calls) and self.calls[k][:2] == (name, out.shape) and self.calls[k][2] is not None:
            mask, kept = self.calls[k][2]
            out.copy_(torch.where(mask, kept, out))
        return out


@functools.cache
def _decompositions() -> dict[Any, Callable[..., Any]]:
    """torch's decompositions of aten ops into simpler ones (``torch._decomp``), read once."""
    from torch._decomp import decomposition_table

    return dict(decomposition_table)


NOISE_RUNS = 2  # runs of the float64 reference under ``RoundingNoise`` per ``truth_slack`` (seeds SEED + 1, + 2)
NATIVE_NOISE_PAIRS = 2  # ``native_rounding_moves``: antithetic pairs of runs at a kernel's unit roundoff


def _truth_move(
    problem: Problem,
    data: Any,
    path: str,
    r: torch.Tensor,
    noise: int = 0,
    mode: TorchDispatchMode | None = None,
    order: list[UnorderedGroup] | None = None,
) -> torch.Tensor | None:
    """How far output ``path``'s float64 truth moves from ``r`` (flat, on the CPU) when the reference runs on
    ``data``, under ``RoundingNoise(noise)`` when ``noise`` is not 0, else under ``mode`` if given: per element,
    infinite where a finite truth becomes NaN or infinite, 0 where the truth is not finite. ``order``: the case's
    unordered groups (``worker.unordered``; ``r`` is in their canonical order, and so is each run's output: an
    unstable sort's ties in another order are no move). None when the reference fails, does not run in float64 or
    returns another shape there."""
    try:
        with RoundingNoise(noise) if noise else (mode if mode is not None else contextlib.nullcontext()):
            out, precision = problem.reference(data)
        if order:
            canonical_(out, order)
    except Exception:
        return None
    leaf = dict(flatten(out)).get(path)
    if precision != "float64" or not isinstance(leaf, torch.Tensor) or leaf.numel() != r.numel():
        return None
    d = (leaf.detach().to("cpu", torch.float64).reshape(-1) - r).abs()
    d = torch.where(torch.isfinite(d), d, torch.full_like(d, math.inf))  # NaN: moved without bound
    return torch.where(torch.isfinite(r), d, torch.zeros_like(d))


def native_rounding_moves(
    problem: Problem,
    inputs_of: Callable[[], Any],
    path: str,
    ref: torch.Tensor,
    unit: float,
    seed: int,
    order: list[UnorderedGroup] | None = None,
) -> torch.Tensor | None:
    """Per element of output ``path`` (``ref``: its float64 truth), flat on the CPU: how far the truth moves over
    ``NATIVE_NOISE_PAIRS`` antithetic pairs of runs of the reference on the case's inputs under
    ``RoundingNoise(unit=unit)``: every inexact result of its ops moved by ``unit`` relative (a program computing in
    that precision rounds each step by up to that much; the pair moves each result both ways). None when the
    reference does not run in float64 or fails under the noise."""
    if not problem.float64:
        return None
    r = ref.detach().to("cpu", torch.float64).reshape(-1)
    moves = torch.zeros_like(r)
    for k in range(NATIVE_NOISE_PAIRS):
        for flip in (False, True):
            noise = RoundingNoise(seed * NATIVE_NOISE_PAIRS + k + 1, unit=unit, flip=flip)
            d = _truth_move(problem, inputs_of(), path, r, mode=noise, order=order)
            if d is None:
                return None
            moves = torch.maximum(moves, torch.where(torch.isfinite(d), d, torch.zeros_like(d)))
    return moves


def rounding_slack(
    problem: Problem,
    inputs_of: Callable[[], Any],
    path: str,
    ref: torch.Tensor,
    order: list[UnorderedGroup] | None = None,
) -> torch.Tensor | None:
    """Per element of output ``path`` (``ref``: its float64 truth), flat on the CPU: how far the truth moves, the
    larger of ``NOISE_RUNS`` runs of the reference on the case's own inputs under ``RoundingNoise`` (its own
    roundings: the module's docstring). It does not depend on any u: a caller that asks ``truth_slack`` at two u
    computes it once. None when the reference does not run in float64 or fails under the noise."""
    if not problem.float64:
        return None
    r = ref.detach().to("cpu", torch.float64).reshape(-1)
    slack = torch.zeros_like(r)
    for k in range(1, NOISE_RUNS + 1):
        d = _truth_move(problem, inputs_of(), path, r, SEED + k, order=order)
        if d is None:
            return None
        slack = torch.maximum(slack, d)
    return slack


def truth_slack(
    problem: Problem,
    inputs_of: Callable[[], Any],
    path: str,
    ref: torch.Tensor,
    tol: Tolerance,
    u: float | None = None,
    rounding: torch.Tensor | None = None,
    order: list[UnorderedGroup] | None = None,
) -> torch.Tensor | None:
    """Per element of output ``path`` (``ref``: its float64 truth, any shape), flat on the CPU: how far the truth
    moves, the largest of two runs where the inputs (``inputs_of()``, the case's own) move by ``u`` relative (default
    ``tol.unit_roundoff``) and of ``rounding`` (``rounding_slack``: its own roundings; computed here when not given);
    infinite where a finite truth becomes NaN or infinite. None when the gross bound is off (and no ``u`` is given),
    or the reference does not run in float64 or fails on the moved inputs (nothing is allowed then)."""
    if (u is None and not tol.bounds_gross) or not problem.float64:
        return None
    r = ref.detach().to("cpu", torch.float64).reshape(-1)
    slack = rounding if rounding is not None else rounding_slack(problem, inputs_of, path, ref, order)
    if slack is None:
        return None
    exact = ExactScaling()  # the unmoved run records the exact scalings the moved runs keep
    if _truth_move(problem, inputs_of(), path, r, mode=exact, order=order) is None:
        return None
    for sign in (1.0, -1.0):
        moved = _moved(inputs_of(), tol.unit_roundoff if u is None else u, sign)
        d = _truth_move(problem, moved, path, r, mode=ExactScaling(exact.calls), order=order)
        if d is None:
            return None
        slack = torch.maximum(slack, d)
    return slack
