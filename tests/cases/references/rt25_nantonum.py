"""nan_to_num(exp(x)) (red team round 25, #3): an overflow saturates at the dtype's largest finite value."""

import torch

# Sanitizing activations: NaN -> 0, +-inf -> the largest finite value of the tensor's dtype (torch.nan_to_num's
# documented default: "the greatest finite value representable by input's dtype").


def generate_input(seed: int, n: int, dtype: str):
    x = torch.randn(n, dtype=getattr(torch, dtype)) * 4
    return (x,)


def ref_kernel(data):
    (x,) = data
    return torch.nan_to_num(torch.exp(x))


tests = [{"n": n, "dtype": dt} for n in (1, 127, 129, 1023, 1025, 4099) for dt in ("float32",)]
benchmarks = [{"n": 1 << 24, "dtype": "float32"}]
