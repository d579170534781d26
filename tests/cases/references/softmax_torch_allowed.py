"""Row softmax that versions may compute in torch (``allow_torch = True``): the reference of the no_launch case.

Row softmax: out[i, :] = exp(x[i, :] - max_i) / sum(exp(x[i, :] - max_i)), in fp32 and bf16.

The output has the input's dtype; ktui compares it with the softmax computed in float64.
"""

import torch


def generate_input(seed: int, rows: int, cols: int, dtype: str) -> torch.Tensor:
    # Logits with a spread of a few units, so that the max subtraction matters and probabilities vary.
    x = 3.0 * torch.randn(rows, cols, dtype=torch.float32)
    return x.to(getattr(torch, dtype))


def ref_kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


# Tails around block widths 128, 256 and 1024, a prime width, a single element and a single row.
_shapes = [(1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099), (33, 64)]
tests = [{"rows": r, "cols": c, "dtype": dt} for dt in ("float32", "bfloat16") for r, c in _shapes]
benchmarks = [{"rows": 8192, "cols": 8192, "dtype": "float32"}, {"rows": 8192, "cols": 8192, "dtype": "bfloat16"}]

tolerance = {"float32": {"atol": 1e-6, "rtol": 1e-5}}


def bytes_moved(rows: int, cols: int, dtype: str) -> int:
    return 2 * rows * cols * torch.empty(0, dtype=getattr(torch, dtype)).element_size()

# Versions may compute in torch: a version that launches no Triton or CuTeDSL kernel is not failed for it.
allow_torch = True
