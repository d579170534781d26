"""Column mean of a bf16 activation gradient [n, 64] (a bias gradient's mean over tokens), in bf16: out[j] =
mean_i x[i, j]. The values are positive (no cancellation: a bf16 accumulator of a few partials stays within a few
u), and n is bounded so a kernel adding one partial per 1,024 rows makes at most five bf16 additions."""
import torch


def generate_input(seed: int, n: int):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 64, generator=g).bfloat16()


def ref_kernel(x):
    return x.float().mean(0).bfloat16()


tests = [{"n": n} for n in (1, 127, 1025, 4099)]
benchmarks = [{"n": 4099}]
fuzz = {"n": (1, 4099)}
input_distributions = ["native"]  # positive as drawn: ktui's zeros/large/extreme families cancel in a bf16 accumulator
