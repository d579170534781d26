"""xent (new-user trial 32): fused cross-entropy over bf16 logits [tokens, vocab] with int64 targets and ignore_index=-100.

Forward: the mean loss over non-ignored tokens, in fp32. Backward: dlogits in bf16 (through autograd).
"""

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100


def generate_input(seed: int, tokens: int, vocab: int):
    # ktui calls this after torch.manual_seed(seed), inside `with torch.device(<device>)`.
    logits = (2.0 * torch.randn(tokens, vocab, dtype=torch.float32)).to(torch.bfloat16)
    logits.requires_grad_(True)  # training use: the backward is judged too
    targets = torch.randint(0, vocab, (tokens,), dtype=torch.int64)
    ignored = torch.rand(tokens) < 0.25
    ignored[0] = False  # at least one token counts, so the mean is defined
    targets = torch.where(ignored, torch.full_like(targets, IGNORE_INDEX), targets)
    return logits, targets


def ref_kernel(data):
    logits, targets = data
    # fp32 in the native run, float64 in ktui's truth run
    x = logits.to(torch.promote_types(logits.dtype, torch.float32))
    return F.cross_entropy(x, targets, ignore_index=IGNORE_INDEX, reduction="mean")


_shapes = [(1, 1), (1, 129), (7, 127), (5, 257), (3, 1025), (2, 4099), (33, 64), (2, 32000)]
tests = [{"tokens": t, "vocab": v} for t, v in _shapes]
benchmarks = [{"tokens": 4096, "vocab": 32000}]  # timed on a GPU only


def bytes_moved(tokens, vocab):  # logits read twice (fwd, bwd), dlogits written once, bf16
    return 3 * tokens * vocab * 2
