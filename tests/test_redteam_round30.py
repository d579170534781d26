"""Red team round 30 and new-user trial 30: each finding fixed as a mechanism, with a bad kernel, its honest twin and
a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

import re

from ktui.core.results import Status

from .test_cases import CASES, K, run

R = CASES / "references"
QUICK = dict(layouts=False, seeds=1, seed=3, near_duplicates=False, rungs=("compile", "run", "correctness"))


def test_a_race_the_cpu_run_finds_is_judged_in_the_order_a_gpu_may_take(make_ws, ladder_for):
    """New-user trial 30, F1: an MoE grouped GEMM masking its last tile's store by M, not by its expert's end, wrote
    into the next expert's first rows, which that expert's tile (a later program) wrote again: right in the
    interpreter's program order, a race warning alone, and ``ok`` everywhere (``ktui eval`` chose it as the best
    version). The raced elements are now left as another order leaves them (``interp_races.other_order_``): it fails
    correctness; the honest twin (masked by the expert's end) passes with no race."""
    ref = R / "nu30_moe_gemm.py"
    res = run(make_ws, ladder_for, "moe", K / "nu30_moe_gemm_rowmask_bad.py", reference=ref, **QUICK)
    r = res.rung("run")
    assert r is not None and r.status is Status.OK, [x.line() for x in res.rungs]
    races = [w for w in r.warnings if "of grouped_kernel both stored out_ptr[" in w]
    assert races and "as a GPU may: the verdict judges that output" in races[0], r.warnings
    # (F8) the element by its index in out[M, N], and the advice for overlapping tiles
    assert re.search(r"out_ptr\[\d+, \d+\]", races[0]) and "store masks to end where each tile's rows end" in races[0]
    c = res.rung("correctness")
    # (wrong in one order: "output out: ...", or, the program orders of its two calls differing, "the second call on
    # identical inputs is wrong")
    assert c is not None and c.status is Status.FAILED, c.line()
    assert "output out:" in c.summary or "the second call on identical inputs is wrong" in c.summary, c.line()
    good = run(make_ws, ladder_for, "moe", K / "nu30_moe_gemm_good.py", reference=ref, **QUICK)
    assert good.rung("correctness").status is Status.OK, good.rung("correctness").line()
    assert not [w for w in good.rung("run").warnings if "both stored" in w]


def test_a_rung_failed_by_an_exception_has_its_error_line_as_summary_in_json():
    """New-user trial 30, F18: ``ktui run --json`` wrote ``summary: ""`` for a run rung failed by an exception (the
    message only under ``error``), so the README's ``jq '.data.rungs[] | {name, status, summary}'`` showed nothing
    for the rung that failed. The JSON summary is the error's first line; a rung's own summary is kept."""
    from ktui.core.results import ErrorInfo, RungResult

    err = ErrorInfo(
        type="OutOfBoundsAccess", message="spec=(1, 16, 16, 1): out-of-bounds store\nv4.py line 32", traceback=""
    )
    failed = RungResult(name="run", status=Status.FAILED, error=err)
    assert failed.to_json()["summary"] == "OutOfBoundsAccess: spec=(1, 16, 16, 1): out-of-bounds store"
    back = RungResult.from_json(failed.to_json())
    assert back.line() == "[run] FAILED OutOfBoundsAccess: spec=(1, 16, 16, 1): out-of-bounds store"
    own = RungResult(name="correctness", status=Status.FAILED, summary="spec=(1,) ...", error=err)
    assert own.to_json()["summary"] == "spec=(1,) ..."


def test_a_load_of_what_another_program_stored_in_the_launch_reads_the_value_before_it(make_ws, ladder_for):
    """Red team round 30, #1 and #2: a single-pass prefix sum reading the previous block's total with a plain load
    (no flag, no wait) and an RMSNorm backward whose last program sums the others' dw partials (no atomic ticket)
    passed: the interpreter runs programs in order, so every load saw the store. A plain load of an element another
    program stored earlier in the launch, with no atomic or volatile load ordering them, now reads what the element
    held before the launch, as on a GPU it may (``interp_races.Launch.read``): both fail, the run rung says why; the
    honest twins (three launches; two launches) pass, and so do the flag-ordered scans of round 28 (their test)."""
    ref = R / "rt30_cumsum.py"
    res = run(make_ws, ladder_for, "scan", K / "rt30_cumsum_chained_bad.py", reference=ref, **QUICK)
    r = res.rung("run")
    assert r is not None and r.status is Status.OK, [x.line() for x in res.rungs]
    reads = [w for w in r.warnings if "of chained_scan_kernel read totals_ptr[" in w]
    assert reads and "nothing ordering them" in reads[0], r.warnings
    assert res.rung("correctness").status is Status.FAILED, res.rung("correctness").line()
    good = run(make_ws, ladder_for, "scan", K / "rt30_cumsum_3pass_good.py", reference=ref, **QUICK)
    assert good.rung("correctness").status is Status.OK, good.rung("correctness").line()
    assert not [w for w in good.rung("run").warnings if "nothing ordering them" in w]
    ref = R / "rt30_rmsnorm_bwd.py"
    quick = dict(QUICK, fuzz=False, distributions=False)
    res = run(make_ws, ladder_for, "bwd", K / "rt30_rmsnorm_bwd_lastsum_bad.py", reference=ref, **quick)
    assert res.rung("correctness").status is Status.FAILED, [x.line() for x in res.rungs]
    assert [w for w in res.rung("run").warnings if "with a plain store, nothing ordering them" in w]
    good = run(make_ws, ladder_for, "bwd", K / "rt30_rmsnorm_bwd_2launch_good.py", reference=ref, **quick)
    assert good.rung("correctness").status is Status.OK, good.rung("correctness").line()


def test_an_output_flagged_requires_grad_without_a_graph_fails_on_its_gradient(make_ws, ladder_for):
    """Red team round 30, #4: a SiLU returning ``out.requires_grad_(True)`` has the flag round 29's rule asked for
    and no graph: ``x.grad`` stays None in training. Its gradient (zeros) is judged against the reference's now."""
    ref = R / "rt27_silu.py"
    quick = dict(QUICK, fuzz=False, distributions=False)
    bad = run(make_ws, ladder_for, "silu", K / "rt30_silu_leaf_bad.py", reference=ref, **quick).rung("correctness")
    assert bad is not None and bad.status is Status.FAILED, bad
    assert "grad=requires_grad: the gradient of in (the backward on seeded cotangents)" in bad.summary, bad.summary


def test_the_judges_reference_timing_refills_inputs_whose_shape_the_seed_changes(monkeypatch):
    """The 2026-12-06 H200 run: the benchmark rung of a jagged segment mean failed "ktui's judge failed ... The size
    of tensor a (137226) must match the size of tensor b (134284)": the judge's reference timing refilled its inputs
    with ``copy_``, while the candidate's timed calls resize a jagged values tensor in place (``copy_into``). Both
    refill the same way now. (``bench`` stands in here: it times CUDA work only.)"""
    import hashlib

    from ktui.worker import judge as judge_mod

    seen: list[tuple[int, ...]] = []

    def fake_bench(fn, device, before=None, **kw):
        for rep in range(3):
            before(rep)
            seen.append(tuple(fn().shape))
        return {"median_us": 1.0}, None

    monkeypatch.setattr(judge_mod, "bench", fake_bench)
    path = R / "rt30_jagged_sum.py"
    ref = {"problem": "jag", "path": str(path), "sha": hashlib.sha256(path.read_bytes()).hexdigest()}
    reply = judge_mod.Judge("cpu").do_time_reference(
        {"reference": ref, "kernel": ref, "spec_indices": [0], "seed": 3}, lambda p: None
    )
    assert reply["specs"][0]["median_us"] == 1.0 and seen == [(16, 8)] * 3, seen


def test_the_segments_distribution_puts_a_zero_in_a_lengths_tensor(make_ws, ladder_for):
    """Red team round 30, #6: a masked mean pooling dividing by ``lengths[b]`` gives NaN for an empty sequence and
    passed: ``segments`` emptied sorted offsets only, and no distribution put a 0 in a lengths tensor. In an integer
    tensor of positive values that is not sorted offsets, ``segments`` sets one element of each row to 0
    (``special.empty_segment_``); the honest twin (0 for an empty sequence, as the reference) passes."""
    import torch

    from ktui.worker.special import empty_segment_

    lengths = torch.tensor([3, 1, 7, 2])
    empty_segment_(lengths, torch.Generator().manual_seed(0))
    assert (lengths == 0).sum() == 1 and sorted(lengths[lengths > 0].tolist()) != [], lengths
    ids = torch.tensor([[4, 0, 2], [1, 1, 5]])  # a zero already: not lengths, left alone
    empty_segment_(ids, torch.Generator().manual_seed(0))
    assert ids.tolist() == [[4, 0, 2], [1, 1, 5]]
    ref = R / "rt30_meanpool.py"
    quick = dict(QUICK, layouts=False, near_duplicates=False)
    bad = run(make_ws, ladder_for, "pool", K / "rt30_meanpool_nan_bad.py", reference=ref, **quick).rung("correctness")
    assert bad is not None and bad.status is Status.FAILED and "dist=segments" in bad.summary, bad.line()
    good = run(make_ws, ladder_for, "pool", K / "rt30_meanpool_good.py", reference=ref, **quick)
    assert good.rung("correctness").status is Status.OK, good.rung("correctness").line()


def test_the_worst_screened_calls_are_verified_even_inside_the_screens_bound(make_ws, ladder_for):
    """Red team round 30, #3: a bf16 row sum re-tuned every 64th call to drop each row's last column stayed inside
    the screen's bound (bf16's rounding sets it loose) and passed when no kept call met it. The ``SCREEN_FULL``
    worst screened calls are verified in full whether or not the bound flagged them; the honest twin passes."""
    ref = R / "rt30_rowsum_bf16.py"
    quick = dict(
        seeds=1, layouts=False, fuzz=False, distributions=False, near_duplicates=False,
        rungs=("compile", "run", "correctness", "benchmark"),
    )  # fmt: skip
    for seed in (1, 2):
        res = run(make_ws, ladder_for, "rows", K / "rt30_rowsum_retune_bad.py", reference=ref, seed=seed, **quick)
        b = res.rung("benchmark")
        assert b is not None and b.status is Status.FAILED, [r.line() for r in res.rungs]
        assert "the output of call" in b.summary, b.summary
    good = run(make_ws, ladder_for, "rows", K / "rt30_rowsum_retune_good.py", reference=ref, seed=2, **quick)
    b = good.rung("benchmark")
    assert b is not None and b.status is not Status.FAILED, b.line()
    assert "worst checked in full" in b.summary, b.summary


def test_a_failure_on_an_intrange_case_names_the_refilled_inputs_and_the_way_out(make_ws, ladder_for):
    """New-user trial 30, F2 and red team round 30, #7: ``intrange`` refilled offsets and lengths over int64's range,
    which a reference that masks and clamps takes, and an honest kernel trusting lengths <= T failed with a bare
    out-of-bounds access. The failure now names the refilled inputs and how the reference rules such values out;
    with the contract asserted in ``ref_kernel`` the distribution is left out and the kernel passes."""
    quick = dict(QUICK, layouts=False, near_duplicates=False)
    kernel = K / "rt30_meanpool_trusting_good.py"
    res = run(make_ws, ladder_for, "pool", kernel, reference=R / "rt30_meanpool.py", **quick)
    r = res.rung("run")
    assert r is not None and r.status is Status.FAILED, [x.line() for x in res.rungs]
    text = r.line()
    assert "dist=intrange" in text, text
    assert "[dist=intrange refilled the integer input in[1] (int64[" in text, text
    assert "have ref_kernel raise on them" in text, text
    ref = R / "rt30_meanpool_checked.py"
    good = run(make_ws, ladder_for, "pool", kernel, reference=ref, **quick)
    assert good.rung("correctness").status is Status.OK, [x.line() for x in good.rungs]


def test_a_reference_searching_among_nan_is_no_truth_for_an_index(make_ws, ladder_for):
    """Red team round 30, #8: on +inf logits an inverse-CDF sampler's reference made a NaN CDF, ``searchsorted``
    answered V - 1, and that artifact was taken as the exact truth: an honest sampler failed ``nonfinite``. A
    ``searchsorted`` / ``bucketize`` among NaN makes the reference no valid target there (``special.NonfiniteCasts``):
    the distribution keeps to the inputs where it is valid, and the honest kernel passes."""
    import torch

    from ktui.worker.special import NonfiniteCasts

    with NonfiniteCasts() as seen:
        cdf = torch.softmax(torch.tensor([[0.0, float("inf"), 1.0]]), dim=-1).cumsum(-1)
        torch.searchsorted(cdf, torch.tensor([[0.5]]))
    assert "searchsorted searches among NaN" in seen.seen, seen.seen
    ref = R / "rt30_sample.py"
    res = run(make_ws, ladder_for, "sample", K / "rt30_sample_good.py", reference=ref, seed=3, rungs=QUICK["rungs"])
    assert res.rung("correctness").status is Status.OK, [x.line() for x in res.rungs]


def test_the_edges_distribution_plants_the_float_arguments_in_the_inputs(make_ws, ladder_for):
    """Red team round 30, #9: a ``histc`` over [-4, 4] that drops x == hi passed: no input ever held the bound (on
    [0, 1] only ``constant``'s 1.0 met it). ``edges`` plants every float argument's value in the float inputs, one
    element in ``EDGE_SHARE`` each (``cases.plant_edges``): the half-open histogram fails there, the honest one
    passes. (Open at stop 41: the native reference's sample on inputs one ulp away moved the planted x == hi past
    hi, so torch's own float32 histogram looked "wrong as a whole" on a one-element spec and the case went unjudged,
    and on the large spec it looked off by a count, which the 8x allowance lent to every bin: elements equal to a
    float argument stay put now, ``native.held``.)"""
    import torch

    from ktui.worker.cases import EDGE_SHARE, plant_edges

    x = torch.zeros(256)
    plant_edges((x, 16, -4.0, 4.0), (), seed=1)
    assert int((x == 4.0).sum()) >= 1 and int((x == -4.0).sum()) >= 1, x
    assert int((x != 0).sum()) <= 2 * 256 // EDGE_SHARE
    ref = R / "rt30_histc4.py"
    quick = dict(QUICK, layouts=False, near_duplicates=False)
    bad = run(make_ws, ladder_for, "hist", K / "rt30_histc4_halfopen_bad.py", reference=ref, **quick)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED and "dist=edges" in c.summary, c.line()
    good = run(make_ws, ladder_for, "hist", K / "rt30_histc4_good.py", reference=ref, **quick)
    assert good.rung("correctness").status is Status.OK, good.rung("correctness").line()


def test_an_element_equal_to_a_float_argument_is_no_rounding_away_from_it():
    """The native reference's sample on inputs one ulp away (``native_errors``) and the truth's moves
    (``rounding_allowance``) keep an element equal to a Python float argument where it is: torch's float32 histc
    of x == hi is exact, and x moved past hi is no sample of its error (round 30, #9). Other elements move."""
    import torch

    from ktui.worker.native import float_arguments, native_errors, rounding_allowance
    from ktui.worker.problem import _map

    x = torch.tensor([4.0, -4.0, 0.3, 1.1, -2.2, 3.3, 0.7, 4.0])  # (planted here and there, as edges does)
    data = (x, 16, -4.0, 4.0)
    assert float_arguments(_map, data) == (-4.0, 4.0)

    def hist(d):
        return torch.histc(d[0], bins=d[1], min=d[2], max=d[3])

    truth = hist((x.double(), 16, -4.0, 4.0))
    errs = native_errors(hist, _map, data, hist(data), truth, seed=3)
    assert errs["out"]["max_abs"] == 0.0, errs  # x == hi moved one ulp up left bin 15 one count short before
    # the float64 truth moved by a few roundings: the planted bounds stay in their bins, nowhere moves
    moves = rounding_allowance(hist, _map, (x.double(), 16, -4.0, 4.0), truth, 2.0**-24, 3, frozenset({"out"}))
    assert float(moves["out"].abs().max()) == 0.0, moves
    # where most elements equal an argument (constant ones beside a scale of 1.0), they move as any element does
    from ktui.worker.native import held

    ones = torch.ones(6, dtype=torch.float64)
    assert torch.equal(held(ones, ones * 2, (1.0,)), ones * 2)
    assert torch.equal(held(x.double(), x.double() * 2, (4.0,))[0], torch.tensor(4.0, dtype=torch.float64))
    # a value a rounding from a bin's edge moves its count (0.5 is the edge of bins 8 and 9)
    y = torch.tensor([0.5, 1.3], dtype=torch.float64)
    moves = rounding_allowance(
        hist, _map, (y, 16, -4.0, 4.0), hist((y, 16, -4.0, 4.0)), 2.0**-24, 3, frozenset({"out"})
    )
    assert moves["out"][8] == 1.0 and moves["out"][9] == 1.0 and float(moves["out"].sum()) == 2.0, moves


def test_a_float_output_of_counts_is_judged_where_the_native_reference_misbins_not_by_its_largest_error():
    """A float histogram whose float32 reference misbins one value near a bin's edge (off by 1 in two bins) lent
    8 counts to every bin: a kernel losing the count at x == hi passed (round 30, #9). ``count_native_check``
    judges whole-number float outputs as integer outputs of float math are: off only where the native reference is,
    or where a few roundings move the truth."""
    import torch

    from ktui.worker.compare import count_native_check
    from ktui.worker.tolerance import resolve

    truth = torch.tensor([3.0, 5.0, 0.0, 7.0, 2.0], dtype=torch.float64)
    native = torch.tensor([3.0, 4.0, 1.0, 7.0, 2.0])  # one value near the edge of bins 1 and 2, put in bin 2
    tol = resolve("float32", None).with_native(1.0, 0.1, "float32")
    moved = torch.tensor([0.0, 1.0, 1.0, 0.0, 0.0], dtype=torch.float64)

    def judged(out, near=lambda: moved):
        m = {"ok": True, "reason": "", "score": 0.1}
        count_native_check(m, out, native, truth, tol, near)
        return m

    assert judged(native.clone())["ok"]  # torch's own answer
    assert judged(truth.float())["ok"]  # the truth
    lost = judged(torch.tensor([3.0, 5.0, 0.0, 7.0, 1.0]))  # a count lost at the last bin, where nothing rounds
    assert not lost["ok"] and "1 of 5 elements of an output of whole numbers (counts)" in lost["reason"], lost
    assert "first at [4]: got 1, expected 2" in lost["reason"], lost
    # where the truth moves by a rounding, a count in either bin passes; more than the move does not
    assert judged(torch.tensor([3.0, 6.0, -1.0, 7.0, 2.0]))["ok"]
    assert not judged(torch.tensor([3.0, 7.0, -2.0, 7.0, 2.0]))["ok"]
    # not whole numbers (a density), or a native reference that is exact: the check stays out of the way
    m = {"ok": True, "reason": "", "score": 0.1}
    count_native_check(m, torch.tensor([3.0, 5.0, 0.0, 7.0, 1.0]), truth.float(), truth, tol, lambda: moved)
    assert m["ok"], m
    frac = truth / 3
    m = {"ok": True, "reason": "", "score": 0.1}
    count_native_check(m, frac.float() + 0.5, frac.float(), frac, tol, lambda: moved)
    assert m["ok"], m
