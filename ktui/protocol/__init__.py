"""The wire protocol between ktui and its worker processes: one JSON object per line, typed per method.

ktui -> worker:  ``{"id": 7, "method": "execute", "params": {...}}``
worker -> ktui:  ``{"hello": {...}}`` once when ready (``Hello``), or ``{"fatal": "..."}`` when it cannot serve;
                 ``{"id": 7, "progress": {...}}`` any number of times (``Progress``);
                 ``{"id": 7, "result": {...}}`` or ``{"id": 7, "error": {...}}`` (``ErrorReply``) once; either may
                 carry ``"restart": true`` and a ``restart_reason`` (the CUDA context cannot be trusted any more).

Every method has one request and one reply ``TypedDict`` (in ``ktui.protocol.candidate`` and ``ktui.protocol.judge``,
the pieces both share in ``ktui.protocol.shared``; all importable from here), and ``METHODS`` names them with the
roles that serve them: ``candidate`` (runs kernel versions), ``judge`` (runs only references, decides verdicts) and
``compiler`` (on a machine without a GPU: compiles versions for sm_90a). TypedDicts are plain dicts at run time, so
the wire stays JSON; the types are for readers and type checkers. Times are in seconds (``_s``) or microseconds
(``_us``) as their names say; ``spec_index`` indexes the reference's ``tests`` (correctness) or ``benchmarks``
(timing) as the method says.

The worker moves its own stdout to stderr before any candidate code runs, so a ``print`` in a kernel never corrupts
the channel. Neither side imports torch here.
"""

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple, NotRequired, TypedDict

from ktui.protocol.candidate import (
    BenchmarkReply,
    BenchmarkRequest,
    BenchOutputsReply,
    BenchOutputsRequest,
    BenchSpecCalls,
    BenchSpecTiming,
    BenchSpecUntimed,
    CompileReply,
    CompileRequest,
    DumpsReply,
    DumpsRequest,
    ExecuteReply,
    ExecuteRequest,
    HostLoopReply,
    HostLoopRequest,
    IntegrityReply,
    IntegrityRequest,
    KeptCall,
    Launch,
    ObservedLaunch,
    PingReply,
    PingRequest,
    ProfileParams,
    ReplayRequest,
    WaitedLaunch,
)
from ktui.protocol.judge import (
    CaseVerdict,
    CheckTimedRequest,
    CompareReply,
    CompareRequest,
    DescribeRequest,
    PreparedCase,
    PrepareReply,
    PrepareRequest,
    ProblemInfo,
    RefSpecTiming,
    RooflineReply,
    RooflineRequest,
    TimedVerdict,
    TimeReferenceReply,
    TimeReferenceRequest,
)
from ktui.protocol.shared import (
    CallRecord,
    Case,
    Container,
    ExecutedCase,
    KernelSource,
    OutputLeaf,
    ReferenceSource,
    Sources,
    Spec,
    TimedOutput,
    TimedSource,
    TimingStats,
)

__all__ = [
    "Role",
    "Progress",
    "OnProgress",
    "ErrorReply",
    "REFERENCE_ERROR",
    "DeviceInfo",
    "Hello",
    "ShutdownRequest",
    "Method",
    "METHODS",
    "methods_of",
    "encode",
    "decode",
    "json_safe",
    "json_float",
    "spec_ints",
    "spec_label",
    "spec_size",
    "Spec",
    "KernelSource",
    "ReferenceSource",
    "Sources",
    "Case",
    "OutputLeaf",
    "Container",
    "ExecutedCase",
    "TimingStats",
    "CallRecord",
    "TimedOutput",
    "TimedSource",
    "Launch",
    "ObservedLaunch",
    "IntegrityRequest",
    "IntegrityReply",
    "CompileRequest",
    "CompileReply",
    "ReplayRequest",
    "DumpsRequest",
    "DumpsReply",
    "ExecuteRequest",
    "ExecuteReply",
    "BenchmarkRequest",
    "KeptCall",
    "BenchSpecCalls",
    "BenchSpecTiming",
    "BenchSpecUntimed",
    "BenchmarkReply",
    "BenchOutputsRequest",
    "BenchOutputsReply",
    "HostLoopRequest",
    "HostLoopReply",
    "PingRequest",
    "PingReply",
    "ProfileParams",
    "ProblemInfo",
    "DescribeRequest",
    "PrepareRequest",
    "PreparedCase",
    "PrepareReply",
    "CompareRequest",
    "CaseVerdict",
    "CompareReply",
    "TimeReferenceRequest",
    "RefSpecTiming",
    "TimeReferenceReply",
    "CheckTimedRequest",
    "TimedVerdict",
    "RooflineRequest",
    "RooflineReply",
    "mixed_variants",
    "COTANGENT_LAYOUTS",
    "WaitedLaunch",
]

Role = Literal["candidate", "judge", "compiler"]


# -- the envelope -----------------------------------------------------------------------------------------------
class Progress(TypedDict):
    """A ``progress`` line: ``done`` of ``total`` items (cases or specs) of the running request; ``case`` names the
    item starting now (``spec=(129,) seed=7``, ``the dry call on spec=(4099,)``), so that a worker that dies in it
    is reported with the case it was running. ``entry``: after a case of ``execute``, the case as executed so far
    (its ``ExecutedCase``, before the end-of-request checks), so the judge can compare it while the other cases run
    (the first sweep's give the first verdict)."""

    done: int
    total: int
    case: NotRequired[str]
    entry: NotRequired[ExecutedCase]


OnProgress = Callable[[Progress], None]  # a handler's ``progress`` argument, a caller's ``on_progress``


class ErrorReply(TypedDict):
    """An ``error`` line's payload: the exception's class name, its message and a traceback trimmed to the user's
    frames ('' for ktui's own checks, whose message says it all)."""

    type: str
    message: str
    traceback: NotRequired[str]
    # a compiled CuTeDSL function was called on a worker without a GPU (``capture.NeedsGPU``, recorded by ktui,
    # not read from the exception): the message; the run rung reports it as skipped, not failed
    needs_gpu: NotRequired[str]


# How the message of an error that blames the reference, not the version, begins (``reference error (references/
# x.py:8 in ref_kernel): ...``): the worker writes it (``server.format_error``), the core reads it
# (``core.report.is_reference_error``).
REFERENCE_ERROR = "reference error"


class DeviceInfo(TypedDict, total=False):
    """The worker's device, as its hello reports it."""

    type: str  # ``cpu`` or ``cuda``
    name: str  # the GPU's name, or ``cpu``
    torch: str  # torch.__version__
    triton: str  # triton.__version__
    capability: list[int]  # [major, minor]
    sm_count: int
    memory_gib: float
    interpreter: bool  # True: Triton runs in its interpreter (no GPU)
    cuda: str | None  # torch.version.cuda: the CUDA torch was built with (None for a CPU build)
    cutedsl: str | None  # the installed nvidia-cutlass-dsl's version (None when not installed)
    driver: str  # the NVIDIA driver, as NVML reports it (``580.159.04``); absent when NVML cannot be read
    uuid: str  # the GPU's UUID (NVML, ``GPU-8f3c1a2b-...``): which physical GPU; absent when NVML cannot be read
    sm_clock_mhz: int  # the SM clock now, MHz (NVML); absent when NVML cannot be read
    sm_clock_max_mhz: int  # the highest SM clock, MHz (NVML)
    mem_clock_max_mhz: int  # the highest memory clock, MHz (NVML)


class Hello(TypedDict):
    """The worker's first line: it is ready."""

    role: Role
    device: DeviceInfo
    startup_s: float  # from process start to ready (torch and triton imported)
    pid: int
    python: str


# -- the methods ------------------------------------------------------------------------------------------------
class ShutdownRequest(TypedDict):
    """No params; the worker exits after its current request and sends no reply."""


class Method(NamedTuple):
    """One worker method: the roles that serve it, its request type and its reply type (None: no reply)."""

    roles: tuple[Role, ...]
    request: type
    reply: type | None


CANDIDATE: tuple[Role, ...] = ("candidate",)
BUILDERS: tuple[Role, ...] = ("candidate", "compiler")  # on a GPU the candidate is the compiler
JUDGE: tuple[Role, ...] = ("judge",)

METHODS: dict[str, Method] = {
    "integrity": Method(BUILDERS, IntegrityRequest, IntegrityReply),
    "compile": Method(BUILDERS, CompileRequest, CompileReply),
    "dumps": Method(BUILDERS, DumpsRequest, DumpsReply),
    "execute": Method(CANDIDATE, ExecuteRequest, ExecuteReply),
    "benchmark": Method(CANDIDATE, BenchmarkRequest, BenchmarkReply),
    "bench_outputs": Method(CANDIDATE, BenchOutputsRequest, BenchOutputsReply),
    "host_loop": Method(CANDIDATE, HostLoopRequest, HostLoopReply),
    "ping": Method(BUILDERS, PingRequest, PingReply),
    "describe": Method(JUDGE, DescribeRequest, ProblemInfo),
    "prepare": Method(JUDGE, PrepareRequest, PrepareReply),
    "compare": Method(JUDGE, CompareRequest, CompareReply),
    "time_reference": Method(JUDGE, TimeReferenceRequest, TimeReferenceReply),
    "check_timed": Method(JUDGE, CheckTimedRequest, TimedVerdict),
    "roofline": Method(JUDGE, RooflineRequest, RooflineReply),
    "shutdown": Method(BUILDERS + JUDGE, ShutdownRequest, None),
}


def methods_of(role: str) -> list[str]:
    """The methods a role serves (``shutdown`` included), in ``METHODS`` order."""
    return [name for name, m in METHODS.items() if role in m.roles]


# -- encoding ---------------------------------------------------------------------------------------------------
def encode(msg: dict[str, Any]) -> bytes:
    """One line of strict JSON (NaN/inf become strings, so any JSON reader can read the stream)."""
    return (json.dumps(json_safe(msg), separators=(",", ":")) + "\n").encode()


def decode(line: bytes) -> dict[str, Any]:
    """Raises ValueError on a line that is not a JSON object."""
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise ValueError(f"protocol line is not an object: {line[:80]!r}")
    return obj


def json_safe(x: Any) -> Any:
    """Replace NaN/inf floats by the strings "nan"/"inf"/"-inf" (in nested dicts and lists) for strict JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def json_float(x: Any) -> float:
    """The inverse of the NaN/inf encoding above: a JSON figure back to a float."""
    if isinstance(x, str):
        return float(x)
    return float(x) if x is not None else math.nan


# The layouts of a requires_grad case's cotangents, by its seed mod their count (``ktui.worker.grad_modes.cotangent``
# lays them out; ``ktui.core.ladder.cases`` gives the requires_grad cases seeds that cover them all).
COTANGENT_LAYOUTS = ("contiguous", "expanded", "transposed", "padded", "per_row", "per_column")


def mixed_variants(tensors: int) -> int:
    """How many ``mixed``-layout cases (consecutive seeds, ``ktui.worker.cases.mixed_layouts``) lay out every pair
    of ``tensors`` input tensors differently, each way round: 2 * ceil(log2(tensors)), at least 2."""
    return 2 * max(1, math.ceil(math.log2(max(tensors, 2))))


def spec_ints(spec: Mapping[str, Any]) -> list[int]:
    """A spec's integer values in order, those inside a tuple or list field included (``{"shape": (3, 129)}``: 3,
    129); bools are not integers here. The sizes ktui fuzzes (``ktui.worker.fuzz``) and ranks specs by."""
    out: list[int] = []
    for v in spec.values():
        for x in v if isinstance(v, (tuple, list)) else (v,):
            if isinstance(x, int) and not isinstance(x, bool):
                out.append(x)
    return out


def spec_label(spec: Any) -> str:
    """``(1, 129)`` or ``(4, 129, bf16)``: a spec's values in order, dtype names shortened, as every line that names
    a spec shows it (the worker's case labels, the dumps rung, ``ktui diff``); a value that is not a dict as a
    1-tuple."""
    short = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64"}
    vals = [short.get(v, v) if isinstance(v, str) else v for v in (spec.values() if isinstance(spec, dict) else [spec])]
    return "(" + ", ".join(str(v) for v in vals) + ("," if len(vals) == 1 else "") + ")"


def spec_size(spec: Mapping[str, Any]) -> int:
    """The product of a spec's integer values (``spec_ints``: a ``shape`` tuple's too): a proxy for its size that
    needs no input data (the largest test spec is the one compiled by the compile rung; layouts run on the two
    largest)."""
    size = 1
    for v in spec_ints(spec):
        size *= max(v, 1)
    return size
