"""Red team round 25 and this session's GPU findings: each fixed as a mechanism, with a bad kernel, its honest twin
and a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

import hashlib

import pytest
import torch

from ktui.core.results import Status
from ktui.worker import arguments
from ktui.worker.problem import Problem

from .test_cases import CASES, K, good, run

R = CASES / "references"


def _problem(name: str) -> Problem:
    path = R / f"{name}.py"
    return Problem(path, name, hashlib.sha256(path.read_bytes()).hexdigest())


def test_argument_moves_are_tried_on_the_cpu_when_the_reference_runs_there():
    """On the H100 (2026-12-06) red team 22's cross-entropy reference failed at compile "the reference on its inputs
    of the 'scalars' distribution hit a CUDA error that loses the GPU context": the int argument ``ignore_index``
    (-100) moved by -1 left the labels' -100 padding a class out of range, a device-side assert on the GPU (an
    IndexError, the trial's answer, on the CPU). The moves are tried where the integer-changing distributions are
    (``problem.trial_device``): asked for CUDA on this machine, which has none, every trial still runs, on the CPU."""
    problem = _problem("rt22_ce_ignore")
    moves, notes = arguments.argument_moves(problem, "cuda")
    assert moves == {"[2]": ["relabel:-101", "relabel:held"]}, (moves, notes)
    base = problem._argument_base  # type: ignore[attr-defined]
    devices = {t.device.type for _, data in base.values() for t in data if isinstance(t, torch.Tensor)}
    assert devices == {"cpu"}, devices
    combos = arguments.scalar_moves(problem, "cuda", seed=3)
    assert combos and all(set(c) == {"[2]"} for c in combos), combos


def test_a_view_the_reference_returns_of_a_broadcast_input_may_be_broadcast(make_ws, ladder_for):
    """On the H100 and the CPU (2026-12-06) red team 22's honest attention prologue (k, v returned as
    ``qkv.split``'s views, as its reference does) failed 5 of 19 specs on the expanded layout: "out[1] has strides
    (0, 1) ...: its elements share memory (a broadcast view) where the reference's output does not". The native
    reference ran on a dense copy of the broadcast qkv, so its k did not overlap. A view of a broadcast input at a
    path where the reference's output views the same input keeps the caller's layout (``compare.broadcast_views``);
    a q scaled inside the caller's qkv still fails."""
    ref = R / "rt22_qkv_split.py"
    laid = dict(layouts=True, distributions=False, fuzz=False, near_duplicates=False, seeds=1, seed=3)
    good(run(make_ws, ladder_for, "qkv", K / "rt22_qkv_views_good.py", reference=ref, **laid))  # (failed before)
    bad = run(make_ws, ladder_for, "qkv", K / "rt22_qkv_q_in_place_bad.py", reference=ref, **laid)
    lines = [r.line() for r in bad.rungs]
    assert not bad.ok and any(r.status is Status.FAILED for r in bad.rungs), lines
    assert any("input modified" in x or "aliases in[0]" in x or "outside its view" in x for x in lines), lines


def test_broadcast_views_need_the_same_alias_as_the_reference_and_a_broadcast_input():
    from ktui.worker.compare import broadcast_views

    prep = {"aliases": ["out[1] aliases in[0]", "out[2] aliases in[0]"], "broadcast_inputs": ["in[0]"]}
    case = {"aliases": ["out[0] aliases in[0]", "out[1] aliases in[0]", "out[2] aliases in[1]"]}
    assert broadcast_views(prep, case) == {"out[1]"}
    assert broadcast_views({**prep, "broadcast_inputs": []}, case) == set()


def test_a_stride_ignored_offsets_input_is_named_first_and_a_timeout_names_the_layout(make_ws, ladder_for):
    """New-user trial 24, F1 and F12: a segment sum that read its offsets as contiguous, given them with strides
    (2,), took a padding decoy for a segment's end and looped over ~10**6 in-bounds rows of a transposed values
    tensor: after 120 s "timed out ... (the kernel may hang)", nothing said why. The out-of-bounds message now names
    the strided input first, and a timeout on a laid-out case names the layout and what ignoring a stride does."""
    ref = R / "nu24_segsum.py"
    laid = dict(layouts=True, distributions=False, fuzz=False, near_duplicates=False, seeds=1, seed=1)
    good(run(make_ws, ladder_for, "segsum", K / "nu24_segsum_offsets_stride_good.py", reference=ref, **laid))
    bad = run(make_ws, ladder_for, "segsum", K / "nu24_segsum_offsets_stride_bad.py", reference=ref, **laid)
    text = " ".join(r.line() + (r.error.message if r.error else "") for r in bad.rungs)
    assert not bad.ok and "off_ptr is strided (2,): index it by its strides (or mask every access" in text, text
    hang = run(
        make_ws,
        ladder_for,
        "segsum",
        K / "nu24_hangs_on_strided_bad.py",
        reference=ref,
        rungs=("compile", "run"),
        timeouts={"compile": 180.0, "run": 4.0, "correctness": 120.0, "benchmark": 60.0},
        **{**laid, "seed": 3},
    )
    text = " ".join(r.line() + (r.error.message if r.error else "") for r in hang.rungs)
    assert hang.rung("run").status is Status.FAILED and "WorkerTimeout" in text, text
    assert "the case's inputs are laid out " in text and "a kernel that ignores an input's strides" in text, text


def test_a_launch_that_only_copies_torchs_answer_is_torch_not_a_kernel(make_ws, ladder_for):
    """Red team round 25, #13: ``torch.softmax(x)`` (or NumPy on the host) computed the answer and a Triton launch
    only copied it into the output. The dry call (launches compiled, none run) left the output unwritten, so the
    dead-launch rule never fired and the version passed with scan warnings. A launch given a tensor that already
    holds the reference's output, before any launch ran, is fed by host code (``candidate.answer_fed``); the twin
    computes the softmax in Triton and passes."""
    ref = R / "rt20_softmax_cut.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    good(run(make_ws, ladder_for, "softmax", K / "rt20_softmax_good.py", reference=ref, **checked))
    for bad in ("rt25_softmax_copy_bad.py", "rt25_softmax_numpy_copy_bad.py"):
        res = run(make_ws, ladder_for, "softmax", K / bad, reference=ref, **checked)
        compile_rung = res.rung("compile")
        assert compile_rung.status is Status.FAILED, [r.line() for r in res.rungs]
        assert compile_rung.summary.startswith("times torch, not a kernel: on spec=") and (
            "tensor that already held the reference's output before any launch ran" in compile_rung.summary
        ), compile_rung.summary


def test_a_dict_output_keyed_by_tuples_is_judged_leaf_by_leaf(make_ws, ladder_for):
    """Red team round 25, #9: ``{("max", 1): x.amax(1), ("min", 1): x.amin(1)}``: every tuple key was the path
    ``out[<tuple>]``, two leaves shared it, and the honest version failed "its bytes were not sent: the output's
    structure differs". A plain tuple of builtin keys is shown by its items (``tensors.key_text``); swapped values
    fail by name."""
    from ktui.worker.tensors import flatten

    assert [p for p, _ in flatten({("max", 1): 0, ("min", (1,)): 1, 2: 3})] == [
        "out[('max', 1)]",
        "out[('min', (1,))]",
        "out[2]",
    ]
    ref = R / "rt25_dictkeys.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    good(run(make_ws, ladder_for, "minmax", K / "rt25_dictkeys_good.py", reference=ref, **checked))
    bad = run(make_ws, ladder_for, "minmax", K / "rt25_dictkeys_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "out[('max', 1)]" in corr_rung.summary or "out[('min', 1)]" in corr_rung.summary, corr_rung.summary


def test_a_median_index_may_be_any_position_holding_the_median(make_ws, ladder_for):
    """Red team round 25, #14: ``torch.median(x, dim=-1)`` of small-integer ratings: an honest kernel returning the
    first column holding the median failed "out[1]: 3 of 3 elements differ (exact compare)": median was no traced
    index op, and torch documents its index as "not necessarily the first occurrence". It is traced now, under the
    any-of-ties rule (kthvalue's); an index of a column that does not hold the median still fails."""
    ref = R / "rt25_median.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    ok = good(run(make_ws, ladder_for, "median", K / "rt25_median_first_good.py", reference=ref, **checked))
    assert not any("falls back to torch" in w for r in ok.rungs for w in r.warnings), [r.warnings for r in ok.rungs]
    bad = run(make_ws, ladder_for, "median", K / "rt25_median_next_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "out[1]" in corr_rung.summary, corr_rung.summary


def test_a_flushed_value_floored_at_flt_min_fails_as_a_zero_does(make_ws, ladder_for):
    """Red team round 25, #6: round 20's softmax that skips exps below e^-17 of the row max, its zeros floored at
    FLT_MIN (1.2e-38) instead of 0, passed with max_rel_err = 1: the rule looked for exact zeros. A value of at most
    eps times the truth kept nothing of it and fails as a 0 does."""
    ref = R / "rt20_softmax_cut.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    bad = run(make_ws, ladder_for, "softmax", K / "rt25_softmax_floor_flt_min_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "0 (or below eps of the truth) where the reference computed in float32 is not" in corr_rung.summary
    assert "got 1.17549e-38" in corr_rung.summary, corr_rung.summary


def test_nan_inputs_are_drawn_where_the_reference_handles_nan(make_ws, ladder_for):
    """Red team round 25, #1: a nansum written as a plain sum (a NaN poisons its row) passed: NaN inputs were drawn
    only under ``allow_nan``, which says NaN is a valid reference result, and a nansum's never is. The ``nan``
    distribution draws them where the reference's float output stays free of NaN; the twin skips NaN and passes."""
    ref = R / "rt25_nansum.py"
    checked = dict(layouts=False, fuzz=False, near_duplicates=False, seeds=1, seed=1)
    checked["rungs"] = ("compile", "run", "correctness")
    good(run(make_ws, ladder_for, "nansum", K / "rt25_nansum_good.py", reference=ref, **checked))
    bad = run(make_ws, ladder_for, "nansum", K / "rt25_nansum_plain_sum_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "dist=nan" in corr_rung.summary, corr_rung.summary


def test_the_nan_distribution_is_left_out_where_a_nan_shows_in_the_output_or_no_float_output_shows_it():
    from ktui.worker.fuzz import _special_trials

    trials = _special_trials(_problem("rt25_nansum"), "cpu").reasons
    assert trials["nan"] == "", trials
    trials = _special_trials(_problem("rt22_scale2d"), "cpu").reasons  # 2 x + 1: a NaN in, a NaN out
    assert trials["nan"], trials
    trials = _special_trials(_problem("rt25_median"), "cpu").reasons  # integer inputs: nothing takes a NaN
    assert trials.get("nan", "x"), trials


def test_an_in_place_input_keeps_the_callers_layout_without_a_warning(make_ws, ladder_for):
    """New-user trial 25, F10: a correct in-place fused add + RMSNorm (``inplace = (1,)``) was warned "in[1] has
    strides (132, 1) ..., not row-major ... write it row-major (or return .contiguous())" about the caller's padded
    residual, which an in-place kernel cannot change."""
    ref = R / "nu25_add_rmsnorm_ip.py"
    laid = dict(layouts=True, fuzz=False, near_duplicates=False, seeds=1, seed=5)
    ok = good(run(make_ws, ladder_for, "add_rmsnorm_ip", K / "nu25_add_rmsnorm_ip_good.py", reference=ref, **laid))
    warnings = [w for r in ok.rungs for w in r.warnings]
    assert not any("in[1] has strides" in w for w in warnings), warnings


def test_a_version_that_prints_is_told_where_its_output_went(make_ws, ladder_for):
    """New-user trial 25, F12: a version's ``print`` and ``tl.device_print`` output went to the candidate worker's
    log, and neither ``ktui run`` nor the TUI said so. The run rung notes how many lines the candidate printed and
    where they are; a silent version gets no such note."""
    src = (CASES.parent.parent / "kernels" / "vector_add" / "v1.py").read_text()
    loud = src.replace("def custom_kernel(data):", 'def custom_kernel(data):\n    print("DEBUG", data[0].shape)')
    assert loud != src
    ws = make_ws(["vector_add"], {"vector_add/v1": src, "vector_add/v2": loud})
    opts = dict(rungs=("compile", "run"), layouts=False, distributions=False, fuzz=False, seeds=1, seed=1)
    lad = ladder_for(ws, **opts)
    quiet = lad.run(ws.kernel(ws.root / "kernels/vector_add/v1.py")).rung("run")
    assert quiet is not None and not any("printed" in w for w in quiet.warnings), quiet.warnings
    run_rung = lad.run(ws.kernel(ws.root / "kernels/vector_add/v2.py")).rung("run")
    note = next((w for w in run_rung.warnings if "the candidate worker printed" in w), "")
    assert note.endswith(".ktui/logs/candidate.log") and " lines during run (the version's print" in note, note


def test_a_segfault_in_host_code_is_not_blamed_on_a_triton_load():
    """New-user trial 25, F17: ``ctypes.string_at(0)`` in ``custom_kernel`` crashed the worker with SIGSEGV, and the
    hint said "under the Triton interpreter this is usually an out-of-bounds tl.load or tl.store". The hint follows
    the crashing thread's innermost frame in the faulthandler dump."""
    import signal

    from ktui.core.workers.crash import crash_hint

    host = (
        "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f88 (most recent call first):\n"
        '  File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at\n'
        '  File "/ws/kernels/add_rmsnorm/v5.py", line 29 in custom_kernel\n'
    )
    hint = crash_hint(-signal.SIGSEGV, "candidate", "cpu", host)
    assert hint.startswith("a bad pointer in host code: the crash is in __init__.py, not in a Triton launch"), hint
    launch = host.replace("/usr/lib/python3.11/ctypes/__init__.py", "/venv/site-packages/triton/runtime/interpreter.py")
    assert "usually an out-of-bounds tl.load or tl.store" in crash_hint(-signal.SIGSEGV, "candidate", "cpu", launch)
    assert "usually an out-of-bounds tl.load or tl.store" in crash_hint(-signal.SIGSEGV, "candidate", "cpu", "")


def test_an_overflow_where_the_reference_saturates_fails(make_ws, ladder_for):
    """Red team round 25, #3: ``nan_to_num(exp(x))`` saturates at float32's largest value; its float64 run at
    float64's, so the truth lies beyond float32's range there and a kernel returning +inf was accepted ("only an
    overflow of a truth beyond the dtype's range"). Non-finite where the native reference is finite now fails; the
    saturating twin passes."""
    ref = R / "rt25_nantonum.py"
    checked = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    good(run(make_ws, ladder_for, "nantonum", K / "rt25_nantonum_good.py", reference=ref, **checked))
    bad = run(make_ws, ladder_for, "nantonum", K / "rt25_nantonum_overflow_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    # the headline may be a NaN input (nan_to_num's 0 where plain exp gives NaN: ``dist=nan``); the overflow fails
    # on inputs without NaN too
    failed = [x for s in corr_rung.figures["specs"] for x in s["failed_cases"]]
    assert any("dist=nan" not in x for x in failed), failed


def test_one_elements_large_native_error_no_longer_sets_the_bar_for_every_element(make_ws, ladder_for):
    """Red team round 25, #2: ``log(x + finfo(x.dtype).eps)`` on images whose first sixteenth is black: the float64
    run adds float64's eps, so the reference in float32 is off by 20 on the black pixels and by ~4e-7 elsewhere. The
    native allowance, 8x the *largest* native error, let a fast log (a Mitchell approximation, 0.06 off on every
    other pixel) pass "at 0% of tolerance". Each element's bar is now the native error near it
    (``compare.local_native_check``); the honest log of float32's eps still passes."""
    ref = R / "rt25_logimg.py"
    checked = dict(seeds=1, seed=3, rungs=("compile", "run", "correctness"))
    good(run(make_ws, ladder_for, "logimg", K / "rt25_logimg_good.py", reference=ref, **checked))
    bad = run(make_ws, ladder_for, "logimg", K / "rt25_logimg_fastlog_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    text = corr_rung.summary + (corr_rung.error.message if corr_rung.error else "")
    # since stop 42 the float64 run reads finfo(float64) as the native run's float32 (``Float64Kept.sole_native_dtype``,
    # red team round 35b, #5): the truth adds float32's eps too, the native error is ~4e-7 everywhere, and the fast
    # log fails the plain bound; the per-element bar is the next test's (and the gradients', round 35b, #2)
    assert "outside atol=1e-05 rtol=1e-05 or 8x float32's own error" in text, text


def test_local_errors_are_the_largest_native_error_within_the_window():
    from ktui.worker.native import LOCAL_WINDOW, local_errors

    n = 4 * LOCAL_WINDOW
    a = torch.full((n,), 1e-7, dtype=torch.float64)
    a[10] = 20.0
    b = torch.zeros(n, dtype=torch.float64)
    b[3 * LOCAL_WINDOW] = 0.5  # a second run's own worst element
    loc = local_errors([a, b])
    assert loc.dtype == torch.float32 and loc.shape == (n,)
    assert float(loc[10 + LOCAL_WINDOW]) == 20.0 and float(loc[11 + LOCAL_WINDOW]) == pytest.approx(1e-7)
    assert float(loc[2 * LOCAL_WINDOW]) == 0.5 and float(loc[2 * LOCAL_WINDOW - 1]) == pytest.approx(1e-7)
    assert float(loc[0]) == 20.0 and float(loc[-1]) == 0.5
    assert local_errors([torch.tensor([3.0], dtype=torch.float64)]).tolist() == [3.0]


def test_calls_run_under_no_grad_inference_mode_and_with_inputs_that_require_grad(make_ws, ladder_for):
    """Red team round 25, #4 and #5: every checked call ran with grad enabled on detached inputs, so a SiLU wrong
    only when ``x.requires_grad`` (the reference's generate_input makes it so), one that writes over its input under
    ``torch.no_grad()``, and one wrong on inference tensors all passed every rung. A case per mode
    (``cases.GRAD_MODES``, ``ktui.worker.grad_modes``) calls them as real use does; the honest twin passes all."""
    ref = R / "rt17_silu_requires_grad.py"
    checked = dict(seeds=1, seed=3, layouts=False, fuzz=False, rungs=("compile", "run", "correctness"))
    ok = good(run(make_ws, ladder_for, "silu", K / "rt17_silu_requires_grad_good.py", reference=ref, **checked))
    assert ok.rung("correctness").status is Status.OK
    expect = {
        "rt25_silu_training_path_bad.py": ("grad=requires_grad", "elements outside atol"),
        "rt25_silu_no_grad_in_place_bad.py": ("grad=no_grad", "out aliases in"),
        "rt25_silu_is_inference_bad.py": ("grad=inference", "elements outside atol"),
    }
    for kernel, (mode, why) in expect.items():
        bad = run(make_ws, ladder_for, "silu", K / kernel, reference=ref, **checked)
        corr_rung = bad.rung("correctness")
        assert corr_rung is not None and corr_rung.status is Status.FAILED, (kernel, [r.line() for r in bad.rungs])
        text = corr_rung.summary + (corr_rung.error.message if corr_rung.error else "")
        assert mode in text and why in text, (kernel, text)


def test_every_run_has_one_case_per_grad_mode_on_a_fixed_spec():
    """One case per grad mode on a spec of the cheaper half, and one on the largest fixed spec (red team round 27,
    #5: a training path's size slip past 1,024 elements was out of the cheaper half's reach)."""
    from ktui.core.ladder.cases import GRAD_MODES, GRAD_SEED, make_cases
    from ktui.core.ladder.context import LadderOptions

    describe = {"tests": [{"n": 1}, {"n": 127}, {"n": 4099}], "distributions": ["native"], "fuzzed": []}
    cases = make_cases(describe, LadderOptions(), seed=11)  # type: ignore[arg-type]
    grads = [c for c in cases if c.get("grad")]
    # each mode on a cheap spec, five more requires_grad cases on the largest cheap one (their seeds the other five
    # residues mod 6: the cotangents' six layouts, red team round 31, #4; 32b, #6; 33, #3), two with an input
    # frozen (red team round 32, #4), each mode on the largest
    rg = ["requires_grad"] * 7
    assert [c["grad"] for c in grads] == [*GRAD_MODES, *rg, *GRAD_MODES]
    assert [c["seed"] - 11 - GRAD_SEED for c in grads][:3] == [0, 1, 2]
    assert [c["seed"] - 11 - GRAD_SEED for c in grads][10:] == [3, 4, 5]
    assert [c.get("frozen") for c in grads] == [None] * 8 + [0, 1] + [None] * 3
    assert [c["seed"] % 6 for c in grads[8:10]] == [1, 2]
    assert {c["seed"] % 6 for c in grads[:8] if c["grad"] == "requires_grad"} == {0, 1, 2, 3, 4, 5}
    assert all(c["spec_index"] in (0, 1) and "layout" not in c and "dist" not in c for c in grads[:10])
    assert [c["spec_index"] for c in grads[3:10]] == [1] * 7
    assert all(c["spec_index"] == 2 and "layout" not in c and "dist" not in c for c in grads[10:])
    one = make_cases({**describe, "tests": [{"n": 5}]}, LadderOptions(), seed=11)  # type: ignore[arg-type]
    assert [c["grad"] for c in one if c.get("grad")] == [*GRAD_MODES, *rg]


def test_an_autotuned_kernel_that_accumulates_during_its_own_benchmark_fails(make_ws, ladder_for):
    """Red team round 26, #7: a split-K ``atomic_add`` row sum autotuned without ``reset_to_zero`` accumulates
    every config's benchmark runs into its output on the first call of each key (3x the sum under the
    interpreter's one-call benchmark; hundreds of times on a GPU), and an autotuned ``x += y`` without
    ``restore_value`` adds y once per benchmark run. ktui restored every tensor argument after each config's
    benchmark, which hid both; the autotuner's own-choice cases now run as Triton does. The twin with
    ``reset_to_zero`` passes."""
    checked = dict(seeds=1, seed=3, distributions=False, layouts=False, rungs=("compile", "run", "correctness"))
    ref = R / "rt26_rowsum.py"
    good(run(make_ws, ladder_for, "rowsum", K / "rt26_rowsum_splitk_reset_good.py", reference=ref, **checked))
    for problem, kernel in (("rowsum", "rt26_rowsum_splitk_noreset_bad.py"), ("iadd", "rt26_iadd_autotune_bad.py")):
        bad = run(make_ws, ladder_for, problem, K / kernel, reference=R / f"rt26_{problem}.py", **checked)
        corr_rung = bad.rung("correctness")
        assert corr_rung is not None and corr_rung.status is Status.FAILED, (kernel, [r.line() for r in bad.rungs])
        assert "config=auto(" in corr_rung.summary, corr_rung.summary


def test_a_laid_out_case_is_named_by_an_input_it_laid_out(make_ws, ladder_for):
    """New-user trial 26, F2: a w8a16 kernel reading its scale as contiguous fails only on laid-out cases, but with
    M = 1 the first input, x (1, K), stays contiguous under every relayout, and the failures were named after it:
    no layout at all ("spec=(1, 129, 127, bf16) seed=... dist=shifted"). The name is now the layout of the first
    input the case left non-contiguous, with every input's strides."""
    checked = dict(seeds=1, seed=5, distributions=False, fuzz=False, rungs=("compile", "run", "correctness"))
    ref = R / "nu26_w8a16.py"
    good(run(make_ws, ladder_for, "w8a16", K / "nu26_w8a16_tiled_good.py", reference=ref, **checked))
    bad = run(make_ws, ladder_for, "w8a16", K / "nu26_w8a16_scale_stride_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    text = corr_rung.summary + (corr_rung.error.message if corr_rung.error else "")
    named = [ln for ln in text.splitlines() if "spec=" in ln]
    assert named and all("layout=" in ln and "strides" in ln for ln in named), named


def test_nan_inputs_are_drawn_where_a_bool_output_answers_a_nan_check(make_ws, ladder_for):
    """Red team round 26, #5: an AMP ``found_inf`` per row (``~isfinite(g).all(-1)``, a bool output) computed as
    ``max|g| == inf`` misses every NaN, and passed: NaN inputs were drawn only where a float output shows them
    (``fuzz._nan_judged``). A bool output counts now; the honest ``x != x | |x| == inf`` passes."""
    ref = R / "rt26_foundinf.py"
    checked = dict(seeds=1, seed=3, layouts=False, fuzz=False, rungs=("compile", "run", "correctness"))
    good(run(make_ws, ladder_for, "found_inf", K / "rt26_foundinf_good.py", reference=ref, **checked))
    bad = run(make_ws, ladder_for, "found_inf", K / "rt26_foundinf_amax_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "dist=nan" in corr_rung.summary and "(exact compare)" in corr_rung.summary, corr_rung.summary


def test_a_zero_size_is_drawn_and_an_empty_output_must_still_be_written(make_ws, ladder_for):
    """Red team round 26, #10: a row sum returning its uninitialised ``torch.empty`` output when ``cols == 0``
    passed: no test listed a 0 and fuzz never drew one. Fuzz now draws the smallest test spec with each size at 0
    (``fuzz._draw_empty``, where the reference runs it); a kernel that raises there is told it does not support
    it, as for a layout."""
    ref = R / "rt26_rowsum.py"
    checked = dict(seeds=1, seed=3, layouts=False, distributions=False, rungs=("compile", "run", "correctness"))
    bad = run(make_ws, ladder_for, "rowsum", K / "rt26_rowsum_empty_bad.py", reference=ref, **checked)
    corr_rung = bad.rung("correctness")
    assert corr_rung is not None and corr_rung.status is Status.FAILED, [r.line() for r in bad.rungs]
    assert "fuzzed(1, 0)" in corr_rung.summary and "unwritten" in corr_rung.summary, corr_rung.summary
    ok = good(run(make_ws, ladder_for, "rowsum", K / "rt26_rowsum_empty_raises_good.py", reference=ref, **checked))
    warned = [w for r in ok.rungs for w in r.warnings if "fuzzed(1, 0)" in w and "unsupported" in w]
    assert warned and "empty rows are not supported" in warned[0], [r.warnings for r in ok.rungs]


def test_draw_empty_puts_each_size_of_the_smallest_spec_at_zero_where_the_bounds_allow():
    from ktui.worker.fuzz import _draw_empty

    tests = [{"rows": 7, "cols": 127, "dtype": "float32"}, {"rows": 1, "cols": 129, "dtype": "float32"}]
    assert _draw_empty(tests, {}, None) == [
        {"rows": 0, "cols": 129, "dtype": "float32"},
        {"rows": 1, "cols": 0, "dtype": "float32"},
    ]
    assert _draw_empty(tests, {"rows": (1, 64), "cols": (0, 4096)}, {"rows", "cols"}) == [
        {"rows": 1, "cols": 0, "dtype": "float32"}
    ]


def test_the_launches_of_a_case_the_kernel_does_not_take_are_not_compiled_for_the_gpu():
    """On the H100 (2026-12-06) honest kernels launching ``BLOCK=triton.next_power_of_2(cols)`` failed the run
    rung "one does not compile" once fuzz drew an empty row: the call raised (a block of 0), the case was told
    unsupported, but its launch was still compiled for the GPU with the others. An unsupported case's launches are
    left out of the table (``capture.take_launches``)."""
    from ktui.worker import capture

    kept, skipped = {"spec_index": 0, "seed": 1}, {"spec_index": 1, "seed": 1, "spec": {"cols": 0}}
    capture._PER_CASE[id(kept)] = (kept, {"k1": 2})
    capture._PER_CASE[id(skipped)] = (skipped, {"k0": 1})
    capture._TABLE.update({"k1": {"kernel": "row_sum"}, "k0": {"kernel": "row_sum"}})
    entries: list[dict] = [{}, {"unsupported": "CompilationError: arange's range must be positive"}]
    table = capture.take_launches([kept, skipped], entries)
    assert set(table) == {"k1"} and entries[0]["launches"] == {"k1": 2} and entries[1]["launches"] == {}
    assert not capture._PER_CASE and not capture._TABLE


def test_a_complex_argument_and_a_numpy_bool_flag_are_moved(make_ws, ladder_for):
    """Red team round 26, #4: a Python complex argument (a phase e^{0.3i}) folded into constants, and an ``np.bool_``
    flag (from a NumPy config array) the kernel ignores, both passed: only int, bool, float and NumPy int/float
    arguments were moved. A complex is scaled and moved as a float is; an ``np.bool_`` is flipped as a bool."""
    checked = dict(seeds=1, seed=3, layouts=False, fuzz=False, rungs=("compile", "run", "correctness"))
    for problem, good_k, bad_k, move in (
        ("cphase", "rt26_cphase_good.py", "rt26_cphase_folded_bad.py", "dist=scalars"),
        ("scanflag", "rt26_scanflag_good.py", "rt26_scanflag_inclusive_bad.py", "vary=[1]flip"),
    ):
        ref = R / f"rt26_{problem}.py"
        good(run(make_ws, ladder_for, problem, K / good_k, reference=ref, **checked))
        bad = run(make_ws, ladder_for, problem, K / bad_k, reference=ref, **checked)
        corr_rung = bad.rung("correctness")
        assert corr_rung is not None and corr_rung.status is Status.FAILED, (bad_k, [r.line() for r in bad.rungs])
        assert move in corr_rung.summary, corr_rung.summary


def test_moved_flips_a_numpy_bool_and_moves_a_complex():
    import numpy as np

    from ktui.worker.cases import is_moved_arg, moved

    assert moved(np.True_, "flip") is np.False_ and is_moved_arg(np.True_)
    assert moved(0.5 + 1j, "neg") == -0.5 - 1j and moved(np.complex64(1j), "x8") == np.complex64(8j)
    assert is_moved_arg(0.5 + 1j) and not is_moved_arg("name")


def test_the_per_element_bar_fails_what_one_elements_native_error_let_through():
    """``compare.local_native_check`` as a unit (its end-to-end case above now fails earlier): an output 0.06 off
    everywhere but where the native reference is off by 20 passes the allowance of 8x the largest native error, and
    fails the bar of 8x the native error near each element."""
    from ktui.worker.compare import local_native_check
    from ktui.worker.native import LOCAL_WINDOW, local_errors
    from ktui.worker.tolerance import resolve

    n = 4 * LOCAL_WINDOW
    truth = torch.linspace(1.0, 2.0, n, dtype=torch.float64)
    err = torch.full((n,), 4e-7, dtype=torch.float64)
    err[:8] = 20.0  # the black pixels
    tol = resolve("float32", None).with_native(20.0, 1e-3, "float32")
    out = (truth + 0.06).float()
    m = {"ok": True, "reason": "", "score": 0.1}
    local_native_check({"native_local": {"out": local_errors([err])}}, m, out, truth, tol, "out")
    assert not m["ok"] and "further off than 8x the error of the reference computed in float32 near them" in m["reason"]
    assert "(its largest, 20, is elsewhere and sets no bar here)" in m["reason"], m["reason"]
    m = {"ok": True, "reason": "", "score": 0.1}
    local_native_check({"native_local": {"out": local_errors([err])}}, m, truth.float(), truth, tol, "out")
    assert m["ok"], m
