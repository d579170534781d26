"""Python int and bool arguments of every kind the scalars cases meet: an exponent p (moved), a flag (flipped), a
count n that only clamps a slice (moving it changes nothing: never moved), and a length that sets the output's shape
(no size of the inputs: a parameter, moved with the output's shape)."""
import torch


def generate_input(seed: int, n: int):
    return torch.randn(n), 3, True, n, 4


def ref_kernel(data):
    x, p, negate, count, width = data
    y = x[:count] ** p
    y = -y if negate else y
    return y[:width]


tests = [{"n": n} for n in (5, 129)]
