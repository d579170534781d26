"""New-user trial 30: an MoE grouped GEMM (the trial's reference, its tests cut for CI): tokens x [M, K] bf16 sorted by expert, w [E, K, N] bf16, offsets int32 [E+1]
(offsets[0] = 0, offsets[E] = M; expert e owns rows offsets[e]:offsets[e+1], possibly none).
out[M, N] bf16 = x[rows of e] @ w[e], fp32 accumulation.

Sizes are kept small for the CPU interpreter: M <= 512, K, N <= 256, E <= 8.
"""

import torch


def generate_input(seed: int, m: int, k: int, n: int, e: int):
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(m, k, dtype=torch.float32).to(torch.bfloat16)
    w = (torch.randn(e, k, n, dtype=torch.float32) / (k ** 0.5)).to(torch.bfloat16)
    # token counts per expert, with some experts empty (expert 1 always empty when e >= 3)
    if m == 0:
        counts = torch.zeros(e, dtype=torch.int64)
    else:
        assign = torch.randint(0, e, (m,), generator=g)
        if e >= 3:
            assign[assign == 1] = 0
        counts = torch.bincount(assign, minlength=e)
    offsets = torch.zeros(e + 1, dtype=torch.int32)
    offsets[1:] = torch.cumsum(counts, 0).to(torch.int32)
    return x, w, offsets.to(x.device)


def ref_kernel(data):
    x, w, offsets = data
    M = x.shape[0]
    N = w.shape[2]
    out = torch.zeros(M, N, dtype=x.dtype, device=x.device)
    offs = offsets.tolist()
    # the contract: offsets start at 0, end at M, never decrease
    if offs[0] != 0 or offs[-1] != M or any(b < a for a, b in zip(offs, offs[1:])):
        raise ValueError(f"offsets {offs} are not a valid expert partition of {M} rows")
    for ex in range(w.shape[0]):
        s, t = offs[ex], offs[ex + 1]
        if t > s:
            out[s:t] = x[s:t] @ w[ex]
    return out


tests = [
    {"m": 1, "k": 16, "n": 16, "e": 1},
    {"m": 17, "k": 32, "n": 48, "e": 4},
    {"m": 63, "k": 64, "n": 65, "e": 3},
]
benchmarks = [{"m": 512, "k": 256, "n": 256, "e": 8}]  # timed on a GPU only

# the CPU interpreter: keep fuzzed sizes small
fuzz = {"m": (0, 128), "k": (1, 64), "n": (1, 64), "e": (1, 8)}


def flops(m, k, n, e):
    return 2 * m * k * n


def bytes_moved(m, k, n, e):
    return 2 * (m * k + e * k * n + m * n) + 4 * (e + 1)
