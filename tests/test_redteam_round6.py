"""Ways through and false alarms found by this session's red team (round 6, from the README and the code alone),
each with its twin:

- an honest int8 kernel whose output holds 90 (0x5A, the integer poison byte) was failed as "unwritten": an
  element holding the reference's own value is now never unwritten (the decoy fill still shows an unwritten one);
- an honest ragged kernel whose grid comes from ``lengths.max()`` failed the dumps rung "times torch, not a kernel":
  the dumps' placeholder inputs (no values drawn) made every length 0; a dry call that launches nothing on them is
  now made again on the reference's real inputs before anything is decided;
- an honest int16 quantization in fp32 failed the exact compare against the float64 truth (3 of 524288 elements
  one step off at rounding boundaries, where torch's own fp32 reference is off too): integer outputs of float math
  now get the native allowance (``compare.integer_native_allowance``);
- a kernel that folds a Python float argument (``alpha``, always 2.5 from generate_input) into a constant passed:
  the ``scalars`` special distribution scales every Python float argument by a drawn factor (a kernel may refuse
  another value with an error: unsupported, as a refused layout);
"""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, K, corr, good, run


def test_an_int8_output_holding_the_poison_bytes_value_is_written(make_ws, ladder_for):
    ref = CASES / "references" / "copy_i8.py"
    good(run(make_ws, ladder_for, "copy_i8", K / "copy_i8_good.py", reference=ref, seed=8))
    bad = corr(run(make_ws, ladder_for, "copy_i8", K / "copy_i8_tail_bad.py", reference=ref, seed=8))
    assert bad.status is Status.FAILED and "unwritten" in bad.summary


def test_a_grid_that_depends_on_the_values_is_dumped_from_real_inputs(make_ws, ladder_for):
    ref = CASES / "references" / "ragged.py"
    res = good(run(make_ws, ladder_for, "ragged", K / "ragged_grid_good.py", reference=ref, seed=2))
    dumps = res.rung("dumps")
    assert dumps is not None and dumps.status is Status.OK and "ragged_kernel" in dumps.summary, dumps.line()
    # and a version that truly launches nothing at the timed size still fails there (test_launches.py)


def test_integer_outputs_of_float_math_get_the_native_allowance_and_truncation_still_fails(make_ws, ladder_for):
    ref = CASES / "references" / "quant16.py"
    for seed in (631604812, 7):
        res = good(run(make_ws, ladder_for, "quant16", K / "quant16_good.py", reference=ref, seed=seed))
        notes = [w for w in res.rung("correctness").warnings if "integer elements differ from the float64" in w]
        assert all("accepted" in w for w in notes)
    bad = corr(run(make_ws, ladder_for, "quant16", K / "quant16_truncates_bad.py", reference=ref, seed=7))
    assert bad.status is Status.FAILED and "differ (exact compare)" in bad.summary, bad.summary


def test_a_python_float_argument_folded_into_a_constant_fails_on_the_scalars_cases(make_ws, ladder_for):
    ref = CASES / "references" / "scale_alpha.py"
    bad = corr(run(make_ws, ladder_for, "scale_alpha", K / "scale_constant_alpha_bad.py", reference=ref, seed=9))
    assert bad.status is Status.FAILED and "dist=scalars" in bad.summary, bad.summary
    failed = [c for s in bad.figures["specs"] for c in s["failed_cases"]]
    assert failed and all("dist=scalars" in c for c in failed), failed
    good(run(make_ws, ladder_for, "scale_alpha", K / "scale_alpha_good.py", reference=ref, seed=9))
    says = corr(good(run(make_ws, ladder_for, "scale_alpha", K / "scale_refuses_alpha.py", reference=ref, seed=9)))
    assert any("dist=scalars" in w and "unsupported" in w for w in says.warnings), says.warnings


def test_scalars_are_offered_only_where_the_inputs_hold_a_python_float():
    from .test_crossing import _describe

    assert "scalars" in _describe(CASES / "references" / "scale_alpha.py", 1)["distributions"]
    assert "scalars" not in _describe(CASES.parent.parent / "references" / "vector_add.py", 1)["distributions"]


# -- round 7 (the same session's second red team, on this session's new code) ----------------------------------------
def test_an_int8_output_that_holds_the_poison_byte_where_the_native_reference_does_is_written(make_ws, ladder_for):
    """The native bf16 computation gives 90 (0x5A) where the float64 truth is 89 or 91: the element equals the native
    reference, so it is written, and the integer native allowance judges it."""
    ref = CASES / "references" / "quant_i8.py"
    good(run(make_ws, ladder_for, "quant_i8", K / "quant_i8_good.py", reference=ref, seed=3))


def test_an_output_whose_size_depends_on_the_values_is_sent_whatever_the_hint(make_ws, ladder_for):
    """nonzero(|x| > 2.5): on shifted inputs every element is an outlier, 100x the native case's size, which only
    bounds what is withheld above 256 MiB (``tensors.HINT_FLOOR``)."""
    ref = CASES / "references" / "outliers.py"
    good(run(make_ws, ladder_for, "outliers", K / "outliers_good.py", reference=ref, seed=3))
