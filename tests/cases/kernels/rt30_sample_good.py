"""Honest (red team round 30, #8): Inverse-CDF sampling: one program per row; pass 1 the row's max and sum of exp, pass 2 a blocked running sum of
the probabilities counting the entries whose CDF is still below u."""
import torch
import triton
import triton.language as tl


@triton.jit
def _sample(x_ptr, u_ptr, out_ptr, V, sx0, sx1, su, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    for s in range(0, V, BLOCK):
        x = tl.load(x_ptr + b * sx0 + (s + offs) * sx1, mask=s + offs < V, other=-float("inf"))
        m = tl.maximum(m, x)
    mx = tl.max(m, axis=0)
    acc = tl.zeros([BLOCK], tl.float32)
    for s in range(0, V, BLOCK):
        x = tl.load(x_ptr + b * sx0 + (s + offs) * sx1, mask=s + offs < V, other=-float("inf"))
        acc += tl.exp(x - mx)
    inv = 1.0 / tl.sum(acc, axis=0)
    u = tl.load(u_ptr + b * su)
    carry = 0.0
    count = 0
    for s in range(0, V, BLOCK):
        x = tl.load(x_ptr + b * sx0 + (s + offs) * sx1, mask=s + offs < V, other=-float("inf"))
        p = tl.exp(x - mx) * inv
        cdf = carry + tl.cumsum(p, axis=0)
        count += tl.sum(((cdf < u) & (s + offs < V)).to(tl.int32), axis=0)
        carry += tl.sum(p, axis=0)
    tl.store(out_ptr + b, tl.minimum(count, V - 1).to(tl.int64))


def custom_kernel(data):
    logits, u = data
    B, V = logits.shape
    out = torch.empty(B, dtype=torch.int64, device=logits.device)
    if V == 0:  # no token to sample: refused (ktui counts it unsupported), never an unwritten index
        raise ValueError("sampling from an empty vocabulary")
    if B == 0:
        return out
    _sample[(B,)](logits, u, out, V, logits.stride(0), logits.stride(1), u.stride(0), BLOCK=1024)
    return out
