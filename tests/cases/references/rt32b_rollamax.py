"""Sliding-window state update for an fp8 KV/conv cache, updated in place each decode step: every row's window shifts
left by one and the new value goes in at the end (state[:, :-1] = state[:, 1:]; state[:, -1] = new), and each row's
absolute maximum after the update is returned (the next step's fp8 scale)."""
import torch


def generate_input(seed: int, rows: int, width: int, dtype: str):
    dt = getattr(torch, dtype)
    return torch.randn(rows, width, dtype=dt), torch.randn(rows, dtype=dt)


def ref_kernel(data):
    state, new = data
    state[:, :-1] = state[:, 1:].clone()
    state[:, -1] = new
    return state, state.abs().amax(-1).float()


inplace = (0,)
tests = [{"rows": r, "width": w, "dtype": dt} for r, w in ((1, 2), (3, 127), (2, 1025), (5, 4099)) for dt in ("float32", "bfloat16")]
benchmarks = [{"rows": 4096, "width": 4096, "dtype": "bfloat16"}]
