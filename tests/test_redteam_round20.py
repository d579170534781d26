"""Red team round 20: each finding fixed as a mechanism, with a bad kernel, its honest twin and a test asserting the
verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, K, corr, good, run

R = CASES / "references"
CHECKED = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))


def test_a_reference_returning_float8_is_judged_and_an_unclamped_rtz_quantizer_fails(make_ws, ladder_for):
    """F2: every version of a reference returning float8 failed its compile rung with ktui's own error ("gt_cpu" not
    implemented for 'Float8_e5m2': ``special.valid_reference`` compared float8 on the CPU); it compares in float64."""
    ref = R / "rt20_fp8_e5m2.py"
    ok = good(run(make_ws, ladder_for, "fp8q", K / "rt20_fp8_e5m2_good.py", reference=ref, **CHECKED))
    assert corr(ok).figures["cases"] > 20
    bad = corr(run(make_ws, ladder_for, "fp8q", K / "rt20_fp8_e5m2_rtz_unclamped_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED and "NaN/inf where the reference differs" in bad.summary, bad.summary
