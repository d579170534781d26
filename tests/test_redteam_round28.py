"""Red team round 27's open finding (#6), round 28's and new-user trial 28's: each fixed as a mechanism, with a bad
kernel, its honest twin and a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

import hashlib

import torch

from ktui.core.ladder.cases import make_cases
from ktui.core.ladder.context import LadderOptions
from ktui.core.results import Status
from ktui.worker.cases import build_input, case_label, float_input_paths
from ktui.worker.fuzz import _special_trials, describe_for_run
from ktui.worker.problem import Problem
from ktui.worker.special import near_duplicate_, refill_special

from .test_cases import CASES, K, good, run

R = CASES / "references"


def _problem(name: str) -> Problem:
    path = R / f"{name}.py"
    return Problem(path, name, hashlib.sha256(path.read_bytes()).hexdigest())


def _masked(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    t = torch.empty(shape)
    refill_special(t, "masked", torch.Generator().manual_seed(seed), False, torch.Generator().manual_seed(seed + 1))
    return t


def test_a_special_distribution_invalid_on_every_input_is_kept_on_the_inputs_it_is_valid_on():
    """Red team round 27, #6: attention with an additive mask (q, k, v, mask): ``masked`` refilled q, k and v too, the
    reference gave NaN, and the distribution was left out of the problem, so the mask only ever held
    generate_input's right padding. It is tried input by input now and kept on the mask alone (``in[3]``); its
    cases say so in their label and refill that input only."""
    problem = _problem("rt27_attnmask")
    trials = _special_trials(problem, "cpu")
    assert trials.reasons["masked"] == "" and trials.inputs["masked"] == ["[3]"], trials
    assert trials.reasons["nonfinite"], trials  # +inf in a mask: no kept input makes it valid
    assert "nonfinite" not in trials.inputs, trials
    info = describe_for_run(problem, "cpu", None)
    assert "masked" in info["distributions"] and info["distribution_inputs"] == {"masked": ["[3]"]}, info
    assert any("refills in[3] only" in n for n in info.get("distribution_notes", [])), info
    cases = [c for c in make_cases(info, LadderOptions(seed=1), 1) if c.get("dist") == "masked"]
    assert cases and all(c.get("inputs") == ["[3]"] for c in cases), cases
    data = build_input(problem, cases[0], "cpu")
    native = build_input(problem, {k: v for k, v in cases[0].items() if k not in ("dist", "inputs")}, "cpu")
    for a, b in zip(data[:3], native[:3], strict=True):
        assert torch.equal(a, b)  # q, k, v as generated
    assert not torch.equal(data[3], native[3]) and bool(torch.isinf(data[3]).any())
    assert "dist=masked(in[3])" in case_label("(2, 2, 64, 16)", cases[0]), case_label("(2, 2, 64, 16)", cases[0])
    # a problem of one float input gets no per-input trial (the whole-input one said it)
    assert float_input_paths(_problem("rt18_masked_softmax"), torch.zeros(2, 3)) == [""]


def test_the_masked_distribution_masks_a_leading_run_in_every_mask_of_two_rows_or_more():
    """A random run of -inf started at the first column once in ``cols - 1`` rows, and a mask of [batch, 1, 1, seq]
    has ``batch`` rows: every row now takes one of four kinds (-1e9, a leading run, a trailing run, a random run),
    two rows hold the first two, four rows all; no row is ever all -inf."""
    for seed in range(30):
        for rows, cols in ((2, 40), (3, 17), (8, 64)):
            m = _masked((rows, 1, 1, cols), seed).reshape(rows, cols)
            inf = torch.isinf(m)
            assert not bool(inf.all(1).any()), (seed, rows)
            assert int(inf[:, 0].sum()) >= 1, (seed, rows)  # a left-padded row
            assert int((m == -1e9).all(1).sum()) >= 1, (seed, rows)
            if rows >= 4:
                assert int((inf[:, -1] & ~inf[:, 0]).sum()) >= 1, (seed, rows)  # a right-padded one


def test_a_near_duplicate_of_a_mask_keeps_each_rows_count_of_minus_inf():
    """A right-padded mask's rows are sorted (0, 0, -inf, ...): the near-duplicate's moves within a sorted row had
    infinite room beside a -inf, made a short row's kept key -inf, the row all -inf and the reference NaN, and the
    honest attention failed "reference invalid" on the near-duplicate case. No move is made beside a non-finite
    value now, and an unsorted float tensor holding -inf or NaN swaps within its rows (as integers do)."""
    g = torch.Generator().manual_seed(0)
    for seed in range(20):
        keep = torch.arange(64)[None, :] < torch.randint(1, 4, (6,), generator=g)[:, None]
        for mask in (torch.where(keep, 0.0, float("-inf")), torch.where(keep[:, torch.randperm(64)], 0.0, -1e9)):
            mask = mask.masked_fill(mask == -1e9, float("-inf"))
            mask[:, 5] = torch.randn(6, generator=g)  # a finite column: something left to swap
            before = torch.isinf(mask).sum(1)
            dup = mask.clone()
            near_duplicate_(dup, torch.Generator().manual_seed(seed))
            assert torch.equal(torch.isinf(dup).sum(1), before), seed
        sorted_mask = torch.where(keep, 0.0, float("-inf"))  # right padding alone: sorted rows, counts kept
        dup = sorted_mask.clone()
        near_duplicate_(dup, torch.Generator().manual_seed(seed))
        assert torch.equal(torch.isinf(dup).sum(1), torch.isinf(sorted_mask).sum(1)), seed
    unsorted = torch.randn(6, 64, generator=g).masked_fill(torch.rand(6, 64, generator=g) < 0.5, float("-inf"))
    dup = unsorted.clone()
    near_duplicate_(dup, torch.Generator().manual_seed(2))
    assert not torch.equal(dup, unsorted) and torch.equal(torch.isinf(dup).sum(1), torch.isinf(unsorted).sum(1))
    x = torch.randn(6, 64, generator=g)  # finite floats still swap across rows (row sums change)
    y = x.clone()
    near_duplicate_(y, torch.Generator().manual_seed(1))
    assert not torch.equal(y, x) and torch.equal(y.flatten().sort().values, x.flatten().sort().values)


def test_flash_attention_without_m_safe_fails_on_a_left_padded_mask(make_ws, ladder_for):
    """Red team round 27, #6: a flash attention whose running maximum is -inf while every key seen so far is masked
    gives NaN on a fully masked first key block (left padding): it passed, no case ever masking a first block. It
    fails now on the masked cases of the mask alone; FA-2's m_safe twin passes."""
    ref = R / "rt27_attnmask.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    good(run(make_ws, ladder_for, "attnmask", K / "rt27_attnmask_good.py", reference=ref, **checked))
    bad = run(make_ws, ladder_for, "attnmask", K / "rt27_attnmask_nan_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "dist=masked(in[3])" in corr_rung.summary and "NaN" in corr_rung.summary, corr_rung.summary


def test_an_fp16_answer_of_inf_where_the_truth_rounds_to_inf_is_exact():
    """New-user trial 28, F2: an honest fp16 GEMM gave inf where the float64 truth (68110.3) rounds to inf in fp16,
    and failed "NaN/inf where the reference differs" against the fp16 reference's 65344 (finite only because it
    rounded ``w * scale`` first); which version failed depended on the seed. Where the truth rounds to +-inf in the
    output's dtype, that infinity is the correctly rounded answer; a finite answer there is still judged against
    the finite truth, and an inf where the truth rounds to a finite value still fails."""
    from ktui.worker.compare import overflow_rounded
    from ktui.worker.metrics import verdict
    from ktui.worker.tolerance import Tolerance

    truth = torch.tensor([1.5, -70000.0, 68110.3, 65504.0, 30.0], dtype=torch.float64)
    out = truth.to(torch.float16)  # [1.5, -inf, inf, 65504, 30]
    assert torch.isinf(out[1:3]).all()
    tol = Tolerance("allclose", atol=1e-3, rtol=1e-3)
    assert not verdict(out, truth, tol)["ok"]  # as before: "NaN/inf where the reference differs"
    ref = overflow_rounded(out, truth)
    assert ref[1].item() == float("-inf") and ref[2].item() == float("inf") and ref[3].item() == 65504.0
    assert verdict(out, ref, tol)["ok"]
    wrong = out.clone()
    wrong[3] = float("inf")  # 65504's truth is finite in fp16: inf there is wrong
    wrong[2] = 60000.0  # a finite answer where the truth overflows: judged against 68110.3
    ref = overflow_rounded(wrong, truth)
    assert ref[2].item() == 68110.3 and ref[3].item() == 65504.0
    v = verdict(wrong, ref, tol)
    assert not v["ok"] and v["nonfinite_mismatch"] == 1, v
    # float64 and integer outputs are left alone
    assert overflow_rounded(truth.clone(), truth) is truth


def test_a_launch_inside_a_cuda_device_guard_runs_on_the_cpu(make_ws, ladder_for):
    """Red team round 28, #12: an honest SiLU launching inside ``with torch.cuda.device(x.device):`` (and an NVTX
    range, the stream synchronized) failed run on the CPU: "Expected a cuda device, but got: cpu". Where there is no
    GPU, torch's device guards, streams, synchronize and NVTX ranges do nothing, and the run says so."""
    ref = R / "rt28_silu.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    res = good(run(make_ws, ladder_for, "silu", K / "rt28_silu_cudadevice_good.py", reference=ref, **checked))
    said = [w for r in res.rungs for w in r.warnings if "did nothing" in w]
    assert said and "device/stream guard" in said[0] and "current_stream" in said[0], [r.warnings for r in res.rungs]


def test_a_float_to_int_conversion_saturates_under_the_interpreter_as_on_the_gpu(make_ws, ladder_for):
    """Red team round 28, #3: an honest int8 quantizer (``rint(x / s).to(tl.int32)``, clamped in integers) failed 8
    of 17 specs on the CPU, "got -128, expected 127": numpy's ``astype`` gives INT_MIN for NaN, +-inf and values past
    the range, where sm_90's ``cvt.rzi`` saturates and gives 0 for NaN (ktui's own PTX of the launch). The
    interpreter's float-to-integer casts saturate now."""
    import numpy as np
    import triton.language as tl

    from ktui.worker.interp_fixes import _float_to_int

    x = np.array([100.7, -3.9, np.inf, -np.inf, np.nan, 3e10, -3e10], dtype=np.float32)
    assert _float_to_int(x, tl.int32).tolist() == [100, -3, 2**31 - 1, -(2**31), 0, 2**31 - 1, -(2**31)]
    assert _float_to_int(x, tl.int8).tolist() == [100, -3, 127, -128, 0, 127, -128]
    assert _float_to_int(x, tl.uint8).tolist() == [100, 0, 255, 0, 0, 255, 0]
    ref = R / "rt28_quant_rowscale.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    good(run(make_ws, ladder_for, "quant", K / "rt28_quant_rowscale_good.py", reference=ref, **checked))


def test_bf16_atomics_run_under_the_interpreter(make_ws, ladder_for):
    """Red team round 28, #1: an honest bf16 scatter-add (``tl.atomic_add`` of bf16 rows, as an embedding backward
    makes) failed run on the CPU, "InterpreterError: ValueError('Unsupported data type')": the interpreter has no bf16
    atomics where sm_90 has ``atom.add.noftz.bf16``. They run now, lane by lane at each address, each sum rounded
    once to bf16; the values read come back."""
    import numpy as np

    from ktui.worker.interp_bf16 import bf16_to_f32, f32_to_bf16
    from ktui.worker.interp_fixes import bf16_atomic_rmw

    cells = f32_to_bf16(np.array([1.0, 256.0], dtype=np.float32))
    base = cells.ctypes.data
    ptrs = np.array([base, base, base + 2, base], dtype=np.uint64)
    vals = f32_to_bf16(np.array([0.5, 0.25, 1.0, 8.0], dtype=np.float32))
    old = bf16_atomic_rmw("add", ptrs, vals, np.array([True, True, True, False]))
    assert bf16_to_f32(old).tolist() == [1.0, 1.5, 256.0, 0.0]  # each lane read what the lane before left
    assert bf16_to_f32(cells).tolist() == [1.75, 256.0]  # 256 + 1 rounds to 256 in bf16 (8 bits)
    old = bf16_atomic_rmw("max", ptrs[:1], f32_to_bf16(np.array([3.0], dtype=np.float32)), np.array([True]))
    assert bf16_to_f32(cells).tolist() == [3.0, 256.0] and bf16_to_f32(old).tolist() == [1.75]
    # the run rung (where it failed) passes; its correctness verdict is the low-precision accumulator's (a bf16
    # atomic sum rounds at each add: 4% of a spec's elements past 8 u |ref| against torch's CPU index_add_), open
    ref = R / "rt28_scatter_bf16.py"
    res = run(
        make_ws,
        ladder_for,
        "scatter",
        K / "rt28_scatter_bf16_good.py",
        reference=ref,
        seeds=1,
        seed=1,
        layouts=False,
        fuzz=False,  # (the run rung's cases on the reference's specs: each bf16 atomic runs lane by lane, and the
        distributions=False,  # fuzzed and distribution cases took this test to 180 s, past CI's 300 s beside others)
        near_duplicates=False,
        rungs=("compile", "run"),
    )
    run_rung = res.rung("run")
    assert run_rung is not None and run_rung.status is Status.OK, [r.line() for r in res.rungs]


def test_a_benchmark_dtype_no_test_has_is_checked_on_test_sizes(make_ws, ladder_for):
    """Red team round 28, #7: tests in float32, the benchmark in bf16 (as the kernel is used): a 16-bit path that
    left the last n % 8 elements unwritten passed, no checked case running bf16. Fuzz draws the smallest and the
    largest test spec with each benchmark value of a str or bool field that no test has."""
    from ktui.worker.fuzz import _draw_bench_values

    tests = [{"n": n, "dtype": "float32"} for n in (1, 127, 1025, 4099)]
    drawn = _draw_bench_values(tests, [{"n": 1 << 24, "dtype": "bfloat16"}])
    assert drawn == [{"n": 1, "dtype": "bfloat16"}, {"n": 4099, "dtype": "bfloat16"}], drawn
    assert _draw_bench_values(tests, [{"n": 1 << 24, "dtype": "float32"}]) == []
    assert _draw_bench_values([{"m": 1, "bias": False}], [{"m": 9, "bias": True}]) == [{"m": 1, "bias": True}]
    ref = R / "rt28_scale_bench_dtype.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    good(run(make_ws, ladder_for, "axpb", K / "rt28_scale_bench_dtype_good.py", reference=ref, **checked))
    bad = run(make_ws, ladder_for, "axpb", K / "rt28_scale_bench_dtype_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "bf16" in corr_rung.summary and "unwritten" in corr_rung.summary, corr_rung.summary


def test_a_kernel_only_the_benchmark_spec_launches_is_named(make_ws, ladder_for):
    """Red team round 28, #2 and #4: a scan along dim 0 whose chunked path (past 8,192 rows) sets the carry instead of
    adding to it passed on the CPU, whose drawn sizes stay within a budget; the dumps rung compiled that kernel for
    the benchmark's (32768, 4096) unremarked. A kernel the dumps' spec launches that no checked case launched is
    named now (the case stays unchecked on the CPU: a GPU run draws up to the benchmark's sizes)."""
    from ktui.core.ladder.rungs.dumps import unchecked_kernels

    seen = [{"kernel": "scan_one"}]
    said = unchecked_kernels(seen, [{"kernel": "scan_chunked"}, {"kernel": "scan_one"}], {"t": 32768, "c": 4096})
    assert said == [
        "scan_chunked is launched at spec=(32768, 4096) only: no checked case ran it (a path past the checked "
        "sizes; on the CPU the drawn sizes stay within a budget): check it on a GPU, or add a test spec that takes it"
    ], said
    assert unchecked_kernels([], [{"kernel": "scan_chunked"}], {}) == []  # no run rung in this ladder
    ref = R / "rt28_cumsum0.py"
    opts = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness", "dumps"))
    res = run(make_ws, ladder_for, "cumsum", K / "rt28_cumsum0_bad.py", reference=ref, **opts)
    dumps = res.rung("dumps")
    assert dumps is not None and any("scan_chunked is launched at spec=(32768, 4096" in w for w in dumps.warnings), [
        r.line() for r in res.rungs
    ]


def test_a_few_element_output_gets_more_native_samples():
    """Red team round 28, #11: an honest blocked fp32 sum into a 0-d output (one program per 4,096 elements, tl.sum,
    tl.atomic_add) failed the shifted rows "9.92x what the reference computed in float32 gets": two samples of one
    element's rounding error are two draws of a wide distribution, torch's was lucky, and the block order's error
    passed 8x torch's in 47 of 200 such vectors. An output of at most 16 elements is measured over 8 samples."""
    from ktui.worker import native
    from ktui.worker.problem import _map

    g = torch.Generator().manual_seed(3)
    x = torch.randn(4099, generator=g, dtype=torch.float64)
    x[:2049] += 150.0
    x[2049:] -= 150.0
    x32 = x.float()
    truth, e = x32.double().sum(), x32.sum()
    calls: list[int] = []

    def run_native(d):
        calls.append(1)
        return d.sum()

    errs = native.native_errors(run_native, _map, x32, e, truth, seed=5)
    assert native.FEW_RUNS == 8 and len(calls) == native.FEW_RUNS - 1  # the moved run and 6 more (and e itself)
    assert errs["out"]["max_abs"] >= abs(float(e.double() - truth))
    calls.clear()
    wide = x32.reshape(1, -1).expand(32, -1).contiguous()

    def row_sums(d):
        calls.append(1)
        return d.sum(-1)

    native.native_errors(row_sums, _map, wide, wide.sum(-1), wide.double().sum(-1), seed=5)
    assert len(calls) == 1  # a 32-element output: the moved run alone


def test_an_honest_blocked_sum_into_a_0d_output_passes_the_shifted_rows(make_ws, ladder_for):
    """The run red team round 28 failed (#11, ``--seed 955599376``): ok now."""
    ref = R / "rt28_vsum.py"
    checked = dict(seed=955599376, rungs=("compile", "run", "correctness"))
    good(run(make_ws, ladder_for, "vsum", K / "rt28_vsum_good.py", reference=ref, **checked))


def test_a_reference_casting_nan_to_an_integer_is_not_taken_as_the_truth(make_ws, ladder_for):
    """New-user trial 28, F12: a per-row int8 quantizer's reference on masked rows computes round(-inf / inf) = NaN
    and casts it to int8, 0 on this CPU (undefined: a GPU saturates); that 0 was taken as the exact truth and an
    honest kernel clamping NaN failed "got -127 where the truth is 0". A float-to-integer cast of NaN or inf in the
    reference makes its value there undefined: the distribution is left out (and such a case is skipped)."""
    from ktui.worker.special import NonfiniteCasts

    with NonfiniteCasts() as casts:
        torch.tensor([1.5, 2.0]).to(torch.int8)
        torch.tensor([0.0, 1.0]).to(torch.bool)  # a comparison's answer, not a cast of a value
    assert casts.seen == ""
    with NonfiniteCasts() as casts:
        torch.tensor([1.0, float("nan")]).round().clamp(-127, 127).to(torch.int8)
    assert casts.seen.startswith("the reference casts NaN or inf to int8"), casts.seen
    with NonfiniteCasts() as casts:
        torch.empty(2, dtype=torch.int32).copy_(torch.tensor([1.0, float("inf")]))
    assert "int32" in casts.seen, casts.seen
    trials = _special_trials(_problem("nu28_qrow"), "cpu")
    assert trials.reasons["masked"].startswith("the reference casts NaN or inf to int8"), trials
    ref = R / "nu28_qrow.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    good(run(make_ws, ladder_for, "qrow", K / "nu28_qrow_good.py", reference=ref, **checked))


def test_a_grid_wide_barrier_runs_interleaved_and_a_wait_for_an_earlier_program_is_checked(make_ws, ladder_for):
    """Red team round 28, #8: an honest persistent kernel with a grid-wide barrier (an arrival counter and an acquire
    spin) timed out on the CPU ("the kernel may hang"): the interpreter ran programs one at a time, so program 0
    waited for ever; then the wait watch made it need a GPU. The interpreter now interleaves a launch's programs at
    their atomics (``worker.interp_sched``, red team round 31): every program arrives, the wait ends, and the version
    is checked on the CPU and passes. A chained look-back (each program waits for its predecessor) is checked too:
    its honest twin passes, its wrong twin (publishing a block's own sum, not the prefix) fails."""
    res = run(make_ws, ladder_for, "gnorm", K / "rt28_gnorm_barrier_good.py", reference=R / "rt28_gnorm.py", seed=3)
    by = {r.name: r for r in res.rungs}
    assert by["run"].status is Status.OK, by["run"].line()
    assert by["correctness"].status is Status.OK and res.ok, [r.line() for r in res.rungs]
    ok = good(run(make_ws, ladder_for, "scan1d", K / "rt28_scan1d_lookback_good.py", reference=R / "rt28_scan1d.py"))
    assert ok.rung("correctness").status is Status.OK, ok.rung("correctness").line()
    bad = run(make_ws, ladder_for, "scan1d", K / "rt28_scan1d_lookback_bad.py", reference=R / "rt28_scan1d.py", seed=3)
    c = bad.rung("correctness")
    assert c.status is Status.FAILED and "outside atol" in c.summary, c.line()


def test_the_wait_watch_counts_one_programs_identical_reads_only():
    """``WaitWatch.seen``: the same read by one program counts up; another program, other operands or other values
    read start again."""
    import numpy as np

    from ktui.worker.interp_waits import WaitWatch

    w = WaitWatch()
    ptr, val, got = np.array([64], np.uint64), np.array([0], np.int32), np.array([3], np.int32)
    assert [w.seen((0, 0, 0), "atomic add", (ptr, val), got) for _ in range(3)] == [1, 2, 3]
    assert w.seen((0, 0, 0), "atomic add", (ptr, val), np.array([4], np.int32)) == 1  # another value read
    assert w.seen((0, 0, 0), "atomic add", (ptr, np.array([1], np.int32)), got) == 1  # another operand
    assert w.seen((1, 0, 0), "atomic add", (ptr, val), got) == 1  # another program: the counts start again
    assert w.seen((1, 0, 0), "volatile load", (ptr, val), got) == 1
