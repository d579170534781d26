"""Red team round 32 (two helpers: #n and #n of 32b) and new-user trial 32: each finding fixed as a mechanism, with a
bad kernel, its honest twin and a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, K, run

R = CASES / "references"
QUICK = dict(layouts=False, seeds=1, seed=3, near_duplicates=False, rungs=("compile", "run", "correctness"))


def _ok(res):
    for rung in ("run", "correctness"):
        r = res.rung(rung)
        assert r is not None and r.status is Status.OK, [x.line() for x in res.rungs]


def test_a_read_of_sums_other_programs_added_with_relaxed_atomics_is_a_race(make_ws, ladder_for):
    """Found while profiling the interleaving (stop 39): bf16 atomics took a path of their own in the interpreter,
    installed outside the scheduler and the race record, and a plain load of an element other programs updated with
    atomics was never judged (only plain stores were). A one-launch column mean whose last ticket-holder reads the
    bf16 sums with every atomic relaxed now reads them as before an unordered atomic (it fails); the twin with
    acq_rel atomics (each add released, the last ticket acquired) passes."""
    ref = "rt32_colmean_bf16.py"
    quick = dict(QUICK, fuzz=False)
    bad = run(make_ws, ladder_for, "cm", K / "rt32_colmean_bf16_relaxed_bad.py", reference=R / ref, **quick)
    reads = [w for w in bad.rung("run").warnings if "of colmean_kernel read acc_ptr[" in w]
    assert reads and "updated in the same launch with an atomic (relaxed" in reads[0], bad.rung("run").warnings
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, c.line()
    good = run(make_ws, ladder_for, "cm", K / "rt32_colmean_bf16_good.py", reference=R / ref, **quick)
    _ok(good)
    assert not [w for w in good.rung("run").warnings if "of colmean_kernel read" in w], good.rung("run").warnings


def test_a_last_ticket_holder_meets_programs_that_have_not_stored_yet_in_a_shuffled_order(make_ws, ladder_for):
    """Red team round 32, #1: a one-launch sum and amax taking its ticket before storing its partial, then folding its
    max with an acq_rel atomic (which releases the partial), passed: in lock-step every other program's amax ran
    before the last ticket-holder read, so every read was ordered. Half the launches now resume their paused
    programs in a seeded random order (``interp_sched.shuffled_order``); the twin storing first passes."""
    ref = R / "rt32_sumamax.py"
    bad = run(make_ws, ladder_for, "sa", K / "rt32_sumamax_ticket_first_bad.py", reference=ref, **QUICK)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, c.line()
    reads = [w for w in bad.rung("run").warnings if "of sum_amax_kernel read partial_ptr[" in w]
    assert reads and "with a plain store, nothing ordering them" in reads[0], bad.rung("run").warnings
    _ok(run(make_ws, ladder_for, "sa", K / "rt32_sumamax_ticket_good.py", reference=ref, **QUICK))


def test_the_shuffled_order_is_seeded_by_the_launch_count_and_covers_both_start_orders():
    from ktui.worker.interp_sched import reversed_order, shuffled_order

    modes = [(reversed_order(n), shuffled_order(n) is not None) for n in range(4)]
    assert sorted(modes) == [(False, False), (False, True), (True, False), (True, True)], modes
    assert shuffled_order(2) == 2 and shuffled_order(6) == 6 and shuffled_order(4) is None


def test_a_flag_released_and_acquired_at_cta_scope_orders_nothing_between_programs(make_ws, ladder_for):
    """Red team round 32, #3 (and 32b, #3): the honest ticketed look-back scan with its flag's release and acquire at
    ``scope="cta"`` passed: the scope was dropped. A cta-scope atomic orders only within its block, and a launch's
    programs are blocks (``interp_races._sem``): the prefix read is unordered and fails; at gpu scope it passes."""
    ref = R / "rt28_scan1d.py"
    bad = run(make_ws, ladder_for, "scan", K / "rt32_scan_cta_scope_bad.py", reference=ref, **QUICK)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, c.line()
    reads = [w for w in bad.rung("run").warnings if "of scan_kernel read prefix_ptr[" in w]
    assert reads, bad.rung("run").warnings
    _ok(run(make_ws, ladder_for, "scan", K / "rt31_scan_ticket_good.py", reference=ref, **QUICK))


def test_the_cta_scope_and_an_atomic_loads_relaxed_sem_order_nothing():
    from ktui.worker.interp_races import _sem

    assert _sem("ACQUIRE_RELEASE") == (True, True) and _sem("RELAXED") == (False, False)
    assert _sem("ACQUIRE_RELEASE", "CTA") == (False, False) and _sem("RELEASE", "MEM_SYNC_SCOPE.GPU") == (False, True)
    assert _sem("ACQUIRE", "SYSTEM") == (True, False)


def test_a_chunked_logsumexp_whose_first_chunk_is_all_minus_inf_fails_on_every_seed(make_ws, ladder_for):
    """New-user trial 32, F1: a fused cross-entropy whose online logsumexp gave NaN on an all -inf leading chunk
    passed on some seeds (left padding of ``masked`` rows covered a random length, under a 2,048 chunk about half
    the time). Left padding now covers at least half the row: the bad kernel fails on the seed that passed it; the
    twin with a safe max passes on it."""
    ref = R / "nu32_xent.py"
    quick = dict(QUICK, seed=830249554)
    bad = run(make_ws, ladder_for, "xent", K / "nu32_xent_lse_nan_bad.py", reference=ref, **quick)
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED and "dist=masked" in c.summary, c.line()
    assert "NaN/inf where the reference differs" in c.summary, c.summary
    _ok(run(make_ws, ladder_for, "xent", K / "nu32_xent_chunked_good.py", reference=ref, **quick))


def test_left_padding_of_masked_rows_covers_at_least_half_of_each_row():
    import math

    import torch

    from ktui.worker.special import refill_special

    for seed in range(8):
        x = torch.zeros(16, 999)
        refill_special(x, "masked", torch.Generator().manual_seed(seed), False, torch.Generator().manual_seed(seed))
        lead = [r for r in x if math.isinf(float(r[0])) and float(r[0]) < 0]
        assert lead, x[:, 0]
        for r in lead:
            run_len = int(torch.isinf(r).int().cumprod(0).sum())
            assert 999 // 2 <= run_len < 999, run_len


def test_in_place_shifts_read_what_the_program_before_overwrote_in_a_shuffled_launch(make_ws, ladder_for):
    """Red team round 32b, #5 and #1: an in-place shift-right split along the window read the element the program
    before it overwrote; forward launches gave the read the value before the store and reversed ones ran the reader
    first, the right value either way. And a shift-left with an atomic max between its loads and stores had every
    program at its atomic before any stored. Shuffled launches read as executed and start each next program as one
    more choice among the paused ones: both fail; reading from a copy passes."""
    for ref, bad, good in (
        ("rt32b_push.py", "rt32b_push_inplace_bad.py", "rt32b_push_copy_good.py"),
        ("rt32b_rollamax.py", "rt32b_rollamax_inplace_bad.py", "rt32b_rollamax_copy_good.py"),
    ):
        res = run(make_ws, ladder_for, "shift", K / bad, reference=R / ref, **QUICK)
        c = res.rung("correctness")
        assert c is not None and c.status is Status.FAILED, (bad, [x.line() for x in res.rungs])
        honest = run(make_ws, ladder_for, "shift", K / good, reference=R / ref, **dict(QUICK, layouts=True))
        _ok(honest)
        # the state it returns is the caller's, laid out as the caller's (32b, #10: "not row-major" warnings)
        said = [w for r in honest.rungs for w in r.warnings if "not row-major" in w]
        assert not said, said


def test_a_backward_reading_a_gradient_with_padded_rows_as_packed_fails(make_ws, ladder_for):
    """Red team round 32b, #6: a SiLU backward making its gradient contiguous only where ``stride(-1) != 1`` read a
    gradient with padded rows (a ``torch.cat`` consumer's slice) as packed, and passed: the cotangents came
    contiguous, expanded or transposed. They come padded too (``grad_modes.cotangent``, a fourth requires_grad case):
    it fails on the gradient; the twin making it contiguous whatever its layout passes."""
    ref = R / "rt32b_silu2d.py"
    bad = run(make_ws, ladder_for, "silu", K / "rt32b_silu2d_padded_grad_bad.py", reference=ref, **QUICK)
    # it fails on a gradient case: the padded one's values (correctness), or, since round 33's per_column cotangent
    # (stride (0, 1), one row of storage), reading it as packed runs past its storage (the run rung, first)
    failed = [x for x in bad.rungs if x.status is Status.FAILED]
    assert failed and failed[0].name in ("run", "correctness"), [x.line() for x in bad.rungs]
    text = failed[0].summary + (failed[0].error.message if failed[0].error else "")
    assert "grad=requires_grad" in text and ("the gradient of in" in text or "g_ptr" in text), text
    _ok(run(make_ws, ladder_for, "silu", K / "rt32b_silu2d_contig_good.py", reference=ref, **QUICK))


def test_the_six_cotangent_layouts():
    import torch

    from ktui.protocol import COTANGENT_LAYOUTS
    from ktui.worker.grad_modes import PAD, cotangent

    like = torch.empty(3, 5)
    got = {}
    for seed in range(6):
        g = cotangent("out", like, seed)
        got[COTANGENT_LAYOUTS[seed % 6]] = g
        assert tuple(g.shape) == (3, 5)
    assert got["contiguous"].is_contiguous() and got["expanded"].stride() == (0, 0)
    assert got["transposed"].stride() == (1, 3) and got["padded"].stride() == (5 + PAD, 1)
    # one value per row (y.sum(-1)'s), one per column (y.sum(0)'s): red team round 33, #3
    assert got["per_row"].stride() == (1, 0) and len(set(got["per_row"][:, 0].tolist())) == 3
    assert got["per_column"].stride() == (0, 1) and len(set(got["per_column"][0].tolist())) == 5
    assert cotangent("out", torch.empty(7), 3).is_contiguous()  # a 1-D output's padded one is contiguous
    assert cotangent("out", torch.empty(7), 4).is_contiguous()  # ... and its per_row one


def test_the_large_stretch_picks_among_specs_of_one_size_by_the_runs_seed():
    """Red team round 32b, #8: of (2, 4099, fp32) and (2, 4099, bf16) the verified stretch's second run always took
    the first; the run's seed picks among specs of the largest size now, so both are met over runs."""
    from ktui.core.ladder.rungs.benchmark import largest_spec

    desc = {"tests": [{"rows": 1, "cols": 1}, {"rows": 2, "cols": 4099}, {"rows": 2, "cols": 4099}], "fuzzed": []}
    executed = [{"spec_index": i, "seconds": 0.1 * (i + 1), "seed": 1} for i in range(3)]
    picked = {largest_spec(desc, executed, seed)[0] for seed in range(4)}
    assert picked == {1, 2}, picked
    assert largest_spec(desc, executed[:2], 7) == (1, 0.2)


def test_a_backward_wrong_only_with_a_frozen_input_fails_on_a_frozen_case(make_ws, ladder_for):
    """Red team round 32, #4: y = x * w whose backward, where the weight is frozen, read its gradient flat, passed:
    every requires_grad case re-flagged both inputs. Two cases now keep one input frozen each (``Case.frozen``,
    ``grad_modes.frozen_path``), their cotangents expanded and transposed: it fails naming the frozen input; the twin
    making its gradient contiguous first passes."""
    ref = R / "rt32_colscale.py"
    bad = run(make_ws, ladder_for, "cs", K / "rt32_colscale_frozen_flat_bad.py", reference=ref, **QUICK)
    failed = [r for r in bad.rungs if r.status is Status.FAILED]
    assert failed, [r.line() for r in bad.rungs]
    text = " ".join(r.line() + (r.error.message if r.error else "") for r in failed)
    assert "frozen=in[1]" in text, text
    _ok(run(make_ws, ladder_for, "cs", K / "rt32_colscale_frozen_good.py", reference=ref, **QUICK))


def test_a_shuffled_launch_gives_each_lane_of_an_unordered_read_either_value():
    """Landing CI of stop 39: which launches caught a last ticket-holder reading sums added with relaxed atomics moved
    with the case list (only the forward round-robin quarter gave a read the value before the write, and a shuffled
    launch rarely held a program back). A shuffled launch now gives each lane of an unordered read the value before
    the write or after it by a seeded draw (``Launch.stale_share``), and runs its programs by random priorities with
    demotions (``interp_sched.Grid._by_priority``); the forward round-robin ones give every lane the value before,
    the reversed ones none."""
    import numpy as np

    from ktui.worker.interp_races import Launch

    mem = np.arange(64, dtype=np.float32)  # what the elements held before the other program's store
    ptrs = (mem.ctypes.data + 4 * np.arange(64)).astype(np.uint64)
    got = {}
    for share in (1.0, 0.5, 0.0):
        mem[:] = np.arange(64)
        launch = Launch("k", (2, 1, 1), stale_share=share, seed=6)
        launch.before_store(0, ptrs, 4, None)
        launch.store(0, ptrs, np.full(64, -1.0, np.float32), None)
        mem[:] = -1.0  # the store, done
        values = mem.copy()  # what program 1's load read as executed
        got[share] = (launch.read(1, ptrs, None, values), values, launch.read_race)
    n, values, first = got[1.0]
    assert n == 64 and values.tolist() == list(range(64)) and first is not None and first[4]
    n, values, first = got[0.0]
    assert n == 0 and (values == -1).all() and first is not None and not first[4]
    n, values, first = got[0.5]
    stale = values >= 0
    assert 8 < n < 56 and int(stale.sum()) == n and (values[stale] == np.arange(64)[stale]).all(), values
    assert first is not None and first[4] and (values[~stale] == -1).all()


def test_a_training_ops_backward_launches_are_dumped_with_its_forward(make_ws, ladder_for):
    """New-user trial 32, F9: only the forward of a fused cross-entropy was dumped (and so diffed): the dumps rung's
    dry call ran the forward alone. A reference that makes inputs requiring grad has its version's backward run in
    the dry call too (``grad_modes.input_grads`` on seeded cotangents, every launch compiled, none run): its
    kernels are dumped beside the forward's, with their SASS figures."""
    ref = R / "nu32_xent.py"
    rungs = ("compile", "run", "correctness", "dumps")
    res = run(make_ws, ladder_for, "xent", K / "nu32_xent_chunked_good.py", reference=ref, **dict(QUICK, rungs=rungs))
    d = res.rung("dumps")
    assert d is not None and d.status is Status.OK, [x.line() for x in res.rungs]
    names = [k["kernel"] for k in d.figures["kernels"]]
    assert "xent_fwd_kernel" in names and "xent_bwd_kernel" in names, names
    assert "xent_bwd_kernel" in d.summary, d.summary
    assert not [w for w in d.warnings if "backward" in w or "not checked" in w or "xent_bwd_kernel" in w], d.warnings


def test_a_backwards_launches_never_count_as_the_calls_own():
    """The backward's launches (``ExecutedCase.backward_launches``) are compiled and dumped, but a spec whose calls
    launched nothing still computes its forward in torch, whatever its backward launches."""
    from ktui.core.ladder.rungs.run import specs_without_launch

    def case(i, launches, backward=None):
        c = {"spec_index": i, "spec": None, "launches": launches, "outputs": [{"path": "out", "numel": 4}]}
        return dict(c, backward_launches=backward) if backward else c

    executed = [case(0, {"k1": 1}), case(1, {}, backward={"bwd": 1}), case(1, {})]
    assert specs_without_launch(executed) == [1]
