"""Red team round 11 (a fresh helper from the README and the code, CPU): the ways through fixed as mechanisms, each a
bad kernel, its honest twin and a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

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
