"""Two false alarms a new user met on a first problem (GELU), each fixed as a rule, with a wrong twin that still fails.

1. A reference that sets its own float32 tolerance: an honest 0.5 x (1 + erf(x / sqrt 2)) was within it at every
   element and failed ktui's whole-output rel_l2 rule on a 1-element output, which the reference itself fails too
   (1 + erf cancels near x = -4.5); ``compare.native_fails_too`` now judges such a case against the reference's own
   error, as for a tolerance ktui sets.
2. bf16 outputs: an element is no longer *off* by less than float32's unit roundoff of the output's RMS
   (``accumulator.FLOAT32_U``): torch's float64 GELU is 0 below x = -8.3 where an honest erfc gives -4e-23.
"""

from __future__ import annotations

import torch

from ktui.core.results import Status
from ktui.worker import metrics
from ktui.worker.tolerance import resolve

from .test_cases import CASES, CHECKED, K, corr, good, run

R = CASES / "references"


def _run(make_ws, ladder_for, kernel: str, seed: int = 3):
    return run(make_ws, ladder_for, "gelu_tol", K / kernel, reference=R / "gelu_tol.py", rungs=CHECKED, seed=seed)


def test_an_honest_erf_gelu_within_the_references_own_tolerance_passes(make_ws, ladder_for):
    good(_run(make_ws, ladder_for, "gelu_erf_good.py"))


def test_an_honest_erfc_gelu_more_accurate_than_the_float64_truth_passes_in_bf16(make_ws, ladder_for):
    good(_run(make_ws, ladder_for, "gelu_erfc_good.py"))


def test_a_gelu_off_by_a_constant_factor_still_fails(make_ws, ladder_for):
    c = corr(_run(make_ws, ladder_for, "gelu_scaled_bad.py"))
    assert c.status is Status.FAILED, c.summary
    assert "outside atol=1e-06 rtol=1e-05" in c.summary or "off by more than" in c.summary, c.summary


def test_a_bf16_element_below_float32s_resolution_of_the_rms_is_not_off_and_a_flushed_small_value_still_is():
    tol = resolve("bfloat16", None)
    ref = torch.cat([torch.zeros(200, dtype=torch.float64), torch.linspace(-4, 4, 800, dtype=torch.float64)])
    out = ref.clone().to(torch.bfloat16)
    out[:200] = -4e-23  # where the truth is 0: far below 2**-24 rms(ref)
    m = metrics.verdict(out, ref, tol)
    assert m["ok"] and m["off_frac"] == 0.0, m["reason"]
    # values of 1e-3 rms flushed to 0 on 20% of the elements: still off (the mass-loss rule)
    small = ref.clone()
    small[:200] = 2.3e-3 * torch.linspace(1, 2, 200, dtype=torch.float64)
    flushed = small.clone().to(torch.bfloat16)
    flushed[:200] = 0
    m = metrics.verdict(flushed, small, tol)
    assert not m["ok"] and "off by more than 8 u |ref|" in m["reason"], m["reason"]
