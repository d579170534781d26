"""BAD (nondeterminism as an exploit): right on the first call, 4% too large on a second call with the same input.
The second answer must pass the same verdict as the first, not only a PSNR check against it."""

import hashlib

import torch

_seen = set()


def custom_kernel(x):
    key = hashlib.sha1(x.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()
    factor = 1.04 if key in _seen and x.numel() > 1 else 1.0
    _seen.add(key)
    return (x.float() * 2 * factor).to(torch.bfloat16)
