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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from ktui.worker.problem import Problem, _map
from ktui.worker.tensors import flatten
from ktui.worker.tolerance import Tolerance

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


def truth_slack(
    problem: Problem,
    inputs_of: Callable[[], Any],
    path: str,
    ref: torch.Tensor,
    tol: Tolerance,
    u: float | None = None,
) -> torch.Tensor | None:
    """Per element of output ``path`` (``ref``: its float64 truth, any shape), flat on the CPU: how far the truth
    moves, the larger of the two runs, when the inputs (``inputs_of()``, the case's own) move by ``u`` relative
    (default ``tol.unit_roundoff``; module docstring); infinite where a finite truth becomes NaN or infinite. None
    when the gross bound is off (and no ``u`` is given), or the reference does not run in float64 or fails on the
    moved inputs (nothing is allowed then)."""
    if (u is None and not tol.bounds_gross) or not problem.float64:
        return None
    r = ref.detach().to("cpu", torch.float64).reshape(-1)
    fin = torch.isfinite(r)
    slack = torch.zeros_like(r)
    for sign in (1.0, -1.0):
        try:
            out, precision = problem.reference(_moved(inputs_of(), tol.unit_roundoff if u is None else u, sign))
        except Exception:
            return None
        leaf = dict(flatten(out)).get(path)
        if precision != "float64" or not isinstance(leaf, torch.Tensor) or leaf.numel() != r.numel():
            return None
        d = (leaf.detach().to("cpu", torch.float64).reshape(-1) - r).abs()
        d = torch.where(torch.isfinite(d), d, torch.full_like(d, math.inf))  # NaN: moved without bound
        slack = torch.maximum(slack, torch.where(fin, d, torch.zeros_like(d)))
    return slack
