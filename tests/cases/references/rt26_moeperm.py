"""MoE dispatch (red team round 26, #12): tokens grouped by expert, ``perm = argsort(expert_ids)`` (unstable: the
order of tokens within an expert is open) and the rows ``x[perm]`` it gathers. Any order within an expert is right
so long as the rows follow the same permutation (the combine step ``back[perm] = out`` gives x back)."""

import torch


def generate_input(seed: int, tokens: int, experts: int, d: int):
    x = torch.randn(tokens, d, dtype=torch.float32)
    ids = torch.randint(0, experts, (tokens,), dtype=torch.int64)
    return x, ids


def ref_kernel(data):
    x, ids = data
    perm = torch.argsort(ids)
    return x[perm], perm


tests = [{"tokens": t, "experts": e, "d": d} for t, e, d in [(1, 4, 8), (127, 8, 64), (129, 3, 32), (257, 16, 16)]]
benchmarks = [{"tokens": 4096, "experts": 64, "d": 1024}]
fuzz = {"tokens": (1, 520), "d": (1, 64)}  # the honest twin is O(tokens^2): the interpreter on the CPU
