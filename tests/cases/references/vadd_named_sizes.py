"""vadd with its sizes named, not given as integers: tests = [{"size": "tiny"}, ...]. Nothing in the specs is a size
ktui can change, so a run draws no fuzzed spec, and the run rung says so."""
import torch

SIZES = {"tiny": 1, "odd": 127, "block": 1025, "prime": 4099}


def generate_input(seed: int, size: str):
    n = SIZES[size]
    return torch.randn(n), torch.randn(n)


def ref_kernel(data):
    a, b = data
    return a + b


tests = [{"size": s} for s in SIZES]
