"""Red team round 33 and new-user trial 33, and the holes of round 32b left open: each finding fixed as a mechanism,
with a bad kernel, its honest twin and a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import K, run
from .test_redteam_round32 import QUICK, R, _ok  # (the same quick ladder and honest-twin check)


def test_a_program_reading_what_its_other_threads_stored_without_a_barrier_races(make_ws, ladder_for):
    """Red team round 32b, #3: one program per row storing GELU(x) to a global scratch row and loading it back at
    c - 1 and c + 1 with no tl.debug_barrier() passed: the interpreter ran the block's store whole before its loads,
    and the race record took one program's accesses as ordered. A plain load of an element the same program stored
    from another element of the block (another thread) with no barrier since is now read as another program's
    unordered store is (``interp_races.Launch.read``): the bad one fails and the run rung says why; the twin with the
    barrier passes with no such warning."""
    ref = R / "rt33_gelusmooth.py"
    bad = run(make_ws, ladder_for, "gs", K / "rt33_gelusmooth_nobarrier_bad.py", reference=ref, **QUICK)
    said = [w for w in bad.rung("run").warnings if "which it stored itself" in w]
    assert said and "no barrier between" in said[0], bad.rung("run").warnings
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, c.line()
    good = run(make_ws, ladder_for, "gs", K / "rt33_gelusmooth_barrier_good.py", reference=ref, **QUICK)
    _ok(good)
    assert not [w for w in good.rung("run").warnings if "which it stored itself" in w], good.rung("run").warnings


def test_a_backward_reading_any_stride_0_gradient_as_one_value_fails_on_a_per_column_cotangent(make_ws, ladder_for):
    """Red team round 33, #3: a SiLU backward taking any gradient with a stride of 0 for one value broadcast (right for
    y.sum(), wrong for y.sum(0) and y.sum(-1)) passed: the cotangents were contiguous, expanded everywhere, transposed
    or padded. Two more requires_grad cases give them one value per row and one per column (``COTANGENT_LAYOUTS``):
    the bad one fails on a gradient case, the honest twin passes."""
    ref = R / "rt32b_silu2d.py"
    bad = run(make_ws, ladder_for, "silu", K / "rt33_silu2d_stride0_scalar_bad.py", reference=ref, **QUICK)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, [x.line() for x in bad.rungs]
    assert "grad=requires_grad" in c.summary and "the gradient of in" in c.summary, c.summary
    _ok(run(make_ws, ladder_for, "silu", K / "rt32b_silu2d_contig_good.py", reference=ref, **QUICK))


def test_atomic_poll_orders_by_its_sem_and_runs_without_a_timeout(make_ws, ladder_for):
    """Red team round 33, #1 and #4: tl.atomic_poll reached ktui as the volatile loads the interpreter spins on, each
    taken as an acquire, so a look-back scan polling its predecessor's flag relaxed passed; and without a timeout
    Triton hands the interpreter an empty ir.value() it reads as a tensor, so the honest acquire poll failed
    "'value' object has no attribute 'data'". The poll is wrapped now (``interp_races.install``): its loads acquire
    by its sem and scope, and a missing timeout is none. The relaxed one fails, the acquire one passes."""
    ref = R / "rt28_scan1d.py"
    quick = dict(QUICK, fuzz=False)
    bad = run(make_ws, ladder_for, "scan", K / "rt33_scan_poll_relaxed_bad.py", reference=ref, **quick)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, [x.line() for x in bad.rungs]
    reads = [w for w in bad.rung("run").warnings if "of scan_kernel read " in w]  # (the prefix's, or the flag's)
    assert reads and "nothing ordering them" in reads[0], bad.rung("run").warnings
    good = run(make_ws, ladder_for, "scan", K / "rt33_scan_poll_acquire_good.py", reference=ref, **quick)
    _ok(good)
    assert not [w for w in good.rung("run").warnings if "of scan_kernel read" in w], good.rung("run").warnings


def test_a_volatile_spin_orders_nothing(make_ws, ladder_for):
    """Red team round 33, #2: a look-back scan spinning on its predecessor's flag with a volatile load, then reading
    the prefix with a plain load, passed: every volatile load was taken as an acquire, while PTX treats ld.volatile as
    relaxed (and ktui's own PlainWait advice said so). A volatile load orders nothing now: the prefix read is a race
    and fails; the twin polling with an acquire atomic passes (its test in round 32)."""
    ref = R / "rt28_scan1d.py"
    bad = run(
        make_ws, ladder_for, "scan", K / "rt33_scan_volatile_spin_bad.py", reference=ref, **dict(QUICK, fuzz=False)
    )
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, [x.line() for x in bad.rungs]
    # (the first unordered read named: the prefix's, or the flag's, a volatile load read before its exchange once)
    reads = [w for w in bad.rung("run").warnings if "of scan_kernel read " in w]
    assert reads and "nothing ordering them" in reads[0], bad.rung("run").warnings


def test_an_atomic_masked_off_everywhere_or_a_failed_compare_and_swap_releases_nothing():
    """Red team round 33 (leads): an atomic orders what it releases only where it writes: one masked off on every lane
    makes no access at all (it was credited as a release and an acquire), and a compare-and-swap that failed wrote
    nothing (C++ and PTX: a failed CAS is a load) and releases nothing (``Launch.unrelease``)."""
    import numpy as np

    from ktui.worker.interp_races import Launch

    def u64(*xs):
        return np.array(xs, dtype=np.uint64)

    masked = Launch("k", (2, 1, 1))
    masked.store(0, u64(8), np.array([1], np.int32), None)
    assert masked.atomic(0, u64(800), np.array([False])) is None  # no lane: no access, no release
    masked.atomic(1, u64(800), None)
    masked.store(1, u64(8), np.array([2], np.int32), None)
    assert masked.race() is not None
    ordered = Launch("k", (2, 1, 1))  # the same with the lane on: the release orders the two stores
    ordered.store(0, u64(8), np.array([1], np.int32), None)
    assert ordered.atomic(0, u64(800), np.array([True])) is not None
    ordered.atomic(1, u64(800), None)
    ordered.store(1, u64(8), np.array([2], np.int32), None)
    assert ordered.race() is None
    failed = Launch("k", (2, 1, 1))
    failed.store(0, u64(8), np.array([1], np.int32), None)
    seq = failed.atomic(0, u64(800), None)
    assert seq is not None
    failed.unrelease(0, seq)  # the CAS failed: it wrote nothing
    failed.atomic(1, u64(800), None)
    failed.store(1, u64(8), np.array([2], np.int32), None)
    assert failed.race() is not None


def test_nan_and_inf_inputs_left_out_are_said():
    """New-user trial 33, F8: a router whose softmax carries a NaN logit into its weights had `nan` and `nonfinite`
    left out of every run without a word. Where the reference gives NaN on both (softmax), the run says so and how
    to judge them (`allow_nan = True`); where `nonfinite` stays (an add: NaN in, NaN out, positions judged), the
    `nan` distribution's absence (it is for outputs that stay free of NaN) says nothing."""
    import hashlib

    from ktui.worker.fuzz import describe_for_run
    from ktui.worker.problem import Problem

    from .conftest import ROOT

    def notes(name):
        p = ROOT / "references" / f"{name}.py"
        info = describe_for_run(Problem(p, name, hashlib.sha256(p.read_bytes()).hexdigest()), "cpu", None)
        return info.get("distribution_notes", []), info["distributions"]

    said, dists = notes("softmax")
    assert "nan" not in dists and "nonfinite" not in dists
    assert said == [
        "the 'nonfinite' and 'nan' distributions are left out: the reference gives NaN at out: a kernel's handling of "
        "NaN and inf inputs goes unchecked; `allow_nan = True` judges where its NaN land"
    ], said
    said, dists = notes("vector_add")
    assert "nonfinite" in dists and not [n for n in said if "'nan'" in n], said


def test_the_index_outputs_hint_is_given_only_where_the_differences_are_ties():
    """New-user trial 33, F1: an expert histogram ([64] counts from [63, 64] logits) that differed was told "if out[2]
    holds indices into in along dim -2 whose ties may come in any order, declare index_outputs": counts fit that
    shape and range, but are no indices, and the declaration would have judged them as such. The hint now needs the
    kernel's differing values to select what the reference's select (ties); else none."""
    import torch

    from ktui.worker.indices import index_hint

    x = torch.zeros(4, 6)
    ref = torch.zeros(4, dtype=torch.int64)  # argmax(-1) of all-equal rows: the first
    tied = torch.tensor([1, 2, 0, 3])  # other positions of the same (equal) values
    assert "declare index_outputs = {None: (None, -1)}" in index_hint(x, ref, "out", tied)
    logits = torch.randn(63, 64)
    counts = torch.bincount(torch.topk(logits, 2).indices.flatten(), minlength=64)  # [64], values in 0..63
    wrong = counts.clone()
    wrong[2] += 1
    wrong[5] -= 1
    assert index_hint(logits, counts, "out", wrong) == ""
    assert "declare index_outputs" in index_hint(logits, counts, "out")  # without the kernel's values: as before


def test_a_grid_barrier_over_more_ctas_than_fit_at_once_is_said_by_the_dumps_rung(make_ws, ladder_for):
    """Red team round 32b, #4: a one-launch L2 normalization spinning at an arrival counter until all cdiv(n, 4096) of
    its programs arrived passed every rung: under the interpreter every program runs, so the barrier ends; on a GPU,
    at the benchmark's 16,384 CTAs, the resident ones wait for ever. A program that waited until a program that
    started after it began waiting wrote (``interp_waits``, in a shuffled launch) marks its kernel, and the dumps rung
    holds that kernel's launch to the CTAs that fit at once (``dumps.resident_ctas``: 132 SMs on sm_90a). The capped,
    looping twin gets no such warning."""
    ref = R / "rt33_l2norm.py"
    rungs = ("compile", "run", "correctness", "dumps")
    opts = dict(QUICK, rungs=rungs)
    bad = run(make_ws, ladder_for, "l2", K / "rt33_l2norm_barrier_bad.py", reference=ref, **opts)
    d = bad.rung("dumps")
    assert d is not None, [x.line() for x in bad.rungs]
    said = [w for w in d.warnings if "can be resident at once" in w]
    assert said and "l2norm_kernel waited" in said[0] and "16,384 CTAs" in said[0], d.warnings
    good = run(make_ws, ladder_for, "l2", K / "rt33_l2norm_persistent_good.py", reference=ref, **opts)
    _ok(good)
    assert not [w for w in good.rung("dumps").warnings if "can be resident at once" in w], good.rung("dumps").warnings


def test_resident_ctas_follow_cudas_per_sm_limits():
    """``dumps.resident_ctas``: the least of 32 blocks, 64 warps, 64K registers (per warp in units of 256) and 228 KiB
    of shared memory (1 KiB more per block) per SM, times 132 SMs on sm_90a; nothing for another arch."""
    from ktui.core.ladder.rungs.dumps import resident_ctas

    def fit(regs, warps, smem=0, arch="sm_90a"):
        return resident_ctas({"num_warps": warps, "resources": {"registers": regs, "shared": smem}}, arch)

    assert fit(32, 4) == (132 * 16, 16)  # 64 warps / 4 and 65,536 / (1,024 x 4) both 16
    assert fit(48, 4) == (132 * 10, 10)  # 48 x 32 = 1,536 registers a warp: 65,536 // 6,144
    assert fit(16, 1) == (132 * 32, 32)  # the 32-block limit
    assert fit(32, 4, smem=100_000) == (132 * 2, 2)  # 233,472 // 101,024
    assert fit(32, 4, arch="sm_80") is None


def test_a_volatile_load_of_data_is_read_as_another_load_once(make_ws, ladder_for):
    """Red team round 33b, #1: the volatile-spin look-back reading the predecessor's prefix with a volatile load too
    passed: volatile loads were never checked by the read rule. A volatile load is read as a plain one, once per
    element and program (a spin on it still ends: it is never hoisted), so the prefix read fails."""
    ref = R / "rt28_scan1d.py"
    bad = run(
        make_ws, ladder_for, "scan", K / "rt33b_scan_volatile_data_bad.py", reference=ref, **dict(QUICK, fuzz=False)
    )
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, [x.line() for x in bad.rungs]


def test_the_residency_warning_matches_the_waited_launchs_constexprs(make_ws, ladder_for):
    """Red team round 33b, #4: a kernel meeting at a grid barrier only with FUSED=True (small inputs, at most one CTA
    per SM) was warned at its FUSED=False benchmark launch, which never waits: the waited launches were kept by
    kernel name. They are matched by name and constexprs now (``dumps.waited_here``)."""
    from ktui.core.ladder.rungs.dumps import waited_here

    waited = [{"kernel": "l2norm_kernel", "constexprs": {"BLOCK": 4096, "FUSED": True}}]
    assert waited_here({"kernel": "l2norm_kernel", "constexprs": {"BLOCK": 4096, "FUSED": True}}, waited)
    assert not waited_here({"kernel": "l2norm_kernel", "constexprs": {"BLOCK": 4096, "FUSED": False}}, waited)
    assert not waited_here({"kernel": "scale_kernel", "constexprs": {"BLOCK": 4096}}, waited)
    ref = R / "rt33_l2norm.py"
    opts = dict(QUICK, rungs=("compile", "run", "correctness", "dumps"))
    good = run(make_ws, ladder_for, "l2", K / "rt33b_l2norm_fused_small_good.py", reference=ref, **opts)
    _ok(good)
    assert not [w for w in good.rung("dumps").warnings if "can be resident at once" in w], good.rung("dumps").warnings
