"""HONEST twin of rt15_numel_cache_bad: the launch parameters (BLOCK, num_warps) cached by the input's shape."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, sxr, sxc, sor, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * sxr + offs * sxc, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * sor + offs, e / tl.sum(e, axis=0), mask=mask)


_LAUNCH: dict = {}  # (rows, cols) -> (BLOCK, num_warps): keyed by the shape


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    key = (rows, cols)
    if key not in _LAUNCH:
        block = triton.next_power_of_2(cols)
        _LAUNCH[key] = (block, min(16, max(4, block // 512)))
    block, warps = _LAUNCH[key]
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), cols, BLOCK=block, num_warps=warps)
    return out
