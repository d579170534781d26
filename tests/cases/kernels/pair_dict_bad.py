"""BAD (containers): the right values and indices, in a dict keyed 0 and 1 where the reference returns a tuple.
Their paths (out[0], out[1]) are the tuple's: only the container types tell them apart."""

import torch


def custom_kernel(x):
    return {0: x.amax(dim=-1), 1: torch.argmax(x, dim=-1)}
