"""Flush-to-zero: a float32 subnormal input judged as the GPU may read it (a zero of its sign).

Triton links libdevice with ``__CUDA_FTZ=1`` (``ktui.worker.interp_libdevice``), so on the GPU libdevice's float32
functions take a subnormal argument (``0 < |x| < 2**-126``, ``torch.finfo(torch.float32).tiny``) as a zero of its
sign, and so do the ``.ftz`` approximate instructions (PTX ISA, "Floating-Point Instructions": ``ex2``, ``lg2``,
``rsqrt``, ``sqrt.approx``...); torch's own CUDA kernels are built without flushing. On the ``extreme`` family's
subnormal inputs (``ktui.worker.special``) an honest ``libdevice.log(tl.abs(x))`` gives -inf where ``torch.log``
gives about -92 (measured on the H200 and emulated by the interpreter): right under the hardware's flush, wrong
against a truth that keeps the subnormal.

``ftz_allowance`` judges a leaf that failed again against a truth chosen element by element: the float64 truth of
the case's inputs as given, or the float64 truth of the same inputs with their float32 subnormals flushed
(``flushed``), whichever the kernel's element is closer to. Only a case whose inputs hold a float32 subnormal
(float32 and bfloat16 tensors: bfloat16 has float32's exponent range, so its subnormals are float32's; float16's
are normal numbers in float32 and float64 has no flush) is judged again; every other rule of the verdict applies
unchanged to the mixed truth, and an element the flushed truth makes NaN where the plain one is not is never taken
from it. A flush of anything but subnormals (a kernel zeroing every ``|x| < 1e-30``) matches neither truth and
still fails. Computed only when a leaf failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ktui.worker import metrics
from ktui.worker.problem import Problem, _map
from ktui.worker.tensors import flatten
from ktui.worker.tolerance import Tolerance

FLUSHED_DTYPES = (torch.float32, torch.bfloat16)  # whose subnormals are float32 subnormals
TINY = torch.finfo(torch.float32).tiny  # 2**-126: the smallest normal float32


def _subnormal(x: torch.Tensor) -> torch.Tensor:
    """Where ``x`` (a float32 or bfloat16 tensor) holds a float32 subnormal, as a bool tensor of its shape."""
    a = x.abs()
    return (a > 0) & (a < TINY)


def has_subnormals(data: Any) -> bool:
    """Whether any float32 or bfloat16 tensor in ``data`` (a case's inputs, nested as generated) holds a float32
    subnormal."""
    return any(
        isinstance(t, torch.Tensor) and t.dtype in FLUSHED_DTYPES and bool(_subnormal(t).any())
        for _, t in flatten(data)
    )


def flushed(data: Any) -> Any:
    """``data`` with every float32 subnormal of its float32 and bfloat16 tensors replaced by a zero of its sign
    (new tensors; other leaves as they are)."""

    def flush(x: Any) -> Any:
        if not isinstance(x, torch.Tensor) or x.dtype not in FLUSHED_DTYPES:
            return x
        return torch.where(_subnormal(x), torch.zeros_like(x).copysign(x), x)

    return _map(data, flush)


def _distance(o: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """|o - t| element by element (float64, flat), 0 where they are equal (infinities of one sign, NaN with NaN)
    and +inf where they differ without a finite distance."""
    d = (o - t).abs()
    same = (o == t) | (torch.isnan(o) & torch.isnan(t))
    return torch.where(same, torch.zeros_like(d), torch.where(torch.isnan(d), torch.full_like(d, torch.inf), d))


def ftz_allowance(
    problem: Problem,
    inputs_of: Callable[[], Any] | None,
    m: dict[str, Any],
    out: torch.Tensor,
    ref: torch.Tensor,
    tol: Tolerance,
    path: str,
    unwritten: torch.Tensor | None,
    device: str,
    large: int,
) -> dict[str, Any]:
    """The verdict ``m`` of leaf ``path`` (``out``: the kernel's output, ``ref``: its float64 truth, same shape)
    judged again against the truth each element is closer to, that of the case's inputs (``inputs_of()``) or that
    of the same inputs with their float32 subnormals flushed to zero (module docstring), with a warning naming how
    many elements took the flushed truth. ``m`` itself when the inputs hold no float32 subnormal, the reference
    fails on the flushed inputs or gives another shape or precision, no element is closer to the flushed truth, or
    the verdict against the mixed truth fails too."""
    if inputs_of is None or not out.is_floating_point() or out.is_complex():
        return m
    data = inputs_of()
    if not has_subnormals(data):
        return m
    try:
        got, precision = problem.reference(flushed(data))
    except Exception:
        return m
    leaf = dict(flatten(got)).get(path)
    if not isinstance(leaf, torch.Tensor) or leaf.numel() != ref.numel() or precision != "float64":
        return m
    r = ref.detach().to("cpu", torch.float64).reshape(-1)
    f = leaf.detach().to("cpu", torch.float64).reshape(-1)
    o = out.detach().to("cpu", torch.float64).reshape(-1)
    take = (_distance(o, f) < _distance(o, r)) & ~(torch.isnan(f) & ~torch.isnan(r))
    n = int(take.sum())
    if not n:
        return m
    mixed = torch.where(take, f, r).reshape(ref.shape)
    if out.numel() > large:
        again = metrics.verdict_large(out, mixed, tol, allow_nan=problem.allow_nan, device=device)
    else:
        again = metrics.verdict(out, mixed, tol, unwritten=unwritten, allow_nan=problem.allow_nan)
    if not again["ok"]:
        return m
    again.update({k: v for k, v in m.items() if k not in again})  # what judge_leaf added (path, tolerance...)
    again["ftz_elements"] = n
    again.setdefault("warnings", []).extend(w for w in m.get("warnings", []) if w not in again.get("warnings", []))
    again["warnings"].append(
        f"{n} element{'s' * (n != 1)} judged against the reference on the inputs with their float32 subnormals "
        "flushed to zero (flush-to-zero, as libdevice and the .ftz instructions read them on the GPU): within "
        f"tolerance of that, not of the subnormals as given; the kernel's own figures: {m.get('reason', '')}"
    )
    return again
