"""Shift-register state update (a causal conv cache kept newest-first, updated in place each decode step): every
row's window shifts right by one and the new value goes in at the front: state[:, 1:] = state[:, :-1]; state[:, 0] = new."""
import torch


def generate_input(seed: int, rows: int, width: int, dtype: str):
    dt = getattr(torch, dtype)
    return torch.randn(rows, width, dtype=dt), torch.randn(rows, dtype=dt)


def ref_kernel(data):
    state, new = data
    state[:, 1:] = state[:, :-1].clone()
    state[:, 0] = new
    return state


inplace = (0,)
tests = [{"rows": r, "width": w, "dtype": dt} for r, w in ((1, 2), (3, 127), (2, 1025), (5, 4099)) for dt in ("float32", "bfloat16")]
benchmarks = [{"rows": 4096, "width": 4096, "dtype": "bfloat16"}]
