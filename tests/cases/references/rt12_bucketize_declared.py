"""Bucketize: out[i] = the number of boundaries below values[i] (torch.searchsorted, side="left"), boundaries sorted.

The boundaries must be sorted (what searchsorted takes): declared structured_inputs, so no distribution or
near-duplicate changes them; the values get every distribution."""

import torch


def generate_input(seed: int, n: int, nb: int):
    boundaries = torch.randn(nb, dtype=torch.float32).sort().values
    values = 1.2 * torch.randn(n, dtype=torch.float32)
    return boundaries, values


def ref_kernel(data):
    boundaries, values = data
    return torch.searchsorted(boundaries, values)


structured_inputs = (0,)  # the sorted boundaries: left as generated
tests = [{"n": n, "nb": nb} for n, nb in ((1, 1), (127, 255), (129, 1000), (1025, 1023), (4099, 4097))]
benchmarks = [{"n": 1 << 24, "nb": 4096}]
fuzz = {"nb": (1, 1 << 16)}


def bytes_moved(n, nb):
    return 4 * nb + 12 * n
