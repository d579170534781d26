"""Requests and replies of the ``judge`` role's methods: ``ktui.worker.judge.Judge.do_<method>`` on the worker's
side, ``ktui.core.workers.facades.JudgeClient.<method>`` on ktui's."""

from typing import Any, Literal, NotRequired, TypedDict

from ktui.protocol.shared import (
    Case,
    ExecutedCase,
    OutputLeaf,
    Sources,
    Spec,
    TimedOutput,
    TimedSource,
    TimingStats,
)


class ProblemInfo(TypedDict):
    """What a reference module declares (the ``describe`` reply)."""

    tests: list[Spec]  # correctness specs, in the module's order (``spec_index`` of correctness cases)
    benchmarks: list[Spec]  # timed specs (``spec_index`` of timing requests)
    labels: list[str]  # ``(4, 129, bf16)`` per test spec
    benchmark_labels: list[str]  # the same per benchmark spec
    has_flops: bool  # the module defines flops(spec)
    has_bytes: bool  # the module defines bytes_moved(spec)
    outputs: list[Any]  # indices or keys of output buffers inside the input data
    distributions: list[str]  # input distributions the problem allows (``native`` first)
    contiguous_only: bool  # skip the layout cases
    allow_torch: NotRequired[bool]  # the reference allows versions that launch no Triton/CuTeDSL kernel
    fuzzed: NotRequired[list[int]]  # indices into ``tests`` of this run's fuzzed specs (appended after the module's)
    fuzz_seed: NotRequired[int]  # the seed they were drawn from (the run's first correctness seed)
    fuzz_note: NotRequired[str]  # why fewer fuzzed specs than usual were drawn (``ktui.worker.fuzz.fuzz_note``)
    # the int and bool arguments the ``scalars`` cases move: combinations of {path: move} the reference takes, one
    # per ``scalars`` case (``Case.vary``), and a note per argument never moved (``ktui.worker.arguments``)
    scalar_moves: NotRequired[list[dict[str, str]]]
    scalar_notes: NotRequired[list[str]]
    # a special distribution left out because the reference crashed or hung on its inputs (``fuzz._in_child``)
    distribution_notes: NotRequired[list[str]]
    # a special distribution the reference is valid on in some float inputs only (an additive attention mask takes
    # -inf, q, k and v cannot): the input paths (``[3]``) its cases refill (``Case.inputs``; ``fuzz._valid_inputs``)
    distribution_inputs: NotRequired[dict[str, list[str]]]
    tensor_inputs: NotRequired[int]  # input tensors of one dimension or more (the smallest test spec's inputs)
    input_ndim: NotRequired[int]  # the most dimensions of one of them
    upstream_check: NotRequired[bool]  # the module defines GPU MODE's check_implementation (run beside the verdict)


class DescribeRequest(Sources):
    """Load the reference (only ``reference`` is read); with ``fuzz_seed``, draw fuzzed specs from it
    (``ktui.worker.fuzz``) and append them to ``tests``."""

    fuzz_seed: NotRequired[int]


class PrepareRequest(Sources):
    """Build each case's inputs and compute its references, kept for ``compare``; with ``append``, in addition to
    those kept from earlier prepares (a run's later chunks), else instead of them."""

    cases: list[Case]
    append: NotRequired[bool]


class PreparedCase(TypedDict):
    """What the judge expects for one case."""

    input_hash: str
    expected: list[OutputLeaf]  # path, kind, dtype, shape of each expected leaf
    precision: str
    policy_dtype: str
    # ``out[1] aliases in[0]``: the reference's own outputs that are views of its inputs (``qkv.split``'s k and v):
    # a version's may be too, there and nowhere else (red team round 22, F7)
    aliases: NotRequired[list[str]]


class PrepareReply(TypedDict):
    """One entry per case, in order."""

    cases: list[PreparedCase]


class CompareRequest(Sources):
    """Judge executed cases whose outputs are under ``out_dir/case<i>/``, ``i`` counted from ``first_index`` (0:
    the run's cases from the first; a later chunk of them starts further on)."""

    cases: list[ExecutedCase]
    out_dir: str
    first_index: NotRequired[int]


class CaseVerdict(TypedDict, total=False):
    """The judge's verdict on one case (the ``compare`` reply): the case's keys, the worst output leaf's metrics
    (``ktui.worker.metrics``) and the verdict. ``score`` is the largest error-to-allowance ratio (<= 1 passes,
    ``inf`` for a failure that has no ratio)."""

    spec_index: int
    seed: int
    dist: str
    layout: str
    config: int | str  # the case's ``config``: an index, or "auto"
    repeat: int
    grad: str  # the case's grad mode (``no_grad``, ``inference``, ``requires_grad``): absent for a plain call
    label: str  # the spec: ``(4, 129, bf16)``
    case: str  # the case: spec, seed, distribution, layout
    precision: str  # the reference's precision: ``float64`` or ``native``
    policy_dtype: str  # the lowest precision involved: picks the tolerance
    ok: bool
    reason: str  # one line, '' when ok
    score: float
    warnings: list[str]
    tolerance: str  # ``atol=1e-05 rtol=1e-05``
    outputs: int  # output leaves compared
    unsupported: str  # an unsupported layout: not judged
    skipped: str  # a special-values case whose reference is not a valid target (NaN, overflow): not judged
    path: str  # the worst leaf's path
    max_abs_err: float
    max_rel_err: float
    mse: float
    rmse: float
    psnr_db: float
    cosine: float
    rel_l2_err: float
    scale_err: float
    nan_count: int
    inf_count: int
    ref_nan_count: int
    nonfinite_mismatch: int
    unwritten: int  # elements still holding the poison
    outside_tol: int
    where: str  # where the bad elements sit: ``rows 64 and cols 64 entirely (of 65 x 65)``
    worst_index: list[int]
    worst_got: float
    worst_expected: float
    baseline_psnr_db: float | None  # the native-precision reference's own PSNR against float64
    expected_rel_l2_fp32: float
    expected_rel_l2_tf32: float
    expected_rel_l2_tf32_rz: float  # TF32 operands truncated toward zero instead of rounded
    native_max_abs_err: float  # what the reference computed in the native precision gets (``ktui.worker.native``)
    # failed where the reference in its own precision fails too (an fp16 overflow): the rung's headline is another
    # failing case when there is one (``compare.native_fails_too``; new-user trial 26, F4)
    reference_fails_too: bool
    tf32_level: bool  # a float32 output's error is at the TF32 level (``ktui.worker.compare.TF32_BAND``)
    nondeterministic_elements: int
    run_to_run_spread: float
    calls: int  # a burst: how many calls it made (each judged as a case of its own)
    call: int  # a burst's failing call, from 1 (or the worst call when all pass)
    # the reference's own check_implementation (GPU MODE) on this case, beside ktui's verdict (``worker.upstream``):
    # pass, fail, error (it raised), n/a (the output could not be given to it); absent where it did not run
    upstream: Literal["pass", "fail", "error", "n/a"]
    upstream_message: str


class CompareReply(TypedDict):
    """One verdict per case, in order."""

    cases: list[CaseVerdict]


class TimeReferenceRequest(Sources):
    """Time ``ref_kernel`` on the benchmark specs ``spec_indices``, inputs from ``seed``; with ``baselines``, torch
    eager and ``torch.compile`` of it too (``ktui eval``: ``Judge.do_time_reference``)."""

    spec_indices: list[int]
    seed: int
    baselines: NotRequired[bool]


class RefSpecTiming(TimingStats):
    """One timed reference spec and what the roofline needs."""

    spec_index: int
    flops: float | None  # the module's flops(spec), or None
    bytes: float | None  # the module's bytes_moved(spec), or None
    dtype: str  # the lowest input precision
    # with ``baselines``: torch eager (the module's ``eager(data)``, else ``ref_kernel`` itself) and ``torch.compile``
    # of it (default mode, static shapes, compiled afresh per spec, the compilation untimed), timed as the reference
    eager_median_us: NotRequired[float]
    eager_source: NotRequired[str]  # ``eager`` (the module's) or ``ref_kernel``
    compiled_median_us: NotRequired[float]
    compile_error: NotRequired[str]  # torch.compile raised (compiling or calling): no compiled baseline
    compile_s: NotRequired[float]  # seconds the compilation (the first call) took


class TimeReferenceReply(TypedDict):
    """One entry per requested spec."""

    specs: list[RefSpecTiming]


class CheckTimedRequest(Sources):
    """Verify every element of the kept outputs of one spec's calls (``source``: ``bench`` for a benchmark spec's
    event-timed calls, ``host`` for its host loop's, ``stretch`` for a test spec's verified stretch of untimed
    calls), written under ``out_dir`` (the ``bench_outputs`` reply)."""

    spec_index: int
    source: TimedSource
    calls: int  # how many timed calls there were
    outputs: list[TimedOutput]
    out_dir: str
    # a stretch's other calls: each screened against the reference, the worst beyond the screen's bound verified
    # in full (``Judge.do_check_timed``)
    screened: NotRequired[list[TimedOutput]]


class TimedVerdict(TypedDict):
    """The verdict on one spec's kept timed outputs (the ``check_timed`` reply): the first failing call's, or the
    worst call's when all pass (``score``, ``max_abs_err``, ``rel_l2_err`` and ``unwritten`` are that call's)."""

    spec_index: int
    source: TimedSource
    label: str  # the spec's label
    ok: bool
    reason: str  # the failing call's verdict ('' when ok)
    checked: int  # outputs verified, every element each
    calls: int
    screened: NotRequired[int]  # the other calls screened (a stretch)
    flagged: NotRequired[int]  # of them, beyond the screen's bound
    screen_checked: NotRequired[int]  # of them, the worst by the screen's score, verified in full (``SCREEN_FULL``)
    call: NotRequired[int]  # the failing call, from 1
    seed: NotRequired[int]  # its inputs' seed
    score: NotRequired[float]
    max_abs_err: NotRequired[float]
    rel_l2_err: NotRequired[float]
    unwritten: NotRequired[int]


class RooflineRequest(TypedDict):
    """The dtypes (torch names: ``bfloat16``) whose matmul peak is wanted."""

    dtypes: list[str]


class RooflineReply(TypedDict):
    """The measured ceilings (cached per worker)."""

    bandwidth_gbps: float  # device memory bandwidth, 1e9 B/s
    peak_tflops: dict[str, float]  # dtype -> matmul TFLOP/s
    device_name: NotRequired[str]  # as CUDA names it (``NVIDIA H200``): the datasheet peaks are looked up by it
