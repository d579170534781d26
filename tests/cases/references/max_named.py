"""Row maximum as torch returns it, a named tuple ``torch.return_types.max(values, indices)``: callers read
``out.values`` and ``out.indices``, so a named tuple with other field names (or a plain tuple) is another answer."""

import torch


def generate_input(seed, rows, cols):
    return torch.randn(rows, cols)


def ref_kernel(x):
    return x.max(dim=-1)


tests = [{"rows": 1, "cols": 1}, {"rows": 3, "cols": 129}]
input_distributions = ["native"]
contiguous_only = True

# The cases of this reference judge how outputs are compared, with versions written in torch: they may launch no
# Triton or CuTeDSL kernel (otherwise correctness fails them "times torch, not a kernel").
allow_torch = True
