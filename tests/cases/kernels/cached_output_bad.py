"""BAD (cached-output, GPU): remembers its output by input pointers and replays it when they come back."""

import torch

_cache = {}


def custom_kernel(data):
    a, b = data
    key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
    if key not in _cache:
        _cache[key] = torch.matmul(a, b)
    return _cache[key]
