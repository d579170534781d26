"""x * cos(pos * 0.01): a rotary-style scale by an angle computed from int64 positions (new-user trial 22 F9: on the
``intrange`` values, positions near 2**62, float64 does not hold the position and one rounding of the angle moves it by
radians: the float64 reference is no truth there)."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    x = torch.randn(n).to(getattr(torch, dtype))
    pos = torch.randint(0, 4096, (n,), dtype=torch.int64)
    return x, pos


def ref_kernel(data):
    x, pos = data
    return (x.float() * torch.cos(pos.float() * 0.01)).to(x.dtype)


tests = [{"n": n, "dtype": dt} for n in (129, 1025) for dt in ("float32", "bfloat16")]
input_distributions = ["normal", "intrange"]
