"""The figures each rung reports: one typed schema per rung, shared by ``ktui run --json``, the TUI, the agent's tool
results and the session logs.

A ``RungResult.figures`` is a JSON object (NaN and infinities travel as the strings ``"nan"``, ``"inf"``,
``"-inf"``: ``ktui.protocol.json_safe``). Its keys are those of the rung's ``TypedDict`` below; ``total=False``
marks keys a rung leaves out when they do not apply (no bytes declared, no baseline pinned). A skipped rung's
figures are ``SkippedFigures`` (``reason``). Units are in the names: ``_us`` microseconds, ``_s`` seconds,
``_gbps`` 1e9 bytes per second, ``tflops`` 1e12 floating-point operations per second, ``_pct`` percent.

``check(rung, figures)`` names the keys a result has that its schema does not know and the required keys it lacks;
the folds' tests run it, so a figure added to a fold without its schema fails there. ``json_schema()`` gives the
schemas as JSON Schema (draft 2020-12) objects, for documentation.
"""

import types
import typing
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

from ktui.protocol import Launch


class SkippedFigures(TypedDict):
    """A skipped rung: why (``interpreter``, ``no benchmarks``, ``no GPU``, ``no ncu``, ``needs a GPU``: a CuTeDSL
    version on a machine without one, its run and the rungs that call it)."""

    reason: str


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
    sol_pct: float  # % of the datasheet peak ("speed of light")
    measured_pct: float  # % of the measured ceilings
    peak_source: str
    host_us_per_call: float  # the device-synchronized host loop
    enqueue_us_per_call: float


class BenchmarkFigures(TypedDict, total=False):
    """benchmark: per spec, the ceilings used, the re-checks of timed outputs and what the version patched."""

    specs: list[BenchmarkSpec]
    bandwidth_gbps: Any
    peak_tflops: Any
    peak_source: Any
    device_name: Any
    recheck: list[dict[str, Any]]  # per spec: label, ok, reason
    tampered: list[str]


class DumpsKernel(TypedDict, total=False):
    """dumps, per launch: what the compiler made of it."""

    language: str
    kernel: str
    num_warps: int
    num_stages: int
    signature: dict[str, str]
    constexprs: dict[str, Any]
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
    pct_peak_bandwidth: float
    pct_peak_flops: float
    baseline: str
    deltas: list[dict[str, Any]]


FIGURES: dict[str, type] = {
    "compile": CompileFigures,
    "run": RunFigures,
    "correctness": CorrectnessFigures,
    "benchmark": BenchmarkFigures,
    "dumps": DumpsFigures,
    "profile": ProfileFigures,
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
    """Every rung's figures as a JSON Schema object: ``{rung: schema}``."""
    return {name: _schema(td) for name, td in FIGURES.items()}


def _schema(tp: Any) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    if _is_typeddict(tp):
        hints = typing.get_type_hints(tp)
        return {
            "type": "object",
            "description": (tp.__doc__ or "").strip(),
            "properties": {k: _schema(v) for k, v in hints.items()},
            "required": sorted(tp.__required_keys__),
            "additionalProperties": False,
        }
    if origin is list:
        return {"type": "array", "items": _schema(typing.get_args(tp)[0])}
    if origin is dict:
        return {"type": "object"}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_schema(a) for a in typing.get_args(tp)]}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
    if tp in simple:
        # Non-finite floats travel as strings (json_safe), so a number may also be "nan"/"inf"/"-inf".
        return {"type": [simple[tp], "string"]} if tp is float else {"type": simple[tp]}
    return {}


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
