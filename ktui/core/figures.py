"""The figures each rung reports: one typed schema per rung, shared by ``ktui run --json``, the TUI, the agent's tool
results and the session logs.

A ``RungResult.figures`` is a JSON object (NaN and infinities travel as the strings ``"nan"``, ``"inf"``,
``"-inf"``: ``ktui.protocol.json_safe``). Its keys are those of the rung's ``TypedDict`` below; ``total=False``
marks keys a rung leaves out when they do not apply (no bytes declared, no baseline pinned). A skipped rung's
figures are ``SkippedFigures`` (``reason``). Units are in the names: ``_us`` microseconds, ``_s`` seconds,
``_gbps`` 1e9 bytes per second, ``tflops`` 1e12 floating-point operations per second, ``_pct`` percent.

``check(rung, figures)`` names the keys a result has that its schema does not know and the required keys it lacks;
the folds' tests run it, so a figure added to a fold without its schema fails there. ``json_schema()`` gives the
schemas as JSON Schema (draft 2020-12) objects, and ``rung_schema`` the schema of a rung of ``ktui run --json``
(``ktui schema run``, ``docs/json.md``).
"""

import typing
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

from ktui.core.typeschema import SchemaBuilder, describe, fields_of
from ktui.protocol import Launch


class StretchFigures(TypedDict, total=False):
    """benchmark without a GPU: the verified stretch, calls in a row on one test spec as a script makes them (main
    thread, plain inputs, unguarded), some kept at random and verified in full by the judge, the others screened."""

    spec_index: int  # into the reference's tests
    source: str  # stretch
    label: str  # the spec's label
    ok: bool
    reason: str  # the failing call's verdict ('' when ok)
    checked: int  # outputs verified, every element each
    calls: int  # calls in the stretch
    screened: int  # the other calls, each screened against the reference (``ktui.worker.screen``)
    flagged: int  # of them, beyond the screen's bound
    screen_checked: int  # of them, the worst by the screen's score verified in full (counted in ``checked``)
    drawn_calls: int  # the count drawn, when the time budget cut it to ``calls``
    seconds_per_call: float  # the run rung's median seconds per call on the spec, when the budget cut the stretch
    call: int  # the failing call, or the worst one, from 1
    seed: int  # its inputs' seed
    score: float
    max_abs_err: float
    rel_l2_err: float
    unwritten: int
    integrity: bool  # the kept outputs' storage failed it (changed after return, one buffer twice, an alias)


class LargeStretchFigures(TypedDict, total=False):
    """benchmark without a GPU: the calls in a row on the largest fixed test spec after the verified stretch (a
    tuner that switches only on large sizes after some calls), cut to its time budget."""

    spec_index: int  # into the reference's tests
    calls: int  # calls made (0: not run, ``line`` says why)
    drawn_calls: int  # the count drawn before the time budget cut it
    ok: bool
    line: str  # the clause the rung's summary ends with


class SkippedFigures(TypedDict):
    """A skipped rung: why (``interpreter``, ``no benchmarks``, ``no GPU``, ``no ncu``, ``needs a GPU``: a CuTeDSL
    version on a machine without one, its run and the rungs that call it; the trace rung's ``no regions``,
    ``proton: Triton only`` and ``remote``; ``no tool host``: a transport that cannot run ncu beside the workers).
    The benchmark rung without a GPU (``interpreter``) reports its verified stretch."""

    reason: str
    stretch: NotRequired[StretchFigures]
    stretch_large: NotRequired[LargeStretchFigures]


class ScanFinding(TypedDict, total=False):
    """One finding of the static scan of the version's source."""

    kind: str  # streams, threads, monkeypatch, fallback, torch, eval...
    line: int
    text: str


class CompileFigures(TypedDict):
    """compile: what the dry call launched and how long importing and compiling took."""

    languages: list[str]  # ``triton``, ``cutedsl``
    launches: list[Launch]  # kernel, signature, constexprs, num_warps, num_stages, target
    import_s: float | None
    compile_s: float | None
    autotune_configs: int  # the most configs of any autotuned kernel (0 or 1: no autotuning)
    scan: list[ScanFinding]
    uses_dot: NotRequired[bool]  # a launch uses tl.dot or an MMA (the TF32 flag needs one)


class SeenLaunch(TypedDict):
    """run: one distinct Triton/CuTeDSL launch the calls made (kernel and specialization), and who dispatched it."""

    key: str  # the launch's identity in the candidate's ``launch_table`` and each case's ``launches``
    kernel: str
    signature: dict[str, str]  # param -> ``*fp32:16`` (divisible by 16), ``i32``, ``constexpr``
    constexprs: dict[str, Any]
    options: dict[str, Any]  # ``num_warps``, ``num_stages``... as given with the launch
    specs: list[str]  # labels of the specs whose calls made it
    calls: int  # launches of it over all cases
    beyond_dry_call: bool  # not made by the compile rung's dry call (another size or layout dispatched it)


class RunFigures(TypedDict):
    """run: the calls made on every case."""

    calls: int  # cases executed
    first_call_s: float | None  # the first call includes the JIT
    total_s: float
    seeds: list[int]
    tampered: list[str]  # functions the version patched in its worker
    # contiguous cases run in place of those the kernel refused (``core.ladder.cases.refill_refused``), in ``calls``
    refilled: NotRequired[int]
    launches: NotRequired[list[SeenLaunch]]  # every distinct launch the calls made
    launches_compiled: NotRequired[int]  # of them, compiled again for the target after the calls (Triton ones)
    launch_compile_s: NotRequired[float]  # seconds that took
    # the longest the execute calls went without progress (a case, and the reply after the last): what a later run's
    # time limit on time without progress scales (``ktui.core.timeouts``)
    longest_step_s: NotRequired[float]


class CorrectnessSpec(TypedDict, total=False):
    """correctness, per test spec: the worst case's metrics and what identifies it."""

    label: str  # ``(2, 4099, bf16)``
    spec: dict[str, Any]
    fuzzed: bool  # a size drawn this run around the reference's specs (``--seed`` replays it)
    ok: bool
    seeds: list[int]
    cases: int
    worst_seed: int
    worst_case: str  # the worst case's one-line name (spec, seed, distribution, layout, fill)
    reason: str
    tolerance: str | None
    precision: str | None
    score: float | str | None  # higher is worse; a string when not finite
    unsupported_layouts: list[str]
    failed_cases: list[str]
    max_abs_err: Any
    max_rel_err: Any
    mse: Any
    rmse: Any
    psnr_db: Any
    cosine: Any
    rel_l2_err: Any
    rel_l1_err: Any
    off_frac: Any  # low precision: the fraction of elements off by more than the ulp bound
    gross_ratio: Any  # low precision: the largest error over its gross bound, 32 u max(|ref|, rms(ref)); above 1 fails
    scale_err: Any
    nan_count: Any
    inf_count: Any
    unwritten: Any
    outside_tol: Any
    worst_index: Any
    worst_got: Any
    worst_expected: Any
    where: Any
    baseline_psnr_db: Any
    baseline_max_abs_err: Any
    baseline_ratio: Any
    expected_rel_l2_fp32: Any
    expected_rel_l2_tf32: Any  # TF32 rounded to nearest
    expected_rel_l2_tf32_rz: Any  # TF32 truncated (what Hopper's tensor cores do)
    native_max_abs_err: Any  # the float32 reference's own error against float64 (the default bar, x8)
    run_to_run_spread: Any
    path: Any


class FirstVerdictFigures(TypedDict):
    """correctness: the first verdict, on the first sweep alone (every test spec once, native inputs, the first seed),
    given while the other cases still ran (``ktui.core.events.FirstVerdict``)."""

    status: str  # ``ok`` or ``FAILED`` (``Status`` values)
    summary: str
    cases: int
    at_s: float  # when it came, seconds since the ladder started


class UpstreamFigures(TypedDict):
    """correctness: the reference's own checker (GPU MODE's ``check_implementation``, run in the judge beside ktui's
    verdict on the upstream problem's own cases: ``ktui.worker.upstream``), folded by ``ktui.core.upstream.fold``."""

    verdict: str  # pass, fail, error (the checker raised), n/a (no output it could be given)
    checked: int  # cases it ran on
    passed: int
    failed: int
    errors: int
    unavailable: int
    message: str  # the first failing case's message ('' on pass)
    case: str  # and that case's name


class CorrectnessFigures(TypedDict, total=False):
    """correctness: every spec, the worst one, and how many cases ran; the first verdict and when it came."""

    specs: list[CorrectnessSpec]
    worst: str | None  # the worst spec's label
    cases: int
    fuzzed: list[str]  # the labels of this run's drawn specs
    skipped: int  # special-values cases on which the reference itself is invalid
    first_verdict: FirstVerdictFigures
    verdict_at_s: float  # when the full verdict came, seconds since the ladder started
    judged_at_end: int  # cases the judge compared after the run (the rest it compared while the run went on)
    seed: int  # the run's base seed: ``ktui run KERNEL --seed N`` draws the same cases and fuzzed specs again
    upstream: UpstreamFigures  # the reference's own check_implementation, beside ktui's verdict (imported GPU MODE)
    upstream_differs: str  # ``upstream: pass, ktui: fail (dtype)`` where the two verdicts differ


class BenchmarkSpec(TypedDict, total=False):
    """benchmark, per benchmark spec: times in µs and where they sit against the roofline."""

    label: str
    spec: dict[str, Any]
    median_us: float
    p25_us: float
    p75_us: float
    iqr_us: float
    min_us: float
    max_us: float
    reps: int
    ref_median_us: float | None
    speedup: float | None  # reference median / candidate median
    gbps: float
    tflops: float
    roofline_us: float  # max(bytes / bandwidth, flops / peak)
    measured_us: float  # the same floor over the measured ceilings (copy bandwidth, torch.matmul)
    sol_pct: float  # % of the datasheet peak ("speed of light")
    measured_pct: float  # % of the measured ceilings
    peak_source: str
    host_us_per_call: float  # the device-synchronized host loop
    enqueue_us_per_call: float
    loop_events_us_per_call: float  # the calls' CUDA events inside the host loop (its clocks)
    loop_clock_ratio: float  # the host loop's clock probe over the one after the timed calls (timing.clock_probe)
    host_samples_us: list[float]  # the loop measured three times (a first figure that would fail): each one's µs
    # ktui eval (LadderOptions.baselines): the judge's torch eager and torch.compile baselines, timed as the reference
    eager_median_us: float
    eager_speedup: float | None  # torch eager median / candidate median
    eager_source: str  # ``eager`` (the reference module's) or ``ref_kernel``
    compiled_median_us: float
    compile_speedup: float | None  # torch.compile median / candidate median
    compile_s: float  # seconds torch.compile took (its first call)
    compile_error: str  # the reference did not compile: no compiled baseline


class BenchmarkFigures(TypedDict, total=False):
    """benchmark: per spec, the ceilings used, the re-checks of timed outputs and what the version patched."""

    specs: list[BenchmarkSpec]
    bandwidth_gbps: Any
    peak_tflops: Any
    peak_source: Any
    device_name: Any
    recheck: list[dict[str, Any]]  # per spec: label, ok, reason
    host_recheck: list[dict[str, Any]]  # per spec: the re-check of the host loop's last call (label, ok, reason)
    tampered: list[str]
    stretch: StretchFigures  # without a GPU: the verified stretch that failed (when it passes the rung is skipped)
    stretch_large: LargeStretchFigures  # without a GPU: the calls in a row on the largest test spec


class DumpsKernel(TypedDict, total=False):
    """dumps, per launch: what the compiler made of it."""

    language: str
    kernel: str
    num_warps: int | None  # None for CuTeDSL (and the next three: Triton's launch parameters)
    num_stages: int | None
    signature: dict[str, str] | None
    constexprs: dict[str, Any] | None
    target: str
    files: dict[str, str]  # stage (ttir, ttgir, llir, ptx, cubin, sass, linemap) -> path relative to the workspace
    resources: dict[str, Any]  # registers, local, shared, dynamic_shared (bytes)...
    mix: dict[str, int]  # instruction counts by opcode class
    warnings: list[str]


class DumpsFigures(TypedDict):
    """dumps: where the files are, the spec compiled, the architecture and every launch."""

    dir: str
    spec: dict[str, Any]
    arch: str  # ``sm_90a``
    kernels: list[DumpsKernel]


class ProfileFigures(TypedDict, total=False):
    """profile: Nsight Compute on one call."""

    spec: dict[str, Any]
    report: str  # the .ncu-rep, relative to the workspace
    kernels: list[dict[str, Any]]  # ``ktui.core.inspect.ncu.summaries``
    duration_us: float
    pct_peak_bandwidth: float  # of the datasheet's HBM bandwidth (or the measured, if larger), %
    pct_peak_flops: float  # of the datasheet's tensor-core peak for the inputs' dtype (or the measured, if larger), %
    peak_source: str  # whose peaks those are (``ktui.core.ladder.peaks.ceilings``)
    baseline: str
    deltas: list[dict[str, Any]]
    ncu_args: list[str]  # what was asked of ncu beyond ktui's own sections ([profile] in ktui.toml, --ncu-args)
    # file (the source page per instruction), kernels [{kernel, matched, total_samples, hot_lines}]
    source: dict[str, Any]


class TraceRegion(TypedDict, total=False):
    """trace, per region of a kernel: durations over warps and CTAs, ns (``ktui.core.inspect.tracestats``)."""

    name: str
    warps: int  # warps that ran it (begin and end)
    ctas: int
    median_ns: float
    p10_ns: float
    p90_ns: float
    max_ns: float
    share_pct: float | None  # of the warps' spans (first to last marker)
    cta_median_ns: float  # per CTA: the region's first begin to its last end over the CTA's warps
    cta_p90_ns: float
    cta_max_ns: float
    warp_spread_ns: float  # median over CTAs of slowest - fastest warp
    cycles_median: float


class TraceKernel(TypedDict, total=False):
    """trace, per traced kernel: its regions, its CTAs as a whole, the critical path and the timeline."""

    kernel: str
    language: str
    launches: int  # in the recorded call (the trace is the last one)
    grid: list[int]
    block: list[int]
    warps_traced: int
    clock_ghz: float | None
    clock_source: str
    regions: list[TraceRegion]
    span_ns: float  # first mark to last mark over the kernel
    ctas: int
    ctas_traced: int
    sample_every: int  # every n-th CTA was recorded (1: all)
    sms_used: int
    sm_count: int
    ctas_per_sm_median: float  # absent when CTAs were sampled (it needs every CTA), as the next three
    ctas_per_sm_max: int  # absent when CTAs were sampled
    concurrent_per_sm: int  # the most CTAs seen at once on one SM; absent when CTAs were sampled
    waves: float  # absent when CTAs were sampled
    cta_median_ns: float
    cta_p90_ns: float
    cta_max_ns: float
    imbalance: float | None  # slowest CTA / median CTA (of the traced ones: see sample_every)
    tail_ns: float | None  # from the first SM out of work to the end; None when CTAs were sampled
    tail_pct: float | None
    # sm, ctas [{cta, coords, start_ns, end_ns}], end_ns, busy_ns, gap_ns, regions_ns; None when CTAs were sampled
    critical_path: dict[str, Any] | None
    timeline: dict[str, Any]  # by, width, start_ns, end_ns, legend {letter: region}, rows [{label, id, cells}]
    problems: list[str]


class TraceFigures(TypedDict, total=False):
    """trace: the regions of one call, traced apart from the benchmark (the markers change the code)."""

    spec: dict[str, Any]
    tracer: str  # ktui or proton
    dir: str  # the traced program's files, relative to the workspace
    report: str  # the Chrome trace (Perfetto, chrome://tracing), relative to the workspace
    untraced_us: float  # CUDA-event median of the build every other rung runs
    traced_us: float  # the same, with the markers compiled in
    overhead_pct: float
    benchmark_us: float  # the benchmark rung's median of the same source and spec, when it ran
    marker_cycles: float  # one marker's cost to a warp (median empty region of a calibration kernel)
    marker_ns: float
    kernels: list[TraceKernel]
    device_name: str
    sm_count: int
    warnings: list[str]


FIGURES: dict[str, type] = {
    "compile": CompileFigures,
    "run": RunFigures,
    "correctness": CorrectnessFigures,
    "benchmark": BenchmarkFigures,
    "dumps": DumpsFigures,
    "profile": ProfileFigures,
    "trace": TraceFigures,
}


def _keys(td: type) -> tuple[set[str], set[str]]:
    """(all keys, required keys) of a TypedDict."""
    return set(typing.get_type_hints(td)), set(getattr(td, "__required_keys__", set()))


def check(rung: str, figures: Mapping[str, Any], skipped: bool = False) -> list[str]:
    """What in ``figures`` does not match the schema of ``rung``: unknown keys and missing required ones, as
    sentences; empty when it matches. Nested entries (``specs``, ``kernels``) are checked one level down.

    Raises:
        KeyError: ``rung`` is not a rung name.
    """
    td = SkippedFigures if skipped else FIGURES[rung]
    problems = _check(td, figures, rung)
    if not skipped:
        hints = typing.get_type_hints(td)
        for key in ("specs", "kernels"):
            inner = _list_item(hints.get(key))
            if inner is not None and _is_typeddict(inner):
                for i, entry in enumerate(figures.get(key) or []):
                    problems += _check(inner, entry, f"{rung}.{key}[{i}]")
    return problems


def _check(td: type, d: Mapping[str, Any], where: str) -> list[str]:
    known, required = _keys(td)
    out = [f"{where}: unknown figure {k!r}" for k in sorted(set(d) - known)]
    out += [f"{where}: missing figure {k!r}" for k in sorted(required - set(d))]
    return out


def _list_item(tp: Any) -> Any:
    if typing.get_origin(tp) is list:
        (arg,) = typing.get_args(tp)
        return arg
    return None


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def json_schema() -> dict[str, Any]:
    """Every rung's figures as a JSON Schema object: ``{rung: schema}``, each with the ``$defs`` it refers to."""
    out = {}
    for name, td in FIGURES.items():
        b = SchemaBuilder()
        schema = b.object(td)
        out[name] = {**schema, "$defs": b.defs} if b.defs else schema
    return out


def rung_schema(b: SchemaBuilder) -> dict[str, Any]:
    """The schema of one rung of ``ktui run --json`` (``RungJson``): its own fields with its figures beside them.

    One variant per rung and status, told apart by ``name`` and ``status`` (``oneOf``): an ``ok`` rung has every
    required figure of its schema, a ``FAILED`` one whichever it got to, a ``skipped`` one only ``reason``
    (``SkippedFigures``); none has a key its schema does not name (``unevaluatedProperties``). The fields and each
    rung's figures are under ``$defs`` (``RungFields``, ``CompileFigures``...: keys only, no ``required``)."""
    from ktui.core.results import RungJson, Status

    fields = _named(b, "RungFields", RungJson, required=True)
    skipped = _named(b, "SkippedFigures", SkippedFigures, required=True)
    variants = []
    for rung, td in FIGURES.items():
        figures = _named(b, td.__name__, td, required=False)
        for status in Status:
            part = skipped if status is Status.SKIPPED else figures
            v: dict[str, Any] = {
                "allOf": [fields, part],
                "properties": {"name": {"const": rung}, "status": {"const": status.value}},
            }
            required = sorted(fields_of(td)[1])
            if status is Status.OK and required:
                v["required"] = required
            v["unevaluatedProperties"] = False
            variants.append(v)
    text, _ = describe(RungJson)
    return {"description": text, "type": "object", "oneOf": variants}


def _named(b: SchemaBuilder, name: str, td: type, required: bool) -> dict[str, Any]:
    """``td``'s keys as an open schema (an ``allOf`` part) under ``$defs/<name>``."""
    return b.ref(td, lambda: b.object(td, closed=False, required=required), name=name)


def correctness_of(figures: Mapping[str, Any]) -> CorrectnessFigures:
    """``figures`` read as the correctness rung's schema (no copy, no check: a typed view for readers)."""
    return typing.cast(CorrectnessFigures, figures)


def benchmark_of(figures: Mapping[str, Any]) -> BenchmarkFigures:
    """``figures`` read as the benchmark rung's schema."""
    return typing.cast(BenchmarkFigures, figures)


def compile_of(figures: Mapping[str, Any]) -> CompileFigures:
    """``figures`` read as the compile rung's schema."""
    return typing.cast(CompileFigures, figures)


def dumps_of(figures: Mapping[str, Any]) -> DumpsFigures:
    """``figures`` read as the dumps rung's schema."""
    return typing.cast(DumpsFigures, figures)


def profile_of(figures: Mapping[str, Any]) -> ProfileFigures:
    """``figures`` read as the profile rung's schema."""
    return typing.cast(ProfileFigures, figures)


def trace_of(figures: Mapping[str, Any]) -> TraceFigures:
    """``figures`` read as the trace rung's schema."""
    return typing.cast(TraceFigures, figures)
