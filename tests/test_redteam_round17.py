"""Red team round 17: each finding fixed as a mechanism, with a bad kernel, its honest twin and a test asserting the
verdict and its message (docs/cases.md).

W1: a float argument of 0.0 (cuBLAS's beta) stays 0.0 under every scaling, negation and multiple: the scalars cases
now also add 1.0 (``cases.FLOAT_MOVES``). W2: a declared output buffer was always contiguous: the transposed, padded,
offset and permuted layouts now apply to it too (``cases.BUFFER_LAYOUTS``). W3: a float inside a
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


# -- W2: declared output buffers laid out as inputs are ----------------------------------------------------------------
def test_a_kernel_writing_its_output_buffer_with_flat_offsets_fails_on_a_laid_out_buffer(make_ws, ladder_for):
    res = _run(make_ws, ladder_for, "rt17_add_out_buffer", "rt17_add_out_buffer_bad.py")
    failed = next(r for r in res.rungs if r.status is not Status.OK)
    assert failed.name == "run" and failed.status is Status.FAILED
    # the flat offsets run into the padding between a padded buffer's rows: the caller's memory
    text = failed.line()
    assert "layout=padded" in text and "out-of-bounds write" in text and "outside its view" in text, text


def test_a_kernel_writing_its_output_buffer_through_its_strides_passes_every_layout(make_ws, ladder_for):
    res = good(_run(make_ws, ladder_for, "rt17_add_out_buffer", "rt17_add_out_buffer_good.py"))
    assert res.rung("correctness").figures["cases"] > 10


def test_output_buffers_take_the_strided_layouts_and_stay_the_buffers_the_reference_fills():
    import torch

    from ktui.worker.cases import build_input

    problem = _problem(R / "rt17_add_out_buffer.py")
    for layout, check in (
        ("padded", lambda t: t.stride() == (260, 1)),
        ("transposed", lambda t: t.stride() == (1, 5)),
        ("offset", lambda t: t.storage_offset() == 1 and t.is_contiguous()),
        ("expanded", lambda t: t.is_contiguous()),  # a broadcast buffer cannot hold a result
        ("mixed", lambda t: t.is_contiguous()),
    ):
        x, y, out = build_input(problem, {"spec_index": 3, "seed": 1, "layout": layout}, "cpu")
        assert out.shape == (5, 257) and check(out), (layout, out.stride())
        assert problem.reference((x, y, out))[0].shape == (5, 257)
    x, y, out = build_input(problem, {"spec_index": 3, "seed": 1}, "cpu")
    assert out.is_contiguous() and isinstance(out, torch.Tensor)


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
