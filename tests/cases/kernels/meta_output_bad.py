"""BAD (output kind): a tensor on the meta device has a shape and a dtype but no data."""

import torch


def custom_kernel(data):
    a, b = data
    return torch.empty_like(a, device="meta")
