"""Distinct ids with their inverse (red team round 25, #10): ``torch.unique(ids, sorted=False,
return_inverse=True)``. torch documents ``sorted`` as "whether to sort the unique elements in ascending order":
False leaves their order open, so any order of the distinct ids is right, with the inverse indices pointing into it."""

import torch


def generate_input(seed: int, n: int, m: int):
    return (torch.randint(0, m, (n,), dtype=torch.int64),)


def ref_kernel(data):
    (ids,) = data
    return torch.unique(ids, sorted=False, return_inverse=True)


tests = [{"n": n, "m": m} for n, m in [(1, 4), (127, 50), (129, 7), (257, 300), (1025, 64)]]
benchmarks = [{"n": 1 << 16, "m": 4096}]
fuzz = {"n": (1, 2100)}  # the twins are O(n^2): the interpreter on the CPU
