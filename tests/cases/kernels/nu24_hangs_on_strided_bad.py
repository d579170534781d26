"""BAD (new-user trial 24, F1's message): loops for ever when its input is not contiguous, as a kernel that takes a
padding decoy for a loop bound does; the timeout must name the case's layout, not only "the kernel may hang"."""

import time

import torch


def custom_kernel(data):
    values, offsets = data
    while not (values.is_contiguous() and offsets.is_contiguous()):
        time.sleep(0.05)
    segs = offsets.numel() - 1
    ids = torch.repeat_interleave(torch.arange(segs), offsets[1:] - offsets[:-1])
    return torch.zeros(segs, values.shape[1], dtype=values.dtype).index_add_(0, ids, values)
