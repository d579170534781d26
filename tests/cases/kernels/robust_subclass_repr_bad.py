"""BAD (robust-repr): returns a tensor subclass whose every Python hook loops forever: ``__repr__``, ``__str__``,
``__eq__``, ``__bool__`` and ``__torch_function__`` (so reading ``.shape`` or ``.dtype`` hangs too). ktui must refuse
it as a subclass without calling any of them, not time out and blame the kernel for hanging."""

import torch


def _forever(*args, **kwargs):
    while True:
        pass


class Loop(torch.Tensor):
    __repr__ = __str__ = __eq__ = __bool__ = __format__ = _forever

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        _forever()


def custom_kernel(data):
    a, b = data
    return (a + b).as_subclass(Loop)
