"""Session 2026-12-07 (stop 41): what the GPU runs and the landing CI showed, each fixed as a mechanism with a bad
kernel, its honest twin and a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

import contextlib

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


def test_a_random_fill_of_a_float32_buffer_draws_what_the_native_run_draws(make_ws, ladder_for):
    """Red team round 34, #1: the float64 run kept a float32 buffer the reference made in float64 (this stop's fix for
    round 31's embedding backward), and ``torch.empty(n).uniform_(generator=g)`` on it drew another random sequence:
    the truth of an honest dropout returning its keep mask failed on 50 of 127 elements, and its float output's every
    special-values case went unjudged. A random fill (and a random factory's ``out=``) of such a buffer draws in
    float32, then widens: the twin passes, a dropout whose blocks all read block 0's uniforms fails."""
    import torch

    from ktui.worker.problem import Float64Kept

    def draws(mode: bool) -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(7)
        ctx = Float64Kept() if mode else contextlib.nullcontext()
        with ctx:
            u = torch.empty(5, dtype=torch.float32).uniform_(generator=g)
            v = torch.zeros(5).normal_(generator=g)
            w = torch.zeros_like(u).exponential_(generator=g)
            x = torch.zeros(5)
            torch.rand(5, generator=g, out=x)
        return [u, v, w, x]

    kept, native = draws(True), draws(False)
    assert [t.dtype for t in kept] == [torch.float64] * 4, [t.dtype for t in kept]
    assert all(torch.equal(k, n.double()) for k, n in zip(kept, native, strict=True)), (kept, native)
    # and like an input the float64 run upcast (``torch.rand_like(x)``, ``torch.empty_like(x).uniform_()``): drawn at
    # the input's own dtype, bf16 too
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(6, dtype=dtype)
        mode = Float64Kept()
        up = mode.upcast(x)
        torch.manual_seed(11)
        with mode:
            a, b = torch.rand_like(up), torch.empty_like(up).normal_()
        torch.manual_seed(11)
        a0, b0 = torch.rand_like(x), torch.empty_like(x).normal_()
        assert a.dtype == b.dtype == torch.float64 and torch.equal(a, a0.double()) and torch.equal(b, b0.double())
    ref = R / "rt34_dropmask.py"
    opts = dict(layouts=False, seeds=1, seed=3, rungs=CHECKED)
    _ok(run(make_ws, ladder_for, "drop", K / "rt34_dropmask_good.py", reference=ref, **opts))
    bad = run(make_ws, ladder_for, "drop", K / "rt34_dropmask_block0_bad.py", reference=ref, **opts)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED and "out[" in c.summary, c.line()


def test_an_output_the_native_reference_cannot_compute_leaves_the_others_judged(make_ws, ladder_for):
    """Red team round 34, #2: a special-values case went unjudged whole when one output's native reference was no bar
    (a row's sum of squares overflowing in float32 on the extreme family's values near the max), and every other
    output with it. That output alone is left out now, and said so: a y = 2x computed as (x * 1024) / 512, inf where
    |x| > max/1024, fails on the extreme case; the honest twin passes with the note."""
    ref = R / "rt34_twoout.py"
    opts = dict(layouts=False, seeds=1, seed=2, rungs=CHECKED, fuzz=False)
    bad = run(make_ws, ladder_for, "two", K / "rt34_twoout_scale_overflow_bad.py", reference=ref, **opts)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED and "dist=extreme" in c.summary, c.line()
    assert "output out[0]" in c.summary, c.summary
    good = run(make_ws, ladder_for, "two", K / "rt34_twoout_good.py", reference=ref, **opts)
    _ok(good)
    notes = [w for w in good.rung("correctness").warnings if "output out[1] not judged on this case" in w]
    assert notes, good.rung("correctness").warnings


def test_a_bf16_sum_under_the_interpreter_is_said_to_round_once(make_ws, ladder_for):
    """New-user trial 34, F2: an RMSNorm whose sum of squares is a bf16 ``tl.sum`` passed on the CPU: Triton reduces
    bf16 in bf16 (each combine step rounds on the GPU, ``HADD2.BF16``), the interpreter in float32 rounded once. The
    run rung now says so (``interp_fixes.note``); the twin summing in float32 passes without it."""
    ref = R / "nu34_add_rmsnorm.py"
    opts = dict(layouts=False, seeds=1, seed=4, rungs=("compile", "run"), fuzz=False, distributions=False)
    warned = run(make_ws, ladder_for, "rms", K / "nu34_add_rmsnorm_bf16_sum_warned.py", reference=ref, **opts)
    said = [w for r in warned.rungs for w in r.warnings if w.startswith("bf16 reduced or scanned with _sum_combine")]
    assert said and "each combine step rounds to bf16" in said[0], [r.warnings for r in warned.rungs]
    good = run(make_ws, ladder_for, "rms", K / "nu34_add_rmsnorm_f32_good.py", reference=ref, **opts)
    assert good.ok and not [w for r in good.rungs for w in r.warnings if w.startswith("bf16 reduced")], [
        r.line() for r in good.rungs
    ]


def test_a_reference_writing_an_undeclared_input_is_the_references_error(make_ws, ladder_for, tmp_path):
    """New-user trial 34, F13: a residual-add RMSNorm reference doing ``residual.add_(x)`` without declaring
    ``inplace = (1,)`` got the honest kernel (which updates the residual too) failed as "input modified: in[1] ...
    the kernel wrote into its input tensors". The describe step compares the inputs the reference ran on with the
    inputs it was given: the compile rung names the reference and the fix; declared, the kernel passes."""
    text = (R / "nu34_add_rmsnorm.py").read_text()
    assert "\ninplace = (1,)\n" in text
    ref = tmp_path / "rms_undeclared.py"
    ref.write_text(text.replace("\ninplace = (1,)\n", "\n"))
    opts = dict(layouts=False, seeds=1, seed=4, rungs=CHECKED, fuzz=False, distributions=False)
    res = run(make_ws, ladder_for, "rms", K / "nu34_add_rmsnorm_f32_good.py", reference=ref, **opts)
    c = res.rung("compile")
    assert c is not None and c.status is Status.FAILED, [r.line() for r in res.rungs]
    said = c.line()
    assert "ref_kernel writes into in[1] (its input), which the reference does not declare" in said, said
    assert "`inplace = (...)`" in said and "reference error" in said, said
    declared = R / "nu34_add_rmsnorm.py"
    _ok(run(make_ws, ladder_for, "rms", K / "nu34_add_rmsnorm_f32_good.py", reference=declared, **opts))


def test_zeros_the_references_own_precision_gives_too_are_not_warned():
    """New-user trial 34, F1: every honest RMSNorm run warned "N elements are 0 where the reference is not ... never
    written, or zeroed?" on the extreme family, where the float32 sum of squares overflows and torch's own bf16 run
    gives 0 too. The warning is dropped where the native reference is 0 at every zeroed element, kept elsewhere."""
    import torch

    from ktui.worker import metrics
    from ktui.worker.compare import native_zeros_too

    ref = torch.tensor([3e37, -2e37, 1.0, 2.0], dtype=torch.float64)
    out = torch.tensor([0.0, 0.0, 1.0, 2.0])
    note = f"2 of 4 elements {metrics.FLUSHED} (up to |ref| = 3e+37): never written, or zeroed?"
    m = {"ok": True, "warnings": [note, "another"]}
    native_zeros_too(m, out, torch.tensor([0.0, 0.0, 1.0, 2.0]), ref)
    assert m["warnings"] == ["another"], m
    m = {"ok": True, "warnings": [note]}
    native_zeros_too(m, out, torch.tensor([0.0, -2e37, 1.0, 2.0]), ref)  # the native run kept one of them
    assert m["warnings"] == [note], m
