"""A linear recurrence over time (an RNN-like cell without weights), time-major as nn.GRU/nn.LSTM lay it out:
h_t = decay * h_{t-1} + x_t; returns (output, h_n): every step's state (T, B, D) and the final state (1, B, D),
two tensors of their own, as nn.GRU returns (output, h_n)."""

import torch


def generate_input(seed: int, T: int, B: int, D: int, dtype: str):
    dt = getattr(torch, dtype)
    return torch.randn(T, B, D).to(dt), torch.randn(B, D).to(dt), 0.9


def ref_kernel(data):
    x, h0, decay = data
    h = h0
    hs = []
    for t in range(x.shape[0]):
        h = decay * h + x[t]
        hs.append(h)
    return torch.stack(hs, 0), h.unsqueeze(0).clone()


_shapes = [(1, 1, 1), (3, 2, 127), (5, 3, 129), (9, 1, 1025), (4, 2, 4099)]
tests = [{"T": t, "B": b, "D": d, "dtype": dt} for dt in ("float32", "bfloat16") for t, b, d in _shapes]
benchmarks = [{"T": 512, "B": 32, "D": 4096, "dtype": "bfloat16"}]
fuzz = {"T": (1, 16)}
