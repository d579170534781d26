"""GOOD (robust-odd-outputs): returns every output of ``odd_outputs`` right, each in its odd shape: a 0-d tensor, a
tensor with no elements, and a transposed (non-contiguous) view of a buffer of its own."""

import torch

FLOATS = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
INTS = ("int8", "int16", "int32", "int64", "uint8", "bool")
WRONG = ()


def custom_kernel(x):
    out = {}
    for name in FLOATS + INTS:
        dt = getattr(torch, name)
        v = x if name in FLOATS else (x > 0)
        zero_d = (v.sum() if name in FLOATS else v.sum() % 2).to(dt)
        rows = v.to(dt).clone().t()  # (3, n) with strides (1, 3): not contiguous
        if name in WRONG:
            zero_d = (zero_d.to(torch.float32) + 1).to(dt)
            rows = rows.clone().flip(-1).t().contiguous().t()
        out[f"{name} 0-d"] = zero_d
        out[f"{name} empty"] = v[:0].to(dt)
        out[f"{name} rows"] = rows
    return out
