"""The open findings of issue 9 ("verification that generalizes") left by the red team's last round, each closed by
a mechanism with a bad kernel and its honest twin (or a unit check of the mechanism):

- a case the kernel refuses (a strided layout, another value of a float argument) checked nothing, yet the pairs
  of the covering design it held counted as covered: a kernel refusing strided layouts escaped the distribution x
  spec class pairs its strided cases carried; the run now puts contiguous cases in their place
  (``core.ladder.cases.refill_refused``), so every pair the kernel supports is in a case it ran;
"""

from __future__ import annotations

import hashlib

import pytest

from ktui.core.ladder import LadderOptions, make_cases
from ktui.core.ladder.cases import _Design, refill_refused, refused_values
from ktui.core.results import Status

from .conftest import ROOT
from .test_cases import CASES, K, corr, good, run

R = CASES / "references"
SOFTMAX = ROOT / "references" / "softmax.py"


def _describe(path, seed):
    from ktui.worker.fuzz import describe_for_run
    from ktui.worker.problem import Problem

    return describe_for_run(Problem(path, path.stem, hashlib.sha256(path.read_bytes()).hexdigest()), "cpu", seed)


# -- refused cases count as uncovered ------------------------------------------------------------------------------
def test_a_kernel_refusing_strided_layouts_meets_the_pairs_its_refused_cases_held(make_ws, ladder_for):
    # seed 1: the one case of (masked, an aligned width) was strided, refused; a contiguous case takes its place
    bad = run(make_ws, ladder_for, "softmax", K / "softmax_aligned_pad_refuses_bad.py", seed=1)
    r = bad.rung("run")
    assert "contiguous cases in place of the" in r.summary and "the kernel refused" in r.summary, r.summary
    c = corr(bad)
    assert c.status is Status.FAILED, c.summary
    failed = [f for s in c.figures["specs"] for f in s["failed_cases"]]
    assert failed and all("dist=masked" in f and "layout=" not in f for f in failed), failed
    seeds = {int(f.split("seed=")[1].split()[0]) for f in failed}
    assert all(s >= 1 + 701 for s in seeds), seeds  # the refilled cases' seeds (``REFILL_SEED``)
    assert "nan" in c.summary.lower(), c.summary
    twin = good(run(make_ws, ladder_for, "softmax", K / "softmax_aligned_pad_refuses_good.py", seed=1))
    assert "contiguous cases in place of the" in twin.rung("run").summary
    assert any("unsupported: ValueError: unsupported layout" in w for w in twin.rung("correctness").warnings)


def _strided(case) -> bool:
    return case.get("layout", "contiguous") != "contiguous"


@pytest.mark.parametrize("seed", [3, 17, 29, 41])
def test_with_the_refilled_cases_every_pair_the_kernel_supports_is_in_a_case_it_ran(seed):
    desc = _describe(SOFTMAX, seed)
    opts = LadderOptions()
    cases = make_cases(desc, opts, seed)
    executed = [dict(c, unsupported="ValueError: strided") if _strided(c) else dict(c) for c in cases]
    design = _Design(desc, opts)
    lost = {p for p in design.uncovered([c for c in cases if not _strided(c)]) if p[0] != (0, "contiguous")}
    lost = {p for p in lost if p[0][0] != 0}  # pairs without a layout: what the refused cases carried
    assert lost  # without the refill the kernel escapes these (distribution x fill, x spec class...)
    extra = refill_refused(desc, opts, seed, cases, executed)
    assert extra and not any(_strided(c) for c in extra)
    assert [c["seed"] for c in sorted(extra, key=lambda c: c["seed"])] == list(
        range(seed + 701, seed + 701 + len(extra))
    )
    ran = [c for c in cases if not _strided(c)] + extra
    left = design.uncovered(ran)
    assert all(p[0][0] == 0 and p[0][1] != "contiguous" for p in left), sorted(left)[:5]  # only refused layouts
    assert len(extra) <= len(lost)  # a case or fewer per lost pair, never the refused cases again one for one
    again = refill_refused(desc, opts, seed, cases + extra, executed + [dict(c) for c in extra], start=len(extra))
    assert again == []  # covered: nothing more to run
    assert refill_refused(desc, opts, seed, cases, [dict(c) for c in cases]) == []  # nothing refused, nothing added


def test_a_refused_distribution_is_dropped_and_its_pairs_covered_by_the_others():
    desc = _describe(R / "scale_alpha.py", 5)
    assert "scalars" in desc["distributions"]
    opts = LadderOptions()
    cases = make_cases(desc, opts, 5)
    executed = [dict(c, unsupported="ValueError: alpha") if c.get("dist") == "scalars" else dict(c) for c in cases]
    assert refused_values(executed) == {0: set(), 1: {"scalars"}}
    extra = refill_refused(desc, opts, 5, cases, executed)
    assert not any(c.get("dist") == "scalars" or _strided(c) for c in extra)
    design = _Design(desc, opts)
    ran = [c for c, e in zip(cases, executed, strict=True) if not e.get("unsupported")] + extra
    assert all((1, "scalars") in p for p in design.uncovered(ran))
