"""Session 2026-12-07 (stop 41): what the GPU runs and the landing CI showed, each fixed as a mechanism with a bad
kernel, its honest twin and a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CHECKED, K, run
from .test_redteam_round32 import R, _ok

# the l2 norm on one spec where the extreme family's values near the max are all but certain (0.5% of 20,480)
L2_ONE_SPEC = (
    (R / "rt27_l2norm.py")
    .read_text()
    .replace(
        'tests = [{"rows": r, "d": d} for r in (1, 7, 129, 1000) for d in (64, 128)]',
        'tests = [{"rows": 160, "d": 128}]\ninput_distributions = ["native", "extreme", "tiny"]',
    )
)


def test_rows_of_small_values_are_judged_where_the_extreme_family_is_not(make_ws, ladder_for, tmp_path):
    """On the H100 (2026-12-07) an L2 norm with its eps on the squared norm (``rsqrt(sum x^2 + 1e-12)``, off by 16%
    on rows of 1e-7) passed: ``F.normalize`` of a row holding max/8 overflows in float32 (the square), so the native
    reference is no bar on the extreme case and it was not judged, and with it went the band of small rows. The
    ``tiny`` distribution draws the same without the values near the max: the extreme case is still skipped (and
    said so), the tiny one fails the bad kernel; the honest twin passes."""
    assert '160, "d": 128' in L2_ONE_SPEC and "input_distributions" in L2_ONE_SPEC
    ref = tmp_path / "l2_one_spec.py"
    ref.write_text(L2_ONE_SPEC)
    opts = dict(layouts=False, seeds=1, seed=5, rungs=CHECKED, fuzz=False)
    bad = run(make_ws, ladder_for, "l2", K / "rt27_l2norm_epsinside_bad.py", reference=ref, **opts)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, c.line()
    assert "dist=tiny" in c.summary, c.summary
    skipped = [w for w in c.warnings if "dist=extreme" in w and "not judged" in w]
    assert skipped, c.warnings
    _ok(run(make_ws, ladder_for, "l2", K / "rt27_l2norm_good.py", reference=ref, **opts))
