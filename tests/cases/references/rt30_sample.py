"""Inverse-CDF sampling of next tokens from logits with a given uniform per row (as a sampler does with its own
RNG draws): idx[b] = first i with cumsum(softmax(logits[b]))[i] >= u[b] (clamped to V - 1)."""

import torch


def generate_input(seed: int, batch: int, vocab: int):
    g = torch.Generator().manual_seed(seed)
    logits = 2.0 * torch.randn(batch, vocab, generator=g)
    u = torch.rand(batch, generator=g)
    return logits, u


def ref_kernel(data):
    logits, u = data
    cdf = torch.softmax(logits, dim=-1).cumsum(-1)
    idx = torch.searchsorted(cdf, u[:, None].to(cdf.dtype)).squeeze(-1)
    return idx.clamp(max=logits.shape[-1] - 1)


tests = [{"batch": b, "vocab": v} for b, v in ((1, 1), (4, 127), (8, 1000), (3, 4099))]
benchmarks = [{"batch": 256, "vocab": 128256}]
