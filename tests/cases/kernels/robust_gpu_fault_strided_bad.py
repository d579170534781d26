"""BAD (crash messages, GPU 2026-12-06): a kernel that faults on a strided input, as nu24_segsum_offsets_stride_bad
did on the H100 ("CUDA error: an illegal memory access was encountered"). On a laid-out case ktui read the error as
a layout the kernel does not support, synchronized the lost context to clean up, and that synchronize's error went
out bare: no case, no hint. Here the fault's message is raised as torch raises it (the CPU has no context to lose)."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    if not (a.is_contiguous() and b.is_contiguous()):
        raise torch.AcceleratorError(
            "CUDA error: an illegal memory access was encountered\n"
            "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
            "group__CUDART__TYPES.html for more information.\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
            "might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        )
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    add_kernel[(triton.cdiv(a.numel(), 128),)](a, b, out, a.numel(), BLOCK=128)
    return out
