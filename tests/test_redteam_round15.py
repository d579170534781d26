"""Red team round 15 (a fresh helper, from the README and the code): each way through or false alarm as a case
kernel, its twin where it has one, and the verdict asserted.

- M1 (miss): a launch cache keyed by ``numel`` served (2, 64)'s block to (1, 128); every spec of a run had its own
  element count. Every run now also draws a test spec reshaped to as many elements (``fuzz._draw_reshaped``).
- F1 (false alarm): Triton's fused-softmax tutorial (``kernel.warmup(...)``, ``n_regs``, ``metadata.shared``)
  failed run with an AttributeError on None under the interpreter: now ``needs a GPU``, saying why.
- F2 (false alarm): an int64 offsets tensor refilled over its whole range (``intrange``) made the reference's
  ``segment_reduce`` segfault in the judge, which failed the version; and the benchmark rung's fresh inputs could
  not take a jagged draw of another length. Trials of the integer distributions now run in a forked child on the
  CPU, and ``copy_into`` resizes an input the seed changes the length of.
- F3 (false alarm): ``indices`` reversed a batch-of-one's offsets ``[0, L]``: rows of two are sorted rows too.
- F4 (false alarm): fp8 inputs failed run ("le_cpu" not implemented for Float8_e4m3fn): compared as float32.
- M2 (the GPU's error, not the CPU's): an fp8 ``tl.dot`` at its defaults accumulates in reduced precision on sm_90,
  which the interpreter computes exactly: the dumps rung says so from the TTGIR.
"""

from __future__ import annotations

import random

import torch

from ktui.core.inspect.sass import ttgir_flags
from ktui.core.results import Status
from ktui.worker.fuzz import _draw_reshaped
from ktui.worker.special import sorted_rows, vary_indices_

from .test_cases import CASES, CHECKED, K, corr, good, run

REF = CASES / "references"


def test_a_launch_cache_keyed_by_numel_fails_on_the_reshaped_spec(make_ws, ladder_for):
    ref = REF / "rt15_softmax.py"
    bad = corr(
        run(
            make_ws,
            ladder_for,
            "rt15_softmax",
            K / "rt15_numel_cache_bad.py",
            reference=ref,
            seed=1,
            rungs=CHECKED,
            distributions=False,
            layouts=False,
        )
    )
    assert bad.status is Status.FAILED and "unwritten" in bad.summary, bad.summary
    failing = [s["label"] for s in bad.figures["specs"] if not s["ok"]]
    assert failing and all(label.startswith("fuzzed(") for label in failing), failing
    good(
        run(
            make_ws,
            ladder_for,
            "rt15_softmax",
            K / "rt15_shape_cache_good.py",
            reference=ref,
            seed=1,
            rungs=CHECKED,
            distributions=False,
            layouts=False,
        )
    )


def test_the_reshaped_draw_keeps_the_product_and_widens_the_innermost_field():
    tests = [{"rows": 1, "cols": 1}, {"rows": 7, "cols": 127}, {"rows": 2, "cols": 1023}]
    seen = set()
    for seed in range(40):
        spec = _draw_reshaped(random.Random(seed), tests, {}, None)
        assert spec is not None
        base = next(t for t in tests if t["rows"] * t["cols"] == spec["rows"] * spec["cols"] and t != spec)
        assert spec["cols"] > base["cols"] and spec["cols"] % base["cols"] == 0
        seen.add((spec["rows"], spec["cols"]))
    assert seen == {(1, 889), (1, 2046)}  # 7 = 7 x 1 (a prime gives its whole value), 2 = 2 x 1
    # a spec with no leading field of 2 or more, or bounds the product cannot meet: nothing drawn
    assert _draw_reshaped(random.Random(0), [{"rows": 1, "cols": 64}, {"n": 9}], {}, None) is None
    assert _draw_reshaped(random.Random(0), [{"rows": 4, "cols": 64}], {"cols": (1, 128)}, None) is None
    assert _draw_reshaped(random.Random(0), [{"rows": 4, "cols": 64}], {}, {"rows"}) is None


def test_the_fused_softmax_tutorial_needs_a_gpu_under_the_interpreter(make_ws, ladder_for):
    res = run(
        make_ws,
        ladder_for,
        "rt15_softmax",
        K / "rt15_tutorial_softmax_good.py",
        reference=REF / "rt15_softmax.py",
        rungs=CHECKED,
    )
    r = res.rung("run")
    assert r is not None and r.status is Status.SKIPPED, r.line() if r else res.rungs
    assert r.summary.startswith("needs a GPU: softmax_kernel.warmup() compiles and loads the kernel on a GPU"), (
        r.summary
    )
    assert res.ok and res.rung("correctness").status is Status.SKIPPED


def test_a_jagged_reference_that_crashes_on_intrange_blames_no_version(make_ws, ladder_for):
    """F2: the default distributions include ``intrange``, on which torch's segment_reduce segfaults: the trial
    (in a child) leaves the distribution out; the benchmark rung's verified stretch takes inputs of other lengths."""
    res = good(
        run(
            make_ws,
            ladder_for,
            "rt15_jagged",
            K / "rt13_jagged_sum_good.py",
            reference=REF / "rt15_jagged.py",
            seed=1,
            rungs=("compile", "run", "correctness", "benchmark"),
        )
    )
    notes = [w for w in res.rung("run").warnings if w.startswith("the 'intrange' distribution is left out")]
    assert notes and "the reference crashed (SIGSEGV) on them" in notes[0], res.rung("run").warnings
    bench = res.rung("benchmark")
    assert bench is not None and "Verified instead" in bench.summary, bench.line()


def test_indices_keep_a_batch_of_one_offsets_sorted(make_ws, ladder_for):
    g = torch.Generator().manual_seed(1)
    for seed in range(8):
        g.manual_seed(seed)
        offsets = torch.tensor([0, 7])
        vary_indices_(offsets, g)
        assert offsets.tolist() == [0, 7]
    assert sorted_rows(torch.tensor([0, 7])) and sorted_rows(torch.tensor([[5, 2], [9, 1]]))
    assert not sorted_rows(torch.tensor([[1, 2], [9, 1]]))
    good(
        run(
            make_ws,
            ladder_for,
            "rt15_jagged_indices",
            K / "rt13_jagged_sum_good.py",
            reference=REF / "rt15_jagged_indices.py",
            seed=1,
            rungs=CHECKED,
        )
    )


def test_fp8_inputs_are_varied_and_checked(make_ws, ladder_for):
    x = torch.tensor([[0.5, 1.0, 2.0], [3.0, 1.0, -1.0]]).to(torch.float8_e4m3fn)
    assert not sorted_rows(x) and sorted_rows(x[:1])
    c = corr(
        good(
            run(
                make_ws,
                ladder_for,
                "rt15_fp8_mm",
                K / "rt15_fp8_mm_good.py",
                reference=REF / "rt15_fp8_mm.py",
                seed=1,
                rungs=CHECKED,
            )
        )
    )
    assert c.figures["cases"] >= 20 and any("dist=" in s["worst_case"] or s["cases"] > 1 for s in c.figures["specs"])


def test_an_fp8_dot_at_its_defaults_is_flagged_in_dumps(make_ws, ladder_for):
    res = run(
        make_ws,
        ladder_for,
        "rt15_fp8_mm",
        K / "rt15_fp8_mm_default_acc.py",
        reference=REF / "rt15_fp8_mm.py",
        seed=1,
        rungs=("compile", "dumps"),
    )
    d = res.rung("dumps")
    assert d is not None and d.status is Status.OK, d.line() if d else res.rungs
    flagged = [w for w in d.warnings if "an fp8 tl.dot accumulates in reduced precision" in w]
    assert flagged and "never promoted to full float32 (Triton's default on sm_90)" in flagged[0], d.warnings
    assert "the CPU interpreter sums it in exact float32" in flagged[0]
    promoted = run(
        make_ws,
        ladder_for,
        "rt15_fp8_mm",
        K / "rt15_fp8_mm_good.py",
        reference=REF / "rt15_fp8_mm.py",
        seed=1,
        rungs=("compile", "dumps"),
        version="v2",
    )
    assert not any("fp8 tl.dot" in w for w in promoted.rung("dumps").warnings)
    assert ttgir_flags("%0 = ttng.warp_group_dot %a, %b, %c {maxNumImpreciseAcc = 128 : i32}", False) == [
        "an fp8 tl.dot accumulates in reduced precision: its accumulator is promoted to full float32 every 128 "
        "products (maxNumImpreciseAcc in the TTGIR); pass max_num_imprecise_acc=0, or a K-chunk such as 128, to "
        "promote it"
    ]
    assert ttgir_flags("{maxNumImpreciseAcc = 0 : i32}", True) == []


def test_the_finiteness_checks_take_fp8_tensors():
    """CI of 5255a7c: an fp8 GEMM's run failed "isfinite not implemented for 'Float8_e4m3fn'": the near-duplicate's
    and the reference cast watch's finiteness checks read fp8 in float32 now, and so does the overflow rounding."""
    from ktui.worker.compare import overflow_rounded
    from ktui.worker.special import NonfiniteCasts, all_finite, near_duplicate_

    t = torch.tensor([[0.5, 1.0, 2.0, 3.0], [4.0, -1.0, 6.0, 0.25]]).to(torch.float8_e4m3fn)
    assert all_finite(t) and not all_finite(torch.tensor([1.0, float("nan")]).to(torch.float8_e4m3fn))
    near_duplicate_(t, torch.Generator().manual_seed(1))
    with NonfiniteCasts() as casts:
        torch.tensor([1.0, float("nan")]).to(torch.float8_e4m3fn).to(torch.int8)
    assert "int8" in casts.seen
    truth = torch.tensor([1.0, 1000.0], dtype=torch.float64)
    assert torch.equal(overflow_rounded(truth.to(torch.float8_e4m3fn), truth), truth)  # e4m3fn has no inf
