"""Requests and replies of the ``candidate`` role's methods (the ``compiler`` serves ``compile``, ``dumps``,
``integrity`` and ``ping`` of them): ``ktui.worker.candidate.Candidate.do_<method>`` on the worker's side,
``ktui.core.workers.facades.CandidateClient.<method>`` on ktui's."""

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


class Launch(TypedDict, total=False):
    """One compiled launch (``ktui.worker.capture``)."""

    language: Literal["triton", "cutedsl"]
    kernel: str
    target: str  # ``device`` or ``sm_90a``
    compile_s: float
    num_warps: int
    num_stages: int
    signature: dict[str, str]
    constexprs: dict[str, Any]
    shared_bytes: int
    grid: list[int]  # the largest (x, y, z) of its launches, sm_90a cross-compiles only (the dumps rung's limits)
    n_regs: int
    n_spills: int
    dot: bool  # its Triton IR has a ``tt.dot`` (absent when the IR was not available)
    files: dict[str, str]  # dumps only: stage (``ttir``, ``ptx``, ``cubin``...) -> file name in ``dumps_dir``


class ObservedLaunch(TypedDict):
    """One distinct launch that real calls made (``ktui.worker.capture.recording``): a kernel and everything Triton
    specializes it on, so that the compiler can compile exactly that launch again (``CompileRequest.replay``)."""

    key: str  # sha256 (hex, 16 digits) of the kernel, its specialization and its launch options
    language: Literal["triton", "cutedsl"]
    kernel: str  # the function's name
    qualname: str  # ``module:qualname``: where the compiler finds the kernel (Triton's registry key)
    signature: dict[str, str]  # param -> ``*fp32:16`` (a pointer divisible by 16), ``i32``, ``i64:16``, ``constexpr``
    constexprs: dict[str, Any]  # param -> value, including ints equal to 1 (Triton makes those constexpr)
    options: dict[str, Any]  # launch options given with the call: ``num_warps``, ``num_stages``...
    args: dict[str, Any]  # param -> how to rebuild an argument that specializes the same way (``capture.rebuild``)
    unreplayable: NotRequired[str]  # why this launch cannot be compiled again (an argument ktui cannot rebuild)
    dispatched_by: NotRequired[str]  # the label of a spec whose calls made it (set by ktui for ``replay``)


class IntegrityRequest(TypedDict):
    """No params."""


class IntegrityReply(TypedDict):
    """What candidate code patched in the worker since it started: ``torch.Tensor.__sub__``, ``time.perf_counter``..."""

    tampered: list[str]


class CompileRequest(Sources):
    """Import the version and call it once in dry mode on the largest test spec's inputs made from ``seed``."""

    seed: int


class ReplayRequest(CompileRequest):
    """A ``compile`` that calls nothing: compile exactly ``replay`` (the distinct launches the run observed)."""

    replay: list[ObservedLaunch]


class CompileReply(TypedDict):
    """The launches the dry call compiled (none ran)."""

    import_s: float
    compile_s: float
    languages: list[str]  # ``triton``, ``cutedsl``
    launches: list[Launch]
    autotune_configs: int  # the most configs of any autotuned kernel
    warnings: list[str]
    # the spec label on which the dry call's output, every launch compiled and none run, was already the
    # reference's (``candidate.right_without_launches``): the launches compute nothing the version returns
    unlaunched_right: NotRequired[str]
    # ``on spec=(...) a launch was given ...``: a launch's tensor argument already held the reference's output in
    # the dry call (``candidate.answer_fed``): host code computed it, the launches only move it
    fed_answer: NotRequired[str]


class DumpsRequest(Sources):
    """Compile the version as it launches on ``spec`` and write each launch's IR, PTX and cubin to ``dumps_dir``;
    the inputs are placeholders of the right shapes (no values drawn) unless ``real_inputs``."""

    spec: Spec
    seed: int
    dumps_dir: str
    real_inputs: NotRequired[bool]
    # the launches the run observed (``dispatched_by`` set), compiled and dumped instead when the dry call's host
    # code raises (it read a result no launch wrote: nothing runs in a dry call)
    observed: NotRequired[list[ObservedLaunch]]


class DumpsReply(TypedDict):
    """The launches with their ``files``."""

    launches: list[Launch]
    spec: Spec
    warnings: list[str]


class ExecuteRequest(Sources):
    """Call the kernel on each case; outputs go to ``out_dir/case<i>/``. ``expected`` (the judge's prepared output
    leaves of the first cases, in order; None for a case without) lets the candidate skip writing the bytes of an
    output whose structure, dtype or shape is wrong: the case fails on that metadata at once. Leaves marked ``hint``
    (borrowed from another case of the same spec) only bound the size of what is written."""

    cases: list[Case]
    out_dir: str
    expected: NotRequired[list[list[OutputLeaf] | None]]
    # the folders are ``case<first_index + i>``: a later request of the same run (cases in place of refused ones,
    # ``core.ladder.cases.refill_refused``) continues the numbering the judge's ``compare`` reads
    first_index: NotRequired[int]


class WaitedLaunch(TypedDict):
    """A launch a program of which waited for a program that started after it began waiting (under the
    interpreter): its kernel's name and the constexpr arguments it was given by name."""

    kernel: str
    constexprs: dict[str, Any]


class ExecuteReply(TypedDict):
    """Each case with its call's figures and outputs, in request order."""

    cases: list[ExecutedCase]
    tampered: list[str]  # as ``IntegrityReply``
    threads_left: int  # threads the kernel started and left running
    launch_table: NotRequired[dict[str, ObservedLaunch]]  # every distinct launch the calls made, by key
    # a compiled CuTeDSL function raised ``NeedsGPU`` (no GPU here) and the kernel caught it: the message
    needs_gpu: NotRequired[str]
    # under the Triton interpreter: programs of one launch that wrote one element unordered (``worker.interp_races``)
    races: NotRequired[list[str]]
    # under the Triton interpreter: what its verdict does not show (``candidate.interpreter_notes``: libdevice's
    # approximate functions, bf16 reductions rounded once), said once each
    interpreter_notes: NotRequired[list[str]]
    # under the Triton interpreter: kernels a program of which waited until a program that started after it began
    # waiting wrote (``worker.interp_waits``): a grid-wide barrier, which needs every CTA resident at once on a GPU
    waited_on_later: NotRequired[list[WaitedLaunch]]


class BenchmarkRequest(Sources):
    """Time the kernel on the benchmark specs ``spec_indices``, inputs from ``seed`` (then fresh per call). With
    ``untimed_calls`` (the CPU, where the interpreter's times mean nothing) nothing is timed: ``spec_indices`` are
    test specs, each called exactly that many times in a row on fresh inputs as timed calls are (the verified
    stretch), and the reply's ``untimed`` has them."""

    spec_indices: list[int]
    seed: int
    untimed_calls: NotRequired[int]
    allowed_aliases: NotRequired[list[str]]  # as ``PreparedCase.aliases``: outputs the reference returns as views


class KeptCall(TypedDict):
    """A timed call whose output the candidate kept for the judge (chosen at random after the calls returned)."""

    call: int  # its place among the timed calls, from 1
    seed: int  # the seed of its inputs


class BenchSpecCalls(TypedDict):
    """One spec's calls: which of them were kept for ``bench_outputs`` and what their outputs showed."""

    spec_index: int
    kept: list[KeptCall]  # in call order
    # one line per kept output that changed after its call returned, per buffer two kept calls both returned, per
    # output in an input's storage (``ktui.worker.timed.integrity_of``); empty when none
    integrity: list[str]


class BenchSpecTiming(TimingStats, BenchSpecCalls):
    """One timed benchmark spec: its times, and the calls kept for ``bench_outputs``."""

    probe_us: NotRequired[float]  # ``timing.clock_probe`` right after the timed calls: the clock they ran at


class BenchSpecUntimed(BenchSpecCalls):
    """One test spec's verified stretch (``untimed_calls``): nothing timed."""

    calls: int


class BenchmarkReply(TypedDict):
    """One entry per requested spec, in order: in ``specs`` when timed, in ``untimed`` (and ``specs`` empty) for
    ``untimed_calls``."""

    specs: list[BenchSpecTiming]
    untimed: NotRequired[list[BenchSpecUntimed]]


class BenchOutputsRequest(TypedDict):
    """Write the kept outputs of one spec's last ``benchmark`` (``source: "bench"``; ``"stretch"`` for its
    ``untimed_calls``) or last ``host_loop`` (``"host"``) under ``out_dir``, one folder per kept call."""

    spec_index: int
    source: TimedSource
    out_dir: str


class BenchOutputsReply(TypedDict):
    """The kept outputs of one spec and source, in call order; ``calls``: how many calls there were."""

    spec_index: int
    source: TimedSource
    calls: int
    outputs: list[TimedOutput]
    screened: NotRequired[list[TimedOutput]]  # a stretch's other calls, in call order (the judge's screen)


class HostLoopRequest(Sources):
    """``calls`` iterations on benchmark spec ``spec_index``: fresh inputs (from seed ``seed + 1 + i``), a call
    (unless ``run_kernel`` is False: the baseline), a device synchronize."""

    spec_index: int
    seed: int
    calls: int
    run_kernel: NotRequired[bool]  # default True; False times the same loop without the calls
    allowed_aliases: NotRequired[list[str]]  # as ``BenchmarkRequest``'s


class HostLoopReply(TypedDict):
    """The worker's own view of the loop (ktui times the request from outside)."""

    calls: int
    inner_s: float  # from the first iteration to the end of the last synchronize
    enqueue_s: float  # host time spent inside the calls (until each returned), summed
    events_s: NotRequired[float]  # the calls' CUDA-event time on the current stream, summed (at the loop's clocks)
    probe_s: NotRequired[float]  # the clock probes' event time (``timing.clock_probe``), summed over the iterations
    kept: NotRequired[list[KeptCall]]  # the call kept for ``bench_outputs`` (one, chosen at random)
    integrity: NotRequired[list[str]]  # as ``BenchSpecTiming.integrity``


class PingRequest(TypedDict):
    """No params."""


class PingReply(TypedDict):
    """Empty: the worker is alive and serving."""


class ProfileParams(Sources):
    """The params file of ``python -m ktui.worker.profile_target`` (not a method: the program ncu profiles)."""

    spec: Spec
    seed: int
    warmup: int  # calls before the one profiled
