"""Red team round 30 and new-user trial 30: each finding fixed as a mechanism, with a bad kernel, its honest twin and
a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

import re

from ktui.core.results import Status

from .test_cases import CASES, K, run

R = CASES / "references"
QUICK = dict(layouts=False, seeds=1, seed=3, near_duplicates=False, rungs=("compile", "run", "correctness"))


def test_a_race_the_cpu_run_finds_is_judged_in_the_order_a_gpu_may_take(make_ws, ladder_for):
    """New-user trial 30, F1: an MoE grouped GEMM masking its last tile's store by M, not by its expert's end, wrote
    into the next expert's first rows, which that expert's tile (a later program) wrote again: right in the
    interpreter's program order, a race warning alone, and ``ok`` everywhere (``ktui eval`` chose it as the best
    version). The raced elements are now left as another order leaves them (``interp_races.other_order_``): it fails
    correctness; the honest twin (masked by the expert's end) passes with no race."""
    ref = R / "nu30_moe_gemm.py"
    res = run(make_ws, ladder_for, "moe", K / "nu30_moe_gemm_rowmask_bad.py", reference=ref, **QUICK)
    r = res.rung("run")
    assert r is not None and r.status is Status.OK, [x.line() for x in res.rungs]
    races = [w for w in r.warnings if "of grouped_kernel both stored out_ptr[" in w]
    assert races and "as a GPU may: the verdict judges that output" in races[0], r.warnings
    # (F8) the element by its index in out[M, N], and the advice for overlapping tiles
    assert re.search(r"out_ptr\[\d+, \d+\]", races[0]) and "store masks to end where each tile's rows end" in races[0]
    c = res.rung("correctness")
    assert c is not None and c.status is Status.FAILED and "output out:" in c.summary, c.line()
    good = run(make_ws, ladder_for, "moe", K / "nu30_moe_gemm_good.py", reference=ref, **QUICK)
    assert good.rung("correctness").status is Status.OK, good.rung("correctness").line()
    assert not [w for w in good.rung("run").warnings if "both stored" in w]


def test_a_rung_failed_by_an_exception_has_its_error_line_as_summary_in_json():
    """New-user trial 30, F18: ``ktui run --json`` wrote ``summary: ""`` for a run rung failed by an exception (the
    message only under ``error``), so the README's ``jq '.data.rungs[] | {name, status, summary}'`` showed nothing
    for the rung that failed. The JSON summary is the error's first line; a rung's own summary is kept."""
    from ktui.core.results import ErrorInfo, RungResult

    err = ErrorInfo(
        type="OutOfBoundsAccess", message="spec=(1, 16, 16, 1): out-of-bounds store\nv4.py line 32", traceback=""
    )
    failed = RungResult(name="run", status=Status.FAILED, error=err)
    assert failed.to_json()["summary"] == "OutOfBoundsAccess: spec=(1, 16, 16, 1): out-of-bounds store"
    back = RungResult.from_json(failed.to_json())
    assert back.line() == "[run] FAILED OutOfBoundsAccess: spec=(1, 16, 16, 1): out-of-bounds store"
    own = RungResult(name="correctness", status=Status.FAILED, summary="spec=(1,) ...", error=err)
    assert own.to_json()["summary"] == "spec=(1,) ..."
