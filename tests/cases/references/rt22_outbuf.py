"""y = 2 x written into a caller-provided output buffer (out= style, as a C API or torch.mul(x, 2, out=y) works):
the buffer is listed in `outputs`; the op returns nothing."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    dt = getattr(torch, dtype)
    return torch.randn(n).to(dt), torch.empty(n, dtype=dt)


def ref_kernel(data):
    x, out = data
    torch.mul(x, 2, out=out)


outputs = (1,)
tests = [{"n": n, "dtype": dt} for n in (1, 129) for dt in ("float32", "bfloat16")]
benchmarks = [{"n": 1 << 26, "dtype": "float32"}]
