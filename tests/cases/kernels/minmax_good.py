"""Honest twin of minmax_swapped_bad: the same names in another order are fine."""

import torch


def custom_kernel(x):
    return {"min": x.amin(dim=-1), "max": x.amax(dim=-1)}
