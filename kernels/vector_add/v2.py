"""Vector add, faster: 1024 elements per program (8 per thread: 128-bit loads, two in flight per operand, 8x fewer
programs to schedule), and int64 offsets so that tensors past 2**31 elements index correctly.

Measured on an H200 at 2**28 fp32 elements (benchmarks/example_variants.py): 4,348 GB/s against 2,531 GB/s for v1,
at the device-to-device copy ceiling (4,244 GB/s)."""

import torch
import triton
import triton.language as tl

import ktui.trace.triton as kt  # region markers for the trace rung: no-ops in every other build


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, a_stride, b_stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    with kt.region("add"):
        a = tl.load(a_ptr + offs * a_stride, mask=mask)
        b = tl.load(b_ptr + offs * b_stride, mask=mask)
        tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)  # contiguous whatever a's layout
    n = a.numel()
    add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, a.stride(0), b.stride(0), BLOCK=1024, num_warps=4)
    return out
