"""Honest: the count as a Python int."""


def custom_kernel(x):
    return int((x > 0).sum())
