"""Red team round 31 and new-user trial 31: each finding fixed as a mechanism, with a bad kernel, its honest twin and
a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, K, run

R = CASES / "references"
QUICK = dict(layouts=False, seeds=1, seed=3, near_duplicates=False, rungs=("compile", "run", "correctness"))


def _pair(make_ws, ladder_for, name, bad, good, ref):
    """The bad kernel's and its honest twin's results on one problem."""
    return (
        run(make_ws, ladder_for, name, K / bad, reference=R / ref, **QUICK),
        run(make_ws, ladder_for, name, K / good, reference=R / ref, **QUICK),
    )


def _ok(res):
    for rung in ("run", "correctness"):
        r = res.rung(rung)
        assert r is not None and r.status is Status.OK, [x.line() for x in res.rungs]


def test_a_work_queue_is_shared_by_programs_interleaved_at_their_atomics(make_ws, ladder_for):
    """Red team round 31, #6: a persistent embedding backward taking tokens from an atomic counter, adding rows with a
    plain load and store, passed: the interpreter ran program 0 to its end first, so it drained the queue alone. The
    launch's programs now run interleaved at their atomics (``worker.interp_sched``), and a row another program
    stored with nothing ordering the two is read as it was before that store: the bad kernel fails correctness, the
    run rung names the read; the twin adding with atomics passes."""
    bad, good = _pair(
        make_ws, ladder_for, "emb", "rt31_embbwd_queue_bad.py", "rt31_embbwd_queue_good.py", "rt31_embbwd.py"
    )
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED and "output out:" in c.summary, c.line()
    reads = [w for w in bad.rung("run").warnings if "of _emb_bwd read gw_ptr[" in w]
    assert reads and "nothing ordering them" in reads[0], bad.rung("run").warnings
    _ok(good)
    assert not [w for w in good.rung("run").warnings if "of _emb_bwd" in w], good.rung("run").warnings


def test_a_partial_stored_after_the_ticket_is_not_ordered_before_the_last_programs_read(make_ws, ladder_for):
    """Red team round 31, #2: a one-launch sum whose programs take their ticket, then store their partial, passed
    (any atomic exempted the launch). Happens-before now decides: a release after the store and an acquire before the
    read. The twin storing first passes."""
    bad, good = _pair(
        make_ws, ladder_for, "vsum", "rt31_vsum_ticket_first_bad.py", "rt31_vsum_ticket_good.py", "rt28_vsum.py"
    )
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, c.line()
    reads = [w for w in bad.rung("run").warnings if "of sum_kernel read partial_ptr[" in w]
    assert reads, bad.rung("run").warnings
    _ok(good)


def test_a_lock_orders_only_what_its_holder_stored_before_giving_it_back(make_ws, ladder_for):
    """Red team round 31, #5 and new-user trial 31, F5: column sums under a compare-and-swap spin lock given back
    before the store it guards passed (a compare-and-swap exempted the launch): the next holder's read is no longer
    ordered after that store. The twin storing, then giving the lock back, passes."""
    bad, good = _pair(
        make_ws, ladder_for, "colsum", "rt31_colsum_lock_early_bad.py", "rt31_colsum_lock_good.py", "rt31_colsum.py"
    )
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, c.line()
    assert [w for w in bad.rung("run").warnings if "of colsum_kernel read out_ptr[" in w], bad.rung("run").warnings
    _ok(good)


def test_a_flag_polled_with_a_plain_load_fails_the_run_named(make_ws, ladder_for):
    """Red team round 31, #1: a ticketed look-back scan waiting for its predecessor's flag with a plain load passed
    (the ticket exempted the launch). Its reads of the flag are now unordered and get the value before the store, so
    it would wait for ever: after ``STALE_SPINS`` such reads the run fails, naming the flag and the fix. The twin
    (release exchange, acquire poll) passes."""
    bad, good = _pair(
        make_ws, ladder_for, "scan1d", "rt31_scan_plainspin_bad.py", "rt31_scan_ticket_good.py", "rt28_scan1d.py"
    )
    r = bad.rung("run")
    assert r is not None and r.status is Status.FAILED, r.line()
    text = r.line() + (r.error.message if r.error else "")
    assert "read flag_ptr[0] 10,000 times with a plain load" in text and "sem='acquire'" in text, text
    _ok(good)


def test_a_backward_reading_its_gradient_as_contiguous_meets_an_expanded_one(make_ws, ladder_for):
    """Red team round 31, #4: a SiLU backward reading its incoming gradient with flat offsets passed: the cotangents
    were always contiguous, where a ``y.sum()`` loss gives a stride-0 one. They now come contiguous, expanded or
    transposed (``grad_modes.cotangent``): the bad kernel reads past the expanded gradient's one element and fails;
    the twin making it contiguous first passes."""
    bad, good = _pair(
        make_ws, ladder_for, "silu", "rt31_silu_gradstride_bad.py", "rt31_silu_gradstride_good.py", "rt27_silu.py"
    )
    failed = [r for r in bad.rungs if r.status is Status.FAILED]
    assert failed, [r.line() for r in bad.rungs]
    text = " ".join(r.line() + (r.error.message if r.error else "") for r in failed)
    assert "grad=requires_grad" in text and "out-of-bounds load" in text, text
    _ok(good)


def test_an_in_place_op_that_is_the_identity_on_the_drawn_inputs_is_not_torch(make_ws, ladder_for):
    """Red team round 31, #7: an honest in-place clamp failed compile "times torch, not a kernel": on randn gradients
    the clamp changes nothing, so the dry call's unlaunched answer matched the reference. An output equal to an
    input as it was is no evidence (``candidate.right_without_launches``); the unit keeps the torch-only answer
    caught."""
    import torch

    from ktui.worker.candidate import right_without_launches

    g = torch.randn(64)
    assert not right_without_launches(g, g.clone(), (g, 5.0))  # the reference left the input as it was
    assert right_without_launches(torch.softmax(g, 0), torch.softmax(g, 0), (g,))  # torch computed it
    res = run(make_ws, ladder_for, "clip", K / "rt31_clip_inplace_good.py", reference=R / "rt31_clip.py", **QUICK)
    _ok(res)


def test_a_read_of_what_a_later_program_overwrites_meets_the_reverse_order(make_ws, ladder_for):
    """Red team round 31, #3: an in-place window shift split along the window reads the next block's first element,
    which the next program overwrites; in program order every read came first and it passed. About every other
    launch now runs its programs from the last (``interp_sched.reversed_order``): the read gets the new value and
    the kernel fails, the run rung naming the read; the twin (one program per row, blocks in order) passes."""
    bad, good = _pair(
        make_ws, ladder_for, "roll", "rt31_roll_inplace_bad.py", "rt31_roll_inplace_good.py", "rt31_roll.py"
    )
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, c.line()
    reads = [w for w in bad.rung("run").warnings if "of roll_kernel read state_ptr[" in w]
    assert reads and "the load ran after the store here" in " ".join(reads), bad.rung("run").warnings
    _ok(good)


def test_the_interpreters_numpy_warnings_are_not_lines_the_version_printed():
    """New-user trial 31, F3: numpy's "RuntimeWarning: invalid value encountered in divide" from the interpreter's
    arithmetic on ktui's extreme inputs filled the candidate's log, and the run rung said the version printed those
    lines. A GPU computes inf and NaN silently: with the interpreter's fixes installed they are not issued."""
    import os
    import subprocess
    import sys

    code = (
        "from ktui.worker import interp_fixes; interp_fixes.install()\n"
        "import torch, triton, triton.language as tl\n"
        "@triton.jit\n"
        "def k(x, o):\n"
        "    v = tl.load(x + tl.arange(0, 4))\n"
        "    tl.store(o + tl.arange(0, 4), v / 0.0)\n"
        "x, o = torch.zeros(4), torch.empty(4)\n"
        "k[(1,)](x, o)\n"
        "print(o.isnan().all().item())\n"
    )
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, "-W", "default", "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip().endswith("True"), done.stderr[-2000:]
    assert "RuntimeWarning" not in done.stderr, done.stderr


def test_a_bf16_output_truncated_toward_zero_fails_and_rounding_to_nearest_by_hand_passes(make_ws, ladder_for):
    """Red team round 31, #8: a GELU packing its float32 result to bf16 by keeping the high 16 bits (round toward
    zero) passed at 98% of tolerance: every element within one ulp, but all leaning toward zero, a sum of the output
    biased by ~u/2. The low-precision rules now judge which way the errors point (``metrics.rounding_lean``); the twin
    packing by hand with round to nearest even passes."""
    bad, good = _pair(make_ws, ladder_for, "gelu", "rt31_gelu_trunc_bad.py", "rt31_gelu_rne_good.py", "gelu_bf16.py")
    c = bad.rung("correctness")
    assert c is not None and c.status is Status.FAILED, c.line()
    assert "of the elements that differ from the reference err toward zero" not in c.summary  # the count is named
    assert "100.0% of the" in c.summary and "err toward zero, by 0.50 ulp on average" in c.summary, c.summary
    assert "truncates" in c.summary, c.summary
    _ok(good)


def test_a_crash_on_an_empty_size_is_named_a_crash_and_fails_where_the_tests_list_it(make_ws, ladder_for):
    """New-user trial 31, F4: a softmax whose block is ``next_power_of_2(cols)`` crashed inside Triton on fuzz's
    empty row (``tl.arange(0, 0)``) and was told "unsupported", as if it had refused the size. A crash outside the
    version's own ``raise`` is said to be one; where the reference's tests list the empty size, it fails; a refusal
    the version raises stays a refusal; the example softmax returns early and passes both."""
    from .test_cases import ROOT

    crash = run(make_ws, ladder_for, "softmax", K / "nu31_softmax_empty_crash.py", **QUICK)
    refuse = run(make_ws, ladder_for, "softmax", K / "nu31_softmax_empty_refuse.py", **QUICK)
    for res in (crash, refuse):
        _ok(res)
    said = [w for w in crash.rung("correctness").warnings if "unsupported" in w]
    assert said and all("fuzzed(" in w and ", 0" in w for w in said), said
    assert "a crash, not a refusal the version raised" in said[0], said
    told = [w for w in refuse.rung("correctness").warnings if "unsupported" in w]
    assert told and "ValueError: softmax over an empty row is undefined here" in told[0], told
    assert "a crash" not in told[0], told
    listed = run(
        make_ws, ladder_for, "sm0", K / "nu31_softmax_empty_crash.py", reference=R / "nu31_softmax_empty.py", **QUICK
    )
    r = listed.rung("run")
    assert r is not None and r.status is Status.FAILED and "spec=(4, 0, fp32)" in r.line(), [
        x.line() for x in listed.rungs
    ]
    example = run(
        make_ws, ladder_for, "sm0", ROOT / "kernels/softmax/v2.py", reference=R / "nu31_softmax_empty.py", **QUICK
    )
    _ok(example)
