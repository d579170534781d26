"""Top-k pooling (graph U-Nets / PyG's TopKPooling): keep the k nodes of highest score, each node's features scaled by
its gate, sigmoid(score). The order of the k picks is unspecified (``topk(sorted=False)``): a caller uses row j with
node ids[j], so only the (id, row) pairs matter.

Returns (ids int64 [k], rows float32 [k, D])."""

import torch


def generate_input(seed: int, nodes: int, features: int, k: int):
    x = torch.randn(nodes, features, dtype=torch.float32)
    score = torch.randn(nodes, dtype=torch.float32)
    return x, score, k


def ref_kernel(data):
    x, score, k = data
    w, ids = torch.topk(score, k, sorted=False)
    return ids, x[ids] * torch.sigmoid(w).unsqueeze(-1)


tests = [{"nodes": n, "features": d, "k": k} for n, d, k in ((16, 8, 4), (257, 33, 17), (1000, 64, 100))]
fuzz = {"nodes": (128, 2048)}
