"""The GPU a CPU ladder stands in for, as torch's device queries answer it.

On a machine without a GPU, ktui runs kernels under the Triton interpreter and compiles them for sm_90a
(``capture.CROSS_TARGET``): the H200 of ../shared/device/README.md. A kernel that sizes its launch from the device
(a persistent kernel: one program per SM, ``torch.cuda.get_device_properties("cuda").multi_processor_count`` as
Triton's persistent-matmul tutorial does) would raise "Torch not compiled with CUDA enabled" there and could not be
checked at all (red team round 11, F3). ``install`` makes ``torch.cuda.get_device_properties``,
``get_device_capability`` and ``get_device_name`` answer with that GPU's facts instead, for any device argument (the
kernel's tensors are CPU tensors standing in for CUDA ones), and records that they were asked (``queried``), so the
rung that ran the kernel says which GPU's facts it was given.

Facts (``H200``): 132 SMs, 143,771 MiB, compute capability 9.0 (read on the lent H200, ../shared/device/README.md);
the per-block and per-SM shared memory (232,448 B opt-in, 233,472 B per SM), 65,536 registers per SM, 2,048 threads
per SM and a warp of 32 are compute capability 9.0's (CUDA C++ Programming Guide, "Technical Specifications per
Compute Capability"); the 50 MiB L2 is the H100/H200 SXM datasheet's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class DeviceProperties:
    """The fields of ``torch.cuda.get_device_properties`` that kernels read to size launches (same names)."""

    name: str
    major: int
    minor: int
    multi_processor_count: int
    total_memory: int  # bytes
    L2_cache_size: int  # bytes
    warp_size: int
    max_threads_per_multi_processor: int
    regs_per_multiprocessor: int
    shared_memory_per_block: int  # bytes, without opting in
    shared_memory_per_block_optin: int  # bytes
    shared_memory_per_multiprocessor: int  # bytes
    is_integrated: int = 0
    is_multi_gpu_board: int = 0
    gcnArchName: str = "NVIDIA"


H200 = DeviceProperties(
    name="NVIDIA H200",
    major=9,
    minor=0,
    multi_processor_count=132,
    total_memory=143_771 * 2**20,
    L2_cache_size=50 * 2**20,
    warp_size=32,
    max_threads_per_multi_processor=2048,
    regs_per_multiprocessor=65_536,
    shared_memory_per_block=49_152,
    shared_memory_per_block_optin=232_448,
    shared_memory_per_multiprocessor=233_472,
)
queried: list[str] = []  # the queries answered with the stand-in's facts (each name once)
_installed: list[bool] = []


def _note(what: str) -> None:
    if what not in queried:
        queried.append(what)


def get_device_properties(device: Any = None) -> DeviceProperties:
    """The target GPU's properties (``H200``), whatever ``device`` names."""
    _note("get_device_properties")
    return H200


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The target GPU's compute capability, (9, 0)."""
    _note("get_device_capability")
    return H200.major, H200.minor


def get_device_name(device: Any = None) -> str:
    """The target GPU's name."""
    _note("get_device_name")
    return H200.name


def current_device() -> int:
    """The target GPU's index, 0 (``torch.cuda.get_device_properties(torch.cuda.current_device())``, a common way to
    ask for the SM count: red team round 13 F5)."""
    _note("current_device")
    return 0


class StandInStream:
    """``torch.cuda.current_stream()`` / ``default_stream()`` / ``Stream()`` where there is no GPU: the CPU runs
    each call to its end, so waiting and synchronizing do nothing (red team round 28, #12)."""

    cuda_stream = 0
    device = torch.device("cpu")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def synchronize(self) -> None:
        """Nothing to wait for: the CPU's work is done when the call returns."""

    def wait_stream(self, stream: Any) -> None:
        """Nothing to wait for."""

    def wait_event(self, event: Any) -> None:
        """Nothing to wait for."""

    def record_event(self, event: Any = None) -> Any:
        return event

    def query(self) -> bool:
        return True

    def __enter__(self) -> StandInStream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class StandInGuard:
    """``torch.cuda.device(d)`` and ``torch.cuda.stream(s)`` where there is no GPU: a context that changes nothing
    (the multi-GPU launch guard of much Triton code, ``with torch.cuda.device(x.device):``, raised "Expected a
    cuda device, but got: cpu" on the CPU's tensors; red team round 28, #12)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _note("device/stream guard")

    def __enter__(self) -> StandInGuard:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def synchronize(device: Any = None) -> None:
    """``torch.cuda.synchronize()`` where there is no GPU: nothing queued to wait for."""
    _note("synchronize")


def current_stream(device: Any = None) -> StandInStream:
    """``torch.cuda.current_stream()`` where there is no GPU."""
    _note("current_stream")
    return StandInStream()


def _nothing(*args: Any, **kwargs: Any) -> int:
    """``torch.cuda.nvtx.range_push`` / ``range_pop`` / ``mark`` where there is no GPU: no profiler to mark."""
    return 0


# ``triton.runtime.driver.active.utils.get_device_properties(i)``: the CUDA driver's dict (keys of
# triton/backends/nvidia/driver.c ``getDeviceProperties``; clocks in kHz, the bus width in bits: the H200's 1,980 MHz
# SM and 3,201 MHz memory clocks read by NVML on the lent machine, the 6,144-bit HBM3e bus of the datasheet)
TRITON_PROPERTIES = {
    "max_shared_mem": H200.shared_memory_per_block_optin,
    "max_num_regs": H200.regs_per_multiprocessor,
    "multiprocessor_count": H200.multi_processor_count,
    "warpSize": H200.warp_size,
    "sm_clock_rate": 1_980_000,
    "mem_clock_rate": 3_201_000,
    "mem_bus_width": 6_144,
}


class _TritonUtils:
    def get_device_properties(self, device: Any = None) -> dict[str, int]:
        _note("triton driver get_device_properties")
        return dict(TRITON_PROPERTIES)


class StandInDriver:
    """What Triton's ``driver.active`` answers on a machine without a GPU (where it raises "0 active drivers"): the
    device queries of Triton's tutorials (the fused softmax sizes its grid from ``driver.active.utils.
    get_device_properties(DEVICE.index)`` and ``get_current_target()``; red team round 13, F6), with the
    target GPU's facts. Anything else raises the RuntimeError Triton raised before (the interpreter needs no
    driver; the autotuner's benchmarker is ktui's there)."""

    utils = _TritonUtils()

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        _note("triton driver get_current_target")
        return GPUTarget("cuda", H200.major * 10 + H200.minor, H200.warp_size)

    def get_current_device(self) -> int:
        return 0

    def get_active_torch_device(self) -> torch.device:
        return torch.device("cpu")  # the kernel's tensors are CPU tensors standing in for CUDA ones

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, inspect, mock probe these: the usual answer
            raise AttributeError(name)
        raise RuntimeError(
            f"0 active drivers: no GPU here, and ktui's stand-in for Triton's driver answers only the device queries "
            f"(utils.get_device_properties, get_current_target, get_current_device, get_active_torch_device), not "
            f"{name}"
        )


def _install_triton_driver() -> None:
    """Set ``StandInDriver`` as Triton's active driver where Triton finds none (no GPU)."""
    try:
        from triton.runtime import driver
    except ImportError:
        return
    try:
        driver.active  # noqa: B018 - a real driver: leave it
    except RuntimeError:
        driver.set_active(StandInDriver())


def install() -> None:
    """Make torch's device queries, and Triton's driver's, answer with ``H200``, and torch's device guards, streams,
    ``synchronize`` and NVTX ranges do nothing (once; only where CUDA is not available)."""
    if _installed or torch.cuda.is_available():
        return
    torch.cuda.get_device_properties = get_device_properties  # type: ignore[assignment]
    torch.cuda.get_device_capability = get_device_capability
    torch.cuda.get_device_name = get_device_name
    torch.cuda.current_device = current_device
    # and the host-side calls GPU code makes around its launches (red team round 28, #12): guards, streams,
    # synchronization and NVTX ranges, which raise on a CPU build of torch
    torch.cuda.device = StandInGuard  # type: ignore[assignment,misc]
    torch.cuda.stream = StandInGuard  # type: ignore[assignment]
    torch.cuda.synchronize = synchronize
    torch.cuda.current_stream = current_stream  # type: ignore[assignment]
    torch.cuda.default_stream = current_stream  # type: ignore[assignment]
    torch.cuda.Stream = StandInStream  # type: ignore[assignment,misc]
    torch.cuda.nvtx.range_push = _nothing
    torch.cuda.nvtx.range_pop = _nothing
    torch.cuda.nvtx.mark = _nothing
    torch.cuda.nvtx.range = StandInGuard  # type: ignore[assignment]
    _install_triton_driver()
    _installed.append(True)


STOOD_IN = ("device/stream guard", "synchronize", "current_stream")  # ``_note`` names of the calls that do nothing


def note() -> list[str]:
    """One warning when a kernel asked a device query this process answered with the stand-in's facts, and one when
    it made a host-side CUDA call that does nothing here (a guard, a stream, synchronize), else []."""
    facts = [q for q in queried if q not in STOOD_IN]
    calls = [q for q in queried if q in STOOD_IN]
    out = []
    if facts:
        out.append(
            f"no GPU here: {', '.join(q if q.startswith('triton') else 'torch.cuda.' + q for q in facts)} answered "
            f"with the target GPU's facts ({H200.name}, "
            f"{H200.multi_processor_count} SMs, sm_{H200.major}{H200.minor}); a launch sized from them is checked as "
            "it would launch there"
        )
    if calls:
        out.append(
            f"no GPU here: torch.cuda's {', '.join(calls)} did nothing (the CPU runs each call to its end); what a "
            "side stream changes is checked on a GPU"
        )
    return out
