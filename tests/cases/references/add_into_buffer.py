"""out = a + b, written into the caller's output buffer (GPU MODE style: data carries `out`, the kernel fills it and
returns it; callers read `out`)."""

import torch


def generate_input(seed: int, n: int):
    a = torch.randn(n, dtype=torch.float32)
    b = torch.randn(n, dtype=torch.float32)
    return a, b, torch.empty(n, dtype=torch.float32)


def ref_kernel(data):
    a, b, out = data
    out.copy_(a + b)
    return out


tests = [{"n": n} for n in (1, 129, 1025, 4099)]
outputs = (2,)
