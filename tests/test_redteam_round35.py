"""Red team round 35 and new-user trial 35 (stop 42): each finding fixed as a mechanism, with a bad kernel, its honest
twin and a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

import pytest

from ktui.core.results import Status

from .test_cases import CASES, CHECKED, K, run

R = CASES / "references"
QUICK = dict(layouts=False, seeds=1, seed=3, fuzz=False, distributions=False, near_duplicates=False, rungs=CHECKED)


def test_a_training_op_is_called_twice_before_either_backward(make_ws, ladder_for):
    """Red team round 35, #3 and #4: a SiLU keeping the sigmoid it saves for the backward in a buffer per shape, and
    one returning a gradient buffer kept per shape, passed: each ``requires_grad`` case ran one forward and its
    backward at once, and a gradient was never hashed again. A model using the op twice (two layers) gets the other
    layer's gradient. Now each such case makes another forward of its shape before the backward, runs that call's
    backward after, and checks at the end of the request that no gradient it returned has changed: both fail, the
    honest twin (allocating both each call) passes."""
    ref = R / "rt27_silu.py"
    ws = run(make_ws, ladder_for, "silu", K / "rt35_silu_saved_ws_bad.py", reference=ref, **QUICK)
    c = ws.rung("correctness")
    assert c is not None and c.status is Status.FAILED, [r.line() for r in ws.rungs]
    assert "grad=requires_grad" in c.summary and "the gradient of in (the backward" in c.summary, c.summary
    # red team round 35b, #4: two buffers per shape used in turn passed one other call; 1 to 3 of them now
    ring = run(make_ws, ladder_for, "silu", K / "rt35b_silu_double_buffer_bad.py", reference=ref, **QUICK)
    c = ring.rung("correctness")
    assert c is not None and c.status is Status.FAILED and "the gradient of in" in c.summary, c.line()
    dx = run(make_ws, ladder_for, "silu", K / "rt35_silu_dx_buffer_bad.py", reference=ref, **QUICK)
    c = dx.rung("correctness")
    assert c is not None and c.status is Status.FAILED, [r.line() for r in dx.rungs]
    assert "gradient changed after the backward returned" in c.summary, c.summary
    good = run(make_ws, ladder_for, "silu", K / "rt27_silu_train_fn_good.py", reference=ref, **QUICK)
    assert good.rung("correctness").status is Status.OK, [r.line() for r in good.rungs]


def test_the_float64_truth_takes_rms_norms_default_eps_of_the_native_dtype(make_ws, ladder_for):
    """Red team round 35, #5: ``F.rms_norm(x, shape, w)`` leaves eps at ``torch.finfo(x.dtype).eps``; the float64 run
    took float64's (2.2e-16), the truth became the norm without an eps, the native reference looked wrong on small
    rows and a kernel dropping the eps passed (300x off on rows of 1e-6). The float64 run gives the default the
    native dtype's eps (``Float64Kept._native_eps``): the bad kernel fails on the small values, the twin with
    float32's eps passes."""
    import torch
    import torch.nn.functional as F

    from ktui.worker.problem import Float64Kept, _map

    x, w = torch.full((2, 8), 1e-6), torch.ones(8)
    kept = Float64Kept()
    up = _map((x, w), kept.upcast)
    with kept:
        got = F.rms_norm(up[0], (8,), up[1])
    assert got.dtype == torch.float64
    assert abs(float(got[0, 0]) / float(F.rms_norm(x, (8,), w)[0, 0]) - 1) < 1e-6  # not 1.0 (no eps)
    ref = R / "rt35_rmsnorm_default_eps.py"
    opts = dict(QUICK, distributions=True)
    bad = run(make_ws, ladder_for, "rms", K / "rt35_rmsnorm_no_eps_bad.py", reference=ref, **opts)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, c.line()
    good = run(make_ws, ladder_for, "rms", K / "rt35_rmsnorm_default_eps_good.py", reference=ref, **opts)
    assert good.rung("correctness").status is Status.OK, good.rung("correctness").line()


def test_the_float64_truth_draws_each_random_op_at_the_native_runs_dtype(make_ws, ladder_for):
    """Red team round 35, #1 (a false alarm; round 34's fix covered fills of upcast tensors only): a dropout drawing
    ``torch.rand(x.shape, dtype=x.dtype, generator=g)`` or ``torch.bernoulli(torch.full_like(x, 1 - p), ...)`` drew
    float64 in the float64 run, another sequence from the same generator: an honest kernel's keep mask failed on 47
    of 127 elements. A random op that draws float64 there now has the native run's dtypes read
    (``problem.RandomDraws``) and each random op drawn at its own (``Float64Kept(replay=...)``): both honest twins
    pass, a kernel keeping the wrong quarter fails."""
    import hashlib

    import torch

    from ktui.worker.problem import Problem

    for name in ("rt35_droprand", "rt35_dropbern"):
        path = R / f"{name}.py"
        problem = Problem(path, name, hashlib.sha256(path.read_bytes()).hexdigest())
        data = problem.generate(7, {"n": 257, "dtype": "float32"}, "cpu")
        (y64, keep64), precision = problem.reference(data)
        y32, keep32 = problem.reference_native(data)
        assert precision == "float64" and y64.dtype == torch.float64, precision
        assert torch.equal(keep64, keep32), (name, int((keep64 != keep32).sum()))
        assert torch.allclose(y64, y32.double(), rtol=1e-6, atol=0), name
    opts = dict(QUICK, distributions=True)
    for ref, good in (("rt35_droprand", "rt35_droprand_good.py"), ("rt35_dropbern", "rt35_dropbern_good.py")):
        res = run(make_ws, ladder_for, "drop", K / good, reference=R / f"{ref}.py", **opts)
        assert res.rung("correctness").status is Status.OK, res.rung("correctness").line()
    bad = run(
        make_ws, ladder_for, "drop", K / "rt35_droprand_threshold_bad.py", reference=R / "rt35_droprand.py", **opts
    )
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED and "output out[0]: " in c.summary, c.line()


def test_a_bool_output_of_float_math_may_differ_where_the_native_reference_does(make_ws, ladder_for):
    """Red team round 35, #6 (a false alarm): ``sigmoid(x) > 0.5`` computed in float32 as torch does failed 695 of
    33,825 elements on the extreme family: between x ~ 4e-16 and 1.2e-7 float32's sigmoid rounds to exactly 0.5
    where float64's is above it. Integer outputs of float math were allowed to differ where torch's own float32
    answer does, bool ones were not: they are now (``native_errors``, ``integer_native_allowance``). A kernel taking
    ``>=`` (True on tiny negative logits, where neither the native reference nor a rounding of the inputs says so)
    still fails."""
    ref = R / "rt35_sigmask.py"
    opts = dict(QUICK, distributions=True)
    good = run(make_ws, ladder_for, "mask", K / "rt35_sigmask_good.py", reference=ref, **opts)
    c = good.rung("correctness")
    assert c is not None and c.status is Status.OK, c.line()
    assert any("bool elements differ from the float64 truth" in w for w in c.warnings), c.warnings
    bad = run(make_ws, ladder_for, "mask", K / "rt35_sigmask_ge_bad.py", reference=ref, **opts)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, c.line()
    assert "where neither the reference computed in its own precision differs" in c.summary, c.summary


def test_a_tag_the_picked_inputs_do_not_hold_is_looked_for_on_other_specs_and_seeds(make_ws, ladder_for):
    """New-user trial 35, F4: a cross-entropy with ignore_index hard-coded as -100 passed with the warning "the int
    argument in[2] (= -100) is never varied ... the output does not change": the argument moves are tried on the
    smallest and largest specs at seed 1, whose labels (a quarter ignored at random) held no -100 there, so no
    ``relabel:`` move was tried. The inputs of every test spec at seeds 1..4 are looked through for one holding the
    tag (``arguments._holding``): the relabel moves are kept, the bad kernel fails and the honest one passes."""
    import hashlib

    from ktui.worker.arguments import argument_moves
    from ktui.worker.problem import Problem

    path = R / "nu35_xent.py"
    problem = Problem(path, "nu35_xent", hashlib.sha256(path.read_bytes()).hexdigest())
    moves, notes = argument_moves(problem, "cpu")
    assert moves.get("[2]") == ["relabel:-101", "relabel:held"], (moves, notes)
    assert not any("in[2]" in n for n in notes), notes
    opts = dict(QUICK, distributions=True)
    bad = run(make_ws, ladder_for, "xent", K / "nu35_xent_ignore_const_bad.py", reference=path, **opts)
    failed = [r for r in bad.rungs if r.status is Status.FAILED]
    assert failed and "vary=[2]relabel:" in failed[0].summary, [r.line() for r in bad.rungs]
    # named as the move, not as a stride or a mask (F5), and the access just before the logits as such (F3)
    assert "this case moved the int argument in[2] and its occurrences" in failed[0].summary, failed[0].summary
    good = run(make_ws, ladder_for, "xent", K / "nu35_xent_good.py", reference=path, **opts)
    assert good.rung("correctness").status is Status.OK, [r.line() for r in good.rungs]


def test_an_access_just_before_an_argument_names_it_and_a_negative_index():
    """New-user trial 35, F3 and F5: a cross-entropy reading the target logit at ``t = -100`` (an ignored label used
    as an index) loaded 100 elements before x_ptr and was told "far outside every tensor argument (the nearest, t_ptr,
    is 470,200 bytes away)": only arguments below the address were candidates. The nearest argument either side is
    named now, with the offset and "a negative index"."""
    import numpy as np
    import pytest
    import torch

    from ktui.worker import interp_bounds

    class Ptrs:
        def __init__(self, addr: int) -> None:
            self.data = np.array([addr], dtype=np.uint64)

        def get_element_ty(self) -> None:
            raise TypeError  # (the check falls back to one byte)

    x, t = torch.zeros(4, 1000, dtype=torch.bfloat16), torch.zeros(4, dtype=torch.int64)
    interp_bounds._CURRENT.append(interp_bounds._ranges([("x_ptr", x), ("t_ptr", t)]))
    try:
        before = x.data_ptr() - 100 * 2
        if not t.data_ptr() <= before < t.data_ptr() + 32:
            with pytest.raises(interp_bounds.OutOfBoundsAccess) as info:
                interp_bounds._check(Ptrs(before), None, "load")
            text = str(info.value)
            assert "at offset -100 of x_ptr" in text and "100 elements before its first: a negative index" in text
            assert "far outside" not in text, text
    finally:
        interp_bounds._CURRENT.pop()


def test_a_race_warning_names_the_case_it_was_met_on(make_ws, ladder_for):
    """New-user trial 35, F7: a race only an expanded layout's stride-0 rows make ("programs (0, 0, 0) and (1, 0, 0)
    ... both stored x_ptr[0, 0]") read as a race on ordinary inputs: the warning named no case. It names the case
    now, as failures do."""
    emb = R / "rt29_embbwd.py"
    opts = dict(QUICK, rungs=("compile", "run"))
    res = run(make_ws, ladder_for, "emb", K / "rt29_embbwd_race_bad.py", reference=emb, **opts)
    races = [w for w in res.rung("run").warnings if "the verdict judges that output" in w]
    assert races and all(w.startswith("spec=(") and ": program" in w for w in races), races


def test_a_nonfinite_mismatch_says_what_the_kernel_gave_and_what_the_reference_did():
    """New-user trial 35, F8: "2 NaN/inf where the reference differs ..., first at [1]" hid that the kernel gave NaN
    where torch's logsumexp gives +inf (a row holding +inf): the reason carries both values now."""
    import torch

    from ktui.worker import metrics
    from ktui.worker.tolerance import resolve

    out = torch.tensor([1.0, float("nan"), 2.0])
    ref = torch.tensor([1.0, float("inf"), 2.0], dtype=torch.float64)
    m = metrics.verdict(out, ref, resolve("float32", None))
    assert not m["ok"] and "first at [1]: got nan, expected inf" in m["reason"], m["reason"]
    assert "read of scratch" not in m["reason"]  # (the reference is not finite there)
    # F14: a NaN where the truth is finite names what gives one under ktui (scratch no program wrote)
    m = metrics.verdict(out, torch.tensor([1.0, 3.0, 2.0], dtype=torch.float64), resolve("float32", None))
    assert "got nan, expected 3" in m["reason"] and "a read of scratch no program wrote gives NaN" in m["reason"]


def test_a_failure_on_a_special_distribution_says_what_its_inputs_held(make_ws, ladder_for):
    """New-user trial 35, F2: "FAILED ... dist=masked: output out[0]: ... got 0, expected 10.3735" sent a user to
    ktui's source to learn that masked rows are all -1e9, where Liger's ``lse - x_t`` cancels to 0 in float32. A
    failed case of any distribution but the native one ends with what the distribution draws."""
    opts = dict(QUICK, distributions=True, fuzz=False)
    bad = run(make_ws, ladder_for, "xent", K / "nu35_xent_lse_minus_xt_bad.py", reference=R / "nu35_xent.py", **opts)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, c.line()
    assert "dist=masked" in c.summary and "[dist=masked: masked rows: chunks of -inf, rows at -1e9]" in c.summary, (
        c.summary
    )


def test_a_random_training_ops_gradient_truth_draws_what_the_native_run_draws(make_ws, ladder_for):
    """Red team round 35b, #1: a dropout training op whose backward drew its mask again from the generator's state
    saved after the draw (another mask) passed, and so did one returning zeros: the float64 gradient truth ran
    without round 35's replay of the native run's draws, its mask was another, the native gradient looked 100% off
    and its allowance let any gradient through. The gradients' truth runs through ``Problem.run_float64`` now: both
    fail, the honest twin (the state saved before the draw) passes."""
    ref = R / "rt35b_droptrain.py"
    opts = dict(QUICK, distributions=True)
    bad = run(make_ws, ladder_for, "drop", K / "rt35b_droptrain_state_after_bad.py", reference=ref, **opts)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED and "the gradient of in" in c.summary, c.line()
    good = run(make_ws, ladder_for, "drop", K / "rt35b_droptrain_good.py", reference=ref, **opts)
    assert good.rung("correctness").status is Status.OK, good.rung("correctness").line()


def test_a_gradient_is_held_to_the_native_error_near_each_element(make_ws, ladder_for):
    """Red team round 35b, #5 (#2): ``log(x + finfo(x.dtype).eps)`` on ReLU features as a training op, whose backward
    keeps 1/(x + eps) in bf16 (a gradient 2.4e4x float32's error) passed: the float64 run reads float64's eps, the
    native gradient is far off at the zeros, and gradients had only the allowance of the largest native error
    anywhere. Gradients get the per-element bar outputs have (``native_local``, the largest native error within
    ``LOCAL_WINDOW`` elements; round 25, #2), and the float64 run reads ``torch.finfo(float64)`` as the native run's
    one float dtype (``Float64Kept.sole_native_dtype``: with half the elements zeros the native error near every
    element was large): the bf16 backward fails, the float32 one passes."""
    import torch

    from ktui.worker.problem import Float64Kept, _map

    kept = Float64Kept()
    up = _map(torch.zeros(4), kept.upcast)
    with kept:
        assert torch.finfo(up.dtype).eps == torch.finfo(torch.float32).eps
    assert torch.finfo(torch.float64).eps < 1e-15  # restored
    mixed = Float64Kept()
    ups = _map((torch.zeros(4), torch.zeros(4, dtype=torch.bfloat16)), mixed.upcast)
    with mixed:  # two native dtypes: which one is unknown, float64's as written
        assert torch.finfo(ups[1].dtype).eps < 1e-15 and len(mixed.made) == 2
    ref = R / "rt35b_logeps.py"
    bad = run(make_ws, ladder_for, "logeps", K / "rt35b_logeps_bf16_saved_bad.py", reference=ref, **QUICK)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED and "the gradient of in" in c.summary, c.line()
    good = run(make_ws, ladder_for, "logeps", K / "rt35b_logeps_good.py", reference=ref, **QUICK)
    assert good.rung("correctness").status is Status.OK, good.rung("correctness").line()


@pytest.mark.xfail(
    strict=True,
    reason="open (stop 42): the integer allowance moves the inputs by two roundings of their own precision (2 bf16 "
    "ulps for bf16 inputs), so every exact tie of an input moves; moving only what the reference computes (each "
    "inexact op result, conditioning.native_rounding_moves) failed the honest per-row int8 quantizer of new-user "
    "trial 28 (a scale computed in bf16 by the reference, float32 by the kernel): antithetic pairs of random signs "
    "cancel over a chain of two ops (x / (amax / 127)) in half the pairs, so the truth did not move where the "
    "kernel's 1-ulp difference lands; needs moves whose sum over the chain cannot cancel",
)
def test_an_integer_output_may_differ_only_where_what_a_kernel_computes_rounds(make_ws, ladder_for):
    """Red team round 35b, #3: the integer allowance moves the inputs by two roundings of their own precision, so
    bf16 inputs move by 2 bf16 ulps: a round-half-up conversion of bf16 activations passes at every exact tie (x.5,
    9% of the elements), and an int4 quantizer scaling in bf16 under a float32 reference passes on the 1% it gets
    wrong. Both should fail, the half-to-even and float32 twins pass."""
    opts = dict(QUICK, distributions=True)
    for ref, bad, good in (
        ("rt35b_round_i8.py", "rt35b_round_i8_half_up_bad.py", "rt35b_round_i8_good.py"),
        ("rt35b_quant_i8.py", "rt35b_quant_i8_bf16_scale_bad.py", "rt35b_quant_i8_good.py"),
    ):
        b = run(make_ws, ladder_for, "q", K / bad, reference=R / ref, **opts).rung("correctness")
        assert b is not None and b.status is Status.FAILED, (bad, b.line())
        assert "nor the truth is within that precision's rounding of a half-way point" in b.summary, b.summary
        g = run(make_ws, ladder_for, "q", K / good, reference=R / ref, **opts).rung("correctness")
        assert g.status is Status.OK, (good, g.line())
