"""BAD (integer outputs): the index is one too far whenever the maximum sits past column 255. An int64 output from
bf16 inputs must still compare exactly, not by PSNR."""

import torch


def custom_kernel(x):
    idx = torch.argmax(x, dim=-1)
    return idx + (idx >= 256).to(idx.dtype)
