"""Whether this process traces, and the buffers its compiled kernels write to.

Nothing here is active unless the traced program (``ktui.worker.trace_target``) calls ``activate``: in every other
process (the candidate, the compiler, the interpreter on the CPU, a plain ``python``), ``active()`` is None and the
markers of ``ktui.trace.triton`` / ``ktui.trace.cute`` emit nothing, so a marked kernel compiles exactly as if it had
no markers. While active, the markers of each *compilation* share one buffer: the traced program says which launch or
compile is under way (``Tracer.begin_compile``), the first marker compiled in it asks ``allocate`` for the memory,
and the marker's PTX carries that address (``ktui.trace.ptx``).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ktui.protocol.trace import MAX_REGIONS, capacity_warps_log2

MODES = ("ktui", "proton")


class TraceError(RuntimeError):
    """A marker the tracer cannot honour: too many regions in one kernel, a name that is not a string."""


@dataclass
class Buffer:
    """One compiled kernel's trace buffer.

    Attributes:
        kernel: the kernel's name as the traced program knew it when the compile began.
        language: ``triton`` or ``cutedsl``.
        address: device address (16-byte aligned) the markers store to.
        nbytes: its size.
        warps_log2: log2 of the warps it has room for (``ktui.protocol.trace.capacity_warps_log2``).
        regions: region names in id order.
        launches: launches of the compiled kernel in the recorded call (the traced program counts them).
    """

    kernel: str
    language: str
    address: int
    nbytes: int
    warps_log2: int
    regions: list[str] = field(default_factory=list)
    launches: int = 0

    def slot(self, name: str, end: bool) -> int:
        """The record slot of ``name``'s begin (``end`` False) or end marker; a new name takes the next id.

        Raises:
            TraceError: more than ``MAX_REGIONS`` names in this kernel.
        """
        if name not in self.regions:
            if len(self.regions) >= MAX_REGIONS:
                raise TraceError(
                    f"kernel {self.kernel} marks more than {MAX_REGIONS} regions ({', '.join(self.regions)}, {name}): "
                    f"ktui.trace keeps {MAX_REGIONS} per kernel"
                )
            self.regions.append(name)
        return 2 * self.regions.index(name) + (1 if end else 0)


@dataclass
class Tracer:
    """The process's tracing state.

    Attributes:
        mode: ``ktui`` (ktui's markers) or ``proton`` (the markers become ``triton.profiler.language`` scopes).
        allocate: ``nbytes -> device address`` of zeroed memory the caller keeps alive (the traced program's torch).
        buffer_bytes: the size of each kernel's buffer.
        token: unique per activation; the traced program puts it in Triton's ``instrumentation_mode`` so no traced
            compile is ever reused from Triton's cache by another process (whose buffers live elsewhere).
    """

    mode: str
    allocate: Callable[[int], int]
    buffer_bytes: int
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    buffers: list[Buffer] = field(default_factory=list)
    _compiling: tuple[str, str] | None = None  # (kernel, language) of the compile under way
    _current: Buffer | None = None  # its buffer, once a marker asked for one
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def begin_compile(self, kernel: str, language: str) -> None:
        """A launch or ``cute.compile`` of ``kernel`` starts: markers compiled until the next call share a buffer."""
        with self._lock:
            self._compiling = (kernel, language)
            self._current = None

    def compiled_buffer(self) -> Buffer | None:
        """The buffer the markers of the compile begun last asked for (None: it compiled no marker, or nothing)."""
        with self._lock:
            return self._current

    def buffer_for(self, language: str) -> Buffer:
        """The buffer of the compile under way, allocated on first use. A marker compiled outside any begun compile
        gets a buffer of its own named ``?``."""
        with self._lock:
            if self._current is None:
                kernel, lang = self._compiling or ("?", language)
                address = self.allocate(self.buffer_bytes)
                self._current = Buffer(kernel, lang, address, self.buffer_bytes, capacity_warps_log2(self.buffer_bytes))
                self.buffers.append(self._current)
            return self._current


_ACTIVE: Tracer | None = None


def active() -> Tracer | None:
    """The process's tracer, or None (the markers compile to nothing)."""
    return _ACTIVE


def activate(tracer: Tracer) -> None:
    """Make ``tracer`` the process's tracer (the traced program only).

    Raises:
        ValueError: an unknown mode.
    """
    global _ACTIVE
    if tracer.mode not in MODES:
        raise ValueError(f"unknown tracer {tracer.mode!r}: {', '.join(MODES)}")
    _ACTIVE = tracer


def deactivate() -> None:
    """Markers compiled from now on emit nothing again."""
    global _ACTIVE
    _ACTIVE = None


def region_name(name: object) -> str:
    """A marker's region name: a non-empty string (Triton passes it wrapped in ``constexpr``: its ``.value``).

    Raises:
        TraceError: anything else.
    """
    value = getattr(name, "value", name)
    if not isinstance(value, str) or not value:
        raise TraceError(f"a ktui.trace region is named by a non-empty string literal, not {value!r}")
    return value
