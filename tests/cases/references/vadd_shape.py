"""Red team round 10: vadd_shape: out = a + b, fp32, the shape given as a tuple field (as many hand-written
references do)."""
import torch


def generate_input(seed: int, shape: tuple):
    return torch.randn(*shape), torch.randn(*shape)


def ref_kernel(data):
    a, b = data
    return a + b


# tails: 1, block sizes +- 1, a prime; rows of odd widths
tests = [{"shape": s} for s in ((1,), (127,), (129,), (1023,), (1025,), (4099,), (3, 129), (7, 1025))]
benchmarks = [{"shape": (1 << 28,)}]


def bytes_moved(shape):
    n = 1
    for d in shape:
        n *= d
    return 12 * n
