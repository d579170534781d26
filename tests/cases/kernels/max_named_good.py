"""Honest twin of max_named_fields_bad: a named tuple of its own with the reference's field names (values,
indices), which code reading ``out.values`` uses as it uses torch's."""

import collections

import torch

Max = collections.namedtuple("Max", "values indices")


def custom_kernel(x):
    return Max(x.amax(dim=-1), torch.argmax(x, dim=-1))
