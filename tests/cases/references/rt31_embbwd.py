"""Embedding backward (red team round 31's work queue; rt29_embbwd with fuzzed sizes bounded for the CPU test):
torch.nn.functional.embedding's backward (index_add_ over ids, repeated ids summed)."""

import torch


def generate_input(seed: int, n: int, vocab: int, d: int, dtype: str):
    ids = torch.randint(0, vocab, (n,), dtype=torch.int64)
    grad_out = torch.randn(n, d, dtype=getattr(torch, dtype))
    return grad_out, ids, vocab


def ref_kernel(data):
    grad_out, ids, vocab = data
    gw = torch.zeros(vocab, grad_out.shape[1], dtype=torch.float32, device=grad_out.device)
    gw.index_add_(0, ids, grad_out.float())
    return gw


tests = [{"n": n, "vocab": v, "d": d, "dtype": "float32"} for n, v, d in ((1, 1, 1), (127, 50, 64), (129, 17, 129), (1025, 300, 33))]
benchmarks = [{"n": 16384, "vocab": 32000, "d": 4096, "dtype": "float32"}]
fuzz = {"n": (1, 2048), "vocab": (1, 400), "d": (1, 160)}  # (a test problem: the interpreter's seconds go by tokens)
