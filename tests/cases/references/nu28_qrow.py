"""qrow: symmetric per-row int8 quantization (the activation side of W8A8): s = absmax(row)/127, q = round(x/s)."""

import torch


def generate_input(seed: int, m: int, k: int, dtype: str):
    return (torch.randn(m, k, dtype=getattr(torch, dtype)),)


def ref_kernel(data):
    (x,) = data
    s = (x.abs().amax(dim=-1) / 127).to(torch.float32)
    s = torch.where(s == 0, torch.ones_like(s), s)
    q = torch.round(x.to(torch.float32) / s[:, None]).clamp(-127, 127).to(torch.int8)
    return q, s


tests = [{"m": m, "k": k, "dtype": dt} for (m, k) in [(1, 1), (3, 127), (5, 129), (16, 1023), (7, 4099)]
         for dt in ("float16", "bfloat16")]
benchmarks = [{"m": 4096, "k": 4096, "dtype": "bfloat16"}]
fuzz = {"m": (1, 64), "k": (1, 8192)}
