"""Which device to run on, decided without importing torch (ktui's own process never does)."""

from __future__ import annotations

import ctypes
import os


def cuda_available() -> bool:
    """True when the CUDA driver loads and reports at least one device (``cuInit`` + ``cuDeviceGetCount``).

    ``KTUI_FORCE_CPU=1`` makes it False, for testing the CPU path on a GPU machine.
    """
    if os.environ.get("KTUI_FORCE_CPU") == "1":
        return False
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    try:
        if lib.cuInit(0) != 0:
            return False
        count = ctypes.c_int(0)
        return lib.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
    except (AttributeError, OSError):
        return False


def resolve_device(choice: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is usable, else ``cpu``; ``cpu`` and ``cuda`` pass through.

    Raises:
        ValueError: any other choice.
    """
    if choice == "auto":
        return "cuda" if cuda_available() else "cpu"
    if choice in ("cpu", "cuda"):
        return choice
    raise ValueError(f"unknown device {choice!r}: use auto, cpu or cuda")
