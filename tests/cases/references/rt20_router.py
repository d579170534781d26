"""MoE router, DeepSeek-V3 / vLLM style: sigmoid scores, the top-k experts chosen by score plus a load-balancing
correction bias, the weights the chosen experts' sigmoid scores renormalized to sum 1. The order of the k picks is
unspecified (``topk(sorted=False)``, as vLLM's ``grouped_topk`` calls it): a caller dispatches token t to expert
ids[t, j] with weight w[t, j], so only the (weight, id) pairs of a row matter.

Returns (w float32 [T, k], ids int64 [T, k]).
"""

import torch


def generate_input(seed: int, tokens: int, experts: int, k: int):
    logits = torch.randn(tokens, experts, dtype=torch.float32)
    bias = 0.1 * torch.randn(experts, dtype=torch.float32)
    return logits, bias, k


def ref_kernel(data):
    logits, bias, k = data
    scores = logits.sigmoid()
    _, ids = torch.topk(scores + bias, k, dim=-1, sorted=False)
    w = scores.gather(1, ids)
    w = w / w.sum(-1, keepdim=True)
    return w, ids


tests = [
    {"tokens": t, "experts": e, "k": k}
    for t in (1, 7, 129)
    for e, k in ((16, 4), (64, 6), (256, 8))
]
benchmarks = [{"tokens": 8192, "experts": 256, "k": 8}]
fuzz = {"tokens": (1, 1024)}


def bytes_moved(tokens: int, experts: int, k: int) -> int:
    return 4 * tokens * experts + 4 * experts + 12 * tokens * k
