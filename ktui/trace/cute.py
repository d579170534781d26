"""Region markers for CuTeDSL kernels: ``begin``, ``end`` and ``with region(name):`` (see ``ktui.trace``).

CuTeDSL runs a ``@cute.kernel``'s Python while it builds the kernel's IR, so a marker is an ordinary call made at
that time. With no tracer active (``ktui.trace.state``) it returns at once and adds nothing to the IR (the module,
and so CuTeDSL's compile-cache key, is the unmarked kernel's); with ktui's tracer it adds one ``llvm.inline_asm``
with side effects carrying ``ktui.trace.ptx.marker``. The ``proton`` tracer instruments Triton kernels only: a
CuTeDSL marker under it is an error the trace rung reports.
"""

from __future__ import annotations

from ktui.trace import ptx
from ktui.trace.state import TraceError, active, region_name


def _mark(name: object, end: bool) -> None:
    tracer = active()
    if tracer is None:
        return
    label = region_name(name)
    if tracer.mode != "ktui":
        raise TraceError(f"the {tracer.mode} tracer instruments Triton kernels only, not CuTeDSL ({label})")
    from cutlass._mlir import ir
    from cutlass._mlir.dialects import llvm

    buf = tracer.buffer_for("cutedsl")
    llvm.inline_asm(
        ir.IntegerType.get_signless(32),  # type: ignore[attr-defined, unused-ignore]
        [],
        ptx.marker(buf.address, buf.slot(label, end), buf.warps_log2),
        "=r",
        has_side_effects=True,
        is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT,
    )


def begin(name: str) -> None:
    """Mark the start of region ``name`` inside a ``@cute.kernel``."""
    _mark(name, False)


def end(name: str) -> None:
    """Mark the end of region ``name``."""
    _mark(name, True)


class region:  # lower case: used as ``with kt.region("x"):``, like the Triton markers
    """``with region("name"):`` marks the block's start and end."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self) -> None:
        _mark(self.name, False)

    def __exit__(self, *exc: object) -> None:
        _mark(self.name, True)
