"""LayerNorm over the last dimension with weight and bias, fp32 (cases.md honest-fp32).

On the shifted distribution (rows around +-100..200) the fp32 mean carries a rounding error of about eps * 150, so
every output is off by ~1e-5 of its row's scale in any honest fp32 computation, torch's own ``layer_norm``
included: a fixed atol = rtol = 1e-5 fails them all. The default tolerance follows what the reference computed in
float32 achieves (``ktui.worker.tolerance``), so a two-pass kernel passes and a one-pass variance
(E[x^2] - E[x]^2, which cancels catastrophically on shifted rows) fails.
"""

import torch

EPS = 1e-5


def generate_input(seed, rows, cols):
    x = torch.randn(rows, cols)
    weight = 1.0 + 0.5 * torch.randn(cols)
    bias = 0.5 * torch.randn(cols)
    return x, weight, bias


def ref_kernel(data):
    x, weight, bias = data
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, EPS)


# One row, a block size plus and minus one, a prime width, several rows of a wide row.
tests = [
    {"rows": 1, "cols": 1},
    {"rows": 3, "cols": 127},
    {"rows": 5, "cols": 129},
    {"rows": 4, "cols": 1031},
    {"rows": 2, "cols": 4099},
]
benchmarks = [{"rows": 8192, "cols": 8192}]


def bytes_moved(rows, cols):
    return 4 * (2 * rows * cols + 2 * cols)
