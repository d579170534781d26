"""BAD twin of quant16_good.py: floor(x / amax * 127) without the + 0.5, about half the elements one step off."""
import torch
import triton
import triton.language as tl


@triton.jit
def quant_kernel(x_ptr, q_ptr, x_rs, x_cs, q_rs, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, CHUNK)
    m = tl.zeros((CHUNK,), tl.float32)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_ptr + row * x_rs + (c + offs) * x_cs, mask=c + offs < n_cols, other=0.0)
        m = tl.maximum(m, tl.abs(x))
    amax = tl.maximum(tl.max(m, axis=0), 1e-30)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_ptr + row * x_rs + (c + offs) * x_cs, mask=c + offs < n_cols, other=0.0)
        q = tl.floor(x / amax * 127)  # truncates: half a step low on average
        tl.store(q_ptr + row * q_rs + c + offs, q.to(tl.int16), mask=c + offs < n_cols)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    q = torch.empty((rows, cols), dtype=torch.int16, device=x.device)
    quant_kernel[(rows,)](x, q, x.stride(0), x.stride(1), q.stride(0), cols, CHUNK=1024)
    return q
