"""Red team round 17: each finding fixed as a mechanism, with a bad kernel, its honest twin and a test asserting the
verdict and its message (docs/cases.md).

W1: a float argument of 0.0 (cuBLAS's beta) stays 0.0 under every scaling, negation and multiple: the scalars cases
now also add 1.0 (``cases.FLOAT_MOVES``). W2 (open): a declared output buffer is always contiguous, GPU MODE's
contract (laid out, honest solutions failed). W3: a float inside a
``types.SimpleNamespace`` was never reached: a SimpleNamespace is walked as a record (``tensors.dataclass_fields``),
and a number inside any other object is a reference error that says so (``problem.opaque_tensors``). F1: an input
made with ``requires_grad=True`` made ktui's own in-place swaps raise and failed an honest version: inputs are
detached (``problem.Problem.generate``)."""

from __future__ import annotations

import pytest

from ktui.core.results import Status

from .test_cases import CASES, CHECKED, K, corr, good, run

R = CASES / "references"


def _problem(path):
    import hashlib

    from ktui.worker.problem import Problem

    return Problem(path, path.stem, hashlib.sha256(path.read_bytes()).hexdigest())


def _run(make_ws, ladder_for, ref: str, kernel: str, seed: int = 3, **opts):
    return run(make_ws, ladder_for, ref, K / kernel, reference=R / f"{ref}.py", rungs=CHECKED, seed=seed, **opts)


# -- W1: a float argument of 0.0 -----------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_kernel_that_drops_beta_times_y_for_a_beta_of_zero_fails_on_a_moved_beta(make_ws, ladder_for, seed):
    c = corr(_run(make_ws, ladder_for, "rt17_axpby_beta0", "rt17_axpby_beta0_bad.py", seed=seed))
    assert c.status is Status.FAILED
    assert "dist=scalars" in c.summary and "vary=[3]+1.0" in c.summary, c.summary


def test_the_honest_axpby_passes_every_moved_alpha_and_beta(make_ws, ladder_for):
    res = good(_run(make_ws, ladder_for, "rt17_axpby_beta0", "rt17_axpby_good.py"))
    assert res.rung("correctness").figures["cases"] > 10


def test_a_float_of_zero_that_no_move_changes_is_named_in_the_notes():
    from ktui.worker.arguments import argument_moves

    problem = _problem(R / "rt17_zero_unused.py")
    moves, notes = argument_moves(problem, "cpu")
    assert "[1]" not in moves
    assert any("the float argument in[1] (= 0.0) is never varied" in n for n in notes), notes


# -- W2 (open): declared output buffers stay as generated (GPU MODE's contract) ------------------------------------
def test_an_output_buffer_keeps_generate_inputs_layout_in_every_layout_case():
    """Laid out like the inputs, three honest kernels (GPU MODE's correct solutions among them) failed for writing
    the buffer with flat offsets: the buffer is the harness's own, contiguous, under that contract. A kernel that
    ignores a caller's strided buffer is not caught (round 17's W2 stays open)."""
    problem = _problem(R / "rt17_add_out_buffer.py")
    from ktui.worker.cases import build_input

    for layout in ("padded", "transposed", "offset", "expanded", "mixed"):
        x, y, out = build_input(problem, {"spec_index": 3, "seed": 1, "layout": layout}, "cpu")
        assert out.shape == (5, 257) and out.is_contiguous() and out.storage_offset() == 0, layout
    x, _, _ = build_input(problem, {"spec_index": 3, "seed": 1, "layout": "padded"}, "cpu")
    assert x.stride() == (260, 1)  # the inputs are laid out


def test_a_kernel_writing_its_output_buffer_through_its_strides_passes_every_layout(make_ws, ladder_for):
    res = good(_run(make_ws, ladder_for, "rt17_add_out_buffer", "rt17_add_out_buffer_good.py"))
    assert res.rung("correctness").figures["cases"] > 10


# -- W3: numbers in a SimpleNamespace, and in objects ktui cannot walk ---------------------------------------------
def test_a_kernel_folding_a_namespace_float_into_a_constant_fails_and_its_twin_passes(make_ws, ladder_for):
    c = corr(_run(make_ws, ladder_for, "rt17_namespace_alpha", "rt17_namespace_alpha_bad.py"))
    assert c.status is Status.FAILED
    assert "dist=scalars" in c.summary, c.summary
    good(_run(make_ws, ladder_for, "rt17_namespace_alpha", "rt17_namespace_alpha_good.py"))


# -- F1: inputs made with requires_grad=True -----------------------------------------------------------------------
def test_an_honest_kernel_on_requires_grad_inputs_passes(make_ws, ladder_for):
    res = good(_run(make_ws, ladder_for, "rt17_silu_requires_grad", "rt17_silu_requires_grad_good.py"))
    assert res.rung("correctness").figures["cases"] > 10


def test_generated_inputs_are_detached_sharing_their_memory():
    import torch

    problem = _problem(R / "rt17_silu_requires_grad.py")
    x = problem.generate(1, {"n": 5}, "cpu")
    assert isinstance(x, torch.Tensor) and not x.requires_grad and x.grad_fn is None


# -- round 17b: the leniencies of this round, attacked ----------------------------------------------------------------
def test_a_bf16_silu_zeroing_small_values_fails_on_the_extreme_familys_small_normals(make_ws, ladder_for):
    """The off rule's floor applies only where the truth is 0, scaled by the median |ref| (the max/8 values of the
    extreme family had set an RMS floor of ~2e29 that hid every ordinary element)."""
    c = corr(_run(make_ws, ladder_for, "rt17b_silu_flush", "rt17b_silu_flush_bad.py"))
    assert c.status is Status.FAILED
    assert "dist=extreme" in c.summary and "off by more than 8 u |ref|" in c.summary, c.summary


def test_an_honest_clamp_to_0_1_passes_its_float_moves_never_cross_the_range():
    problem = _problem(R / "rt17b_clamp01.py")
    from ktui.worker.arguments import argument_moves

    moves, _ = argument_moves(problem, "cpu")
    # lo = 0.0: +1.0 would reach hi (dropped), neg and x8 leave it 0; hi = 1.0: negated below lo (dropped)
    assert moves == {"[2]": ["x8", "+1.0"]}, moves


def test_an_honest_clamp_to_0_1_passes_the_ladder(make_ws, ladder_for):
    good(_run(make_ws, ladder_for, "rt17b_clamp01", "rt17b_clamp01_good.py", seed=5))


def test_a_scalars_case_scales_its_floats_by_one_factor_and_a_float_move_scales_none():
    from ktui.worker.cases import build_input

    problem = _problem(R / "rt17b_clamp01.py")
    _, lo, hi = build_input(problem, {"spec_index": 0, "seed": 4, "dist": "scalars"}, "cpu")
    assert lo == 0.0 and 0.5 <= hi <= 2.0  # (0 scaled is 0)
    _, lo, hi = build_input(problem, {"spec_index": 0, "seed": 4, "dist": "scalars", "vary": {"[2]": "x8"}}, "cpu")
    assert (lo, hi) == (0.0, 8.0)


def test_under_an_explicit_tolerance_a_kernel_failing_only_rel_l2_is_excused_only_near_the_references_own():
    import torch

    from ktui.worker import metrics
    from ktui.worker.compare import native_fails_too
    from ktui.worker.tolerance import resolve

    tol = resolve("float32", {"float32": {"atol": 1e-2, "rtol": 1e-2}})
    ref = torch.randn(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    native = ref.float().clone()
    native[17] += 0.5  # the reference's float32 result off at one element: outside the tolerance, not whole-only
    out = (ref * 1.006).float()  # a wrong constant: within rtol everywhere, rel_l2 6e-3 past ktui's 1e-3
    m = metrics.verdict(out, ref, tol)
    assert not m["ok"] and m.get("whole_only")
    native_fails_too(m, out, native, ref, tol, False)
    assert not m["ok"] and "tolerance cannot be met" in m["reason"]  # round 17b: it was excused
    # the reference failing the whole-output rule the same way: a kernel near its rel_l2 passes, one far past fails
    native = (ref * 1.004).float()
    for factor, ok in ((1.006, True), (1.05, False)):
        k = (ref * factor).float()
        tol2 = resolve("float32", {"float32": {"atol": 0.1, "rtol": 0.1}})
        m = metrics.verdict(k, ref, tol2)
        assert not m["ok"] and m.get("whole_only"), m["reason"]
        native_fails_too(m, k, native, ref, tol2, False)
        assert m["ok"] is ok, m["reason"]
