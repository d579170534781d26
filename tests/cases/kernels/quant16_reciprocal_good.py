"""GOOD (integer outputs of float math, another order): the per-row absmax quantizer of quant16.py multiplying by
127 / amax instead of dividing by amax and multiplying by 127. In fp32 the two orders round differently where x / amax
* 127 + 0.5 lies within a few ulps of an integer: a few elements per million differ from torch's result and the
float64 truth, often on cases where torch's own fp32 result has no element off (which compared exactly before)."""
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
    scale = 127.0 / tl.maximum(tl.max(m, axis=0), 1e-30)
    for c in range(0, n_cols, CHUNK):
        x = tl.load(x_ptr + row * x_rs + (c + offs) * x_cs, mask=c + offs < n_cols, other=0.0)
        q = tl.floor(x * scale + 0.5)
        tl.store(q_ptr + row * q_rs + c + offs, q.to(tl.int16), mask=c + offs < n_cols)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    q = torch.empty((rows, cols), dtype=torch.int16, device=x.device)
    quant_kernel[(rows,)](x, q, x.stride(0), x.stride(1), q.stride(0), cols, CHUNK=1024)
    return q
