"""Per-token cross-entropy with an ignore_index (padding positions give 0), as a causal-LM loss computes it:
F.cross_entropy(logits, labels, ignore_index=ignore_index, reduction="none")."""

import torch
import torch.nn.functional as F


def generate_input(seed: int, rows: int, vocab: int, dtype: str):
    logits = (2 * torch.randn(rows, vocab)).to(getattr(torch, dtype))
    labels = torch.randint(0, vocab, (rows,))
    labels[1::3] = -100  # padding positions, as a data collator marks them
    return logits, labels, -100


def ref_kernel(data):
    logits, labels, ignore_index = data
    return F.cross_entropy(logits, labels, ignore_index=ignore_index, reduction="none")


_shapes = [(1, 1), (7, 127), (5, 129), (3, 1025), (2, 4099)]
tests = [{"rows": r, "vocab": v, "dtype": dt} for dt in ("float32", "bfloat16") for r, v in _shapes]
benchmarks = [{"rows": 8192, "vocab": 32000, "dtype": "bfloat16"}]
fuzz = {"vocab": (1, 8192)}
