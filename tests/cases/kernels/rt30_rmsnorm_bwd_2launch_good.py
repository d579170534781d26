"""RMSNorm backward in two launches: G programs each take rows pid, pid + G, ...; each writes dx for its rows and
keeps its share of dw in registers, stores it to a (G, N) workspace, and a second launch folds the G partial
rows into dw."""

import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_bwd_kernel(x_ptr, w_ptr, dy_ptr, dx_ptr, part_ptr, dw_ptr, M, N, eps,
                       sxm, sxn, sdm, sdn, G: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    cm = cols < N
    w = tl.load(w_ptr + cols, mask=cm, other=0.0)
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for row in range(pid, M, G):
        x = tl.load(x_ptr + row * sxm + cols * sxn, mask=cm, other=0.0)
        dy = tl.load(dy_ptr + row * sdm + cols * sdn, mask=cm, other=0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
        xhat = x * rstd
        g = dy * w
        c = tl.sum(g * xhat, axis=0) / N
        tl.store(dx_ptr + row * N + cols, rstd * (g - xhat * c), mask=cm)
        dw_acc += dy * xhat
    tl.store(part_ptr + pid * BLOCK_N + cols, dw_acc)


@triton.jit
def dw_reduce_kernel(part_ptr, dw_ptr, N, G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tot = tl.zeros([BLOCK], dtype=tl.float32)
    for p in range(0, G):
        tot += tl.load(part_ptr + p * BLOCK_N + cols, mask=cols < BLOCK_N, other=0.0)
    tl.store(dw_ptr + cols, tot, mask=cols < N)


def custom_kernel(data):
    x, w, dy, eps = data
    M, N = x.shape
    dx = torch.empty((M, N), dtype=x.dtype, device=x.device)
    dw = torch.empty((N,), dtype=torch.float32, device=x.device)
    G = 8
    BLOCK_N = triton.next_power_of_2(N)
    part = torch.empty((G, BLOCK_N), dtype=torch.float32, device=x.device)
    w = w.contiguous()
    rmsnorm_bwd_kernel[(G,)](x, w, dy, dx, part, dw, M, N, eps, x.stride(0), x.stride(1),
                             dy.stride(0), dy.stride(1), G=G, BLOCK_N=BLOCK_N)
    dw_reduce_kernel[(triton.cdiv(N, 128),)](part, dw, N, G=G, BLOCK_N=BLOCK_N, BLOCK=128)
    return dx, dw
