"""What the computation achieves in its own precision: the native reference's error against the float64 truth.

The default full-precision tolerance (``ktui.worker.tolerance``, cases.md honest-fp32) lets each element be off by a
stated multiple of this error. It is measured twice per case: ``ref_kernel`` on the case's float32 inputs, and on the
same inputs with every nonzero finite float32 element moved one ulp up or down in magnitude at random (zeros,
infinities and NaN stay, so no sign flips and no new special values). The worse of the two is the bar: a reference
whose rounding happened to be lucky on one case (its error dominated by a few rounded intermediates, such as a row's
mean) does not set a bar that no other fp32 program meets, and the second run also measures how far one ulp of
input rounding moves the output (the op's conditioning in fp32).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from ktui.worker.tensors import flatten


def one_ulp_away(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``t`` (float32 or float64) with each nonzero finite element moved one ulp up or down in magnitude, the
    direction drawn from ``generator`` (on ``t``'s device); zeros, infinities and NaN unchanged. A new tensor."""
    up = torch.rand(t.shape, generator=generator, device=t.device) < 0.5
    mag = t.abs()
    moved = torch.where(
        up, torch.nextafter(mag, torch.full_like(mag, math.inf)), torch.nextafter(mag, torch.zeros_like(mag))
    )
    return torch.where((t != 0) & torch.isfinite(t), moved.copysign(t), t)


def truncate_to_tf32(t: torch.Tensor) -> torch.Tensor:
    """``t`` unchanged unless float32; then its values cut to TF32's 10 explicit mantissa bits toward zero (the low
    13 bits cleared), as tensor cores that truncate read fp32 operands. NaN and inf pass through."""
    if t.dtype != torch.float32:
        return t
    x = t.contiguous()
    cut = (x.view(torch.int32) & ~0x1FFF).view(torch.float32)
    return torch.where(torch.isfinite(x), cut, x)


def _errors(native: torch.Tensor, truth: torch.Tensor) -> tuple[float, float]:
    """(max |native - truth|, |native - truth| / |truth|) over the elements where both are finite."""
    n, r = native.detach().double().reshape(-1), truth.detach().double().reshape(-1).to(native.device)
    ok = torch.isfinite(n) & torch.isfinite(r)
    d = torch.where(ok, n - r, torch.zeros_like(n))
    nd = float(torch.linalg.vector_norm(d))
    nr = float(torch.linalg.vector_norm(torch.where(ok, r, torch.zeros_like(r))))
    max_abs = float(d.abs().max()) if d.numel() else 0.0
    return max_abs, (nd / nr if nr > 0 else (0.0 if nd == 0 else math.inf))


def _as_tensor(x: Any) -> Any:
    """A Python float as a 0-d float64 tensor; anything else as it is."""
    return torch.tensor(x, dtype=torch.float64) if isinstance(x, float) else x


def native_errors(
    run_native: Callable[[Any], Any],
    map_data: Callable[[Any, Callable[[Any], Any]], Any],
    data: Any,
    expected: Any,
    truth: Any,
    seed: int,
) -> dict[str, dict[str, float]]:
    """Per floating output path: ``max_abs`` and ``rel_l2`` of the native reference against ``truth``, the worse of
    ``expected`` (the native reference on ``data``) and the native reference on ``data`` one ulp away. Per integer
    output path (an integer result of float math: a quantization, a rounding): ``max_abs`` and ``off``, the number
    of elements the native reference on ``data`` itself gets different from the float64 truth (0 for an op whose
    integers the float precision cannot flip: an index, integer arithmetic).

    ``run_native(data)`` computes the reference in the native precision; ``map_data(data, fn)`` applies ``fn`` to
    every leaf of the input data (``ktui.worker.problem._map``); ``seed`` draws the ulp directions. Outputs whose
    paths differ from ``expected``'s on the moved inputs are measured on ``expected`` alone.
    """
    gens: dict[str, torch.Generator] = {}

    def move(x: Any) -> Any:
        if not isinstance(x, torch.Tensor) or x.dtype not in (torch.float32, torch.float64) or x.numel() == 0:
            return x
        key = str(x.device)
        if key not in gens:
            gens[key] = torch.Generator(device=x.device).manual_seed(seed)
        return one_ulp_away(x, gens[key])

    moved = dict(flatten(run_native(map_data(data, move))))
    truths = dict(flatten(truth))
    out: dict[str, dict[str, float]] = {}
    for path, e in flatten(expected):
        e = _as_tensor(e)  # a Python float (``float(x.sum())``) is the native computation too (red team round 5)
        if not isinstance(e, torch.Tensor) or e.is_complex() or path not in truths:
            continue
        t = truths[path]
        t = t if isinstance(t, torch.Tensor) else torch.tensor(t, dtype=torch.float64)
        other = _as_tensor(moved.get(path))
        same_shape = isinstance(other, torch.Tensor) and tuple(other.shape) == tuple(e.shape)
        if not e.is_floating_point():  # an integer output of float math: how many elements the native one flips
            if e.dtype == torch.bool or tuple(t.shape) != tuple(e.shape):
                continue
            # on these very inputs only: moved ones may change an index (argmax near a tie), which is no error
            d = (e.double() - t.double().to(e.device)).abs()
            out[path] = {
                "max_abs": float(d.max()) if d.numel() else 0.0,
                "rel_l2": 0.0,
                "off": float(int((d > 0).sum())),
            }
            continue
        max_abs, rel_l2 = _errors(e, t)
        if same_shape:
            m2, r2 = _errors(other, t)
            max_abs, rel_l2 = max(max_abs, m2), max(rel_l2, r2)
        out[path] = {"max_abs": max_abs, "rel_l2": rel_l2}
    return out
