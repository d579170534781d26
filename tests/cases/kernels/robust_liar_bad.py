"""BAD (robust-repr): returns an object that claims to be a tuple (a ``__class__`` property fools ``isinstance``) and
loops forever in ``__repr__``, ``__iter__``, ``__len__``, ``__eq__`` and ``__bool__``: ktui must say it is not a
tensor without calling any of them."""


def _forever(*args, **kwargs):
    while True:
        pass


class Liar:
    __repr__ = __str__ = __iter__ = __len__ = __eq__ = __bool__ = __getitem__ = __hash__ = _forever

    @property
    def __class__(self):
        return tuple


def custom_kernel(data):
    return Liar()
