"""BAD (persistent waves, red team round 16 M2): bf16 GEMM, persistent (as Triton's 09-persistent-matmul tutorial): one program per SM, each looping over output
tiles tile_id = pid, pid + NUM_SMS, ...; fp32 accumulator.

Slip: the accumulator is zeroed once, before the tile loop, not at the start of every tile: a program's second tile
starts from its first tile's sums. Right whenever every program gets at most one tile (tiles <= SMs)."""

import torch
import triton
import triton.language as tl


@triton.jit
def mm_persistent(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, NUM_SMS: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    n_m = tl.cdiv(M, BM)
    n_n = tl.cdiv(N, BN)
    num_tiles = n_m * n_n
    acc = tl.zeros((BM, BN), dtype=tl.float32)  # BUG: belongs inside the tile loop
    for tile_id in range(pid, num_tiles, NUM_SMS):
        pm = tile_id // n_n
        pn = tile_id % n_n
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        for k0 in range(0, K, BK):
            rk = k0 + tl.arange(0, BK)
            a = tl.load(a_ptr + rm[:, None] * sam + rk[None, :] * sak, mask=(rm[:, None] < M) & (rk[None, :] < K),
                        other=0.0)
            b = tl.load(b_ptr + rk[:, None] * sbk + rn[None, :] * sbn, mask=(rk[:, None] < K) & (rn[None, :] < N),
                        other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


_SMS = None


def custom_kernel(data):
    global _SMS
    a, b = data
    if _SMS is None:
        _SMS = torch.cuda.get_device_properties("cuda").multi_processor_count
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    BM, BN, BK = 64, 64, 32
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    grid = (max(1, min(tiles, _SMS)),)
    mm_persistent[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), NUM_SMS=_SMS, BM=BM, BN=BN, BK=BK, num_warps=4)
    return c
