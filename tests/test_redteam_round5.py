"""Ways through found by this session's red team (round 5, from the README and the code alone), each with its twin.

- a kernel right only while torch's global seed is small (ktui seeded torch with the case seed before building each
  input, and left it so): the seed is now reseeded from the OS after every input is built;
- a kernel returning a Python float where the reference returns a 0-d tensor passed silently: it is now a warning
  (the values are judged as before; a Python number for a 0-d tensor stays allowed, as for an integer count);
- false alarms on a reference that returns a Python float: a non-finite number reached the judge as the string
  "inf" and crashed it, and a Python float output had no native-precision allowance or special-values filter.
"""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, K, corr, good, run

ROOT_KERNELS = CASES.parent.parent / "kernels"


def test_a_kernel_that_reads_torchs_seed_cannot_tell_a_check_from_real_use(make_ws, ladder_for):
    bad = corr(run(make_ws, ladder_for, "vector_add", K / "seed_watch_bad.py", seed=3))
    assert bad.status is Status.FAILED
    assert "outside" in bad.summary and "spec=" in bad.summary  # a - b: every element outside the tolerance
    good(run(make_ws, ladder_for, "vector_add", ROOT_KERNELS / "vector_add" / "v1.py", seed=3))


def test_a_python_float_for_a_0d_tensor_is_named_and_the_tensor_is_not(make_ws, ladder_for):
    ref = CASES / "references" / "sum_all.py"
    odd = corr(run(make_ws, ladder_for, "sum_all", K / "sum_number_bad.py", reference=ref, seed=4))
    note = "out is a Python float where the reference returns a 0-d float32 tensor"
    assert any(note in w for w in odd.warnings), odd.warnings
    twin = corr(good(run(make_ws, ladder_for, "sum_all", K / "sum_all_good.py", reference=ref, seed=4)))
    assert not any(note in w for w in twin.warnings)


def test_a_reference_that_returns_a_python_float_judges_an_honest_kernel_on_every_distribution(make_ws, ladder_for):
    """masked and nonfinite inputs give -inf or NaN sums (the number travels as "-inf"); extreme inputs need the
    native fp32 allowance: the honest twin passes all of them."""
    ref = CASES / "references" / "sum_py.py"
    res = good(run(make_ws, ladder_for, "sum_py", K / "sum_py_good.py", reference=ref, seed=1333827320))
    c = corr(res)
    assert c.status is Status.OK and c.figures["cases"] > 60
