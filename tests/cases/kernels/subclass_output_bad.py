"""BAD (output-subclass): returns a torch.Tensor subclass whose reads are redirected. Whatever the checker reads
from it (``.cpu()``, ``.numpy()``, a comparison) can be made to give the right answer while the memory is wrong."""

import torch


class Lazy(torch.Tensor):
    """A tensor that holds zeros but reports a + b to anyone who moves it off the device or reads it back."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def custom_kernel(data):
    a, b = data
    return torch.zeros_like(a).as_subclass(Lazy)
