"""Typed calls across the pipe: one method per worker method, so a reader can follow a call from a rung into the
worker (``JudgeClient.describe`` -> ``"describe"`` -> ``Judge.do_describe``).

Each method is a thin wrapper over ``WorkerProcess.call`` with the request and reply types of ``ktui.protocol``; the
errors are ``call``'s (``RemoteError``, ``WorkerCrashed``, ``WorkerTimeout``, ``WorkerStartError``). A facade holds
the worker it was given: the pool replaces its candidate-side workers after every ladder, so wrap the worker in
service when you call (``CandidateClient(pool.candidate).execute(...)``); a facade costs nothing to make.

The ``compiler`` worker (on a machine without a GPU) serves ``compile``, ``dumps``, ``integrity`` and ``ping``
through a ``CandidateClient`` too; on a GPU the candidate itself is the compiler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, cast

from ktui.protocol import (
    BenchmarkReply,
    BenchmarkRequest,
    BenchOutputsReply,
    BenchOutputsRequest,
    CheckTimedRequest,
    CompareReply,
    CompareRequest,
    CompileReply,
    CompileRequest,
    DescribeRequest,
    DumpsReply,
    DumpsRequest,
    ExecuteReply,
    ExecuteRequest,
    HostLoopReply,
    HostLoopRequest,
    IntegrityReply,
    IntegrityRequest,
    OnProgress,
    PingReply,
    PingRequest,
    PrepareReply,
    PrepareRequest,
    ProblemInfo,
    RooflineReply,
    RooflineRequest,
    TimedVerdict,
    TimeReferenceReply,
    TimeReferenceRequest,
)


class Caller(Protocol):
    """What a facade needs of a worker: its ``role`` and ``WorkerProcess.call`` (a test can pass a fake)."""

    role: str

    def call(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        timeout_s: float = 60.0,
        on_progress: OnProgress | None = None,
    ) -> dict[str, Any]:
        """Send one request and wait for its reply."""
        ...


class _Client:
    """The shared part: the worker, checked to have a role that serves these methods, and the one untyped call."""

    ROLES: tuple[str, ...] = ()

    def __init__(self, worker: Caller):
        if worker.role not in self.ROLES:
            raise ValueError(f"{type(self).__name__} needs a {' or '.join(self.ROLES)} worker, not {worker.role!r}")
        self.worker = worker

    def _call(self, method: str, req: Mapping[str, Any], timeout_s: float, on_progress: OnProgress | None) -> Any:
        return self.worker.call(method, req, timeout_s=timeout_s, on_progress=on_progress)


class JudgeClient(_Client):
    """Typed calls to the ``judge`` worker: it runs only reference code and decides verdicts."""

    ROLES = ("judge",)

    def describe(self, req: DescribeRequest, *, timeout_s: float, on_progress: OnProgress | None = None) -> ProblemInfo:
        """What the reference declares: test and benchmark specs, labels, outputs, distributions."""
        return cast(ProblemInfo, self._call("describe", req, timeout_s, on_progress))

    def prepare(self, req: PrepareRequest, *, timeout_s: float, on_progress: OnProgress | None = None) -> PrepareReply:
        """Build each case's inputs and references (kept in the judge for ``compare``); progress per case."""
        return cast(PrepareReply, self._call("prepare", req, timeout_s, on_progress))

    def compare(self, req: CompareRequest, *, timeout_s: float, on_progress: OnProgress | None = None) -> CompareReply:
        """The verdict on each executed case (its outputs under ``out_dir``); progress per case."""
        return cast(CompareReply, self._call("compare", req, timeout_s, on_progress))

    def time_reference(
        self, req: TimeReferenceRequest, *, timeout_s: float, on_progress: OnProgress | None = None
    ) -> TimeReferenceReply:
        """Time ``ref_kernel`` on benchmark specs (cached per reference source and seed); progress per spec."""
        return cast(TimeReferenceReply, self._call("time_reference", req, timeout_s, on_progress))

    def check_timed(
        self, req: CheckTimedRequest, *, timeout_s: float, on_progress: OnProgress | None = None
    ) -> TimedVerdict:
        """Verify every element of the kept outputs of one spec's timed calls against the reference."""
        return cast(TimedVerdict, self._call("check_timed", req, timeout_s, on_progress))

    def roofline(
        self, req: RooflineRequest, *, timeout_s: float, on_progress: OnProgress | None = None
    ) -> RooflineReply:
        """The measured bandwidth (GB/s) and matmul peaks (TFLOP/s) of the dtypes asked (cached in the worker)."""
        return cast(RooflineReply, self._call("roofline", req, timeout_s, on_progress))


class CandidateClient(_Client):
    """Typed calls to the ``candidate`` worker (it runs kernel versions) or the ``compiler`` worker."""

    ROLES = ("candidate", "compiler")

    def compile(self, req: CompileRequest, *, timeout_s: float, on_progress: OnProgress | None = None) -> CompileReply:
        """Import the version and compile every launch with nothing run (the compile rung)."""
        return cast(CompileReply, self._call("compile", req, timeout_s, on_progress))

    def dumps(self, req: DumpsRequest, *, timeout_s: float, on_progress: OnProgress | None = None) -> DumpsReply:
        """Compile the launches of one spec and write their IR, PTX and cubin (the dumps rung)."""
        return cast(DumpsReply, self._call("dumps", req, timeout_s, on_progress))

    def execute(self, req: ExecuteRequest, *, timeout_s: float, on_progress: OnProgress | None = None) -> ExecuteReply:
        """Call the kernel on each case and write its outputs (the run rung); progress per case."""
        return cast(ExecuteReply, self._call("execute", req, timeout_s, on_progress))

    def benchmark(
        self, req: BenchmarkRequest, *, timeout_s: float, on_progress: OnProgress | None = None
    ) -> BenchmarkReply:
        """Time the kernel on benchmark specs (CUDA only); progress per spec."""
        return cast(BenchmarkReply, self._call("benchmark", req, timeout_s, on_progress))

    def bench_outputs(
        self, req: BenchOutputsRequest, *, timeout_s: float, on_progress: OnProgress | None = None
    ) -> BenchOutputsReply:
        """Write the outputs of the timed calls that ``benchmark`` or ``host_loop`` kept, for the judge."""
        return cast(BenchOutputsReply, self._call("bench_outputs", req, timeout_s, on_progress))

    def host_loop(
        self, req: HostLoopRequest, *, timeout_s: float, on_progress: OnProgress | None = None
    ) -> HostLoopReply:
        """``calls`` back-to-back calls then a synchronize, for ktui to time from outside."""
        return cast(HostLoopReply, self._call("host_loop", req, timeout_s, on_progress))

    def integrity(
        self, req: IntegrityRequest, *, timeout_s: float, on_progress: OnProgress | None = None
    ) -> IntegrityReply:
        """What candidate code patched in the worker since it started."""
        return cast(IntegrityReply, self._call("integrity", req, timeout_s, on_progress))

    def ping(self, req: PingRequest, *, timeout_s: float, on_progress: OnProgress | None = None) -> PingReply:
        """Nothing: the worker is alive and serving."""
        return cast(PingReply, self._call("ping", req, timeout_s, on_progress))
