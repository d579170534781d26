"""Gradient clipping by value, in place (torch.nn.utils.clip_grad_value_ on one gradient): g.clamp_(-clip, clip)."""
import torch


def generate_input(seed: int, n: int, dtype: str):
    return torch.randn(n, dtype=getattr(torch, dtype)), 5.0


def ref_kernel(data):
    g, clip = data
    return g.clamp_(-clip, clip)


inplace = (0,)
tests = [{"n": n, "dtype": dt} for n in (1, 127, 1025, 4099) for dt in ("float32", "bfloat16")]
benchmarks = [{"n": 1 << 26, "dtype": "bfloat16"}]
