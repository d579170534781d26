"""fp8 (e4m3) GEMM with a float32 output: out = a.float() @ b.float(), per-tensor scales already applied."""
import torch


def generate_input(seed: int, m: int, n: int, k: int):
    a = torch.randn(m, k, dtype=torch.float32).to(torch.float8_e4m3fn)
    b = torch.randn(k, n, dtype=torch.float32).to(torch.float8_e4m3fn)
    return a, b


def ref_kernel(data):
    a, b = data
    return a.to(torch.float32) @ b.to(torch.float32)


tests = [{"m": m, "n": n, "k": k} for m, n, k in ((1, 1, 1), (16, 33, 127), (33, 16, 129), (17, 31, 1025), (8, 8, 4099))]
benchmarks = [{"m": 4096, "n": 4096, "k": 4096}]
input_distributions = ["native", "normal", "uniform"]
