"""Red team round 26's open findings and this session's: each fixed as a mechanism, with a bad kernel, its honest
twin and a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ktui.core.results import Status
from ktui.worker.fuzz import draw_specs
from ktui.worker.indices import IndexOps, traced_index_verdict
from ktui.worker.special import refill_special
from ktui.worker.unordered import UnorderedOps, canonical_, in_order, order

from .test_cases import CASES, K, good, run

R = CASES / "references"


def _extreme(shape: tuple[int, ...], seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    t = torch.empty(shape, dtype=dtype)
    g, g_shared = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed + 1)
    refill_special(t, "extreme", g, False, g_shared)
    return t


def test_no_summation_order_overflows_on_the_extreme_family():
    """Red team round 26, #3: at +-max/8 each, the extreme family's huge elements overflowed the partial sums of an
    honest chunked fp32 row sum (1,024 lanes, then a sum of the lanes) where torch's order did not, the float64 sum
    in range: "1 NaN/inf where the reference differs". They now share max/8 among them: every order stays finite."""
    fmax = torch.finfo(torch.float32).max
    for seed in range(40):
        x = _extreme((4, 8198), seed)
        huge = x.abs() > 1e30
        assert int(huge.sum()) >= 1, seed  # the family still draws values near the range's top
        assert float(x.abs().max()) >= fmax / 8 / x.numel(), seed  # max/(8k), k at most the elements
        pad = torch.nn.functional.pad(x, (0, 9 * 1024 - 8198))
        lanes = pad.view(4, 9, 1024).cumsum(1)  # the chunked kernel's running lane sums, in float32
        assert bool(torch.isfinite(lanes).all()), seed
        assert bool(torch.isfinite(lanes[:, -1].cumsum(-1)).all()), seed
        assert bool(torch.isfinite(x.sum(-1)).all()), seed
        # the worst order: all the positive huge elements first
        pos = x.clamp(min=0).double().sum(-1)
        assert bool((pos <= fmax / 8 * 1.0001).all()), seed
    # fp16 and bf16 keep the bound too
    for dt in (torch.float16, torch.bfloat16):
        y = _extreme((64, 1025), 7, dt)
        big = y.float().abs() > 0.01 * float(torch.finfo(dt).max) / 64
        assert float(y.float().abs()[big].double().sum()) <= float(torch.finfo(dt).max) / 8 * 1.01, dt


def test_max_pool_indices_may_be_any_position_of_the_window_holding_its_maximum(make_ws, ladder_for):
    """Red team round 26, #6: ``F.max_pool2d(relu(x), 2, 2, return_indices=True)``: an honest pooling keeping the
    later of tied maxima (a ReLU's zeros) failed "out[1]: 50 of 780 elements differ (exact compare)", and on 2 x 2
    planes its indices were taken for indices along dim -1 ("out of range"). Max pooling's indices are traced now
    and judged as any position of the output's own window that holds its maximum. A running max started at 0 with
    index 0 ("a ReLU is never negative") gives a window of zeros index 0, a zero outside it, and fails."""
    ref = R / "rt26_maxpool.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    good(run(make_ws, ladder_for, "maxpool", K / "rt26_maxpool_lasttie_good.py", reference=ref, **checked))
    bad = run(make_ws, ladder_for, "maxpool", K / "rt26_maxpool_zero_init_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "outside their own pooling window" in corr_rung.summary, corr_rung.summary


def test_pool_windows_follow_stride_padding_dilation_and_adaptive_spans():
    """The windows ``indices._pool_windows`` gives each output element contain the index torch itself returns, for
    max_pool1d/2d/3d with stride, padding and dilation and for adaptive pooling; an index one window over fails."""
    x = torch.relu(torch.randn(2, 3, 9, 11, generator=torch.Generator().manual_seed(3)))
    pools = [
        lambda t: F.max_pool2d(t, 2, 2, return_indices=True),
        lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True),
        lambda t: F.max_pool2d(t, 2, 1, 0, 2, return_indices=True),
        lambda t: F.max_pool1d(t[0], 3, 2, return_indices=True),
        lambda t: F.adaptive_max_pool2d(t, (4, 5), return_indices=True),
        lambda t: F.max_pool3d(t, 2, return_indices=True),
    ]
    for j, pool in enumerate(pools):
        with IndexOps() as ops:
            v, i = pool(x)
        src = ops.sources((v, i), (x,))["out[1]"]
        assert src["ties"] == "window", j
        assert traced_index_verdict(i, i, src, "x") == "", j
        # the first output's index moved to the plane's last element, outside its window: another value, or (where
        # they tie) outside the window
        moved = i.clone()
        moved.view(-1)[0] = src["source"].shape[-1] - 1
        assert traced_index_verdict(moved, i, src, "x") != "", j
    # a tie outside the window: a plane of zeros, the first output's index moved to another zero
    z = torch.zeros(1, 1, 4, 4)
    with IndexOps() as ops:
        v, i = F.max_pool2d(z, 2, 2, return_indices=True)
    src = ops.sources((v, i), (z,))["out[1]"]
    other = i.clone()
    other.view(-1)[0] = 15
    why = traced_index_verdict(other, i, src, "z")
    assert "outside their own pooling window" in why and "(3, 3)" in why, why


def test_rows_gathered_by_an_unstable_argsort_follow_the_versions_own_permutation(make_ws, ladder_for):
    """Red team round 26, #12: an MoE dispatch ``(x[perm], perm)`` with ``perm = argsort(expert_ids)``: an honest
    stable counting sort had its perm accepted as indices (ties), yet the rows it gathered were compared position by
    position and failed 10 of 12 specs. An unstable sort's results are now put in one order of ties on both sides,
    the rows following their permutation; rows placed by a rank that breaks ties the other way than perm still
    fail, and so does a version whose perm does not sort."""
    ref = R / "rt26_moeperm.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    ok = good(run(make_ws, ladder_for, "moeperm", K / "rt26_moeperm_stable_good.py", reference=ref, **checked))
    assert not any("sorted order" in w for r in ok.rungs for w in r.warnings), [r.warnings for r in ok.rungs]
    bad = run(make_ws, ladder_for, "moeperm", K / "rt26_moeperm_rows_disagree_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "out[0]" in corr_rung.summary, corr_rung.summary


def test_an_unstable_sorts_answer_is_reordered_only_among_ties():
    """``unordered.in_order``: a sort group's key already sorted up to ties is put in the canonical order; one that
    is not sorted is left as it is (a version that does not sort is not sorted for it)."""
    key = torch.tensor([[1, 1, 2, 5, 5, 5]])
    idx = torch.tensor([[1, 0, 2, 5, 3, 4]])
    p = order(key, idx, 1, False)
    assert p is not None and in_order(key, p, 1)
    assert idx.gather(1, p).tolist() == [[0, 1, 2, 3, 4, 5]]
    unsorted = torch.tensor([[2, 1, 1, 5, 5, 5]])
    q = order(unsorted, idx, 1, False)
    assert q is not None and not in_order(unsorted, q, 1)
    with UnorderedOps() as seen:
        ids = torch.tensor([2, 0, 2, 1])
        x = torch.arange(8.0).reshape(4, 2)
        perm = torch.argsort(ids)
        out = (x[perm], perm)
    (g,) = seen.groups(out)
    assert g.get("kind") == "sort" and g["indices"] == "out[1]" and g["companions"] == ["out[0]"], g
    with UnorderedOps() as seen:
        out2 = torch.sort(ids, stable=True)
    assert seen.groups(out2) == []  # a stable sort's order of ties is part of its answer


def test_unique_sorted_false_is_judged_as_a_set_with_its_inverse_remapped(make_ws, ladder_for):
    """Red team round 25, #10: ``torch.unique(ids, sorted=False, return_inverse=True)``: an honest unique in order of
    first appearance failed 16 of 17 specs position by position. Its values are compared as a set now (sorted on
    both sides) and its inverse indices remapped to the new positions; values in first-appearance order with the
    inverse of a sorted unique (``values[inverse]`` is not ``ids``) still fail."""
    ref = R / "rt25_unique.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    good(run(make_ws, ladder_for, "unique", K / "rt25_unique_first_seen_good.py", reference=ref, **checked))
    bad = run(make_ws, ladder_for, "unique", K / "rt25_unique_inverse_sorted_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "out[1]" in corr_rung.summary, corr_rung.summary


def test_unique_groups_remap_the_inverse_and_keep_counts_paired():
    """``UnorderedOps`` notes ``unique(sorted=False)``: a first-appearance answer put in sorted order equals torch's,
    counts following their values and the inverse pointing at the same ids; a sorted unique is not noted."""
    ids = torch.tensor([5, 3, 5, 1, 3, 9])
    with UnorderedOps() as seen:
        ref = torch.unique(ids, sorted=False, return_inverse=True, return_counts=True)
    (g,) = seen.groups(ref)
    assert g.get("kind") == "set" and g["values"] == "out[0]" and g.get("inverse") == "out[1]", g
    assert g["companions"] == ["out[2]"], g
    mine = (torch.tensor([5, 3, 1, 9]), torch.tensor([0, 1, 0, 2, 1, 3]), torch.tensor([2, 2, 1, 1]))
    canonical_(mine, [g])
    assert [t.tolist() for t in mine] == [[1, 3, 5, 9], [2, 1, 2, 0, 1, 3], [1, 2, 2, 1]]
    wrong = (torch.tensor([5, 3, 1, 9]), torch.tensor([2, 1, 2, 0, 1, 3]), torch.tensor([2, 2, 1, 1]))
    canonical_(wrong, [g])
    assert wrong[1].tolist() != [2, 1, 2, 0, 1, 3]  # a sorted unique's inverse beside first-appearance values
    with UnorderedOps() as seen:
        out = torch.unique(ids, return_inverse=True)
    assert seen.groups(out) == []


def test_an_empty_size_excuses_only_values_over_nothing_that_are_minus_inf_or_nan(make_ws, ladder_for):
    """Red team round 27, #1: ``x @ w + b`` with K = 0 is the bias; a GEMM whose host returns zeros for K == 0
    passed, every failing leaf of an empty spec having been excused as "a convention". Only the elements where the
    reference's value is -inf or NaN (an empty log-sum-exp, a mean) are a convention now; the rest are judged."""
    ref = R / "rt27_linear.py"
    checked = dict(seeds=1, seed=3, layouts=False, distributions=False, rungs=("compile", "run", "correctness"))
    bad = run(make_ws, ladder_for, "linear", K / "rt27_linear_k0_zeros_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "fuzzed(1, 1, 0)" in corr_rung.summary and "elements outside" in corr_rung.summary, corr_rung.summary
    good(run(make_ws, ladder_for, "linear", K / "rt27_linear_good.py", reference=ref, **checked))


def test_a_fuzz_dict_keeps_the_fields_it_leaves_out_at_their_test_values():
    """Red team round 27, #3: ``fuzz = {"m": ..., "n": ...}`` names the fields ktui may change; the budget's halving
    took the head size ``d`` it left out to 16, 8 and 2 anyway, and an honest attention kernel asserting
    ``HEAD_DIM in {16, 32, 64, 128, 256}`` failed run. Every drawn spec keeps ``d`` at a test's value now."""

    class Attention:
        fuzz = {"m": (1, 4096), "n": (1, 4096)}

    tests = [{"m": 64, "n": 64, "d": 64}, {"m": 129, "n": 257, "d": 128}, {"m": 1, "n": 1000, "d": 64}]
    benchmarks = [{"m": 4096, "n": 4096, "d": 128}]
    ds = set()
    for seed in range(1, 30):
        for device in ("cpu", "cuda"):
            for spec in draw_specs(Attention, tests, benchmarks, seed, device, lambda s: True):
                ds.add(spec["d"])
    assert ds <= {64, 128}, ds
    assert ds  # specs were drawn


def test_where_the_reference_fails_too_each_element_is_held_to_its_error_nearby_not_at_that_element():
    """New-user trial 27 (and red team 27, #9): an honest bf16 FlashAttention failed where torch's own bf16 run
    fails the case worse: 5 of ~8,000 elements were beyond 8x the reference's error at those very elements, where
    torch happened to be nearly exact. The kernel's error is another sample of the same kind of error, so each
    element is held to 8x the reference's largest error within ``LOCAL_WINDOW`` elements; a kernel off by a
    constant on a few elements still fails."""
    from ktui.worker import metrics
    from ktui.worker.compare import native_fails_too
    from ktui.worker.tolerance import resolve

    tol = resolve("bfloat16", None)

    def bf(t: torch.Tensor) -> torch.Tensor:
        return t.to(torch.bfloat16).float()

    for seed in range(5):
        g = torch.Generator().manual_seed(seed)
        # weighted averages of +-v (attention's P @ V): small outputs against the terms summed
        p = torch.softmax(2 * torch.randn(128, 200, generator=g, dtype=torch.float64), -1)
        v = torch.randn(200, 64, generator=g, dtype=torch.float64)
        ref = p @ v
        native = (bf(p) @ bf(v)).to(torch.bfloat16)  # P rounded to bf16 before P @ V, as torch's bf16 run does
        jitter = 1 + 1e-3 * torch.randn(p.shape, generator=g, dtype=torch.float64)  # P computed another way
        honest = (bf(p * jitter) @ bf(v)).to(torch.bfloat16)
        assert not metrics.verdict(native, ref, tol)["ok"], "the reference itself fails the case"
        m = metrics.verdict(honest, ref, tol)
        assert not m["ok"]
        native_fails_too(m, honest, native, ref, tol, False)
        assert m["ok"], (seed, m["reason"])  # element by element, 2 to 192 elements failed on these seeds
        wrong = honest.clone()
        wrong.view(-1)[::997] += 0.05
        m = metrics.verdict(wrong, ref, tol)
        native_fails_too(m, wrong, native, ref, tol, False)
        assert not m["ok"] and "further off than 8x its own error there" in m["reason"], m["reason"]


def test_a_kind_of_warning_on_many_passing_cases_is_said_once_with_a_count():
    """New-user trials 26 F3 and 27: one kind of warning per passing case (67 lines "judged against the reference's
    own float16 error") buried everything else; each kind is said once in full, the rest counted with their specs."""
    from ktui.core.ladder.rungs.correctness import collapse_warnings

    w = "judged against the reference's own float16 error: the reference itself fails this case ({})"
    passing = [(f"(1, {n})", w.format(n)) for n in range(10)] + [("(1, 3)", "another kind of warning")]
    out = collapse_warnings(passing)
    assert out[0] == f"spec=(1, 0): {w.format(0)}"
    assert (
        out[1].startswith("the same (judged against the reference's own float16 error") and "on 9 more cases" in out[1]
    )
    assert "spec=(1, 1), (1, 2), (1, 3), (1, 4) and 5 more" in out[1], out[1]
    assert out[2] == "spec=(1, 3): another kind of warning"
    assert len(out) == 3


def test_each_grad_mode_also_runs_on_the_largest_fixed_spec(make_ws, ladder_for):
    """Red team round 27, #5: a SiLU whose autograd.Function training path (taken when ``x.requires_grad``) launches
    a floor grid passed: the grad cases ran on a spec of the cheaper half (at most 127 elements), where one
    program covers the row. Each grad mode also runs on the largest fixed spec now (4,099 elements: the tail past
    4,096 unwritten). Asking the autograd mode (``torch.is_grad_enabled``) is no torch fallback."""
    ref = R / "rt27_silu.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    bad = run(make_ws, ladder_for, "silu", K / "rt27_silu_train_fn_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "grad=requires_grad" in corr_rung.summary and "unwritten" in corr_rung.summary, corr_rung.summary
    ok = good(run(make_ws, ladder_for, "silu", K / "rt27_silu_train_fn_good.py", reference=ref, **checked))
    assert not any("falls back to torch" in w for r in ok.rungs for w in r.warnings), [r.warnings for r in ok.rungs]


def test_an_ordinary_refill_outside_the_inputs_domain_is_left_out_not_failed(make_ws, ladder_for):
    """Red team round 27, #7: the ordinary refills (normal, heavy, shifted) made a fused Adam's second moment
    negative, the reference's sqrt gave NaN, and an honest kernel failed 9 of 13 specs "reference invalid ... set
    allow_nan = True" (the wrong advice: the domain is the issue). They are tried on the reference as the special
    ones are, and left out with one note where it gives NaN; Adam with eps inside the square root still fails."""
    ref = R / "rt27_adam.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    ok = good(run(make_ws, ladder_for, "adam", K / "rt27_adam_good.py", reference=ref, **checked))
    notes = [w for r in ok.rungs for w in r.warnings if "left out" in w and "special float values" not in w]
    assert len(notes) == 1 and "'normal', 'heavy', 'shifted' distributions are left out" in notes[0], notes
    bad = run(make_ws, ladder_for, "adam", K / "rt27_adam_eps_inside_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "reference invalid" not in corr_rung.summary, corr_rung.summary


def test_a_row_vector_is_given_a_strided_innermost_layout(make_ws, ladder_for):
    """Red team round 27, #4: ``x @ w`` with a GEMV path for M = 1 that reads x as contiguous passed: no layout gave
    a (1, K) tensor a non-unit inner stride (its transpose is the same addresses). The transposed layout gives
    such a tensor a stride of 2 along its innermost dimension now, as ``y[:, :, -1]`` of a (1, C, T) tensor has."""
    ref = R / "rt27_mm.py"
    checked = dict(seeds=1, seed=1, distributions=False, rungs=("compile", "run", "correctness"))
    bad = run(make_ws, ladder_for, "mm", K / "rt27_mm_gemv_stride_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "layout=" in corr_rung.summary, corr_rung.summary
    good(run(make_ws, ladder_for, "mm", K / "rt27_mm_gemv_good.py", reference=ref, **checked))


def test_the_extreme_family_holds_whole_rows_of_small_values(make_ws, ladder_for):
    """Red team round 27, #2: ``F.normalize`` written as ``x * rsqrt(sum(x^2) + 1e-12)`` (the eps on the squared
    norm) is off by 16% on rows of 1e-7 and passed: no distribution made a whole row small. The extreme family now
    holds a band of whole rows of N(0, 1) x 10**-U(5, 8)."""
    x = _extreme((48, 64), 3)
    tiny_rows = (x.abs().amax(-1) < 1e-4).nonzero().flatten().tolist()
    assert len(tiny_rows) == 16 and tiny_rows == list(range(tiny_rows[0], tiny_rows[0] + 16)), tiny_rows
    y = _extreme((7, 64), 3)  # fewer rows than the band: its last half
    assert (y.abs().amax(-1) < 1e-4).nonzero().flatten().tolist() == [4, 5, 6]
    ref = R / "rt27_l2norm.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    bad = run(make_ws, ladder_for, "l2norm", K / "rt27_l2norm_epsinside_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    # (the extreme family or, where its values near the max leave the case unjudged, its tiny twin: stop 41)
    assert "dist=extreme" in corr_rung.summary or "dist=tiny" in corr_rung.summary, corr_rung.summary
    good(run(make_ws, ladder_for, "l2norm", K / "rt27_l2norm_good.py", reference=ref, **checked))


def test_on_the_cpu_a_drawn_spec_does_no_more_work_per_element_than_4x_the_tests():
    """New-user trial 27, F1: the CPU's element budget let an O(seq^2) attention draw the benchmark's seq = 4,096
    beside one head (minutes a case in the interpreter). A reference's ``flops`` bounds a drawn spec's flops per
    element to 4x the tests' largest on the CPU; a linear op's draws, and any on a GPU, are as before."""

    class Attention:
        tests = [{"batch": 1, "heads": 2, "seq": s, "dtype": "float16"} for s in (1, 63, 200)]
        benchmarks = [{"batch": 4, "heads": 16, "seq": 4096, "dtype": "bfloat16"}]

        @staticmethod
        def flops(batch: int, heads: int, seq: int, dtype: str) -> int:
            return 2 * batch * heads * seq * seq * 64

    class Linear(Attention):
        @staticmethod
        def flops(batch: int, heads: int, seq: int, dtype: str) -> int:
            return 2 * batch * heads * seq * 64

    for seed in range(1, 8):
        cpu = draw_specs(Attention, Attention.tests, Attention.benchmarks, seed, "cpu", lambda s: True)
        assert cpu and max(s["seq"] for s in cpu) <= 4 * 200, cpu
        lin = draw_specs(Linear, Linear.tests, Linear.benchmarks, seed, "cpu", lambda s: True)
        assert max(s["seq"] for s in lin) >= 4095, lin  # the benchmark's width, as every run reaches it
        gpu = draw_specs(Attention, Attention.tests, Attention.benchmarks, seed, "cuda", lambda s: True)
        assert max(s["seq"] for s in gpu) >= 4095, gpu
