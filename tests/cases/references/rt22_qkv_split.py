"""Attention prologue: split a fused QKV projection into q, k, v and pre-scale q by 1/sqrt(d) (torch.split returns
views, so k and v are views of qkv, as in most attention code)."""

import torch


def generate_input(seed: int, tokens: int, d: int, dtype: str):
    return (torch.randn(tokens, 3 * d).to(getattr(torch, dtype)),)


def ref_kernel(data):
    (qkv,) = data
    d = qkv.shape[-1] // 3
    q, k, v = qkv.split(d, dim=-1)
    return q * d**-0.5, k, v


_shapes = [(1, 1), (7, 127), (5, 129), (3, 1025)]
tests = [{"tokens": t, "d": d, "dtype": dt} for dt in ("float32", "bfloat16") for t, d in _shapes]
benchmarks = [{"tokens": 8192, "d": 4096, "dtype": "bfloat16"}]
