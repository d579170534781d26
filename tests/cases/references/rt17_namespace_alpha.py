"""out = x * cfg.alpha, the float argument held in a config object, types.SimpleNamespace (red team round 17, pairs
with `rt17_namespace_alpha_bad.py`). `_map_inputs` walks tuples, lists, dicts, named tuples and dataclasses only:
a float in any other object is never scaled or moved, and no note names it (a tensor there is a reference error)."""

import types

import torch


def generate_input(seed: int, n: int):
    return torch.randn(n), types.SimpleNamespace(alpha=2.5)


def ref_kernel(data):
    x, cfg = data
    return x * cfg.alpha


tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099)]
benchmarks = [{"n": 1 << 24}]
