"""Rotary position embedding (the "rotate half" form of GPT-NeoX / Llama) with explicit position ids:

    c, s = cos_cache[pos], sin_cache[pos]            # (batch, seq, d/2) each
    out = cat(x1 * c - x2 * s, x2 * c + x1 * s)      # x1, x2 = the halves of each row of x (batch, seq, d)

generate_input makes the position ids of a prefill as Hugging Face's models do:
arange(seq).unsqueeze(0).expand(batch, -1). (Red team round 12 W1; the tests' copy: only the `indices` distribution.)"""

import torch

MAX_POS = 8192


def generate_input(seed: int, batch: int, seq: int, d: int, dtype: str):
    dt = getattr(torch, dtype)
    x = torch.randn(batch, seq, d, dtype=torch.float32).to(dt)
    inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    ang = torch.arange(MAX_POS, dtype=torch.float32)[:, None] * inv[None, :]
    pos = torch.arange(seq, dtype=torch.int64).unsqueeze(0).expand(batch, -1)
    return x, ang.cos().to(dt), ang.sin().to(dt), pos


def ref_kernel(data):
    x, cos_cache, sin_cache, pos = data
    h = x.shape[-1] // 2
    c, s = cos_cache[pos], sin_cache[pos]
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)


tests = [{"batch": b, "seq": s, "d": d, "dtype": dt} for b, s, d in ((1, 1, 64), (2, 7, 128), (3, 33, 64), (2, 129, 128))
         for dt in ("float32", "bfloat16")]
benchmarks = [{"batch": 8, "seq": 8192, "d": 128, "dtype": "bfloat16"}]
fuzz = {"seq": (1, MAX_POS), "d": (2, 256), "batch": (1, 64)}  # positions within the cache


input_distributions = ["native", "indices"]  # the test's: the position ids varied, the rest as made (quicker)


def valid_spec(spec):
    return spec["d"] % 2 == 0


def bytes_moved(batch, seq, d, dtype):
    return 3 * batch * seq * d * torch.empty(0, dtype=getattr(torch, dtype)).element_size()
