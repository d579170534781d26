"""Ways through and false alarms found by this session's red team (round 9, from the README and the code alone),
each with its twin:

- outputs of mixed precision were all judged by the lowest precision among them: a float32 log-sum-exp rounded
  through bf16 passed beside a bf16 softmax; each output leaf is now judged by its own dtype;
- a declared output buffer (``outputs = (2,)``, GPU MODE style: the reference fills it and returns it) was never
  looked at: a kernel returning a fresh tensor passed; an output leaf the reference returns as its buffer must now
  be that buffer;
- an honest fp16 row sum failed where the float64 truth exceeds fp16's range (``shifted`` rows): torch's own fp16
  reference fails those cases too; a failing case is now checked against the native reference, and one that no
  kernel of that precision can meet passes with a warning (a kernel wrong on ordinary rows still fails);
- complex outputs could not be judged at all (a TypeError); they are judged as (real, imaginary) pairs, each part
  poisoned, so a kernel that writes only the real parts fails as unwritten.
"""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, K, corr, good, run

R = CASES / "references"


def test_a_float32_output_is_judged_as_float32_beside_a_bf16_one(make_ws, ladder_for):
    bad = corr(
        run(make_ws, ladder_for, "softmax_lse", K / "softmax_lse_rounded_bad.py", reference=R / "softmax_lse.py")
    )
    assert bad.status is Status.FAILED
    failing = [s for s in bad.figures["specs"] if not s["ok"]]
    assert failing and all("output out[1]" in s["reason"] for s in failing), [s["reason"] for s in failing]
    good(run(make_ws, ladder_for, "softmax_lse", K / "softmax_lse_good.py", reference=R / "softmax_lse.py"))


def test_a_kernel_that_ignores_the_declared_output_buffer_fails_and_its_twin_passes(make_ws, ladder_for):
    ref = R / "add_into_buffer.py"
    bad = corr(run(make_ws, ladder_for, "add_into_buffer", K / "buffer_ignored_bad.py", reference=ref))
    assert bad.status is Status.FAILED
    assert "out is not the declared output buffer (outputs entry 2)" in bad.summary, bad.summary
    good(run(make_ws, ladder_for, "add_into_buffer", K / "buffer_filled_good.py", reference=ref))


def test_cases_the_fp16_reference_itself_fails_are_not_held_against_an_fp16_kernel(make_ws, ladder_for):
    ref = R / "rowsum16.py"
    twin = good(run(make_ws, ladder_for, "rowsum16", K / "rowsum16_good.py", reference=ref, seed=5))
    warnings = " ".join(twin.rung("correctness").warnings)
    assert "not judged: the reference itself in float16 fails this case" in warnings, warnings
    bad = corr(run(make_ws, ladder_for, "rowsum16", K / "rowsum16_tail_bad.py", reference=ref, seed=5))
    assert bad.status is Status.FAILED
    assert any(not s["ok"] and s["label"].startswith("(1, 129") for s in bad.figures["specs"]), bad.summary


def test_a_complex_output_is_judged_by_both_parts(make_ws, ladder_for):
    ref = R / "cmul.py"
    bad = corr(run(make_ws, ladder_for, "cmul", K / "cmul_real_only_bad.py", reference=ref))
    assert bad.status is Status.FAILED and "unwritten" in bad.summary, bad.summary
    good(run(make_ws, ladder_for, "cmul", K / "cmul_good.py", reference=ref))
