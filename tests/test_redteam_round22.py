"""Red team round 22: each finding fixed as a mechanism, with a bad kernel, its honest twin and a test asserting the
verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, K, corr, good, run

R = CASES / "references"
CHECKED = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))


def test_a_kernel_re_pointing_its_callers_input_fails_and_a_local_copy_passes(make_ws, ladder_for):
    """F3: ``x.set_(x.contiguous())`` on a strided input passed every rung (its values read the same, its old storage
    is untouched); the caller's tensor no longer views its buffer, so a persistent input view serves stale inputs.
    Each input tensor's geometry (storage, offset, strides, shape) is read before the call and compared after it."""
    ref = R / "rt22_scale2d.py"
    checked = {**CHECKED, "layouts": True}
    good(run(make_ws, ladder_for, "scale2d", K / "rt22_local_copy_good.py", reference=ref, **checked))
    bad = corr(run(make_ws, ladder_for, "scale2d", K / "rt22_repoint_input_bad.py", reference=ref, **checked))
    assert bad.status is Status.FAILED, bad.line()
    assert "input modified: in[0] (" in bad.summary and "re-pointed during the call (set_, resize_" in bad.summary, (
        bad.summary
    )


def test_the_geometry_of_an_input_names_what_changed():
    import torch

    from ktui.worker.tensors import flatten, geometry, repointed_leaves

    buf = torch.zeros(4, 8)
    x = buf[:, :5]
    flat = flatten((x, 2.0), "in")
    was = geometry(flat)
    assert repointed_leaves(flat, was) == []
    x.set_(x.contiguous())
    (said,) = repointed_leaves(flat, was)
    assert said == "in[0] (moved to other memory)", said
    y = torch.zeros(6)
    flat = flatten((y,), "in")
    was = geometry(flat)
    y.as_strided_((3,), (2,))
    assert repointed_leaves(flat, was) == ["in[0] (strides (1,) -> (2,))"]


def test_two_outputs_sharing_memory_fail_where_the_references_are_separate(make_ws, ladder_for):
    """F4: a recurrence returning ``(out, out[-1:])`` as (output, h_n) passed (h_n even row-major); an in-place op on
    one output (a residual ``out += x``) changes the carried state. Output leaves with an element in common fail
    unless the reference's outputs share it too; disjoint views of one allocation share none."""
    import torch

    from ktui.worker.tensors import shared_outputs

    ref = R / "rt22_scan_state.py"
    good(run(make_ws, ladder_for, "scan", K / "rt22_state_copy_good.py", reference=ref, **CHECKED))
    bad = corr(run(make_ws, ladder_for, "scan", K / "rt22_shared_state_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED, bad.line()
    assert "outputs share memory: out[1] shares memory with out[0], where the reference's are separate" in bad.summary
    buf = torch.zeros(4, 6)
    assert shared_outputs((buf[:2], buf[2:], buf[:, ::2], buf[:, 1::2])) == [
        "out[2] shares memory with out[0]",
        "out[3] shares memory with out[0]",
    ]
    assert shared_outputs((buf[::2], buf[1::2])) == [] and shared_outputs((buf, buf.view(-1)[5:6])) == [
        "out[1] shares memory with out[0]"
    ]


def test_a_row_max_returning_the_last_of_equal_maxima_fails_and_the_first_passes(make_ws, ladder_for):
    """F1: torch.max documents "the indices of the first maximal value"; a kernel returning the last passed as "ties
    in an order of their own" (the tie probe needs more than one index along the dim, which a reduction never has).
    The judge knows the index output came from ``torch.max`` (``indices.IndexOps``) and holds it to that rule."""
    ref = R / "rt22_rowmax.py"
    good(run(make_ws, ladder_for, "rowmax", K / "rt22_rowmax_first_tie_good.py", reference=ref, **CHECKED))
    bad = corr(run(make_ws, ladder_for, "rowmax", K / "rt22_rowmax_last_tie_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED, bad.line()
    assert "pick other ones of equal values of the input it ranks" in bad.summary, bad.summary
    assert "return the first of equal extremes (their documented rule)" in bad.summary, bad.summary


def test_a_lone_topk_indices_output_is_judged_by_what_it_selects(make_ws, ladder_for):
    """F2: ``torch.topk(x, k).indices`` returned alone was compared exactly (no float output to detect it by), so an
    honest top-k taking the first of equal scores failed 18 of 21 specs; a top-k skipping the last column still
    fails, by what it selects."""
    ref = R / "rt22_topk_ids.py"
    ok = corr(good(run(make_ws, ladder_for, "topk", K / "rt22_topk_ids_good.py", reference=ref, **CHECKED)))
    assert any("leaves the order of ties open): accepted as indices" in w for w in ok.warnings), ok.warnings
    bad = corr(run(make_ws, ladder_for, "topk", K / "rt22_topk_ids_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED, bad.line()
    assert "select other values of the input it ranks" in bad.summary and "indices of the reference's topk" in (
        bad.summary
    ), bad.summary


def test_an_honest_sort_of_integer_ids_passes_and_colliding_ranks_fail(make_ws, ladder_for):
    """F5: ``torch.sort(ids)`` of int32 expert ids (an unstable sort: equal ids in any order) failed an honest
    stable rank sort (its permutation compared exactly). The permutation is judged by what it selects."""
    ref = R / "rt22_sort_ids.py"
    good(run(make_ws, ladder_for, "sortids", K / "rt22_sort_ids_good.py", reference=ref, **CHECKED))
    bad = run(make_ws, ladder_for, "sortids", K / "rt22_sort_ids_bad.py", reference=ref, **CHECKED)
    assert bad.failed_rung is not None, [r.line() for r in bad.rungs]


def test_index_ops_name_each_index_output_with_its_tie_rule():
    import torch

    from ktui.worker.indices import IndexOps, traced_index_verdict

    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    with IndexOps() as seen:
        v, i = torch.max(x, dim=-1)
        am = x.argmax()
        s = torch.sort(x, stable=True, descending=True).indices.to(torch.int32)
        t = torch.topk(x, 2).indices
        shifted = i + 1  # arithmetic on indices: no longer what max returned
    found = seen.sources({"v": v, "i": i, "am": am, "s": s, "t": t, "shifted": shifted}, (x,))
    assert {p: (f["op"], f["ties"], f["dim"], f["of_input"]) for p, f in found.items()} == {
        "out['i']": ("max", "first", 1, True),
        "out['am']": ("argmax", "first", 0, True),  # ranks x flattened
        "out['s']": ("sort", "stable", 1, True),
        "out['t']": ("topk", "any", 1, True),
    }
    last = torch.tensor([2, 3])
    said = traced_index_verdict(last, i, found["out['i']"], "in[0]")
    assert said.startswith("2 of 2 indices pick other ones of equal values of in[0] along dim 1"), said
    assert traced_index_verdict(torch.tensor([[2, 1], [3, 0]]), t, found["out['t']"], "in[0]") == ""


def test_a_reference_filling_an_output_buffer_it_does_not_return_is_refused(make_ws, ladder_for):
    """F9: a reference ``torch.mul(x, 2, out=out)`` with ``outputs = (1,)`` returning None judged nothing (the
    verdict had no figures), so a kernel writing one element of the buffer passed. A declared buffer the reference
    does not return is a reference error that says what to do."""
    ref = R / "rt22_outbuf.py"
    res = run(make_ws, ladder_for, "outbuf", K / "rt22_outbuf_first_only_bad.py", reference=ref, **CHECKED)
    assert res.failed_rung is not None, [r.line() for r in res.rungs]
    line = res.failed_rung.line()
    assert "outputs declares 1 as output buffer, and ref_kernel does not return it (it returned None)" in line, line
    assert "return the buffer itself (return out)" in line, line


def test_a_case_whose_float64_truth_its_own_roundings_move_is_skipped_not_failed(make_ws, ladder_for):
    """New-user trial 22 F9: ``intrange`` drew int64 positions near 2**62 for a RoPE; float64 does not hold them and
    one rounding of the angle moves it by radians, so the truth was noise and an honest kernel failed correctness.
    A failed case on special values whose float64 truth its own roundings move past one rounding of the output is
    skipped, saying why; a kernel computing the sine still fails on ordinary positions."""
    ref = R / "nu22_cos_pos.py"
    checked = {**CHECKED, "distributions": True}
    ok = corr(good(run(make_ws, ladder_for, "cospos", K / "nu22_cos_pos_good.py", reference=ref, **checked)))
    assert ok.figures["skipped"] >= 1, ok.figures
    said = [w for w in ok.warnings if "on dist=intrange not judged" in w]
    assert said and "the float64 reference is no truth on these values: its own roundings move" in said[0], ok.warnings
    bad = corr(run(make_ws, ladder_for, "cospos", K / "nu22_sin_pos_bad.py", reference=ref, **checked))
    assert bad.status is Status.FAILED and "dist=intrange" not in bad.summary.split(":")[0], bad.summary


def test_outputs_that_are_views_of_the_input_pass_where_the_reference_returns_those_views(make_ws, ladder_for):
    """F7: an attention prologue returning ``qkv.split``'s k and v views, as the reference does, failed 19 of 19
    specs ("output aliases input"). The judge notes the reference's own views of its inputs (its prepare), and a
    version may return those, in its checked and its timed calls; a q scaled inside the caller's qkv still fails."""
    ref = R / "rt22_qkv_split.py"
    rungs = ("compile", "run", "correctness", "benchmark")
    ok = good(
        run(make_ws, ladder_for, "qkv", K / "rt22_qkv_views_good.py", reference=ref, **{**CHECKED, "rungs": rungs})
    )
    assert ok.rung("benchmark") is not None and "aliases" not in ok.rung("benchmark").line(), ok.rung(
        "benchmark"
    ).line()
    bad = corr(run(make_ws, ladder_for, "qkv", K / "rt22_qkv_q_in_place_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED, bad.line()
    assert "out[0] aliases in[0]" in bad.summary or "input modified" in bad.summary, bad.summary


def test_an_ignore_index_folded_into_a_constant_fails_and_one_read_from_its_argument_passes(make_ws, ladder_for):
    """F6: ``F.cross_entropy(..., ignore_index=ignore_index)`` with the labels' padding positions -100: every +1, -1
    or x2 of the argument alone made those labels invalid classes, so it was never moved and a kernel comparing with
    the constant -100 passed with a warning. The argument is now moved with its occurrences in the integer inputs
    (``relabel:``): to -101, which the reference's output ignores alike (a tag), and to a class the labels hold."""
    ref = R / "rt22_ce_ignore.py"
    checked = {**CHECKED, "rungs": ("compile", "run", "correctness")}
    ok = good(run(make_ws, ladder_for, "ce_ignore", K / "rt22_ce_ignore_good.py", reference=ref, **checked))
    assert not any("never varied" in w for r in ok.rungs for w in r.warnings), [r.warnings for r in ok.rungs]
    folded = run(make_ws, ladder_for, "ce_ignore", K / "rt22_ce_ignore_folded_bad.py", reference=ref, **checked)
    assert not folded.ok, [r.line() for r in folded.rungs]
    assert any("relabel:" in r.summary for r in folded.rungs), [r.line() for r in folded.rungs]
    guarded = corr(
        run(make_ws, ladder_for, "ce_ignore", K / "rt22_ce_ignore_folded_guarded_bad.py", reference=ref, **checked)
    )
    assert guarded.status is Status.FAILED and "vary=[2]relabel:held" in guarded.summary, guarded.line()


def test_a_relabel_moves_an_argument_with_its_occurrences_and_leaves_the_inputs_untouched():
    import torch

    from ktui.worker.cases import held_value, move_ints

    labels = torch.tensor([3, -100, 7, 3, -100, 5])
    data = (torch.zeros(6, 8), labels, -100)
    out = move_ints(data, (), {"[2]": "relabel:-101"})
    assert out[2] == -101 and out[1].tolist() == [3, -101, 7, 3, -101, 5]
    assert labels.tolist() == [3, -100, 7, 3, -100, 5]  # the judge tries each move on one set of inputs
    assert held_value(data, (), -100) == 3  # the most frequent other value: its positions become tagged too
    held = move_ints(data, (), {"[2]": "relabel:held"})
    assert held[2] == 3 and held[1].tolist() == [3, 3, 7, 3, 3, 5]
    assert held_value((torch.tensor([1, 2]), 9), (), 9) == 1  # none holds it: the smallest of the most frequent


def test_a_kernel_keeping_every_calls_outputs_fails_the_stretch_and_one_keeping_the_last_passes(make_ws, ladder_for):
    """F8: a kernel appending every call's tensors to a module list passed every rung while a caller's memory grew by
    one output per call. The verified stretch (and the GPU's timed calls and host loop) watch every output's storage
    weakly; outputs of more than ``RETAINED_MAX`` calls still alive once ktui dropped them fail it."""
    ref = R / "rt22_scale2d.py"
    stretch = {**CHECKED, "rungs": ("compile", "benchmark")}
    kept_last = run(make_ws, ladder_for, "scale2d", K / "rt22_keeps_last_output_good.py", reference=ref, **stretch)
    assert kept_last.ok, [r.line() for r in kept_last.rungs]
    bad = run(make_ws, ladder_for, "scale2d", K / "rt22_keeps_outputs_bad.py", reference=ref, **stretch)
    (bench,) = [r for r in bad.rungs if r.name == "benchmark"]
    assert bench.status is Status.FAILED and "memory retained: " in bench.summary, bench.line()
    assert "are still alive after the caller dropped them" in bench.summary, bench.summary


def test_retained_counts_the_storages_a_kernel_keeps_views_included():
    import torch

    from ktui.worker.timed import Retained

    x = torch.zeros(8)
    pool = Retained(exempt={x.untyped_storage().data_ptr()})
    kept = []
    for i in range(48):  # a pool of 16 buffers the first calls fill: bounded, no leak
        y = torch.full((16,), float(i))
        pool.watch((y, x))  # the input's storage is exempt
        if i < 16:
            kept.append(y[3:5])  # a view keeps the whole storage
        del y
    assert pool.line("call") == ""
    leak = Retained(exempt=set())
    for i in range(10):
        scratch = torch.empty(4)
        leak.allocated(scratch)  # a scratch buffer made during call i, kept
        y = torch.full((16,), float(i))
        leak.watch(y)
        kept += [scratch, y]
    said = leak.line("call")
    assert said.startswith("memory retained: 20 buffers of 10 calls (0.000763 MiB; 10 of them outputs; 10 made by "), (
        said
    )
    kept.clear()
    assert leak.line("call") == ""
