"""out = x + y into the caller's output buffer (GPU MODE's `outputs` style: data holds the buffer, the reference fills
and returns it), on 2-D rows (red team round 17, pairs with `rt17_add_out_buffer_bad.py`). The layout cases
(transposed, padded, offset, mixed) re-lay out the inputs only: a declared output buffer is always as generate_input
makes it, contiguous."""

import torch


def generate_input(seed: int, rows: int, cols: int):
    x = torch.randn(rows, cols)
    y = torch.randn(rows, cols)
    out = torch.empty(rows, cols)
    return x, y, out


def ref_kernel(data):
    x, y, out = data
    torch.add(x, y, out=out)
    return out


outputs = (2,)
tests = [{"rows": r, "cols": c} for r, c in [(1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099)]]
benchmarks = [{"rows": 8192, "cols": 8192}]
