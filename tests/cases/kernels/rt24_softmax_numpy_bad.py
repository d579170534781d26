"""BAD (dead launch): a Triton row max into scratch that nothing reads, and the softmax computed on the host in
numpy, which no torch-name rule of the scan reads: the dry call (no launch run) already returns the right output."""

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def rowmax_kernel(x_ptr, m_ptr, sr, sc, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * sr + offs * sc, mask=offs < cols, other=-float("inf")).to(tl.float32)
    tl.store(m_ptr + row, tl.max(x, axis=0))


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    m = torch.empty(rows, dtype=torch.float32, device=x.device)
    rowmax_kernel[(rows,)](x, m, x.stride(0), x.stride(1), cols, BLOCK=triton.next_power_of_2(cols))
    a = x.detach().float().cpu().numpy().astype(np.float64)
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return torch.from_numpy(e / e.sum(axis=-1, keepdims=True)).to(device=x.device, dtype=x.dtype)
