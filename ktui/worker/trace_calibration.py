"""What one ktui trace marker costs: a Triton kernel of empty regions (a begin right before its end), traced by
``ktui.worker.trace_target`` like any marked kernel. Each empty region's duration is one marker's work between its
timer read and the next marker's (``ktui.trace.ptx``): the median over every warp and region is the cost in SM cycles
that the trace rung reports (``marker_cycles``)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

import ktui.trace.triton as kt


@triton.jit
def empty_regions(out_ptr):  # type: ignore[no-untyped-def]  # Triton reads annotations: none here
    kt.begin("e0")
    kt.end("e0")
    kt.begin("e1")
    kt.end("e1")
    kt.begin("e2")
    kt.end("e2")
    kt.begin("e3")
    kt.end("e3")
    tl.store(out_ptr + tl.program_id(0), 1)


def launch(ctas: int) -> None:
    """Launch ``empty_regions`` on ``ctas`` CTAs of 4 warps."""
    out = torch.empty(ctas, dtype=torch.int32, device="cuda")
    empty_regions[(ctas,)](out, num_warps=4)
