"""The progressive verdict (issue 11): the correctness rung's first verdict, on the first sweep alone (every test
spec once, native inputs, the first seed), comes while the other cases still run; the full verdict follows with
every case, and ``--json`` carries both with their times."""

from __future__ import annotations

import os
import subprocess
import sys

from ktui.core.events import FirstVerdict, RungFinished
from ktui.core.ladder.cases import first_sweep
from ktui.core.results import Status

from .conftest import ROOT
from .test_cases import K


def _events(ladder):
    seen = []
    ladder.bus.subscribe(lambda ev: seen.append(ev) if isinstance(ev, (FirstVerdict, RungFinished)) else None)
    return seen


def test_the_first_verdict_comes_before_the_full_one_and_judges_the_first_sweep(make_ws, ladder_for):
    ws = make_ws(["vector_add"], {"vector_add/v1": ROOT / "kernels/vector_add/v2.py"})
    lad = ladder_for(ws, seed=21)
    seen = _events(lad)
    res = lad.run(ws.kernel(ws.root / "kernels/vector_add/v1.py"))
    assert res.ok, [r.line() for r in res.rungs]
    names = [type(e).__name__ + ":" + (e.result.name if isinstance(e, RungFinished) else "") for e in seen]
    first = [e for e in seen if isinstance(e, FirstVerdict)]
    assert len(first) == 1 and first[0].result.status is Status.OK, names
    # published while the run still ran: before run's RungFinished or at least before correctness's
    assert names.index("FirstVerdict:") < names.index("RungFinished:correctness"), names
    specs = len([s for s in res.rung("correctness").figures["specs"] if not s["fuzzed"]])
    assert first[0].cases >= specs  # every test spec (and the near-duplicates that follow their first case)
    corr = res.rung("correctness").figures
    assert corr["first_verdict"]["status"] == "ok" and corr["first_verdict"]["cases"] == first[0].cases
    assert 0 < corr["first_verdict"]["at_s"] <= corr["verdict_at_s"]
    assert corr["cases"] > first[0].cases  # the full verdict judged every case
    # most while the run went on: what the judge compared then is kept where the end of the run changed nothing
    assert corr["judged_at_end"] < corr["cases"] // 2, (corr["judged_at_end"], corr["cases"])


def test_a_kernel_wrong_everywhere_is_wrong_in_the_first_verdict(make_ws, ladder_for):
    ws = make_ws(["vector_add"], {"vector_add/v1": K / "seed_watch_bad.py"})
    lad = ladder_for(ws, seed=3)
    seen = _events(lad)
    res = lad.run(ws.kernel(ws.root / "kernels/vector_add/v1.py"))
    first = [e for e in seen if isinstance(e, FirstVerdict)]
    assert len(first) == 1 and first[0].result.status is Status.FAILED
    assert "outside" in first[0].result.summary
    assert res.rung("correctness").status is Status.FAILED
    assert res.rung("correctness").figures["first_verdict"]["status"] == "FAILED"


def test_ktui_run_prints_the_first_verdict_while_the_rest_runs(make_ws):
    """In a pipe the note goes to stderr (stdout stays the rung lines); ``--json`` carries the same figures as the
    ladder's (test above)."""
    ws = make_ws(["vector_add"], {"vector_add/v1": ROOT / "kernels/vector_add/v2.py"})
    p = subprocess.run(
        [sys.executable, "-m", "ktui", "run", str(ws.root / "kernels/vector_add/v1.py"), "--seed", "5"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "KTUI_FORCE_CPU": "1"},
    )
    assert p.returncode == 0, p.stderr
    note = [ln for ln in p.stderr.splitlines() if ln.startswith("[correctness] first verdict: ok on ")]
    assert note and "(native inputs, one seed per spec) after " in note[0], p.stderr
    assert "first verdict" not in p.stdout and "[correctness] ok" in p.stdout


def test_the_first_sweep_leads_the_plan_or_the_plan_is_refused():
    assert first_sweep([{"spec_index": 0, "seed": 1, "first": True}, {"spec_index": 0, "seed": 2}]) == 1
    assert first_sweep([{"spec_index": 0, "seed": 1}]) == 0
    import pytest

    with pytest.raises(ValueError, match="must lead"):
        first_sweep([{"spec_index": 0, "seed": 1}, {"spec_index": 0, "seed": 2, "first": True}])
