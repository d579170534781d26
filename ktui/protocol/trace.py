"""The trace rung's wire: the layout of a ktui trace buffer, and the files the traced program writes.

A version marks regions of its kernel with ``ktui.trace`` (``with kt.region("mainloop"):``). In the traced program
(``python -m ktui.worker.trace_target PARAMS``) each compiled kernel that has markers gets its own buffer in device
memory, whose address is baked into the markers' PTX; every marker reads ``%globaltimer`` and ``%clock64`` and lane
0 of each warp stores one record. ktui's process reads the buffers back from files (``ktui.core.inspect.trace``).

Buffer layout (little-endian, ``HEADER_BYTES`` then the records)::

    offset  size  field
     0      4     magic (MAGIC: b"KTRC" read as little-endian u32)
     4      4     version (VERSION)
     8      12    %nctaid.x, .y, .z       (the grid, written by CTA 0, warp 0)
    20      12    %ntid.x, .y, .z         (the block)
    32      4     shift s: CTA b is recorded when b % 2**s == 0 (grid sampled to fit the buffer)
    36      4     slots per warp (SLOTS)
    40      24    zero
    64      ...   records, RECORD_BYTES each, at index ((b >> s) * warps + warp) * SLOTS + slot

    record: globaltimer (u64, ns) | low 32 bits of %clock64 (u32, SM cycles) | %smid (u32)

``b`` is the linear CTA index (``ctaid.x + nctaid.x * (ctaid.y + nctaid.y * ctaid.z)``), ``warp`` the warp in the
CTA (linear thread index // 32), ``slot`` = 2 * region + 0 at the region's begin, + 1 at its end. A record whose
globaltimer is 0 was never written (the buffer is zeroed before the recorded call). The records of one warp are
``SLOTS`` consecutive records; a region's markers run once per warp per launch (a marker inside a loop keeps the
last iteration's record).
"""

from typing import NotRequired, TypedDict

from ktui.protocol.shared import Sources

MAGIC = 0x4352544B  # b"KTRC" as a little-endian u32
VERSION = 1
HEADER_BYTES = 64
RECORD_BYTES = 16
MAX_REGIONS = 8  # distinct region names per kernel
SLOTS = 2 * MAX_REGIONS  # a begin and an end record per region and warp
WARP_BYTES = SLOTS * RECORD_BYTES
CLOCK_BITS = 32  # the records keep the low 32 bits of %clock64


def capacity_warps_log2(buffer_bytes: int) -> int:
    """log2 of the warps a buffer of ``buffer_bytes`` holds: the largest k with ``2**k`` warps of ``SLOTS`` records
    after the header (the markers sample CTAs by powers of two, so capacity is a power of two).

    Raises:
        ValueError: the buffer cannot hold the header and one warp.
    """
    warps = (buffer_bytes - HEADER_BYTES) // WARP_BYTES
    if warps < 1:
        raise ValueError(f"a trace buffer needs at least {HEADER_BYTES + WARP_BYTES} bytes, not {buffer_bytes}")
    return warps.bit_length() - 1


class TraceParams(Sources):
    """The params file of ``python -m ktui.worker.trace_target`` (not a method: the program the trace rung runs)."""

    spec: dict[str, object]
    seed: int
    tracer: str  # "ktui" or "proton"
    buffer_bytes: int  # per traced kernel
    out_dir: str
    reps: int  # timed calls of each of the untraced and traced builds (after warm-up)


class TracedKernel(TypedDict):
    """One compiled kernel of the traced build and where its records went."""

    kernel: str
    language: str  # "triton" or "cutedsl"
    regions: list[str]  # region names in id order (region i: slots 2i and 2i+1)
    file: str  # the buffer, relative to the out dir: header + records up to the last one written
    buffer_bytes: int
    launches: int  # launches of this compiled kernel in the recorded call (the buffer keeps the last one's)
    calibration: NotRequired[bool]  # ktui's kernel of empty regions: what one marker costs, not the version's


class TraceTiming(TypedDict):
    """CUDA-event times of one build over ``reps`` calls, L2 flushed between calls (``ktui.worker.timing.bench``)."""

    median_us: float
    p25_us: float
    p75_us: float
    reps: int


class TraceOutput(TypedDict):
    """``trace.json`` in the out dir: what the traced program did."""

    tracer: str
    untraced: TraceTiming
    traced: TraceTiming
    kernels: list[TracedKernel]  # ktui tracer
    proton_trace: NotRequired[str]  # proton tracer: its Chrome trace, relative to the out dir
    sm_count: int
    sm_clock_mhz: NotRequired[int]  # NVML's current SM clock during the run, when it answered
    device_name: str
    marker_cycles: NotRequired[float]  # the median cycles of an empty region (calibration kernel): a marker's cost
    warnings: list[str]
