"""cmul_wide.py with a tolerance of its own for its complex64 output, keyed by the complex dtype's name: looked up
as written (before, only "float32" was: the key "complex64" was ignored and the default applied)."""
import torch


def generate_input(seed: int, n: int):
    a = 1000 * torch.randn(n, dtype=torch.complex64)
    b = 1000 * torch.randn(n, dtype=torch.complex64)
    return a, b


def ref_kernel(data):
    a, b = data
    return a * b


tolerance = {"complex64": {"atol": 1e-2, "rtol": 5e-2, "max_rel_l2": 2e-2}}  # a filter that needs 1.5 digits

tests = [{"n": n} for n in (1, 127, 129, 1025, 4099)]
benchmarks = [{"n": 1 << 26}]
