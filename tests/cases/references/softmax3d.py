"""Softmax over the last dimension of a (batch, seq, dim) tensor, fp32 and bf16 (attention-score shaped)."""
import torch


def generate_input(seed: int, batch: int, seq: int, dim: int, dtype: str) -> torch.Tensor:
    return (3.0 * torch.randn(batch, seq, dim, dtype=torch.float32)).to(getattr(torch, dtype))


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


_shapes = [(1, 1, 1), (1, 1, 129), (2, 7, 127), (3, 5, 257), (2, 3, 1025), (1, 2, 4099), (4, 33, 64)]
tests = [{"batch": b, "seq": s, "dim": d, "dtype": dt} for dt in ("float32", "bfloat16") for b, s, d in _shapes]
benchmarks = [{"batch": 16, "seq": 1024, "dim": 4096, "dtype": "bfloat16"}]
tolerance = {"float32": {"atol": 1e-6, "rtol": 1e-5}}


def bytes_moved(batch, seq, dim, dtype):
    return 2 * batch * seq * dim * torch.empty(0, dtype=getattr(torch, dtype)).element_size()
