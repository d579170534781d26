"""Row softmax, faster: a persistent grid (a few programs per SM, each looping over rows with software pipelining),
warps scaled with the row width so that each thread holds at most ~16 values, and exp2 with a folded log2(e)."""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_rows, n_cols, BLOCK: tl.constexpr,
                   NUM_STAGES: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
        x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
        x = (x - tl.max(x, axis=0)) * 1.4426950408889634
        e = tl.exp2(x)
        y = e * (1.0 / tl.sum(e, axis=0))
        tl.store(out_ptr + row * out_row_stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def _sm_count(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the CPU interpreter runs programs one after another: few programs, long loops


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    num_warps = max(1, min(16, block // 512))
    programs = min(rows, _sm_count(x.device) * max(1, 32 // num_warps))
    softmax_kernel[(programs,)](x, out, x.stride(0), out.stride(0), rows, cols, BLOCK=block, NUM_STAGES=2,
                                num_warps=num_warps)
    return out
