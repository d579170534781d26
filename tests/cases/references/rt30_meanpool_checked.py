"""rt30_meanpool with its contract stated: ref_kernel raises on a length outside [0, T] (red team round 30, #7).
Masked mean pooling of padded sequences (sentence embeddings): x (B, T, D), lengths (B,); out[b] = mean of
x[b, :lengths[b]], 0 for an empty sequence."""

import torch


def generate_input(seed: int, batch: int, t: int, d: int, dtype: str):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, t + 1, (batch,), generator=g)
    x = torch.randn(batch, t, d, generator=g).to(getattr(torch, dtype))
    return x, lengths


def ref_kernel(data):
    x, lengths = data
    assert bool(((lengths >= 0) & (lengths <= x.shape[1])).all()), "lengths must lie in [0, T]"
    t = x.shape[1]
    mask = (torch.arange(t, device=x.device)[None, :] < lengths[:, None]).to(x.dtype)
    s = (x * mask[:, :, None]).sum(1)
    return s / lengths.clamp(min=1).to(x.dtype)[:, None]


tests = [
    {"batch": b, "t": t, "d": d, "dtype": dt}
    for b, t, d in ((1, 1, 1), (4, 17, 127), (7, 33, 129))
    for dt in ("float32", "bfloat16")
]
benchmarks = [{"batch": 256, "t": 512, "d": 1024, "dtype": "bfloat16"}]
