"""New-user trial 30's moe_gemm v2 (the honest twin of nu30_moe_gemm_rowmask_bad): one launch over all (tile, n-block) pairs; a tile-to-expert map built on the device
(no host sync): grid is the upper bound cdiv(M, BM) + E tiles, spare programs exit."""

import torch
import triton
import triton.language as tl


@triton.jit
def grouped_kernel(x_ptr, w_ptr, out_ptr, offs_ptr, tile_expert_ptr, tile_row_ptr, num_tiles_ptr,
                   K, N, sof, sxm, sxk, swe, swk, swn, som, son,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tile = tl.program_id(0)
    pid_n = tl.program_id(1)
    if tile >= tl.load(num_tiles_ptr):
        return
    e = tl.load(tile_expert_ptr + tile)
    row0 = tl.load(tile_row_ptr + tile)
    end = tl.load(offs_ptr + (e + 1) * sof)
    offs_m = row0 + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mrow = offs_m < end
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        a = tl.load(x_ptr + offs_m[:, None] * sxm + ks[None, :] * sxk,
                    mask=mrow[:, None] & (ks[None, :] < K), other=0.0)
        b = tl.load(w_ptr + e * swe + ks[:, None] * swk + offs_n[None, :] * swn,
                    mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(out_ptr + offs_m[:, None] * som + offs_n[None, :] * son,
             acc.to(out_ptr.dtype.element_ty), mask=mrow[:, None] & (offs_n[None, :] < N))


def tile_map(offsets, BM, max_tiles):
    counts = (offsets[1:] - offsets[:-1]).long()
    tiles = (counts + BM - 1) // BM                       # zero for an empty expert
    E = counts.numel()
    experts = torch.arange(E, device=offsets.device)
    tile_expert = torch.repeat_interleave(experts, tiles, output_size=None)
    first = torch.cumsum(tiles, 0) - tiles                # first tile index of each expert
    idx = torch.arange(tile_expert.numel(), device=offsets.device)
    tile_row = offsets[:-1].long()[tile_expert] + (idx - first[tile_expert]) * BM
    te = torch.zeros(max_tiles, dtype=torch.int32, device=offsets.device)
    tr = torch.zeros(max_tiles, dtype=torch.int32, device=offsets.device)
    te[: tile_expert.numel()] = tile_expert.to(torch.int32)
    tr[: tile_row.numel()] = tile_row.to(torch.int32)
    return te, tr, tiles.sum().to(torch.int32).reshape(1)


def custom_kernel(data):
    x, w, offsets = data
    M, K = x.shape
    E, _, N = w.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    BM, BN, BK = 32, 32, 32
    max_tiles = triton.cdiv(M, BM) + E
    te, tr, nt = tile_map(offsets, BM, max_tiles)
    grid = (max_tiles, triton.cdiv(N, BN))
    grouped_kernel[grid](x, w, out, offsets, te, tr, nt, K, N, offsets.stride(0),
                         x.stride(0), x.stride(1), w.stride(0), w.stride(1), w.stride(2),
                         out.stride(0), out.stride(1), BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK)
    return out
