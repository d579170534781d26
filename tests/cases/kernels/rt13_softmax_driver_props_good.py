"""HONEST (red team round 13, F6; failed run on the CPU before the fix): a persistent row softmax sized the way
Triton's fused-softmax tutorial sizes it, from Triton's own driver: ``driver.active.utils.get_device_properties``
(SM count, registers, shared memory) and ``get_current_target()``. Without a GPU Triton has no active driver ("0
active drivers"); ktui's stand-in answers those queries with the target GPU's facts (``ktui.worker.target_device``),
as ``torch.cuda.get_device_properties`` is answered."""
import torch
import triton
import triton.language as tl
from triton.runtime import driver


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, in_col_stride, out_row_stride, n_rows, n_cols,
                   BLOCK: tl.constexpr):
    start = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(start, n_rows, step):
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(in_ptr + row * in_row_stride + offs * in_col_stride, mask=mask, other=-float("inf"))
        x = x.to(tl.float32)
        z = x - tl.max(x, axis=0)
        num = tl.exp(z)
        y = num / tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_row_stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    props = driver.active.utils.get_device_properties(torch.cuda.current_device())
    target = driver.active.get_current_target()
    n_sm, n_regs, smem = props["multiprocessor_count"], props["max_num_regs"], props["max_shared_mem"]
    assert target.arch >= 80 and props["warpSize"] == 32 and smem > 0
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    block = triton.next_power_of_2(cols)
    num_warps = 8 if block >= 2048 else 4
    per_sm = max(1, n_regs // (32 * 32 * num_warps))  # programs an SM holds at ~32 registers a thread
    grid = max(1, min(rows, n_sm * per_sm))
    softmax_kernel[(grid,)](out, x, x.stride(0), x.stride(1), out.stride(0), rows, cols, BLOCK=block,
                            num_warps=num_warps)
    return out
