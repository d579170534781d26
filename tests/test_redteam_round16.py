"""Red team round 16: each finding fixed as a mechanism, with a bad kernel, its honest twin and a test asserting the
verdict and its message (docs/cases.md).

M1-M3: the CPU caps (``fuzz.budget``, ``fuzz.lead_budget``) kept every spec within one wave of a grid sized from the
SM count (132 on the stand-in H200), so a persistent kernel's loop never ran twice; every CPU run now draws one spec
past two waves (``fuzz._draw_waves``). M4: float arguments only ever scaled by 0.5..2x; they are also negated and
multiplied by 8 where the reference stays valid. F1: a Python int from the reference fixed the kernel's dtype to
int64."""

from __future__ import annotations

import importlib.util

import pytest

from ktui.core.results import Status

from .test_cases import CASES, CHECKED, K, corr, good, run

R = CASES / "references"


def _problem(path):
    import hashlib

    from ktui.worker.problem import Problem

    return Problem(path, path.stem, hashlib.sha256(path.read_bytes()).hexdigest())


def _module(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# -- M1-M3: one spec past the first wave of a grid capped at the SM count, every CPU run -------------------------------
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_cpu_run_draws_one_spec_past_two_waves_of_the_sms(seed):
    from ktui.worker import fuzz

    def drawn(name):
        mod = _module(R / f"{name}.py")
        return fuzz.draw_specs(mod, mod.tests, mod.benchmarks, seed, "cpu", lambda spec: True)

    rows = [s for s in drawn("rt16_softmax") if s["rows"] > 2 * fuzz.WAVE_SMS + 1]
    assert len(rows) == 1 and rows[0]["rows"] % fuzz.WAVE_SMS and rows[0]["cols"] <= fuzz.WAVE_INNER, rows
    tiles = [s for s in drawn("rt16_matmul") if -(-s["m"] // 128) * -(-s["n"] // 128) > fuzz.WAVE_SMS]
    assert len(tiles) == 1 and tiles[0]["k"] <= fuzz.WAVE_INNER, tiles
    assert -(-tiles[0]["m"] // 64) * -(-tiles[0]["n"] // 64) > 4 * fuzz.WAVE_SMS  # tiles of 64: over 4 waves
    big = [s for s in drawn("rt16_vector_add") if s["n"] > 2 * 4 * fuzz.WAVE_SMS * 1024]
    assert len(big) == 1 and big[0]["n"] < fuzz.WAVE_1D + 3 * 1024, big
    # not on a GPU (its budget reaches the benchmark's sizes), nor past what the problem's range allows
    mod = _module(R / "rt16_softmax.py")
    small = [{**s} for s in mod.tests]
    assert not any(s["rows"] > 264 for s in fuzz.draw_specs(mod, small, [], seed, "cpu", lambda spec: True))


def test_a_persistent_softmax_with_a_floor_wave_count_fails_past_the_sms_and_its_twin_passes(make_ws, ladder_for):
    ref = R / "rt16_softmax.py"
    bad = corr(
        run(
            make_ws,
            ladder_for,
            "softmax",
            K / "rt16_persistent_waves_floor_bad.py",
            reference=ref,
            seed=1,
            rungs=CHECKED,
        )
    )
    assert bad.status is Status.FAILED, bad.line()
    assert "spec=fuzzed(" in bad.summary and "unwritten at [264, 0]" in bad.summary, bad.summary
    good(run(make_ws, ladder_for, "softmax", K / "rt16_persistent_waves_good.py", reference=ref, seed=1, rungs=CHECKED))


def test_a_persistent_gemm_whose_accumulator_carries_over_tiles_fails_and_its_twin_passes(make_ws, ladder_for):
    ref = R / "rt16_matmul.py"
    bad = corr(
        run(make_ws, ladder_for, "matmul", K / "rt16_persistent_gemm_acc_bad.py", reference=ref, seed=1, rungs=CHECKED)
    )
    assert bad.status is Status.FAILED, bad.line()
    assert "spec=fuzzed(1537, 1537, 1) seed=1" in bad.summary and "cosine 0.60" in bad.summary, bad.summary
    good(run(make_ws, ladder_for, "matmul", K / "rt16_persistent_gemm_good.py", reference=ref, seed=1, rungs=CHECKED))


def test_a_grid_stride_loop_stepping_one_block_fails_past_one_wave_and_its_twin_passes(make_ws, ladder_for):
    ref = R / "rt16_vector_add.py"
    bad = corr(
        run(make_ws, ladder_for, "vector_add", K / "rt16_gridstride_step_bad.py", reference=ref, seed=1, rungs=CHECKED)
    )
    assert bad.status is Status.FAILED, bad.line()
    assert "spec=fuzzed(1081345,)" in bad.summary and "unwritten at [542720]" in bad.summary, bad.summary
    good(run(make_ws, ladder_for, "vector_add", K / "rt16_gridstride_good.py", reference=ref, seed=1, rungs=CHECKED))


# -- M4: a float argument negated and times 8, where the reference stays valid -----------------------------------------
def test_a_leaky_relu_right_only_for_slopes_in_0_1_fails_on_a_moved_slope_and_its_twin_passes(make_ws, ladder_for):
    ref = R / "rt16_leaky.py"
    bad = corr(run(make_ws, ladder_for, "leaky", K / "rt16_leaky_max_bad.py", reference=ref, seed=1, rungs=CHECKED))
    assert bad.status is Status.FAILED, bad.line()
    assert "scalars" in bad.summary, bad.summary
    good(run(make_ws, ladder_for, "leaky", K / "rt16_leaky_where_good.py", reference=ref, seed=1, rungs=CHECKED))


def test_float_moves_are_kept_only_where_the_reference_stays_valid_and_each_comes_in_turn():
    from ktui.worker.arguments import argument_moves, scalar_moves
    from ktui.worker.cases import build_input, moved, scale_scalars

    assert moved(0.2, "neg") == -0.2 and moved(0.2, "x8") == 1.6 and moved(0.0, "+1.0") == 1.0
    assert scale_scalars((1.0, 0.2), (), 3, {"[1]"})[1] == 0.2  # a moved float is not scaled as well
    problem = _problem(R / "rt16_leaky.py")
    moves, notes = argument_moves(problem, "cpu")
    assert moves == {"[1]": ["neg", "x8", "+1.0"]} and not notes
    for seed in (1, 2, 3):  # each run: the slope scaled only, negated, times 8, plus 1 (round 17), one case each
        combos = scalar_moves(problem, "cpu", seed)
        want = [{}, {"[1]": "neg"}, {"[1]": "x8"}, {"[1]": "+1.0"}]
        assert sorted(map(str, combos)) == sorted(map(str, want)), combos
    data = build_input(problem, {"spec_index": 0, "seed": 5, "dist": "scalars", "vary": {"[1]": "x8"}}, "cpu")
    assert data[1] == pytest.approx(1.6)
    # a float whose negation makes the reference NaN (an eps under a square root) is not negated
    sqrt = _problem(R / "rt16_sqrt_eps.py")
    assert argument_moves(sqrt, "cpu")[0] == {"[1]": ["x8", "+1.0"]}


# -- F1: a Python number from the reference fixes the value, not the dtype ---------------------------------------------
def test_an_exact_int32_count_passes_for_a_python_int_and_a_wrong_one_fails(make_ws, ladder_for):
    ref = R / "rt16_count_pos.py"
    good(run(make_ws, ladder_for, "count_pos", K / "rt16_count_int32_good.py", reference=ref, seed=1, rungs=CHECKED))
    bad = corr(
        run(make_ws, ladder_for, "count_pos", K / "rt16_count_int32_tail_bad.py", reference=ref, seed=1, rungs=CHECKED)
    )
    assert bad.status is Status.FAILED, bad.line()
    assert "spec=(1025,)" in bad.summary or "spec=(4099,)" in bad.summary, bad.summary


def test_a_python_number_admits_any_dtype_of_its_kind_that_holds_it():
    import torch

    from ktui.worker.compare import number_dtype

    assert number_dtype(torch.tensor(7), "int32") == "" and number_dtype(torch.tensor(7), "uint8") == ""
    assert "cannot hold the reference's Python int 300" in number_dtype(torch.tensor(300), "int8")
    assert "expected an integer dtype" in number_dtype(torch.tensor(7), "float32")
    assert "expected an integer dtype" in number_dtype(torch.tensor(7), "bool")
    assert number_dtype(torch.tensor(0.5), "bfloat16") == "" and number_dtype(torch.tensor(0.5), "float64") == ""
    assert "expected a floating dtype" in number_dtype(torch.tensor(0.5), "int64")
    assert number_dtype(torch.tensor(True), "bool") == "" and "expected bool" in number_dtype(
        torch.tensor(True), "int8"
    )
