"""rowcumsum: inclusive prefix sum along the last dim of a (rows, n) tensor (torch.cumsum(x, -1)), in float32 and
bfloat16, every input distribution (the extreme family included: new-user trial 20)."""

import torch


def generate_input(seed: int, rows: int, n: int, dtype: str):
    return (torch.randn(rows, n, dtype=getattr(torch, dtype)),)


def ref_kernel(data):
    (x,) = data
    return torch.cumsum(x, dim=-1)


tests = [
    {"rows": r, "n": n, "dtype": dt}
    for (r, n) in ((1, 1), (3, 127), (5, 129), (2, 1023), (4, 1025), (3, 4099))
    for dt in ("float32", "bfloat16")
]
benchmarks = [{"rows": 4096, "n": 8192, "dtype": "float32"}]


def bytes_moved(rows, n, dtype):
    return 2 * rows * n * torch.empty(0, dtype=getattr(torch, dtype)).element_size()


def flops(rows, n, dtype):
    return rows * n

