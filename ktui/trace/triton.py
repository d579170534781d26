"""Region markers for Triton kernels: ``begin``, ``end`` and ``with region(name):`` (see ``ktui.trace``).

Each is a Triton *builtin*: the Triton compiler calls it while it builds the kernel's IR, with ``_semantic`` (the IR
builder). With no tracer active (``ktui.trace.state``) it returns at once and adds nothing to the IR; under the
interpreter ``_semantic`` is None and it does nothing either. With ktui's tracer it adds one
``tl.inline_asm_elementwise`` (``is_pure=False``: never removed, never moved across memory operations) carrying
``ktui.trace.ptx.marker``; with the ``proton`` tracer it adds ``triton.profiler.language.enter_scope`` /
``exit_scope`` (Triton's own intra-kernel profiler) instead, so one set of marks serves both.
"""

from __future__ import annotations

from typing import Any

import triton.language as tl
from triton.language.core import TRITON_BUILTIN

from ktui.trace import ptx
from ktui.trace.state import active, region_name


def _mark(name: Any, end: bool, _semantic: Any) -> None:
    tracer = active()
    if tracer is None or _semantic is None:
        return
    label = region_name(name)
    if tracer.mode == "proton":
        import triton.profiler.language as pl

        (pl.exit_scope if end else pl.enter_scope)(label, _semantic=_semantic)
        return
    buf = tracer.buffer_for("triton")
    asm = ptx.marker(buf.address, buf.slot(label, end), buf.warps_log2)
    tl.inline_asm_elementwise(asm, "=r", [], dtype=tl.int32, is_pure=False, pack=1, _semantic=_semantic)


def begin(name: Any, _semantic: Any = None) -> None:
    """Mark the start of region ``name`` (a string literal) in a ``@triton.jit`` function."""
    _mark(name, False, _semantic)


def end(name: Any, _semantic: Any = None) -> None:
    """Mark the end of region ``name``."""
    _mark(name, True, _semantic)


class region:  # lower case: ``with kt.region("x"):`` reads as a statement in the kernel
    """``with region("name"):`` marks the block's start and end."""

    def __init__(self, name: Any, _semantic: Any = None):
        self.name = name
        self._semantic = _semantic

    def __enter__(self) -> None:
        _mark(self.name, False, self._semantic)

    def __exit__(self, *exc: object) -> None:
        _mark(self.name, True, self._semantic)


for _fn in (begin, end, region):
    setattr(_fn, TRITON_BUILTIN, True)
