import torch

# Per-(stat, axis) reductions of a batch, returned keyed by (name, dim) tuples, as a metrics dict often is.


def generate_input(seed: int, rows: int, cols: int):
    return (torch.randn(rows, cols),)


def ref_kernel(data):
    (x,) = data
    return {("max", 1): x.amax(dim=1), ("min", 1): x.amin(dim=1)}


tests = [{"rows": r, "cols": c} for r, c in ((1, 1), (3, 127), (5, 129), (7, 1023), (2, 1025), (4, 4099))]
benchmarks = [{"rows": 4096, "cols": 8192}]
