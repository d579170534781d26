"""CSR segment sum (new-user trial 24): out[s, :] = values[offsets[s]:offsets[s+1], :].sum(0), empty segments 0."""

import torch


def generate_input(seed: int, segs: int, max_len: int, d: int, dtype: str):
    lengths = torch.randint(0, max_len + 1, (segs,), dtype=torch.int64)
    offsets = torch.zeros(segs + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, 0)
    values = torch.randn(int(offsets[-1]), d, dtype=getattr(torch, dtype))
    return values, offsets


def ref_kernel(data):
    values, offsets = data
    segs = offsets.numel() - 1
    ids = torch.repeat_interleave(torch.arange(segs, device=values.device), offsets[1:] - offsets[:-1])
    out = torch.zeros(segs, values.shape[1], dtype=values.dtype, device=values.device)
    out.index_add_(0, ids, values)
    return out


tests = [{"segs": 5, "max_len": 8, "d": 33, "dtype": "float32"}]
fuzz = {"segs": (1, 8), "max_len": (1, 8), "d": (1, 64)}
