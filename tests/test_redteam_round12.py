"""Red team round 12 (false alarm first): each finding fixed as a mechanism, with a bad kernel, its honest twin and a
test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

import hashlib

import torch

from ktui.core.results import Status

from .test_cases import CASES, CHECKED, K, corr, good, run

R = CASES / "references"


def _problem(path):
    from ktui.worker.problem import Problem

    return Problem(path, path.stem, hashlib.sha256(path.read_bytes()).hexdigest())


# -- F1: the near-duplicate case keeps sorted rows sorted; a reference can declare an input structured ---------------
def test_an_honest_branchless_binary_search_passes_the_near_duplicate_of_sorted_boundaries(make_ws, ladder_for):
    # the red team's failing case: spec=(4099, 4097), boundaries swapped by the near-duplicate case
    opts = dict(reference=R / "rt12_bucketize.py", seed=1365305335, layouts=False, rungs=CHECKED)
    good(run(make_ws, ladder_for, "bucketize", K / "rt12_bucketize_good.py", **opts))
    p = _problem(R / "rt12_bucketize.py")  # and that case's boundaries are still sorted, their interior changed
    from ktui.worker.cases import build_input

    b0, _ = build_input(p, {"spec_index": 4, "seed": 1365305335}, "cpu")
    b1, _ = build_input(p, {"spec_index": 4, "seed": 1365305335, "near_dup": True}, "cpu")
    assert bool((b1[1:] >= b1[:-1]).all()) and 2 <= int((b1 != b0).sum()) <= 8


def test_a_memo_on_sorted_boundaries_still_fails_on_the_near_duplicate(make_ws, ladder_for):
    opts = dict(reference=R / "rt12_bucketize.py", seed=3, layouts=False, fuzz=False, rungs=CHECKED)
    bad = corr(run(make_ws, ladder_for, "bucketize", K / "rt12_bucketize_memo_bad.py", **opts))
    assert bad.status is Status.FAILED and "near-duplicate" in bad.summary, bad.line()
    assert "differ (exact compare)" in bad.summary, bad.summary


CAUSAL = dict(reference=R / "rt12_causal_softmax.py", seed=4, layouts=False, distributions=False, fuzz=False)


def test_a_causal_mask_computed_from_the_indices_still_fails_on_the_near_duplicate_of_its_sorted_mask_rows(
    make_ws, ladder_for
):
    # the mask's rows are sorted (ones, then zeros): the near-duplicate moves a row's boundary instead of swapping
    bad = corr(run(make_ws, ladder_for, "causal", K / "rt12_causal_index_mask_bad.py", rungs=CHECKED, **CAUSAL))
    assert bad.status is Status.FAILED and "near-duplicate" in bad.summary, bad.line()


def test_a_causal_softmax_that_loads_its_mask_passes_the_same_cases(make_ws, ladder_for):
    good(run(make_ws, ladder_for, "causal", K / "rt12_causal_softmax_good.py", rungs=CHECKED, **CAUSAL))


def test_boundaries_declared_structured_are_left_as_generated_and_the_values_get_every_distribution(
    make_ws, ladder_for
):
    from ktui.worker.cases import build_input

    ref = R / "rt12_bucketize_declared.py"
    p = _problem(ref)
    b0, v0 = build_input(p, {"spec_index": 4, "seed": 2}, "cpu")
    for case in ({"dist": "heavy"}, {"near_dup": True}, {"dist": "extreme"}):
        b, v = build_input(p, {"spec_index": 4, "seed": 2, **case}, "cpu")
        assert torch.equal(b, b0) and not torch.equal(v, v0), case
    opts = dict(reference=ref, seed=5, layouts=False, fuzz=False, rungs=CHECKED)
    good(run(make_ws, ladder_for, "bucketize", K / "rt12_bucketize_good.py", **opts))


def test_a_structured_inputs_entry_the_data_does_not_have_is_the_references_error(tmp_path):
    import pytest

    from ktui.worker.errors import ProblemError
    from ktui.worker.fuzz import describe_for_run

    bad = tmp_path / "bucketize_bad_decl.py"
    bad.write_text(
        (R / "rt12_bucketize_declared.py").read_text().replace("structured_inputs = (0,)", "structured_inputs = (2,)")
    )
    with pytest.raises(ProblemError, match=r"structured_inputs names 2, which data does not have"):
        describe_for_run(_problem(bad), "cpu", None)


def test_near_duplicates_keep_sorted_rows_sorted_and_change_their_interior():
    from ktui.worker.special import SAMPLE_STRIDES, near_duplicate_, sorted_rows

    g = torch.Generator().manual_seed(7)
    boundaries = torch.randn(4097).sort().values
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64), torch.randint(0, 5, (1000,)).cumsum(0)])
    mask = torch.ones(3, 65, 65, dtype=torch.bool).tril()
    indptr_sum = int(indptr.sum())
    for t in (boundaries, indptr, mask):
        assert sorted_rows(t)
        before = t.clone()
        near_duplicate_(t, g)
        changed = int((t != before).sum())
        assert 2 <= changed <= 8, (t.dtype, changed)
        rows, old = t.reshape(-1, t.shape[-1]), before.reshape(-1, t.shape[-1])
        assert sorted_rows(t) and torch.equal(rows[:, [0, -1]], old[:, [0, -1]])  # the ends of every row kept
        flat, ofl = t.reshape(-1), before.reshape(-1)
        for s in SAMPLE_STRIDES[:6]:
            assert torch.equal(flat[::s], ofl[::s])  # the strided samples a memo takes
    assert int(indptr.sum()) == indptr_sum  # integers: one up, one down by the same amount
    assert bool(mask.any(-1).all())  # no mask row lost its last True
    x = torch.randn(64, 64)  # an unsorted tensor: pairs swapped, the same values
    before = x.clone()
    near_duplicate_(x, g)
    assert not torch.equal(x, before) and torch.equal(x.reshape(-1).sort().values, before.reshape(-1).sort().values)


# -- W1: integer and bool inputs get other values in the range they span, broadcast ones too -------------------------
ROPE = R / "rt12_rope.py"


# the red team's reference's copy with only native and indices inputs: the finding needs no other distribution
# (107 s for both kernels with them all); one seed, no repeat, no near-duplicates (which would also catch it)
ROPE_OPTS = dict(
    reference=R / "rt12_rope_ids.py", seed=3, layouts=False, fuzz=False, seeds=1, repeat=False, near_duplicates=False
)


def test_a_rope_that_takes_the_row_as_the_position_fails_on_other_position_ids(make_ws, ladder_for):
    from .test_redteam_round10 import _describe

    assert "indices" in _describe(ROPE, 3)["distributions"]  # the red team's reference offers it
    bad = corr(run(make_ws, ladder_for, "rope", K / "rt12_rope_row_as_pos_bad.py", rungs=CHECKED, **ROPE_OPTS))
    assert bad.status is Status.FAILED and "dist=indices" in bad.summary, bad.line()
    assert "elements outside" in bad.summary or "off by more than" in bad.summary, bad.summary


def test_a_rope_that_reads_its_position_ids_passes_with_them_varied(make_ws, ladder_for):
    from ktui.core.ladder import LadderOptions
    from ktui.core.ladder.cases import make_cases
    from ktui.worker.fuzz import describe_for_run

    opts = {k: v for k, v in ROPE_OPTS.items() if k not in ("reference", "seed")}
    plan = make_cases(describe_for_run(_problem(R / "rt12_rope_ids.py"), "cpu", None), LadderOptions(**opts), 3)
    assert sum(c.get("dist") == "indices" for c in plan) >= 2, plan  # the varied ids are in the plan it passes
    good(run(make_ws, ladder_for, "rope", K / "rt12_rope_good.py", rungs=CHECKED, **ROPE_OPTS))


def test_indices_vary_integer_and_bool_inputs_within_their_range_and_keep_a_broadcast_one_broadcast():
    from ktui.worker.special import vary_indices_

    g = torch.Generator().manual_seed(3)
    pos = torch.arange(129).unsqueeze(0).expand(4, -1)  # Hugging Face's prefill position ids
    vary_indices_(pos, g)
    assert pos.stride() == (0, 1) and not torch.equal(pos[0], torch.arange(129))
    assert int(pos[0, 0]) == 0 and int(pos[0, -1]) == 128 and bool((pos[0].diff() >= 0).all())  # sorted, ends kept
    perm = torch.randperm(100, generator=g)
    before = perm.clone()
    vary_indices_(perm, g)  # distinct ids stay distinct: the same values, another order
    assert not torch.equal(perm, before) and torch.equal(perm.sort().values, torch.arange(100))
    ids = torch.randint(3, 9, (40, 7), generator=g)
    before = ids.clone()
    vary_indices_(ids, g)
    assert not torch.equal(ids, before) and int(ids.min()) >= 3 and int(ids.max()) <= 8
    mask = torch.rand(8, 33, generator=g) < 0.3
    before = mask.clone()
    vary_indices_(mask, g)  # each row permuted: as many True per row
    assert not torch.equal(mask, before) and torch.equal(mask.sum(-1), before.sum(-1))
    x = torch.randn(5, 5)
    before = x.clone()
    vary_indices_(x, g)
    assert torch.equal(x, before)  # floats as generated


# -- W2: integer extremes on the fuzzed specs of the largest sizes too ------------------------------------------------
# the red team's reference's copy with only native and intrange inputs; fuzzed specs on (intrange meets them there)
I8MM_OPTS = dict(reference=R / "rt12_i8mm_ints.py", seed=3, layouts=False, seeds=1, repeat=False, near_duplicates=False)


def test_an_int8_gemm_accumulating_in_fp32_fails_on_integer_extremes_at_a_fuzzed_k_of_4096(make_ws, ladder_for):
    bad = corr(run(make_ws, ladder_for, "i8mm", K / "rt12_i8mm_fp32_acc_bad.py", rungs=CHECKED, **I8MM_OPTS))
    assert bad.status is Status.FAILED and "dist=intrange" in bad.summary and "fuzzed(" in bad.summary, bad.line()
    assert "differ (exact compare)" in bad.summary, bad.summary


def test_an_int8_gemm_accumulating_in_int32_passes_the_same_cases(make_ws, ladder_for):
    good(run(make_ws, ladder_for, "i8mm", K / "rt12_i8mm_good.py", rungs=CHECKED, **I8MM_OPTS))


def test_intrange_runs_on_the_fuzzed_spec_of_each_fields_largest_value_with_a_band_near_the_top():
    from ktui.core.ladder import LadderOptions
    from ktui.core.ladder.cases import make_cases
    from ktui.worker.fuzz import describe_for_run
    from ktui.worker.special import int_range

    for seed in (1, 2, 3):
        d = describe_for_run(_problem(R / "rt12_i8mm_ints.py"), "cpu", seed)
        plan = make_cases(d, LadderOptions(seeds=1, layouts=False), seed)
        ks = [c["spec"]["k"] for c in plan if c.get("dist") == "intrange" and c.get("spec")]
        assert max(ks) == max(d["tests"][i]["k"] for i in d["fuzzed"]) >= 4095, (seed, ks)
    g = torch.Generator().manual_seed(1)
    a = int_range(torch.int8, (1, 4096), g, torch.device("cpu"), high_band=True)  # a row of one: all of it high
    b = int_range(torch.int8, (4096, 64), g, torch.device("cpu"), high_band=True)
    assert int((a < 96).sum()) <= 2  # but the planted minimum (and maximum)
    assert (a.int() @ b.int()).max() > 1 << 24  # partial sums past fp32's exact integers
    assert int(a.min()) == -128 and int(b.max()) == 127  # the dtype's edges still planted


# -- W3: an fp16 accumulator rounds per k-step of 16 in the interpreter, as HGMMA.64xNx16.F16 does ------------------
QK16 = dict(reference=R / "rt12_qk16.py", seed=2, layouts=False, distributions=False, seeds=1, repeat=False)


def test_attention_scores_with_an_fp16_accumulator_fail_on_the_cpu(make_ws, ladder_for):
    bad = corr(run(make_ws, ladder_for, "qk16", K / "rt12_qk16_f16_acc_bad.py", rungs=CHECKED, **QK16))
    assert bad.status is Status.FAILED and "off by more than 8 u |ref|" in bad.summary, bad.line()


def test_attention_scores_with_an_fp32_accumulator_pass(make_ws, ladder_for):
    good(run(make_ws, ladder_for, "qk16", K / "rt12_qk16_good.py", rungs=CHECKED, **QK16))


def test_the_fp16_accumulator_rounds_after_every_16_products():
    import numpy as np

    from ktui.worker.interp_fixes import f16_accumulate

    a = np.full((1, 32), 1.0, dtype=np.float16)
    b = np.full((32, 1), 2.0**-11, dtype=np.float16)  # each product half an fp16 ulp of 1.0
    acc = np.ones((1, 1), dtype=np.float16)
    # one rounding at the end: 1 + 32 * 2**-11 = 1.015625 (exact in fp16); per 16 products: 1 + 2**-7 twice, the same
    assert float(f16_accumulate(a, b, acc)[0, 0]) == 1.015625
    b = np.full((32, 1), 2.0**-15, dtype=np.float16)  # 16 of them are 2**-11: half an ulp, a tie, rounded to even
    assert float(f16_accumulate(a, b, acc)[0, 0]) == 1.0  # per step: lost twice (the GPU's fp16 accumulator)
    assert float((acc.astype(np.float32) + (a.astype(np.float32) @ b.astype(np.float32))).astype(np.float16)[0, 0]) > 1
