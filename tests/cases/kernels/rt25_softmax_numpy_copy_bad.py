"""BAD (red team round 25, #13): times the host, not a kernel: NumPy computes the softmax on the host; a Triton kernel only copies the result into
the output buffer."""
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=m), mask=m)


def _host_softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def custom_kernel(x):
    host = _host_softmax(x.detach().cpu().numpy().astype(np.float64)).astype(np.float32)
    tmp = torch.from_numpy(np.ascontiguousarray(host)).to(x.device)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](tmp, out, n, BLOCK=1024)
    return out
