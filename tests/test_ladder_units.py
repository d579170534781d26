"""The ladder's pure parts, without workers (milliseconds): the correctness fold, the case plan, the merge rule, the
rung table and the progress rate limit."""

from __future__ import annotations

import os

import pytest

from ktui.core.events import EventBus, RungProgress
from ktui.core.ladder import LadderOptions, correctness_result, make_cases, merge
from ktui.core.ladder.cases import GRAD_MODES, GRAD_SEED, LAYOUTS, covering_cases, first_sweep, layouts_of
from ktui.core.ladder.context import ProgressThrottle, RunContext
from ktui.core.ladder.rungs.correctness import MAX_WARNINGS
from ktui.core.ladder.runner import RUNG_IMPLS
from ktui.core.results import (
    DEFAULT_RUNGS,
    RUNG_ORDER,
    RUNG_SPECS,
    RUNGS,
    STOPPING_RUNGS,
    LadderResult,
    RungResult,
    Status,
    expand_rungs,
)
from ktui.core.workspace import KernelRef
from ktui.protocol import COTANGENT_LAYOUTS
from ktui.worker.grad_modes import cotangent_layout

# -- correctness_result ----------------------------------------------------------------------------------------
DESCRIBE = {"tests": [{"n": 1}, {"n": 129}], "labels": ["(1,)", "(129,)"]}


def case(spec_index: int, seed: int, ok: bool = True, score: float = 0.1, **kw) -> dict:
    label = DESCRIBE["labels"][spec_index]
    c = {
        "spec_index": spec_index,
        "seed": seed,
        "ok": ok,
        "score": score,
        "label": label,
        "case": f"spec={label} seed={seed}",
        "reason": "" if ok else "3 elements outside tolerance",
        "max_abs_err": score * 1e-6,
        "max_rel_err": score * 1e-5,
        "psnr_db": 120.0 - score,
        "cosine": 1.0,
    }
    c.update(kw)
    return c


def test_a_passing_fold_names_the_worst_spec_and_keeps_its_metrics():
    cases = [case(0, 5, score=0.2), case(0, 6, score=0.1), case(1, 5, score=0.3), case(1, 6, score=0.7)]
    r = correctness_result(cases, DESCRIBE)
    assert r.status is Status.OK and r.error is None
    assert r.figures["worst"] == "(129,)" and r.figures["cases"] == 4
    s0, s1 = r.figures["specs"]
    assert (s0["label"], s0["ok"], s0["seeds"], s0["cases"], s0["worst_seed"]) == ("(1,)", True, [5, 6], 2, 5)
    assert (s1["worst_seed"], s1["max_abs_err"], s1["score"]) == (6, pytest.approx(0.7e-6), 0.7)
    assert s1["failed_cases"] == [] and s1["unsupported_layouts"] == []
    assert r.summary == (
        "worst=(129,) at 70% of tolerance max_abs_err=7.00e-07 max_rel_err=7.00e-06 psnr_db=119.3 cosine=1 (4 cases)"
    )


def test_a_failing_fold_puts_the_worst_failing_case_and_its_reason_in_the_error():
    cases = [
        case(0, 5),
        case(1, 5, ok=False, score=3.0),
        case(1, 6, ok=False, score=9.0, max_abs_err=0.5),
        case(0, 6, ok=False, score=2.0),
    ]
    r = correctness_result(cases, DESCRIBE)
    assert r.status is Status.FAILED
    assert r.error.type == "CorrectnessError"
    expected = "spec=(129,) seed=6: 3 elements outside tolerance; max_abs_err=0.5 (2 of 2 specs failed)"
    assert r.summary == r.error.message == expected
    by = {s["label"]: s for s in r.figures["specs"]}
    assert by["(129,)"]["failed_cases"] == ["spec=(129,) seed=5", "spec=(129,) seed=6"]
    assert by["(1,)"]["ok"] is False and by["(1,)"]["failed_cases"] == ["spec=(1,) seed=6"]


def test_the_headline_is_a_failing_case_the_reference_itself_holds_when_there_is_one():
    """New-user trial 26, F4: an fp16 overflow that the reference in fp16 fails too (a larger score) headed a w8a16
    kernel whose clear failures were bf16 ones; such a case heads only when no other failed."""
    overflow = dict(ok=False, score=50.0, reference_fails_too=True)
    cases = [case(0, 5, ok=False, score=3.0), case(1, 5, **overflow)]
    r = correctness_result(cases, DESCRIBE)
    assert r.summary.startswith("spec=(1,) seed=5: 3 elements outside tolerance"), r.summary
    alone = correctness_result([case(0, 5), case(1, 5, **overflow)], DESCRIBE)
    assert alone.summary.startswith("spec=(129,) seed=5: 3 elements outside tolerance"), alone.summary


def test_the_headline_is_a_plain_calls_failure_when_one_fails():
    """New-user trial 31, F7: "(1, 129, bf16) grad=requires_grad: output out[0]: ..." led the failure of a forward
    whose every call failed, puzzling a user whose reference makes nothing requiring grad. A failing plain call (no
    grad mode, contiguous inputs) heads when there is one; a failure only in a grad mode or a layout still heads."""
    grad = case(1, 5, ok=False, score=40.0, grad="requires_grad", case="spec=(129,) seed=5 grad=requires_grad")
    laid = case(1, 6, ok=False, score=30.0, layout="transposed", case="spec=(129,) seed=6 layout=transposed")
    r = correctness_result([grad, laid, case(0, 5, ok=False, score=2.0)], DESCRIBE)
    assert r.summary.startswith("spec=(1,) seed=5: 3 elements outside tolerance"), r.summary
    alone = correctness_result([grad, laid, case(0, 5)], DESCRIBE)
    assert alone.summary.startswith("spec=(129,) seed=5 grad=requires_grad: 3 elements"), alone.summary


def test_one_failing_spec_has_no_count_suffix():
    r = correctness_result([case(0, 5), case(1, 5, ok=False, score=4.0)], DESCRIBE)
    assert r.summary == "spec=(129,) seed=5: 3 elements outside tolerance; max_abs_err=4.00e-06"


def test_warnings_are_deduplicated_in_order_and_capped():
    many = [f"w{i}" for i in range(MAX_WARNINGS + 3)]
    cases = [
        case(0, 5, warnings=["low precision", "low precision"]),
        case(0, 6, warnings=["low precision"]),
        case(1, 5, warnings=many),
        case(1, 6, unsupported="strides not handled", layout="padded", case="spec=(129,) layout=padded"),
    ]
    r = correctness_result(cases, DESCRIBE)
    assert r.warnings[0] == "spec=(1,) seed=5: low precision"  # named by the first case that gave it (NU31 F1)
    assert r.warnings[1:MAX_WARNINGS] == [f"spec=(129,) seed=5: w{i}" for i in range(MAX_WARNINGS - 1)]
    total = 1 + len(many) + 1  # one distinct precision warning, the many, the unsupported layout
    assert len(r.warnings) == MAX_WARNINGS + 1
    assert r.warnings[-1] == f"... and {total - MAX_WARNINGS} more warnings"
    # the unsupported case is not the spec's worst (it was not judged), and its layout is listed
    s1 = r.figures["specs"][1]
    assert s1["unsupported_layouts"] == ["padded"] and s1["worst_seed"] == 5


def test_a_failing_cases_warnings_follow_its_error_and_other_failing_cases_are_counted():
    """New-user trial 19 M9: a stride bug printed its failure, then seven warnings (the gross bound, flushed
    values) that were its symptoms, alike but for their counts: the worst failing case's warnings follow its
    error, the other failing cases' are counted in one line, and a passing case's stay."""
    cases = [
        case(0, 5, warnings=["a passing case's note"]),
        case(1, 5, ok=False, score=3.0, warnings=["271 elements past the gross bound", "values flushed?"]),
        case(1, 6, ok=False, score=9.0, warnings=["300 elements past the gross bound"]),
    ]
    r = correctness_result(cases, DESCRIBE)
    assert r.status is Status.FAILED
    assert r.summary == "spec=(129,) seed=6: 3 elements outside tolerance; max_abs_err=9.00e-06"
    assert r.error.message == r.summary + "\n  and in that case: 300 elements past the gross bound"
    assert r.warnings == [
        "spec=(1,) seed=5: a passing case's note",
        "2 more warnings of other failing cases left out (most are symptoms of the failure; the cases that pass "
        "keep theirs)",
    ]


def test_an_unsupported_layout_shows_as_a_warning():
    cases = [
        case(0, 5),
        case(1, 5),
        case(1, 7, unsupported="strides not handled", layout="padded", case="spec=(129,) layout=padded"),
    ]
    r = correctness_result(cases, DESCRIBE)
    assert r.status is Status.OK
    assert r.warnings == ["spec=(129,) layout=padded unsupported: strides not handled"]


# -- make_cases ------------------------------------------------------------------------------------------------
PLAN = {"tests": [{"n": 64}, {"n": 1}, {"n": 4096}, {"n": 129}], "distributions": ["native", "normal", "shifted"]}


def test_the_case_plan_grows_then_shrinks_with_seeds_repeats_decoys_distributions_and_layouts():
    cases = make_cases(PLAN, LadderOptions(seeds=2, near_duplicates=False), seed=100)  # near-dups: test_cases_inputs
    up = [1, 0, 3, 2]  # spec indices by size
    phase1 = cases[:8]
    assert [c["spec_index"] for c in phase1] == up + up  # two sweeps of growing sizes
    assert [c["seed"] for c in phase1] == [100] * 4 + [101] * 4
    first = phase1[:4]  # the first verdict's sweep leads: every spec once, the first seed, run twice
    assert all(c.get("repeat") == 2 and c.get("first") is True and "fill" not in c for c in first)
    assert first_sweep(cases) == 4
    assert all(c.get("fill") == "decoy" and "repeat" not in c and "first" not in c for c in phase1[4:])
    burst = cases[8]  # then the burst on the smallest spec (its calls drawn per run)
    assert burst == {"spec_index": 1, "seed": 100 + 301, "calls": burst["calls"]} and 17 <= burst["calls"] <= 48
    phase2 = cases[9:]
    dists = phase2[:8]
    rank = {i: r for r, i in enumerate(up)}  # every spec its own seed per distribution
    assert [(c["spec_index"], c["dist"], c["seed"]) for c in dists] == [
        (i, d, 100 + 1000 * (rank[i] + 1) + 101 + j) for i in reversed(up) for j, d in enumerate(["normal", "shifted"])
    ]
    lays = layouts_of(PLAN)
    # 1-D inputs; mixed: both orders (107, 108)
    assert lays == [lay for lay in LAYOUTS if lay not in ("permuted", "channels_last")]
    n = 8 + 2 * (len(lays) + 1)
    layouts = phase2[8:n]
    assert [(c["spec_index"], c["layout"], c["seed"]) for c in layouts] == [
        (i, lay, 107 + j) for i in (2, 3) for lay in lays for j in range(2 if lay == "mixed" else 1)
    ]  # the two largest specs, then a case per grad mode, then the covering design (tests/test_crossing.py)
    # a case per grad mode on a spec of the cheaper half, five more requires_grad cases (the cotangents' other five
    # layouts: red team round 31, #4; 32b, #6; 33, #3), then two with one input that requires grad frozen, their
    # cotangents expanded and transposed (round 32, #4), then a case per mode on the largest (round 27, #5)
    grads = phase2[n : n + 13]
    modes = [*GRAD_MODES, *["requires_grad"] * 7, *GRAD_MODES]
    base, more = 100 + GRAD_SEED + 10, 100 + GRAD_SEED + 20
    moded = (100 + GRAD_SEED + 2) % 6
    extra = [more + (r - more) % 6 - 100 - GRAD_SEED for r in range(6) if r != moded]
    frozen = [base + (r - base) % 6 - 100 - GRAD_SEED for r in (1, 2)]
    assert [(c["grad"], c["seed"]) for c in grads] == [
        (m, 100 + GRAD_SEED + j) for j, m in zip((0, 1, 2, *extra, *frozen, 3, 4, 5), modes, strict=True)
    ]
    assert [c.get("frozen") for c in grads] == [None] * 8 + [0, 1] + [None] * 3
    assert [cotangent_layout(c["seed"]) for c in grads[8:10]] == ["expanded", "transposed"]
    rg = [c["seed"] for c in grads if c["grad"] == "requires_grad"][:6]
    assert sorted(cotangent_layout(s) for s in rg) == sorted(COTANGENT_LAYOUTS)  # each layout once
    assert all(c["spec_index"] in (1, 0) and "layout" not in c and "dist" not in c for c in grads[:10])
    assert all(c["spec_index"] == 2 and "layout" not in c and "dist" not in c for c in grads[10:])
    design = phase2[n + 13 :]
    assert design == covering_cases(
        PLAN, LadderOptions(seeds=2, near_duplicates=False), 100, cases[:9] + phase2[: n + 13]
    )
    assert design and [c["seed"] for c in sorted(design, key=lambda c: c["seed"])] == list(
        range(100 + 401, 100 + 401 + len(design))
    )
    assert phase2[0]["fresh"] is True and sum(bool(c.get("fresh")) for c in cases) == 1
    assert len(cases) == 8 + 1 + n + 13 + len(design)  # phase 1, the burst, distributions, layouts, grads, design


def test_contiguous_only_and_the_options_drop_cases():
    opts = LadderOptions(seeds=2, near_duplicates=False)
    only = make_cases({**PLAN, "contiguous_only": True}, opts, seed=1)
    assert not any("layout" in c for c in only)
    assert len(only) == 8 + 1 + 8 + 13 + len(covering_cases({**PLAN, "contiguous_only": True}, opts, 1, only[:30]))
    bare = make_cases(
        PLAN, LadderOptions(seeds=3, distributions=False, layouts=False, repeat=False, near_duplicates=False), seed=1
    )
    assert len(bare) == 12 + 1 + 13 and not any("repeat" in c or "dist" in c for c in bare)  # (+ the grad cases)
    assert [c["seed"] for c in bare[:6]] == [1, 1, 1, 1, 2, 3]  # the first sweep, then each spec's other seeds
    assert [c.get("fill") for c in bare[:6]] == [None] * 4 + ["decoy", None]
    native = make_cases({"tests": [{"n": 2}]}, LadderOptions(seeds=1, near_duplicates=False), seed=1)  # no dists
    lays = [lay for lay in LAYOUTS if lay not in ("permuted", "channels_last")]
    n = 2 + len(lays) + 1
    # the first seed, the burst, the layouts (mixed twice: both orders)
    assert [c.get("layout") for c in native[:n]] == [None, None, *lays[:-1], "mixed", "mixed"]
    # a case per grad mode, five more requires_grad (the cotangents' other layouts), two with an input frozen
    assert [c.get("grad") for c in native[n : n + 10]] == [*GRAD_MODES, *["requires_grad"] * 7]
    assert {c.get("fill") for c in native[n + 10 :]} == {"decoy"}  # one seed: the design brings the decoy fill


# -- merge -----------------------------------------------------------------------------------------------------
def result(names: list[str], sha: str = "a" * 64, summary: str = "old", device: str = "cpu") -> LadderResult:
    return LadderResult(
        "p",
        "v1",
        "kernels/p/v1.py",
        {"type": device},
        [RungResult(n, Status.OK, summary=summary) for n in names],
        sha,
        "r" * 64,
    )


def test_a_partial_run_keeps_the_other_rungs_of_the_same_sources():
    old = result(["compile", "run", "correctness", "benchmark", "dumps"])
    new = result(["compile", "profile"], summary="new")
    merged = merge(old, new)
    assert [r.name for r in merged.rungs] == ["compile", "run", "correctness", "benchmark", "dumps", "profile"]
    assert {r.name: r.summary for r in merged.rungs} == {
        "compile": "new",
        "run": "old",
        "correctness": "old",
        "benchmark": "old",
        "dumps": "old",
        "profile": "new",
    }


def test_a_different_source_device_or_a_full_run_replaces():
    old = result(["compile", "run", "correctness", "benchmark", "dumps"])
    for new in (
        result(["compile", "profile"], sha="b" * 64),
        result(["compile", "profile"], device="cuda"),
        result(["compile", "run", "correctness", "benchmark", "dumps"], summary="new"),
        result(["compile"], summary="new"),
    ):
        merged = merge(old, new)
        assert merged.rungs == new.rungs and merged.source_sha256 == new.source_sha256
        # a result without a verdict of its own keeps old's as its last verdict (it needs a run: core.status)
        kept = merged.last_verdict
        if new.has_verdict:
            assert kept is None
        else:
            assert (kept.verdict, kept.source_sha256) == ("✓ ok", "a" * 64)
    assert merge(old, result(["compile", "run", "correctness"], sha="b" * 64)).last_verdict is None
    assert merge(None, old) is old


# -- the rung table --------------------------------------------------------------------------------------------
def test_the_runner_climbs_exactly_the_rungs_of_the_table():
    assert set(RUNG_IMPLS) == set(RUNG_SPECS) == set(RUNG_ORDER)
    assert RUNG_ORDER == ("compile", "run", "correctness", "benchmark", "dumps", "profile", "trace")
    assert DEFAULT_RUNGS == RUNG_ORDER[:-2] and STOPPING_RUNGS == {"compile", "run"}
    for spec in RUNGS:
        assert all(RUNG_ORDER.index(n) < RUNG_ORDER.index(spec.name) for n in spec.needs), spec
        assert RUNG_IMPLS[spec.name].__module__ == f"ktui.core.ladder.rungs.{spec.name}"


def test_expand_rungs_adds_what_they_need_in_ladder_order():
    assert expand_rungs(("profile",)) == ("compile", "profile")
    assert expand_rungs(("trace", "profile")) == ("compile", "profile", "trace")
    assert expand_rungs(["dumps", "correctness"]) == ("compile", "run", "correctness", "dumps")
    assert expand_rungs(DEFAULT_RUNGS) == DEFAULT_RUNGS
    with pytest.raises(ValueError, match="unknown rung"):
        expand_rungs(("speed",))


# -- progress --------------------------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_the_progress_throttle_allows_one_per_interval_and_always_the_last():
    clock = Clock()
    th = ProgressThrottle(interval_s=10.0, clock=clock)
    allowed = []
    for i in range(1, 101):  # one item per second, ten-second interval
        clock.t = float(i)
        if th.allow(i, 100):
            allowed.append(i)
    assert allowed == [1, 11, 21, 31, 41, 51, 61, 71, 81, 91, 100]
    clock.t = 100.5
    assert th.allow(100, 100)  # a last one is never held back
    assert not th.allow(1, 100)  # ... and counts: the next call's first item waits its turn
    clock.t = 110.5
    assert th.allow(2, 100)


def test_context_progress_publishes_rung_progress_on_the_bus(tmp_path):
    bus = EventBus()
    seen: list[RungProgress] = []
    bus.subscribe(lambda ev: seen.append(ev) if isinstance(ev, RungProgress) else None)
    ctx = RunContext(
        ws=None,
        pool=None,
        options=LadderOptions(),
        bus=bus,  # type: ignore[arg-type]
        kernel=KernelRef("softmax", "v2", tmp_path),
        run_id=7,
        seed=1,
    )
    on_progress = ctx.progress("correctness", "verdicts")
    for i in range(1, 51):  # back to back: far faster than 10 a second
        on_progress({"done": i, "total": 50})
    assert [(e.done, e.total) for e in seen] == [(1, 50), (50, 50)]
    assert {(e.key, e.run_id, e.rung, e.detail) for e in seen} == {("softmax/v2", 7, "correctness", "verdicts")}
    # the rung's one limiter is shared by its calls; another rung has its own
    ctx.progress("correctness")({"done": 1, "total": 9})
    ctx.progress("run")({"done": 1, "total": 9})
    assert [(e.rung, e.done) for e in seen[2:]] == [("run", 1)]


def test_a_passing_fold_names_the_distribution_of_its_worst_case():
    """New-user trial 19: "worst=(65537,) at 6% of tolerance max_abs_err=6.71e+07" on a vector add read as a bug;
    the worst case drew the large distribution, which the summary now names."""
    cases = [case(0, 5, score=0.02), case(1, 6, score=0.06, case="spec=(129,) seed=6 dist=large layout=offset")]
    r = correctness_result(cases, DESCRIBE)
    assert r.summary.startswith("worst=(129,) dist=large at 6% of tolerance max_abs_err="), r.summary


def test_a_held_back_progress_is_published_at_the_end_of_its_interval():
    """New-user trial 24, F4: a run crawled at "31/155" with no word of the case under way. The worker names each
    case as it starts; a burst of short cases is thinned to one event per interval, and the last one held back (the
    case that then runs for minutes) goes out when the interval ends, not never."""
    import time as _time

    out: list[int] = []
    th = ProgressThrottle(interval_s=0.05)
    for i in range(5):
        th.offer(i, 100, lambda i=i: out.append(i))
    assert out == [0]  # the first at once, the rest held back
    deadline = _time.monotonic() + 5.0
    while out[-1] != 4 and _time.monotonic() < deadline:
        _time.sleep(0.01)
    assert out == [0, 4]  # the latest, once
    th.offer(100, 100, lambda: out.append(100))
    assert out == [0, 4, 100]  # the last item at once


def test_the_running_rung_line_names_the_case_under_way(monkeypatch):
    from ktui.cli import RunningRung
    from ktui.core.events import RungProgress, RungStarted

    class Out:
        def write(self, text):
            pass

        def flush(self):
            pass

    rr = RunningRung(Out(), lambda rung: 120.0)
    rr.on_event(RungStarted(key="segsum/v1", run_id=1, rung="run"))
    case = "spec=(7, 1025, 300, bf16) seed=2140164860 layout=transposed"
    rr.on_event(RungProgress(key="segsum/v1", run_id=1, rung="run", done=93, total=156, case=case))
    line = rr.line("run", 260.0)
    assert line.startswith("[run] running 260 s, 93 of 156 done, the last 0 s ago (limit 120 s"), line
    assert line.endswith(", now " + case), line
    import shutil

    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=(80, 24): os.terminal_size((100, 24)))
    short = rr.tty_line("run", 260.0)  # on a terminal: one line that fits, rewritten in place (trial 25, F14)
    assert len(short) == 99 and short.endswith("...") and "(limit 120 s" in short, short
    rr.on_event(RungProgress(key="segsum/v1", run_id=1, rung="run", done=94, total=156))
    assert ", now " not in rr.line("run", 261.0)


def test_a_failure_where_the_reference_fails_too_is_marked_for_the_headline():
    import torch

    from ktui.worker.compare import native_fails_too
    from ktui.worker.metrics import verdict
    from ktui.worker.tolerance import resolve

    tol = resolve("float16", None)
    ref = torch.tensor([1e5, 2.0, 3.0], dtype=torch.float64)  # the first past fp16's range
    native = torch.tensor([float("inf"), 2.0, 3.0], dtype=torch.float16)
    out = torch.tensor([float("inf"), 2.0, -3.0], dtype=torch.float16)  # and a wrong sign besides
    m = verdict(out, ref, tol)
    assert not m["ok"]
    native_fails_too(m, out, native, ref, tol, allow_nan=False)
    assert not m["ok"] and m.get("reference_fails_too") is True, m["reason"]
