"""Top-k token selection (TopKPooling style): score each row, keep the k best rows, unordered. Returns
(ids, rows), rows[j] = x[ids[j]]; the order of the pairs is unspecified."""

import torch


def generate_input(seed: int, n: int, d: int, k: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    return torch.randn(n, dtype=torch.float32), torch.randn(n, d, dtype=torch.float32), k


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor, int]) -> tuple[torch.Tensor, torch.Tensor]:
    score, x, k = data
    _, ids = torch.topk(score, k, sorted=False)
    return ids, x[ids]


tests = [{"n": n, "d": 64, "k": k} for n, k in ((16, 4), (257, 32), (1000, 100))]
benchmarks = [{"n": 1 << 20, "d": 128, "k": 4096}]
fuzz = False
