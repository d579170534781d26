"""Red team round 11, the open findings (false alarms first): each fixed as a mechanism, with a bad kernel, its honest
twin and a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, CHECKED, K, corr, good, run

CUMSUM = CASES / "references" / "cumsum.py"


# -- F2: torch's CPU scans accumulate float32 in float64; the native bar is also a float32 scan's ---------------------
def test_an_honest_float32_scan_passes_and_its_float64_twin_too(make_ws, ladder_for):
    good(run(make_ws, ladder_for, "cumsum", K / "rt11b_scan_good.py", reference=CUMSUM, seed=4, rungs=CHECKED))
    good(run(make_ws, ladder_for, "cumsum", K / "rt11b_scan_f64_good.py", reference=CUMSUM, seed=4, rungs=CHECKED))


def test_a_scan_with_a_bfloat16_carry_or_a_dropped_block_still_fails(make_ws, ladder_for):
    bad = corr(
        run(make_ws, ladder_for, "cumsum", K / "rt11b_scan_bf16_carry_bad.py", reference=CUMSUM, seed=4, rungs=CHECKED)
    )
    assert bad.status is Status.FAILED, bad.line()
    assert "what the reference computed in float32 gets" in bad.summary, bad.summary
    drop = corr(
        run(make_ws, ladder_for, "cumsum", K / "rt11b_scan_drop_block_bad.py", reference=CUMSUM, seed=4, rungs=CHECKED)
    )
    assert drop.status is Status.FAILED and "unwritten" in drop.summary, drop.summary


def test_the_float32_scans_round_every_running_value_and_replace_only_cpu_float32_scans():
    import numpy as np
    import torch

    from ktui.worker.float32_scans import blocked_scan, run_in_float32

    x = torch.tensor([1.0, 2.0**24, 1.0, -(2.0**24), 1.0], dtype=torch.float32)
    # float32: 2**24 + 1 rounds to 2**24 (ties to even); torch's CPU cumsum carries it in float64 and keeps the 1s
    assert torch.cumsum(x, 0).tolist() == [1.0, 2.0**24, 2.0**24 + 2, 2.0, 3.0]
    assert blocked_scan(x, 0, np.add, 0.0, block=8).tolist() == [1.0, 2.0**24, 2.0**24, 0.0, 1.0]  # sequential
    # blocks of 2: [1, 2**24] [1, -2**24] [1], each scanned, then the float32 carry 0, 2**24, 1 added
    assert blocked_scan(x, 0, np.add, 0.0, block=2).tolist() == [1.0, 2.0**24, 2.0**24, 1.0, 2.0]
    out, replaced = run_in_float32(lambda d: (d.cumsum(0), torch.cumprod(d, 0), d.double().cumsum(0)), x)
    assert replaced == 2 and out[0].tolist() == [1.0, 2.0**24, 2.0**24, 0.0, 1.0]
    assert out[2].tolist() == [1.0, 2.0**24 + 1, 2.0**24 + 2, 2.0, 3.0]  # float64 asked for: left as it is
    m = torch.randn(3, 5, 7)
    for dim in (0, 1, 2, -1):  # other dimensions, several blocks: the same scan within float32's rounding
        got = blocked_scan(m, dim, np.add, 0.0, block=2)
        assert torch.allclose(got, torch.cumsum(m, dim), atol=1e-5), dim
    got = blocked_scan(m, 1, np.logaddexp, -np.inf, block=2)
    assert torch.allclose(got, torch.logcumsumexp(m, 1), atol=1e-5)


# -- F1: a guarded allocation grows with resize_ as a plain one does --------------------------------------------------
SUM = CASES / "references" / "sum_all.py"


def test_a_cached_workspace_grown_with_resize_passes_and_one_grown_short_fails(make_ws, ladder_for):
    good(run(make_ws, ladder_for, "sum_ws", K / "rt11b_ws_resize_good.py", reference=SUM, seed=2, rungs=CHECKED))
    good(run(make_ws, ladder_for, "sum_ws", K / "rt11b_ws_realloc_good.py", reference=SUM, seed=2, rungs=CHECKED))
    res = run(make_ws, ladder_for, "sum_ws", K / "rt11b_ws_resize_short_bad.py", reference=SUM, seed=2, rungs=CHECKED)
    assert not res.ok, [r.line() for r in res.rungs]
    failed = next(r for r in res.rungs if r.status is Status.FAILED)
    assert "out-of-bounds store" in failed.line() and "part_ptr" in failed.line(), failed.line()


def test_resize_grows_a_guarded_allocation_into_a_guarded_one_and_keeps_its_values():
    import numpy as np
    import torch

    from ktui.worker import allocation
    from ktui.worker.guards import GUARD_BYTES, Guards

    allocation.install()
    g = Guards()
    with allocation.poisoned_allocations(guards=g):
        w = torch.empty(2)
        assert not w.untyped_storage().resizable()  # a DLPack alias between canaries
        w.fill_(3.0)
        w.resize_(5)
        assert w.shape == (5,) and w[:2].tolist() == [3.0, 3.0] and len(g.bands) == 2  # the grown one is guarded
        assert torch.isnan(w[2:]).all()  # and poisoned, as torch.empty is in a checked call
        w.resize_as_(torch.zeros(2, 4))
        assert w.shape == (2, 4) and w[0, :2].tolist() == [3.0, 3.0]
        last = g.bands[-1]
        assert last.payload.untyped_storage().data_ptr() == w.untyped_storage().data_ptr() and last.nbytes == 32
        last.buf[GUARD_BYTES + last.nbytes] += 1  # a byte past the grown workspace: its canary sees it
    assert any("past the end of" in v for v in g.violations()), g.violations()
    g.close()
    with torch.no_grad():  # outside a checked call: a plain allocation, the values kept
        w.resize_(16)
    assert w.shape == (16,) and w[:2].tolist() == [3.0, 3.0] and w.untyped_storage().resizable()
    plain = torch.from_numpy(np.zeros(3, dtype=np.float32))  # a storage ktui did not make: torch's refusal stands
    try:
        plain.resize_(10)
    except RuntimeError as exc:
        assert "not resizable" in str(exc)
    else:
        raise AssertionError("a NumPy-backed tensor grew")


# -- F3: without a GPU, torch's device queries answer as the target GPU ----------------------------------------------
VADD = CASES.parent.parent / "references" / "vector_add.py"


def test_a_persistent_kernel_sized_by_the_sm_count_is_checked_on_the_cpu_and_its_bad_twin_fails(make_ws, ladder_for):
    opts = dict(reference=VADD, seed=3, layouts=False, distributions=False, rungs=CHECKED)
    ok = good(run(make_ws, ladder_for, "vadd", K / "rt11b_persistent_good.py", **opts))
    warned = [w for r in ok.rungs for w in r.warnings if "answered with the target GPU's facts" in w]
    assert warned and "NVIDIA H200, 132 SMs, sm_90" in warned[0], [r.warnings for r in ok.rungs]
    bad = corr(run(make_ws, ladder_for, "vadd", K / "rt11b_persistent_tail_bad.py", **opts))
    assert bad.status is Status.FAILED and "unwritten" in bad.summary, bad.line()


def test_the_device_queries_answer_with_the_h200s_facts():
    import torch

    from ktui.worker import target_device as td

    # the functions install() puts on torch.cuda in a worker without a GPU (not installed here: this process is shared)
    p = td.get_device_properties("cuda")
    assert (p.multi_processor_count, p.major, p.minor, p.warp_size) == (132, 9, 0, 32)
    assert td.get_device_properties(torch.device("cpu")).shared_memory_per_block_optin == 232_448
    assert td.get_device_capability() == (9, 0) and td.get_device_name(0) == "NVIDIA H200"
    assert td.current_device() == 0  # round 13 F5: get_device_properties(current_device()) is a common idiom
    assert "get_device_properties" in td.queried and "132 SMs, sm_90" in td.note()[0]


# -- W5: every run draws a size that is a multiple of every block up to 4096 -----------------------------------------
def test_every_run_draws_a_multiple_of_4096_for_each_field_within_the_budget():
    from ktui.worker.fuzz import WAVE_1D, budget, draw_specs

    from .test_cases_inputs import problem

    va, mm, sm = problem("vector_add"), problem("matmul"), problem("softmax")
    cap = budget(va.tests, va.benchmarks, "cpu")
    for seed in range(30):
        d = draw_specs(va.module, va.tests, va.benchmarks, seed, "cpu", lambda s: True)
        # (but the spec past two waves of a grid-stride loop, over the cap by design: red team round 16, M3)
        assert any(s["n"] % 4096 == 0 for s in d) and all(s["n"] <= cap or s["n"] >= WAVE_1D for s in d), (seed, d)
        # the innermost dimension (a matmul's k: EVEN_K; a row's columns); on the CPU the leading ones stay within
        # ``lead_budget`` (the interpreter's cost goes by rows and tiles), so they are aligned as far as it allows
        d = draw_specs(mm.module, mm.tests, mm.benchmarks, seed, "cpu", lambda s: True)
        assert any(s["k"] % 4096 == 0 for s in d), (seed, d)
        d = draw_specs(sm.module, sm.tests, sm.benchmarks, seed, "cpu", lambda s: True)
        assert any(s["cols"] % 4096 == 0 for s in d), (seed, d)
    assert draw_specs(va.module, va.tests, va.benchmarks, 3, "cpu", lambda s: True) == draw_specs(
        va.module, va.tests, va.benchmarks, 3, "cpu", lambda s: True
    )  # replayed by seed


def test_a_slip_in_the_even_block_fast_path_fails_on_every_seed_and_its_twin_passes(make_ws, ladder_for):
    # the fuzzed specs run once each on the reference's own inputs: no other distributions or layouts needed
    opts = dict(reference=VADD, repeat=False, layouts=False, distributions=False, rungs=CHECKED)
    for seed in (1, 2, 3):
        bad = corr(run(make_ws, ladder_for, "vadd", K / "rt11b_even_block_bad.py", seed=seed, **opts))
        assert bad.status is Status.FAILED and "fuzzed(" in bad.summary, (seed, bad.line())
    good(run(make_ws, ladder_for, "vadd", K / "rt11b_even_block_good.py", seed=1, **opts))


# -- W7: the verified stretch calls the largest test spec too --------------------------------------------------------
def test_a_tuner_that_switches_after_16_calls_on_large_sizes_fails_the_stretch_and_its_twin_passes(make_ws, ladder_for):
    opts = dict(reference=VADD, seed=2, repeat=False, layouts=False, distributions=False, rungs=(*CHECKED, "benchmark"))
    bad = run(make_ws, ladder_for, "vadd", K / "rt11b_tuner_large_bad.py", **opts).rung("benchmark")
    assert bad.status is Status.FAILED and "(65537,)" in bad.summary, bad.line()
    assert bad.figures["stretch_large"]["calls"] >= 17 and not bad.figures["stretch_large"]["ok"], bad.figures
    ok = run(make_ws, ladder_for, "vadd", K / "rt11b_tuner_large_good.py", **opts).rung("benchmark")
    assert ok.status is Status.SKIPPED and "calls in a row on the largest spec=(65537,)" in ok.summary, ok.line()
