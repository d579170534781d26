"""Ways through found by this session's red team (round 8, from the README and the code alone), each with its twin:

- a kernel that keeps the caller's input as its next call's workspace (``_WS = x`` for ``torch.empty_like(x)``)
  passed: each call left its own inputs as it found them while it ran, and the next call wrote over the previous
  caller's tensor; the inputs of every case are now kept and hashed again after the last call, as the outputs are;
- a kernel whose "cleanup" thread zeroes the caller's input 0.2 s after returning passed with two warnings: the
  same end-of-run check fails it.
"""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, K, corr, good, run

ROWSCALE = CASES / "references" / "rowscale.py"
AFTER = "input modified after the call returned"


def test_a_kernel_that_keeps_the_callers_input_as_its_workspace_fails_and_its_twin_passes(make_ws, ladder_for):
    bad = corr(run(make_ws, ladder_for, "rowscale", K / "stale_input_scratch_bad.py", reference=ROWSCALE))
    assert bad.status is Status.FAILED
    assert AFTER in bad.summary and "a later call that kept them as its scratch memory" in bad.summary
    good(run(make_ws, ladder_for, "rowscale", K / "stale_input_scratch_good.py", reference=ROWSCALE))


def test_a_thread_that_writes_into_the_input_after_the_call_fails_and_its_twin_passes(make_ws, ladder_for):
    bad = corr(run(make_ws, ladder_for, "rowscale", K / "late_input_write_bad.py", reference=ROWSCALE))
    assert bad.status is Status.FAILED and AFTER in bad.summary
    twin = good(run(make_ws, ladder_for, "rowscale", K / "late_input_write_good.py", reference=ROWSCALE))
    assert twin.rung("correctness").status is Status.OK
