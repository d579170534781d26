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


def install() -> None:
    """Make torch's device queries answer with ``H200`` (once; only where CUDA is not available)."""
    if _installed or torch.cuda.is_available():
        return
    torch.cuda.get_device_properties = get_device_properties  # type: ignore[assignment]
    torch.cuda.get_device_capability = get_device_capability
    torch.cuda.get_device_name = get_device_name
    torch.cuda.current_device = current_device
    _installed.append(True)


def note() -> list[str]:
    """One warning when a kernel asked a device query this process answered with the stand-in's facts, else []."""
    if not queried:
        return []
    return [
        f"no GPU here: torch.cuda.{', '.join(queried)} answered with the target GPU's facts ({H200.name}, "
        f"{H200.multi_processor_count} SMs, sm_{H200.major}{H200.minor}); a launch sized from them is checked as it "
        "would launch there"
    ]
