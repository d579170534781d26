"""BAD (robust-odd-outputs): its honest twin with the bfloat16, bool and float8_e5m2 outputs wrong (each 0-d value
off by one, each transposed view's rows reversed): odd shapes are judged like any other."""

import torch

FLOATS = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
INTS = ("int8", "int16", "int32", "int64", "uint8", "bool")
WRONG = ("bfloat16", "bool", "float8_e5m2")


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
