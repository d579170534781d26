"""Requests and replies of the ``candidate`` role's methods (the ``compiler`` serves ``compile``, ``dumps``,
``integrity`` and ``ping`` of them): ``ktui.worker.candidate.Candidate.do_<method>`` on the worker's side,
``ktui.core.workers.facades.CandidateClient.<method>`` on ktui's."""

from typing import Any, Literal, NotRequired, TypedDict

from ktui.protocol.shared import (
    Case,
    ExecutedCase,
    OutputLeaf,
    SampleFile,
    SampleRequestItem,
    Sources,
    Spec,
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
    n_regs: int
    n_spills: int
    dot: bool  # its Triton IR has a ``tt.dot`` (absent when the IR was not available)
    files: dict[str, str]  # dumps only: stage (``ttir``, ``ptx``, ``cubin``...) -> file name in ``dumps_dir``


class IntegrityRequest(TypedDict):
    """No params."""


class IntegrityReply(TypedDict):
    """What candidate code patched in the worker since it started: ``torch.Tensor.__sub__``, ``time.perf_counter``..."""

    tampered: list[str]


class CompileRequest(Sources):
    """Import the version and call it once in dry mode on the largest test spec's inputs made from ``seed``."""

    seed: int


class CompileReply(TypedDict):
    """The launches the dry call compiled (none ran)."""

    import_s: float
    compile_s: float
    languages: list[str]  # ``triton``, ``cutedsl``
    launches: list[Launch]
    autotune_configs: int  # the most configs of any autotuned kernel
    warnings: list[str]


class DumpsRequest(Sources):
    """Compile the version as it launches on ``spec`` and write each launch's IR, PTX and cubin to ``dumps_dir``."""

    spec: Spec
    seed: int
    dumps_dir: str


class DumpsReply(TypedDict):
    """The launches with their ``files``."""

    launches: list[Launch]
    spec: Spec
    warnings: list[str]


class ExecuteRequest(Sources):
    """Call the kernel on each case; outputs go to ``out_dir/case<i>/``. ``expected`` (the judge's prepared output
    leaves of the first cases, in order) lets the candidate skip writing the bytes of an output whose structure,
    dtype or shape is wrong: the case fails on that metadata at once."""

    cases: list[Case]
    out_dir: str
    expected: NotRequired[list[list[OutputLeaf]]]


class ExecuteReply(TypedDict):
    """Each case with its call's figures and outputs, in request order."""

    cases: list[ExecutedCase]
    tampered: list[str]  # as ``IntegrityReply``
    threads_left: int  # threads the kernel started and left running


class BenchmarkRequest(Sources):
    """Time the kernel on the benchmark specs ``spec_indices``, inputs from ``seed`` (then fresh per call)."""

    spec_indices: list[int]
    seed: int


class OutputShape(TypedDict):
    """A tensor leaf of a timed output: what ``bench_sample`` may sample."""

    path: str
    shape: list[int]
    numel: int


class BenchSpecTiming(TimingStats):
    """One timed benchmark spec."""

    spec_index: int
    final_seed: int  # the seed of the last timed call's inputs
    leaves: list[OutputShape]


class BenchmarkReply(TypedDict):
    """One entry per requested spec, in order."""

    specs: list[BenchSpecTiming]


class BenchSampleRequest(TypedDict):
    """Sample the outputs kept by the last ``benchmark`` into raw files under ``out_dir``."""

    specs: list[SampleRequestItem]
    out_dir: str


class SampledSpec(TypedDict):
    """One spec's samples and the seed of the inputs they were computed from."""

    spec_index: int
    seed: int
    files: dict[str, SampleFile]


class BenchSampleReply(TypedDict):
    """One entry per requested spec."""

    specs: list[SampledSpec]


class HostLoopRequest(Sources):
    """``calls`` iterations on benchmark spec ``spec_index``: fresh inputs (from seed ``seed + 1 + i``), a call
    (unless ``run_kernel`` is False: the baseline), a device synchronize."""

    spec_index: int
    seed: int
    calls: int
    run_kernel: NotRequired[bool]  # default True; False times the same loop without the calls


class HostLoopReply(TypedDict):
    """The worker's own view of the loop (ktui times the request from outside)."""

    calls: int
    inner_s: float  # from the first iteration to the end of the last synchronize
    enqueue_s: float  # host time spent inside the calls (until each returned), summed
    final_seed: NotRequired[int]  # the seed of the last call's inputs (its output is kept for ``bench_sample``)
    leaves: NotRequired[list[OutputShape]]  # the last call's output leaves


class PingRequest(TypedDict):
    """No params."""


class PingReply(TypedDict):
    """Empty: the worker is alive and serving."""


class ProfileParams(Sources):
    """The params file of ``python -m ktui.worker.profile_target`` (not a method: the program ncu profiles)."""

    spec: Spec
    seed: int
    warmup: int  # calls before the one profiled
