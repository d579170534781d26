"""Exact GELU, 0.5 x (1 + erf(x / sqrt 2)), on 3 N(0, 1) inputs, in float32 and bfloat16, with the reference's own
float32 tolerance (a new user's first problem, as README's examples set one): where 1 + erf cancels in float32
(x near -4.5) a 1-element output's relative error is 1-2%, the reference's own included."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    return torch.randn(n, dtype=getattr(torch, dtype)) * 3.0


def ref_kernel(x):
    return torch.nn.functional.gelu(x)


tolerance = {"float32": {"atol": 1e-6, "rtol": 1e-5}}
tests = [{"n": n, "dtype": dt} for n in (1, 127, 1025) for dt in ("float32", "bfloat16")]
