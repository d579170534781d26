"""WRONG (a miss if it passes): a row softmax whose launch parameters (BLOCK, num_warps) are cached by the input's
element count, not its shape: a (2, 64) input and then a (1, 128) one (both 128 elements) reuse BLOCK = 64 for rows
of 128 columns, and the columns past 64 are never written. Every shape ktui checks has its own element count."""
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


_LAUNCH: dict = {}  # numel -> (BLOCK, num_warps)  BUG: keyed by numel, not by the row length


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    key = x.numel()
    if key not in _LAUNCH:
        block = triton.next_power_of_2(cols)
        _LAUNCH[key] = (block, min(16, max(4, block // 512)))
    block, warps = _LAUNCH[key]
    out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    softmax_kernel[(rows,)](x, out, x.stride(0), x.stride(1), out.stride(0), cols, BLOCK=block, num_warps=warps)
    return out
