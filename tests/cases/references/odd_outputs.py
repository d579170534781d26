"""Outputs of every dtype torch kernels return, each in the odd shapes: 0-d (what ``x.sum()`` returns), no
elements, and a non-contiguous view. Every one of them must travel from the candidate to the judge and be judged."""

import torch

FLOATS = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
INTS = ("int8", "int16", "int32", "int64", "uint8", "bool")


def generate_input(seed, n):
    return torch.randn(n, 3)


def ref_kernel(x):
    out = {}
    for name in FLOATS + INTS:
        dt = getattr(torch, name)
        v = x if name in FLOATS else (x > 0)  # integer outputs are exact in float64 and float32 alike
        out[f"{name} 0-d"] = (v.sum() if name in FLOATS else v.sum() % 2).to(dt)
        out[f"{name} empty"] = v[:0].to(dt)
        out[f"{name} rows"] = v.t().contiguous().to(dt)  # the kernel returns the same values as a transposed view
    return out


tests = [{"n": n} for n in (1, 129)]
input_distributions = ["native"]
contiguous_only = True

# The cases of this reference judge how outputs are compared, with versions written in torch: they may launch no
# Triton or CuTeDSL kernel (otherwise correctness fails them "times torch, not a kernel").
allow_torch = True
