"""The ``benchmark`` rung: CUDA-event timing of every benchmark spec, with integrity checks, against the
reference timed the same way and against the roofline (the device's datasheet peak, ``ktui.core.ladder.peaks``).

The candidate times each spec (L2 flushed and inputs refreshed between calls) through the same call path as its
checked calls (``ktui.worker.invoke``), keeping the outputs of a few timed calls (``ktui.worker.timed.KEEP_TIMED``)
chosen at random after each call returned; then, after the timing, the judge verifies every element of each kept
output against the reference computed in full on that call's inputs (``_verify_kept``), this process times a
device-synchronized loop of calls on fresh inputs (``_host_us_per_call``; one of its calls, chosen the same way, is
verified in full too), the candidate is asked what it patched, and the judge times the reference (on
``BENCH_SEED``'s inputs, so its times are comparable across runs) and reports the roofline. ``benchmark_result``
folds it all. On the CPU (the Triton interpreter) nothing is timed: the rung runs the verified stretch
instead (``verified_stretch``: calls in a row on one small test spec through the same path, some verified in full)
and is skipped when it passes, failed when not.

Figures: ``specs`` (per spec: label, spec, ``median_us``, ``p25_us``, ``p75_us``, ``iqr_us``, ``min_us``,
``max_us``, ``reps``, ``ref_median_us``, ``speedup``, ``gbps``, ``tflops``, ``roofline_us``, ``sol_pct`` (% of
the datasheet peak), ``measured_us``, ``measured_pct`` (% of the measured ceilings), ``peak_source``,
``host_us_per_call``, ``enqueue_us_per_call``; with ``LadderOptions.baselines``, ``eager_median_us``,
``eager_speedup``, ``eager_source``, ``compiled_median_us``, ``compile_speedup``, ``compile_s`` or
``compile_error``: ``baseline_figures``; times in µs), ``bandwidth_gbps``, ``peak_tflops``, ``device_name``,
``recheck`` and ``host_recheck`` (per spec, the verdict on its kept timed outputs: ``label``, ``ok``, ``reason``,
``checked`` outputs verified in full, ``calls``, ``call`` the failing or worst one, ``seed``), ``tampered``.
"""

from __future__ import annotations

import random
import shutil
import statistics
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ktui.core.ladder.context import BENCH_SEED, RunContext
from ktui.core.ladder.peaks import roofline
from ktui.core.results import ErrorInfo, RungResult, Status, fmt
from ktui.protocol import (
    BenchmarkRequest,
    BenchOutputsRequest,
    BenchSpecTiming,
    CheckTimedRequest,
    HostLoopReply,
    HostLoopRequest,
    TimedSource,
    TimedVerdict,
    TimeReferenceRequest,
    spec_ints,
    spec_size,
)

if TYPE_CHECKING:
    from ktui.protocol import ProblemInfo


def reference_aliases(ctx: RunContext) -> list[str]:
    """The outputs the reference returns as views of its inputs (``out[1] aliases in[0]``: ``qkv.split``'s k and v),
    from the judge's prepare of the correctness cases: a version's timed calls may return those views too (red team
    round 22, F7); [] when there is no prepare."""
    if ctx.prepare is None:
        return []
    try:
        reply = ctx.prepare.result(timeout=0)
    except Exception:
        return []
    return sorted({a for c in reply["cases"] for a in c.get("aliases", [])})


def run(ctx: RunContext) -> RungResult:
    """Time the candidate and the reference on every benchmark spec (GPU only) and fold the verdict.

    Raises ``WorkerError`` (the runner reports it).
    """
    desc = ctx.problem_info()
    if ctx.pool.device != "cuda":
        return verified_stretch(ctx, desc)
    if not desc["benchmarks"]:
        return RungResult(
            "benchmark",
            Status.SKIPPED,
            summary="the reference declares no benchmarks",
            figures={"reason": "no benchmarks"},
        )
    t = ctx.options.timeouts["benchmark"]
    idx = list(range(len(desc["benchmarks"])))
    seed = random.SystemRandom().randrange(1, 2**30)
    src = ctx.sources()
    params: BenchmarkRequest = {
        "kernel": src["kernel"],
        "reference": src["reference"],
        "spec_indices": idx,
        "seed": seed,
        "allowed_aliases": reference_aliases(ctx),
    }
    on_progress = ctx.progress("benchmark", "candidate")
    cand = ctx.candidate.benchmark(params, timeout_s=t, on_progress=on_progress)
    recheck = [_verify_kept(ctx, s["spec_index"], "bench", s["integrity"], t) for s in cand["specs"]]
    loops = {s["spec_index"]: _host_us_per_call(ctx, s, t, s["median_us"]) for s in cand["specs"]}
    host = {i: figures for i, (figures, _) in loops.items()}
    # A host-loop call's output, verified like the event-timed ones: the loop's calls must compute too.
    host_recheck = [_verify_kept(ctx, i, "host", lines, t) for i, (_, lines) in loops.items() if lines is not None]
    # Patches persist: what the candidate patched while it was timed is still patched now.
    patched = ctx.candidate.integrity({}, timeout_s=t)["tampered"]
    ctx.tampered = sorted(set(ctx.tampered) | set(patched))
    timing: TimeReferenceRequest = {
        **ctx.sources(),
        "spec_indices": idx,
        "seed": BENCH_SEED,
        "baselines": ctx.options.baselines,  # torch eager and torch.compile too (ktui eval)
    }
    on_progress = ctx.progress("benchmark", "reference")
    ref = ctx.judge.time_reference(timing, timeout_s=t, on_progress=on_progress)
    dtypes = sorted({r["dtype"] for r in ref["specs"] if r.get("flops")})
    roof = ctx.judge.roofline({"dtypes": dtypes}, timeout_s=t)
    return benchmark_result(
        cand["specs"],
        ref["specs"],
        roof,
        desc,
        host=host,
        recheck=recheck,
        tampered=ctx.tampered,
        host_recheck=host_recheck,
    )


# The verified stretch (the CPU): calls in a row on one test spec, drawn per run (``--seed`` replays the draw). A
# kernel that goes wrong after a number of calls on one shape below it is caught; above it, only on a GPU's timed
# calls (hundreds to thousands per spec).
STRETCH_CALLS = (200, 300)
# ... within a time budget: the interpreter runs a kernel's loops element by element (a row sum with a chunk of one
# takes 1.4 s a call on the 2-core CI machine: 292 calls took 415 s), so the drawn count is cut to what fits in
# STRETCH_BUDGET_S at the run rung's median time per call on the stretch's spec, never below STRETCH_FLOOR (above
# the correctness rung's 12 calls per shape and three times a 16-buffer ring); the cut is stated in the rung's line
# and figures. A kernel that goes wrong only after more calls than the stretch made is caught on a GPU's timed calls
STRETCH_BUDGET_S = 45.0
STRETCH_FLOOR = 48
# the stretch's spec is drawn among the fixed test specs whose calls took at most this many times the cheapest's (in
# the run rung): a small spec, so that the stretch costs about what 20 % more cases would (the interpreter's time per
# call grows with the grid)
STRETCH_SPEC_SLACK = 2.0
STRETCH_SEED_OFFSET = 501  # the stretch's draws: ``random.Random(seed + 501)``, apart from the case plan's
# ... and a second, shorter stretch on the largest fixed test spec (red team round 11, W7: a host tuner that switches
# to a wrong config after 16 calls on one size, for sizes >= 32,768 only, never saw 17 calls on such a size: the
# stretch's spec is a cheap one, the burst runs the smallest): LARGE_CALLS drawn, cut to LARGE_BUDGET_S at the run
# rung's median per call on that spec, and not run (said in the line) when fewer than LARGE_FLOOR calls fit (past a
# window of 16 calls: a ring of 16 buffers, a tuner that switches after 16 calls, as the burst's BURST_CALLS).
LARGE_CALLS = (24, 48)
LARGE_BUDGET_S = 20.0
LARGE_FLOOR = 17


STRETCH_MIN_SIZE = 64  # the stretch's spec: at least this many elements (``spec_size``) where a cheap one has


def stretch_spec(
    desc: ProblemInfo, executed: Sequence[Mapping[str, Any]] | None, rng: random.Random
) -> tuple[int, float | None]:
    """The test spec (its index) of the verified stretch and the median seconds of one call on it (None when no
    call was timed): drawn with ``rng`` among the fixed test specs (not fuzzed) whose single calls in ``executed``
    (the run rung's cases) took at most ``STRETCH_SPEC_SLACK`` times the cheapest spec's median, and of those the
    ones of at least ``STRETCH_MIN_SIZE`` elements where there are any, and of those the ones with no integer field
    at 1 where there are any; the smallest fixed spec (``spec_size``) when no call was timed (``--rungs benchmark``).
    """
    fuzzed = set(desc.get("fuzzed", []))
    fixed = [i for i in range(len(desc["tests"])) if i not in fuzzed] or list(range(len(desc["tests"])))
    seconds: dict[int, list[float]] = {}
    for c in executed or []:
        if "seconds" in c and not c.get("calls") and "spec" not in c and c["spec_index"] in fixed:
            seconds.setdefault(c["spec_index"], []).append(float(c["seconds"]))
    if not seconds:
        return min(fixed, key=lambda i: spec_size(desc["tests"][i])), None
    medians = {i: statistics.median(xs) for i, xs in seconds.items()}
    cheapest = min(medians.values())
    cheap = sorted(i for i, m in medians.items() if m <= STRETCH_SPEC_SLACK * cheapest)
    # a degenerate spec says little about calls in a row (new-user trial 32, F6: 254 calls on a cross-entropy's
    # (1, 1), whose loss and gradient are always 0): one of at least STRETCH_MIN_SIZE elements where one is cheap
    roomy = [i for i in cheap if spec_size(desc["tests"][i]) >= STRETCH_MIN_SIZE]
    # and of those one with no size of 1 where there is one: one token of a router is one program, whose calls in a
    # row never meet two programs adding to one counter (new-user trial 33, F7: 229 calls on (1, 64))
    wide = [i for i in roomy if min(spec_ints(desc["tests"][i]), default=2) >= 2]
    idx = rng.choice(wide or roomy or cheap)
    return idx, medians[idx]


def stretch_calls(rng: random.Random, per_call_s: float | None) -> tuple[int, int]:
    """The verified stretch's number of calls and the number drawn: drawn with ``rng`` in ``STRETCH_CALLS``, cut to
    ``STRETCH_BUDGET_S / per_call_s`` (seconds per call, the run rung's median on the stretch's spec) but never below
    ``STRETCH_FLOOR``; uncut when ``per_call_s`` is None (no call timed)."""
    drawn = rng.randint(*STRETCH_CALLS)
    if per_call_s is None or per_call_s <= 0:
        return drawn, drawn
    return min(drawn, max(STRETCH_FLOOR, int(STRETCH_BUDGET_S / per_call_s))), drawn


def verified_stretch(ctx: RunContext, desc: ProblemInfo) -> RungResult:
    """The benchmark rung without a GPU: no times (the interpreter's mean nothing), but the calls a user's script
    makes, verified. ``STRETCH_CALLS`` calls in a row on one small test spec (``stretch_spec``) through the timed
    calls' own path (``Candidate.do_benchmark`` with ``untimed_calls``: ``invoke.calls`` on the main thread, fresh
    inputs as ``generate_input`` makes them for every call, no guard bands, no poison), a few of them kept at random
    after they returned (``ktui.worker.timed.KEEP_STRETCH``) and verified in full by the judge (``_verify_kept``),
    with the kept outputs' storage checks. A kernel right only while it sees the checks (a guard band, the
    thread, fewer calls than a burst makes) fails here. Skipped (no times) when all is right; failed, naming the
    call, when not; skipped without calls when this run's correctness rung failed (the version is wrong already).

    Raises ``WorkerError`` (the runner reports it).
    """
    if "correctness" in ctx.failed_rungs:  # the version is wrong already: calls in a row would not say more
        return RungResult(
            "benchmark",
            Status.SKIPPED,
            summary="timing under the Triton interpreter is not meaningful: no times on cpu (interpreter); the "
            "verified stretch is not run: correctness failed",
            figures={"reason": "interpreter"},
        )
    t = ctx.options.timeouts["benchmark"]
    rng = random.Random(ctx.seed + STRETCH_SEED_OFFSET)
    idx, per_call = stretch_spec(desc, ctx.executed, rng)
    calls, drawn = stretch_calls(rng, per_call)
    src, seed = ctx.sources(), rng.randrange(1, 2**30)
    params: BenchmarkRequest = {
        "kernel": src["kernel"],
        "reference": src["reference"],
        "spec_indices": [idx],
        "seed": seed,
        "allowed_aliases": reference_aliases(ctx),
    }
    params["untimed_calls"] = calls
    # the rung reads 'skipped' at the end (no times): while it runs, it says what takes its seconds
    detail = f"the verified stretch: {calls} calls in a row (the CPU times nothing)"
    reply = ctx.candidate.benchmark(params, timeout_s=t, on_progress=ctx.progress("benchmark", detail))
    (ran,) = reply.get("untimed", [])
    verdict = _verify_kept(ctx, idx, "stretch", ran["integrity"], t)
    large: dict[str, Any] | None = None
    if verdict["ok"]:
        verdict, calls, large = _large_stretch(ctx, desc, idx, verdict, calls, t)
    patched = ctx.candidate.integrity({}, timeout_s=t)["tampered"]  # as after timed calls: patches persist
    ctx.tampered = sorted(set(ctx.tampered) | set(patched))
    res = stretch_result(verdict, calls, ctx.tampered, drawn=drawn, per_call_s=per_call)
    if large is not None:
        res.figures["stretch_large"] = large
        if res.status is Status.SKIPPED:
            res.summary += f"; {large['line']}"
    return res


def largest_spec(
    desc: ProblemInfo, executed: Sequence[Mapping[str, Any]] | None, seed: int = 0
) -> tuple[int, float] | None:
    """The largest fixed test spec (``spec_size``) whose single calls the run rung timed, and its median seconds per
    call; None when no call was timed. Among specs of one size (the same shape in fp32 and bf16) the run's ``seed``
    picks (red team round 32b, #8: the first always won, so a host tuner going wrong on the bf16 shape's 17th call
    was never met)."""
    fuzzed = set(desc.get("fuzzed", []))
    seconds: dict[int, list[float]] = {}
    for c in executed or []:
        if "seconds" in c and not c.get("calls") and "spec" not in c and c["spec_index"] not in fuzzed:
            seconds.setdefault(c["spec_index"], []).append(float(c["seconds"]))
    if not seconds:
        return None
    top = max(spec_size(desc["tests"][i]) for i in seconds)
    ties = sorted(i for i in seconds if spec_size(desc["tests"][i]) == top)
    idx = ties[seed % len(ties)]
    return idx, statistics.median(seconds[idx])


def _large_stretch(
    ctx: RunContext, desc: ProblemInfo, small: int, verdict: dict[str, Any], calls: int, t: float
) -> tuple[dict[str, Any], int, dict[str, Any] | None]:
    """The second stretch, on the largest fixed test spec when it is not the stretch's own (``LARGE_CALLS``, cut to
    ``LARGE_BUDGET_S``): ``(verdict, calls, figures)``, the verdict and call count those of the failing stretch when
    it fails (else the first's), the figures None when there is no other spec."""
    found = largest_spec(desc, ctx.executed, ctx.seed)
    if found is None or found[0] == small:
        return verdict, calls, None
    idx, per_call = found
    labels = desc.get("labels") or []
    label = labels[idx] if idx < len(labels) else str(desc["tests"][idx])
    rng = random.Random(ctx.seed + STRETCH_SEED_OFFSET + 1)
    drawn = rng.randint(*LARGE_CALLS)
    n = min(drawn, int(LARGE_BUDGET_S / per_call)) if per_call > 0 else drawn
    if n < LARGE_FLOOR:
        line = f"no stretch on spec={label}: {LARGE_FLOOR} calls at {per_call:.2g} s a call exceed {LARGE_BUDGET_S:g} s"
        return verdict, calls, {"spec_index": idx, "calls": 0, "line": line}
    src = ctx.sources()
    params: BenchmarkRequest = {
        "kernel": src["kernel"],
        "reference": src["reference"],
        "spec_indices": [idx],
        "seed": rng.randrange(1, 2**30),
        "allowed_aliases": reference_aliases(ctx),
    }
    params["untimed_calls"] = n
    detail = f"the verified stretch: {n} calls in a row on the largest spec (the CPU times nothing)"
    reply = ctx.candidate.benchmark(params, timeout_s=t, on_progress=ctx.progress("benchmark", detail))
    (ran,) = reply.get("untimed", [])
    second = _verify_kept(ctx, idx, "stretch", ran["integrity"], t)
    line = f"and {n} calls in a row on the largest spec={label}, {second.get('checked', 0)} checked in full"
    figures = {"spec_index": idx, "calls": n, "drawn_calls": drawn, "ok": second["ok"], "line": line}
    if not second["ok"]:
        return second, n, figures
    return verdict, calls, figures


def stretch_result(
    verdict: Mapping[str, Any],
    calls: int,
    tampered: list[str] | None = None,
    *,
    drawn: int | None = None,
    per_call_s: float | None = None,
) -> RungResult:
    """The benchmark rung's result on the CPU from the judge's verdict on the verified stretch (``_verify_kept``):
    skipped with ``reason: interpreter`` and the verdict as ``stretch`` when right, failed with the call when not
    (``timed_problem``'s words, the calls named as the stretch's). ``drawn`` (the count drawn before the time
    budget cut it to ``calls``) and ``per_call_s`` (seconds per call) go into the figures and the line when the
    budget cut the stretch."""
    label = verdict["label"]
    stretch: dict[str, Any] = {**verdict, "calls": calls}
    cut = ""
    if drawn is not None and drawn > calls:
        stretch["drawn_calls"] = drawn
        stretch["seconds_per_call"] = per_call_s
        cut = f" ({drawn} drawn, cut to fit {STRETCH_BUDGET_S:g} s at {per_call_s:.2g} s a call)"
    figures: dict[str, Any] = {"reason": "interpreter", "stretch": stretch}
    if tampered:
        problem = f"this version patched {', '.join(tampered[:5])} in its worker (the functions that check it)"
        return RungResult(
            "benchmark",
            Status.FAILED,
            summary=problem,
            figures={"stretch": figures["stretch"], "tampered": tampered},
            error=ErrorInfo("TimingIntegrityError", problem),
        )
    if not verdict["ok"]:
        problem = f"spec={label}: {timed_problem(verdict, 'call', STRETCH_WHAT)}"
        return RungResult(
            "benchmark",
            Status.FAILED,
            summary=problem,
            figures={"stretch": figures["stretch"]},
            error=ErrorInfo("StretchError", problem),
        )
    return RungResult(
        "benchmark",
        Status.SKIPPED,
        # what was checked first: the row read "skipped" with it past a 160-column screen (new-user trial 21 F16)
        summary=f"Verified instead: {calls} calls in a row{cut} on spec={label} as a script makes them, "
        f"{verdict['checked']} checked in full{_screened(verdict)}; no times on cpu (interpreter): timing under the "
        "Triton interpreter is not meaningful, run with --device cuda on a GPU",
        figures=figures,
    )


# what the failure of a stretch's call says of those calls (``timed_problem``)
STRETCH_WHAT = (
    "calls in a row on the main thread, on plain inputs and unguarded memory, as a script makes them; some, chosen at "
    "random after they returned, are verified in full, the others screened against the reference and the worst of "
    "them verified in full"
)


def _screened(verdict: Mapping[str, Any]) -> str:
    """`` (the other 247 screened against the reference, the 8 worst checked in full: 2 beyond its bound)``: what the
    judge's screen of a stretch did (``TimedVerdict.screened``, ``screen_checked``, ``flagged``); '' without one."""
    if not verdict.get("screened"):
        return ""
    flagged = int(verdict.get("flagged", 0))
    full = int(verdict.get("screen_checked", 0))
    beyond = f": {flagged} beyond its bound" if flagged else ""
    worst = f", the {full} worst checked in full" if full else ""
    return f" (the other {verdict['screened']} screened against the reference{worst}{beyond})"


def _verify_kept(
    ctx: RunContext, spec_index: int, source: TimedSource, integrity: list[str], t: float
) -> dict[str, Any]:
    """Have the candidate write the outputs it kept of one spec's timed calls (``source``: ``bench``, the
    event-timed calls; ``host``, the host loop's) and the judge verify every element of each (``check_timed``); the
    files are removed afterwards (up to ``ktui.worker.timed.KEEP_TIMED`` outputs of a benchmark spec's size at a
    time). ``integrity`` (what the candidate found of the kept outputs: changed after return, one buffer returned
    twice) fails the verdict too, ahead of the judge's reason. Returns the judge's ``TimedVerdict`` (``label``,
    ``ok``, ``reason``, ``checked``, ``calls``, ``call``), with ``integrity`` True when the candidate's findings
    failed it."""
    assert ctx.out_dir is not None
    folder = ctx.out_dir / f"timed-{source}{spec_index}"
    request: BenchOutputsRequest = {"spec_index": spec_index, "source": source, "out_dir": str(folder)}
    try:
        written = ctx.candidate.bench_outputs(request, timeout_s=t)
        src = ctx.sources()
        params: CheckTimedRequest = {
            "kernel": src["kernel"],
            "reference": src["reference"],
            "spec_index": spec_index,
            "source": source,
            "calls": written["calls"],
            "outputs": written["outputs"],
            "out_dir": str(folder),
        }
        if written.get("screened"):
            params["screened"] = written["screened"]
        verdict: TimedVerdict = ctx.judge.check_timed(params, timeout_s=t)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if integrity:
        reason = "; ".join(integrity) + (f"; and {verdict['reason']}" if verdict.get("reason") else "")
        return {**verdict, "ok": False, "reason": reason, "integrity": True}
    return dict(verdict)


HOST_LOOP_S = 0.05  # the shorter loop's target length, s (the longer one makes twice its calls)


def _host_us_per_call(
    ctx: RunContext, spec: BenchSpecTiming, t: float, median_us: float = 0.0
) -> tuple[dict[str, Any], list[str] | None]:
    """Per-call time of calls each ended by a device synchronize, timed from this process: the slope of the request
    time over the number of calls, with the kernel's calls less without them. Requests of N and 2N iterations of
    (fresh inputs, call, synchronize) and of (fresh inputs, synchronize) (``Candidate.do_host_loop``): the
    difference of a request of 2N and one of N cancels everything a request does once (set-up, IPC, the input
    generation, and what only a request with calls does after them: the kept call's copy and its storage checks,
    ~10 ms that a difference of two equal-length requests divided by N put on every call: an honest 6 us torch matmul
    read 157 us per call on the H200, 2026-12-04); the difference of the two slopes cancels the fresh inputs and the
    synchronize. Nothing in the candidate's process (a side stream, a patched timer, a memo of the last output:
    every call has new inputs) can shorten it. Every request draws its own seeds; each length is the faster of two,
    and the requests with and without calls alternate, so a drift of the machine's speed (clocks, another process)
    falls on both slopes alike.

    A figure that would fail the rung (``host_escape`` against the events' ``median_us``) is measured twice more
    and the median of the three kept (``samples_us`` lists them): where the fresh inputs cost far more than the
    call, one measurement's noise is a false alarm (rt22_local_copy_good, 2*x+1 on 8192x8192 bf16, whose inputs'
    generation takes ~4x the call: 240 us per call against 68 us on the events on the H200, 2026-12-06; the same
    loop read 95 and 332 us per call in two measurements on the H100), while work on another stream shows in every
    measurement.

    Returns ``us_per_call`` (µs), ``enqueue_us_per_call`` (µs the host spent inside a call, as the worker
    measured it: the host's own cost per call), ``events_us_per_call`` (the calls' CUDA events inside the loop, µs:
    their GPU time at the clocks the loop runs at), ``clock_ratio`` (the loop's clock probe, µs per spin, over the
    probe right after the timed calls, ``spec["probe_us"]``: how much slower the loop's SM clock runs; 1 when
    either is missing), ``samples_us`` (each measurement's µs per call) and, when the last loop kept a call for
    ``bench_outputs``, what the candidate found of its output (``integrity``: empty when nothing), else None.
    """
    sources, index = ctx.sources(), spec["spec_index"]
    rnd = random.SystemRandom()
    last: list[HostLoopReply] = []

    def timed(n: int, run_kernel: bool) -> tuple[float, HostLoopReply]:
        params: HostLoopRequest = {
            **sources,
            "spec_index": index,
            "seed": rnd.randrange(1, 2**30),
            "calls": n,
            "run_kernel": run_kernel,
            "allowed_aliases": reference_aliases(ctx),
        }
        t0 = time.perf_counter()
        reply = ctx.candidate.host_loop(params, timeout_s=t)
        seconds = time.perf_counter() - t0
        if run_kernel:
            last[:] = [reply]
        return seconds, reply

    def slopes(n: int, reps: int = 2) -> tuple[float, float, float, float, float]:
        """(seconds per iteration with calls, without; host seconds inside a call, event seconds of a call and of
        its clock probe, each the least of the long requests'): per length the faster of ``reps`` requests, those
        with and without calls alternating, the 2n ones last (the caller's last request is a full one: its kept call
        is verified)."""
        got: dict[tuple[int, bool], list[float]] = {}
        enqueue: list[float] = []
        events: list[float] = []
        probes: list[float] = []
        for length in (n, 2 * n):
            for _ in range(reps):
                for run_kernel in (False, True):
                    seconds, reply = timed(length, run_kernel)
                    got.setdefault((length, run_kernel), []).append(seconds)
                    if run_kernel and length == 2 * n:
                        enqueue.append(reply.get("enqueue_s", 0.0) / max(reply.get("calls", 1), 1))
                        events.append(reply.get("events_s", 0.0) / max(reply.get("calls", 1), 1))
                        probes.append(reply.get("probe_s", 0.0) / max(reply.get("calls", 1), 1))
        per = {k: (min(got[(2 * n, k)]) - min(got[(n, k)])) / n for k in (False, True)}
        return per[True], per[False], min(enqueue), min(events), min(probes)

    # seconds per call, roughly: sizes the loops (the shorter to ~HOST_LOOP_S)
    full, base, *_ = slopes(10, reps=1)
    calls = int(max(10, min(5000, HOST_LOOP_S / max(full - base, 1e-6))))
    hot_probe_us = spec.get("probe_us", 0.0)

    def measure() -> tuple[float, float, float, float]:
        full, base, enqueue, events, probe = slopes(calls)
        ratio = probe * 1e6 / hot_probe_us if probe > 0 and hot_probe_us > 0 else 1.0
        return max(full - base, 0.0) * 1e6, max(enqueue, 0.0) * 1e6, ratio, max(events, 0.0) * 1e6

    samples = [measure()]
    if median_us > 0 and host_escape(median_us, *samples[0][:3]) == "fail":  # (h, enqueue, clock ratio)
        samples += [measure(), measure()]
    us, enqueue_us, ratio, events_us = sorted(samples)[len(samples) // 2]
    figures = {
        "us_per_call": us,
        "enqueue_us_per_call": enqueue_us,
        "events_us_per_call": events_us,
        "clock_ratio": ratio,
        "samples_us": [h for h, *_ in samples],
    }
    if not last or not last[-1].get("kept"):
        return figures, None
    return figures, last[-1].get("integrity", [])


def timed_problem(rc: Mapping[str, Any], what: str, how: str = "") -> str:
    """The failure line of a verified timed output (``_verify_kept``'s verdict ``rc``; ``what``: ``timed call``,
    ``host-loop call``, or ``call`` of the verified stretch, whose calls ``how`` describes): which call, of how
    many, and why."""
    if rc.get("integrity") and str(rc["reason"]).startswith("memory retained"):  # (``timed.Retained``: says why)
        return str(rc["reason"])
    if rc.get("integrity"):  # the kept outputs' storage told it: the message names the calls
        return f"{rc['reason']}: the outputs of {what}s are kept and must stay as they were returned"
    which = f"{what} {rc['call']} of {rc['calls']}" if rc.get("call") and rc.get("calls") else f"a {what}"
    kept = rc.get("checked")
    how = how or (
        f"{kept} timed call(s), chosen at random after they returned, were verified in full"
        if kept
        else "timed calls are verified in full"
    )
    return (
        f"the output of {which} is wrong ({rc['reason']}): a kernel must compute every element on every call "
        f"({how}; every call gets fresh inputs)"
    )


def baseline_figures(ref: Mapping[str, Any], median_us: float) -> dict[str, Any]:
    """The speedups over the judge's torch baselines (``ktui.worker.baselines``) of a version whose median is
    ``median_us``: ``eager_median_us``, ``eager_speedup``, ``eager_source``, ``compiled_median_us``,
    ``compile_speedup`` (baseline median / version median) or ``compile_error``; empty when they were not timed."""
    out: dict[str, Any] = {}
    for key, speedup in (("eager_median_us", "eager_speedup"), ("compiled_median_us", "compile_speedup")):
        base = ref.get(key)
        if base:
            out[key] = base
            out[speedup] = base / median_us if median_us > 0 else None
    for key in ("eager_source", "compile_error", "compile_s"):
        if ref.get(key) is not None:
            out[key] = ref[key]
    return out


# Host loop against CUDA events. Honest kernels measured on an H200 (benchmarks/h200.sh, examples) give host loop /
# event median 0.98-1.09 (the loop runs with a warm L2, so GPU-bound calls can come out below the median); work the
# events miss (another stream) shows as host time that neither the median nor the host's own enqueue time explains.
HOST_FAIL_RATIO, HOST_FAIL_GAP_US = 1.4, 50.0
HOST_WARN_RATIO, HOST_WARN_GAP_US = 1.2, 20.0


# The most the loop's clock may explain: the probe's spin slower by more than this is not the clock (the H100's idle
# 345 MHz against its 1,980 MHz boost is 5.7x; a loop's duty cycle keeps it well above idle: red team 24's top-k
# read 2.3-3.3x, 2026-12-06)
CLOCK_RATIO_CAP = 4.0


def host_escape(median_us: float, host_us: float, enqueue_us: float, clock_ratio: float = 1.0) -> str:
    """``fail``, ``warn`` or '' for a device-synchronized loop of ``host_us`` per call against the CUDA events'
    ``median_us`` and the host's enqueue time ``enqueue_us`` (all µs): after the sync of the previous iteration the
    GPU idles while the host issues the call, so a call takes at most its enqueue time plus its GPU time (softmax/v1
    on an H200: 258 + 65 us against 386 us measured, a false alarm when only the larger of the two was counted); what
    exceeds that by ``HOST_FAIL_RATIO`` and ``HOST_FAIL_GAP_US`` is GPU work the events do not see (a side stream).

    The GPU time is the median at the loop's clocks: ``median_us`` times ``clock_ratio`` (the loop's clock probe
    over the one right after the timed calls, ``timing.clock_probe``; at least 1, at most ``CLOCK_RATIO_CAP``): a
    GPU that idles between the loop's calls runs them at lower clocks than back to back (red team 24's honest top-k,
    compute-bound, on the H100, 2026-12-06: events 74 us back to back, loop 168-245 us in three measurements against
    77 us of enqueue). The loop's own events of the calls cannot stand in for it: work on another stream contends
    with the call's own half in the loop and stretches its events too (side_stream_half_bad on the H100: events
    1,328 us, loop 2,808 us, passed when the loop's events counted)."""
    explained = median_us * min(max(clock_ratio, 1.0), CLOCK_RATIO_CAP) + enqueue_us
    gap = host_us - explained
    if host_us > HOST_FAIL_RATIO * explained and gap > HOST_FAIL_GAP_US:
        return "fail"
    if host_us > HOST_WARN_RATIO * explained and gap > HOST_WARN_GAP_US:
        return "warn"
    return ""


def benchmark_result(
    cand: Sequence[Mapping[str, Any]],
    ref: Sequence[Mapping[str, Any]],
    roof: Mapping[str, Any],
    describe: ProblemInfo,
    host: dict[int, dict[str, Any]] | None = None,
    recheck: Sequence[Mapping[str, Any]] | None = None,
    tampered: list[str] | None = None,
    host_recheck: Sequence[Mapping[str, Any]] | None = None,
) -> RungResult:
    """Per benchmark spec: the candidate's median and spread, the reference's median, the speedup, achieved GB/s
    and TFLOP/s, and the roofline (``peaks.roofline``): ``sol_pct``, % of the device's datasheet peak (an honest
    kernel stays at or under 100%), and ``measured_pct``, % of the measured ceilings.

    ``host`` maps a spec index to ``{"us_per_call", "enqueue_us_per_call", "events_us_per_call", "clock_ratio",
    "samples_us"}``
    (see ``_host_us_per_call``).
    Fails, naming the spec and the call, when a kept timed call's output is wrong or changed after its call returned
    (``recheck``: ``_verify_kept``'s verdicts) or a kept host-loop call's (``host_recheck``), when a time is faster
    than the datasheet peak allows (the speed of light), when the candidate patched functions in its worker
    (``tampered``: the timer itself is suspect), or when the host-synchronized time per call exceeds the CUDA-event
    median plus the host's own enqueue time by ``HOST_FAIL_RATIO`` and ``HOST_FAIL_GAP_US`` (GPU work the events do
    not see: a side stream). A milder gap is a warning, and so is a host-bound call (enqueue time above the median).
    """
    refs = {r["spec_index"]: r for r in ref}
    host = host or {}
    specs, problems, warnings = [], [], []
    for c in cand:
        i = c["spec_index"]
        r = refs.get(i, {})
        med = c["median_us"]
        label = describe["benchmark_labels"][i]
        e: dict[str, Any] = {
            "label": label,
            "spec": describe["benchmarks"][i],
            **{k: c[k] for k in ("median_us", "p25_us", "p75_us", "iqr_us", "min_us", "max_us", "reps")},
        }
        e["ref_median_us"] = r.get("median_us")
        e["speedup"] = (r["median_us"] / med) if r.get("median_us") and med > 0 else None
        e.update(baseline_figures(r, med))
        if r.get("bytes"):
            e["gbps"] = r["bytes"] / (med * 1e-6) / 1e9
        if r.get("flops"):
            e["tflops"] = r["flops"] / (med * 1e-6) / 1e12
        bound, impossible = roofline(r, roof, med)
        e.update(bound)
        if impossible:
            problems.append(f"spec={label}: {impossible}")
        hl = host.get(i)
        if hl is not None:
            h, q, ev = hl["us_per_call"], hl.get("enqueue_us_per_call", 0.0), hl.get("events_us_per_call", 0.0)
            clock = hl.get("clock_ratio", 1.0)
            e["host_us_per_call"], e["enqueue_us_per_call"], e["loop_events_us_per_call"] = h, q, ev
            e["loop_clock_ratio"] = clock
            samples, told = hl.get("samples_us") or [], ""
            if len(samples) > 1:
                e["host_samples_us"] = samples
                told = f" (the median of {len(samples)} measurements: {', '.join(f'{x:.4g}' for x in samples)} us)"
            escape = host_escape(med, h, q, clock)
            if escape == "fail":
                in_loop = f" ({ev:.4g} us inside the loop, whose clock runs {clock:.2g}x slower)" if ev else ""
                problems.append(
                    f"spec={label}: timing escapes the events: CUDA events give {med:.4g} us{in_loop} and the "
                    f"host enqueues a call in {q:.4g} us, but a device-synchronized loop takes {h:.4g} "
                    f"us per call{told} (GPU work on another stream?)"
                )
            elif escape == "warn":
                warnings.append(
                    f"spec={label}: device-synchronized loop {h:.4g} us per call against {med:.4g} us on "
                    "the events: work the events may not see"
                )
            elif q > HOST_WARN_RATIO * med and q - med > HOST_WARN_GAP_US:
                warnings.append(
                    f"spec={label}: host-bound: the host takes {q:.4g} us to issue a call that runs "
                    f"{med:.4g} us on the GPU (launch overhead; CUDA graphs or fewer launches help)"
                )
        specs.append(e)
    for rc in recheck or []:
        if not rc["ok"]:
            problems.append(f"spec={rc['label']}: {timed_problem(rc, 'timed call')}")
    for rc in host_recheck or []:
        if not rc["ok"]:
            problems.append(f"spec={rc['label']}: {timed_problem(rc, 'host-loop call')}")
    parts = []
    for e in specs:
        s = f"{e['label']}: {fmt(e['median_us'], 4)} us (IQR {fmt(e['iqr_us'], 2)})"
        if e.get("speedup"):
            s += f", ref {fmt(e['ref_median_us'], 4)} us, {e['speedup']:.2f}x"
        if e.get("eager_speedup") and e.get("eager_source") == "eager":
            s += f", {e['eager_speedup']:.2f}x torch eager"
        if e.get("compile_speedup"):
            s += f", {e['compile_speedup']:.2f}x torch.compile"
        elif e.get("compile_error"):
            s += ", torch.compile failed"
        if e.get("tflops") is not None:
            s += f", {e['tflops']:.1f} TFLOP/s"
        elif e.get("gbps") is not None:
            s += f", {e['gbps']:.0f} GB/s"
        if e.get("sol_pct") is not None and e.get("peak_source") == "measured":
            s += f" ({e['sol_pct']:.0f}% SOL, measured)"
        elif e.get("sol_pct") is not None:
            s += f" ({e['sol_pct']:.0f}% of peak"
            s += f", {e['measured_pct']:.0f}% of measured)" if e.get("measured_pct") is not None else ")"
        parts.append(s)
    if tampered:
        problems.insert(
            0,
            f"timings untrustworthy: this version patched {', '.join(tampered[:5])} in its worker "
            "(the functions that time and check it)",
        )
    figures = {
        "specs": specs,
        "bandwidth_gbps": roof.get("bandwidth_gbps"),
        "peak_tflops": roof.get("peak_tflops"),
        "recheck": recheck or [],
        "host_recheck": host_recheck or [],
        "device_name": roof.get("device_name"),
        "tampered": tampered or [],
    }
    if problems:
        return RungResult(
            "benchmark",
            Status.FAILED,
            summary=problems[0],
            figures=figures,
            warnings=warnings,
            error=ErrorInfo("TimingIntegrityError", "; ".join(problems)),
        )
    return RungResult("benchmark", Status.OK, summary="; ".join(parts), figures=figures, warnings=warnings)
