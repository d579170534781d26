"""Red team round 11 (a fresh helper from the README and the code, CPU): the ways through fixed as mechanisms, each a
bad kernel, its honest twin and a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

from .conftest import ROOT
from .test_cases import CASES, CHECKED, K, corr, good, run

NPSCALE = CASES / "references" / "npscale.py"


# -- W1: a NumPy scalar argument is an argument too -------------------------------------------------------------
def test_a_numpy_float_argument_folded_into_a_constant_fails_and_its_twin_passes(make_ws, ladder_for):
    # alpha = 1 / np.sqrt(8) is an np.float64 (a float subclass, not `type(x) is float`): it was never scaled
    bad = corr(
        run(make_ws, ladder_for, "npscale", K / "rt11_npscale_const_bad.py", reference=NPSCALE, seed=5, rungs=CHECKED)
    )
    assert bad.status is Status.FAILED, bad.line()
    assert "dist=scalars" in bad.summary, bad.summary
    good(run(make_ws, ladder_for, "npscale", K / "rt11_npscale_good.py", reference=NPSCALE, seed=5, rungs=CHECKED))


def test_numpy_scalars_are_scaled_and_moved_as_python_ones_are():
    import numpy as np

    from ktui.worker.cases import is_int_arg, move_ints, moved, scale_scalars

    data = (np.float64(0.25), np.int64(3), 2.0, 7, True, np.float32(1.5))
    scaled = scale_scalars(data, (), seed=9)
    assert scaled[0] != 0.25 and isinstance(scaled[0], np.floating)  # NumPy floats scaled, their type kept
    assert scaled[5] != np.float32(1.5) and scaled[2] != 2.0
    assert scaled[1] == 3 and scaled[3] == 7 and scaled[4] is True  # ints and bools are moved apart, not scaled
    assert is_int_arg(np.int64(3)) and not is_int_arg(np.float64(3.0)) and not is_int_arg(3.0)
    assert moved(np.int64(3), "+1") == 4 and moved(np.int64(3), "x2") == 6
    assert move_ints(data, (), {"[1]": "-1"})[1] == 2


# -- W2: launches no GPU can make ----------------------------------------------------------------------------------
DUMPS = ("compile", "dumps")  # the dumps rung compiles the benchmark spec's launches for sm_90a


def test_a_grid_past_cudas_y_limit_fails_the_dumps_rung_and_its_twin_on_x_passes(make_ws, ladder_for):
    ref = CASES / "references" / "bias_add_rows.py"
    bad = run(make_ws, ladder_for, "bias_add", K / "rt11_grid_y_bad.py", reference=ref, rungs=DUMPS)
    d = bad.rung("dumps")
    assert d.status is Status.FAILED and d.error.type == "LaunchLimitError", d.line()
    assert "blocks along y, past CUDA's limit of 65,535" in d.summary and "131,072" in d.summary, d.summary
    ok = run(make_ws, ladder_for, "bias_add", K / "rt11_grid_x_good.py", reference=ref, rungs=DUMPS)
    assert ok.rung("dumps").status is Status.OK, ok.rung("dumps").line()


def test_tiles_past_the_shared_memory_per_block_fail_the_dumps_rung_and_the_example_passes(make_ws, ladder_for):
    bad = run(make_ws, ladder_for, "matmul", K / "rt11_smem_bad.py", rungs=DUMPS)
    d = bad.rung("dumps")
    assert d.status is Status.FAILED and d.error.type == "LaunchLimitError", d.line()
    assert "B of shared memory per block, past sm_90a's 232,448 B (227 KiB)" in d.summary, d.summary
    ok = run(make_ws, ladder_for, "matmul", ROOT / "kernels/matmul/v1.py", rungs=DUMPS)
    assert ok.rung("dumps").status is Status.OK, ok.rung("dumps").line()


def test_launch_limits_name_each_launch_over_a_limit():
    from ktui.core.ladder.rungs.dumps import launch_limits

    kernels = [
        {"kernel": "a", "resources": {"shared": 0, "dynamic_shared": 232_448}},
        {"kernel": "b", "resources": {"shared": 1024, "dynamic_shared": 232_448}},
        {"kernel": "c", "resources": {}},
    ]
    launches = [{"grid": [2**31 - 1, 65_535, 1]}, {"grid": [1, 1, 1]}, {"grid": [1, 1, 65_536]}]
    found = launch_limits(kernels, launches, "sm_90a")
    assert len(found) == 2 and found[0].startswith("b needs 233,472 B") and "blocks along z" in found[1], found
    assert launch_limits(kernels[1:2], launches[1:2], "sm_100a") == []  # smem unknown for this arch: grid only


# -- W4: a float32 dot at Triton's default precision is TF32 on the CPU too -----------------------------------------
def test_a_default_precision_fp32_dot_computes_in_tf32_on_the_cpu_and_fails_and_its_ieee_twin_passes(
    make_ws, ladder_for
):
    ref = CASES / "references" / "matmul_fp32_randn.py"
    opts = dict(reference=ref, seed=3, repeat=False, fuzz=False, layouts=False, rungs=CHECKED)
    bad = corr(run(make_ws, ladder_for, "matmul_fp32", K / "rt11_mm32_default_dot_bad.py", **opts))
    assert bad.status is Status.FAILED, bad.line()
    assert any("at the TF32 level" in w for w in bad.warnings), bad.warnings
    twin = good(run(make_ws, ladder_for, "matmul_fp32", K / "rt11_mm32_ieee_good.py", **opts))
    assert not any("TF32" in w for w in twin.rung("correctness").warnings)


def test_the_interpreters_tf32_rounds_to_nearest_ties_away_as_cvt_rna_does():
    import numpy as np

    from ktui.worker.interp_fixes import _is_tf32, _to_tf32

    x = np.array([1.0, 1 + 2**-11, 1 + 2**-10 + 2**-11, 1 + 2**-12, -1 - 2**-11, np.inf], dtype=np.float32)
    assert _to_tf32(x).tolist() == [1.0, 1 + 2**-10, 1 + 2**-9, 1.0, -1 - 2**-10, np.inf]
    assert np.isnan(_to_tf32(np.array([np.nan], dtype=np.float32)))[0]
    assert _is_tf32("INPUT_PRECISION.TF32") and not _is_tf32("INPUT_PRECISION.TF32x3") and not _is_tf32("IEEE")


def test_a_laid_out_case_names_each_inputs_layout_and_strides(make_ws, ladder_for):
    """A new user's bug was the 1-D bias's stride; the failing case said only 'layout=transposed' (the first input's)
    and pointed at the input they had handled. Every failing laid-out case now names each input's layout and
    strides; the twin reads b through its stride and passes."""
    ref = CASES / "references" / "bias_add_rows.py"
    bad = run(make_ws, ladder_for, "bias_add", K / "bias_flat_bias_bad.py", reference=ref, seed=1)
    failed = bad.failed_rung
    assert failed is not None and failed.name in ("run", "correctness"), bad.rungs
    text = failed.line() + (failed.error.message if failed.error else "")
    assert "in[1] strided, strides (2,)" in text or "in[1] offset, strides (1,)" in text, text
    assert "in[0] " in text, text  # both inputs named, each with its own layout
    good(run(make_ws, ladder_for, "bias_add", K / "rt11_grid_x_good.py", reference=ref, seed=1))
