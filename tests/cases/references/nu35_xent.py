"""xent (new-user trial 35): fused cross-entropy forward over a large vocabulary (Liger/Unsloth style); a quarter of the tokens ignored at random, so the smallest and largest specs at seed 1 hold no -100.

data = (logits bf16 [tokens, vocab], targets int64 [tokens] with some = ignore_index, ignore_index)
returns (loss fp32 [tokens], 0 where the target is ignored; lse fp32 [tokens], logsumexp of each row).
"""

import torch
import torch.nn.functional as F


def generate_input(seed: int, tokens: int, vocab: int, dtype: str = "bfloat16"):
    logits = (4.0 * torch.randn(tokens, vocab, dtype=torch.float32)).to(getattr(torch, dtype))
    targets = torch.randint(0, vocab, (tokens,), dtype=torch.int64)
    ignore = torch.rand(tokens) < 0.25
    targets[ignore] = -100
    return logits, targets, -100


def ref_kernel(data):
    logits, targets, ignore_index = data
    # fp32 for the native run, float64 when ktui computes the truth
    x = logits if logits.dtype == torch.float64 else logits.float()
    lse = torch.logsumexp(x, dim=-1)
    loss = F.cross_entropy(x, targets, ignore_index=ignore_index, reduction="none")
    return loss.to(torch.float32), lse.to(torch.float32)


tests = [
    {"tokens": t, "vocab": v}
    for t, v in [(1, 1), (3, 127), (5, 129), (4, 1025), (3, 4099), (2, 32000), (17, 257)]
]
benchmarks = [{"tokens": 4096, "vocab": 32000}]  # timed on a GPU only


def bytes_moved(tokens, vocab, dtype="bfloat16"):
    return tokens * vocab * 2 + tokens * 8 + 2 * tokens * 4
