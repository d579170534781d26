"""What torch hands out while a candidate's case runs: poisoned memory, or placeholder data.

``install`` wraps torch's allocators (``torch.empty``, ``torch.empty_like``, ``torch.empty_strided``,
``Tensor.new_empty``) once, when the candidate worker starts (``ktui.worker.invoke`` calls it at import, before any
kernel is imported), and the wrappers stay for the worker's whole life: ``torch.empty`` is the same object when a
kernel is imported, in a checked call and in a timed call, and it carries the builtin's ``__name__``,
``__qualname__``, ``__module__`` and ``__doc__`` (no ``__wrapped__``). A wrapper is the builtin plus one flag test
until ``poisoned_allocations`` (the correctness rung) arms it; armed, it returns memory filled with ktui's poison NaN
(or with ordinary-looking decoy values) between guard bands, so an output element a kernel never writes is found even
when the kernel allocated its output itself. ``placeholder_data`` (the dumps rung) makes torch's random generators
return uninitialized tensors of the right shape, dtype and device, since a launch's specialization needs only those;
it patches torch only inside its ``with`` block.

``Tensor.resize_`` and ``Tensor.resize_as_`` are wrapped at ``install`` too, for one case: a guarded allocation
(``ktui.worker.guards``) is a DLPack alias whose storage does not own its memory, so torch refuses to grow it
("Trying to resize storage that is not resizable"), where a plain ``torch.empty`` grows (red team round 11, F1: a
workspace cached across calls and grown with ``resize_`` failed). When torch refuses for a storage the guard bands
made (``GUARDED_STORAGES``), the wrapper does what torch's resize does: a new allocation of the size needed (through
``torch.empty``, so inside a checked call it is guarded and poisoned like any other, and a write past the grown
workspace is still caught), the old bytes copied to its start, the tensor set to it with contiguous strides.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import torch
import torch.utils._device


class _Guarding(Protocol):
    """What ``poisoned_allocations`` needs of ``ktui.worker.guards.Guards`` (which imports this module)."""

    def wrap_new(self, t: Any) -> Any: ...


_ALLOCATORS = ("empty", "empty_like", "empty_strided")
# torch's own allocators, taken when this module is first imported (before install, before any kernel): guard bands
# and ktui's own buffers are allocated with these, never through the wrappers
ORIGINALS: dict[str, Callable[..., Any]] = {name: getattr(torch, name) for name in _ALLOCATORS}
ORIGINAL_NEW_EMPTY: Callable[..., Any] = torch.Tensor.new_empty
ORIGINAL_RESIZE: Callable[..., Any] = torch.Tensor.resize_
ORIGINAL_RESIZE_AS: Callable[..., Any] = torch.Tensor.resize_as_
# storage address -> its size in bytes, for every storage a guard band made (``guards.Guards._place``): storages
# that do not own their memory, which ``_resize`` grows as torch grows its own (an address reused by another
# allocation is overwritten; a plain allocation there is resizable and never asks)
GUARDED_STORAGES: dict[int, int] = {}
# the fill of the checked call under way, given each allocation and whether it came with ``out=``; empty: the
# wrappers pass every allocation through untouched
_armed: list[Callable[[Any, bool], Any]] = []
_installed: list[bool] = []


def _wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t = fn(*args, **kwargs)
        if _armed:
            return _armed[-1](t, "out" in kwargs)
        return t

    for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
        value = getattr(fn, attr, None)
        if value is not None:
            setattr(wrapper, attr, value)
    return wrapper


def _grow(t: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """``t`` set to a new allocation holding ``shape`` (contiguous, from ``t``'s storage offset) whose first bytes
    are ``t``'s storage's: what torch's ``resize_`` does to a storage too small, for a guarded one."""
    old = t.untyped_storage()
    numel = 1
    for d in shape:
        numel *= int(d)
    grown = torch.empty(t.storage_offset() + numel, dtype=t.dtype, device=t.device)  # armed: guarded, poisoned
    dst = ORIGINALS["empty"](0, dtype=torch.uint8, device=t.device).set_(grown.untyped_storage())
    src = ORIGINALS["empty"](0, dtype=torch.uint8, device=t.device).set_(old)
    dst[: old.nbytes()].copy_(src)
    strides = []
    step = 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(int(d), 1)
    return t.set_(grown.untyped_storage(), int(t.storage_offset()), torch.Size(shape), tuple(reversed(strides)))


def _refused(t: torch.Tensor) -> bool:
    """Whether ``t``'s storage is a guarded allocation's (not resizable, made by a guard band)."""
    st = t.untyped_storage()
    return not st.resizable() and GUARDED_STORAGES.get(st.data_ptr()) == st.nbytes()


def _shape_of(size: tuple[Any, ...]) -> tuple[int, ...]:
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else tuple(size)


def _resize(self: torch.Tensor, *size: Any, **kwargs: Any) -> torch.Tensor:
    try:
        out: torch.Tensor = ORIGINAL_RESIZE(self, *size, **kwargs)
        return out
    except RuntimeError:
        if not _refused(self):
            raise
    _grow(self, _shape_of(size))
    if kwargs.get("memory_format") is not None:  # the storage is large enough now: torch restrides in place
        ORIGINAL_RESIZE(self, *size, **kwargs)
    return self


def _resize_as(self: torch.Tensor, other: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    try:
        out: torch.Tensor = ORIGINAL_RESIZE_AS(self, other, **kwargs)
        return out
    except RuntimeError:
        if not _refused(self):
            raise
    _grow(self, tuple(other.shape))
    return self


def install() -> None:
    """Replace torch's allocators with the wrappers, and ``Tensor.resize_``/``resize_as_`` with ones that grow a
    guarded allocation as torch grows a plain one (once per process; later calls do nothing)."""
    if _installed:
        return
    # ``with torch.device(d)`` (the device every ``generate_input`` runs under) gives a device to the constructors
    # in ``torch.utils._device._device_constructors()``, a set taken from torch's attributes on its first call and
    # cached: taken after the wrappers replaced them, it holds the wrappers, the builtin never matches it, and
    # ``torch.empty(n)`` inside ``with torch.device("cuda")`` lands on the CPU (found on the H200, 2026-12-04: a
    # reference's declared ``torch.empty`` buffer reached the kernel as a CPU tensor). Taken now, it holds the builtins,
    # which the wrappers call.
    torch.utils._device._device_constructors()
    for name, fn in ORIGINALS.items():
        setattr(torch, name, _wrap(fn))
    # torch's stubs declare Tensor.new_empty as a method; patching it on the class is the point here.
    torch.Tensor.new_empty = _wrap(ORIGINAL_NEW_EMPTY)  # type: ignore[method-assign]
    for name, fn, orig in (("resize_", _resize, ORIGINAL_RESIZE), ("resize_as_", _resize_as, ORIGINAL_RESIZE_AS)):
        for attr in ("__name__", "__qualname__", "__doc__"):
            value = getattr(orig, attr, None)
            if value is not None:
                setattr(fn, attr, value)
        setattr(torch.Tensor, name, fn)
    _installed.append(True)


@contextlib.contextmanager
def poisoned_allocations(decoy_seed: int | None = None, guards: _Guarding | None = None) -> Iterator[None]:
    """While active, ``torch.empty``, ``torch.empty_like``, ``torch.empty_strided`` and ``Tensor.new_empty`` return
    memory filled with ktui's poison NaN, so an output element a kernel never writes is found as unwritten even when
    the kernel allocated the output itself (cases.md unwritten, result-reuse). With ``decoy_seed``, the memory holds
    ordinary-looking values instead (``tensors.decoy_``): nothing tells the kernel it is being checked. With
    ``guards``, each allocation sits between canaries (``ktui.worker.guards``: writes out of bounds, cases.md oob);
    ``out=`` calls pass through. Arms the wrappers ``install`` put in place (installing them if needed): torch's
    attributes are not touched here."""
    from ktui.worker.tensors import decoy_, poison_

    install()
    counter = itertools.count()
    fill = poison_ if decoy_seed is None else (lambda t: decoy_(t, decoy_seed + next(counter)))

    def armed(t: Any, has_out: bool) -> Any:
        if guards is not None and not has_out:
            t = guards.wrap_new(t)
        if isinstance(t, torch.Tensor) and t.numel():
            fill(t)
        return t

    _armed.append(armed)
    try:
        yield
    finally:
        _armed.remove(armed)


def recorder(record: Callable[[torch.Tensor], None]) -> Callable[[Any, bool], Any]:
    """A fill for ``arm`` that hands every tensor the wrapped allocators make to ``record`` and returns it as it is
    (the verified stretch's scratch buffers: ``timed.Retained``)."""

    def armed(t: Any, has_out: bool) -> Any:
        if isinstance(t, torch.Tensor):
            record(t)
        return t

    return armed


def arm(fill: Callable[[Any, bool], Any]) -> None:
    """Arm the wrappers with ``fill`` (``recorder``'s) until ``disarm``: each allocation goes through it."""
    install()
    if fill not in _armed:
        _armed.append(fill)


def disarm(fill: Callable[[Any, bool], Any]) -> None:
    """Undo ``arm(fill)`` (nothing when it is not armed)."""
    if fill in _armed:
        _armed.remove(fill)


@contextlib.contextmanager
def placeholder_data() -> Iterator[None]:
    """While active, torch's random generators return uninitialized tensors of the right shape, dtype and device:
    the dumps rung needs only the launch's shapes, strides and alignments (what Triton specializes on), not the
    values, and a 2**28-element ``randn`` on a CPU takes seconds."""

    def empty_from(
        *size: Any,
        generator: Any = None,
        dtype: Any = None,
        device: Any = None,
        layout: Any = None,
        requires_grad: bool | None = False,
        pin_memory: bool | None = False,
        out: Any = None,
        **_: Any,
    ) -> torch.Tensor:
        if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
            size = tuple(size[0])
        return torch.empty(size, dtype=dtype, device=device)

    def empty_randint(
        *args: Any, generator: Any = None, dtype: Any = None, device: Any = None, size: Any = None, **_: Any
    ) -> torch.Tensor:
        shape = (
            size if size is not None else (args[-1] if args and isinstance(args[-1], (tuple, list, torch.Size)) else ())
        )
        return torch.zeros(shape, dtype=dtype or torch.int64, device=device)  # zeros: valid indices

    def like(input: torch.Tensor, *args: Any, dtype: Any = None, device: Any = None, **_: Any) -> torch.Tensor:
        return torch.empty_like(input, dtype=dtype, device=device)

    saved = {
        name: getattr(torch, name)
        for name in ("randn", "rand", "randint", "randn_like", "rand_like", "randint_like", "randperm")
    }
    methods = {name: getattr(torch.Tensor, name) for name in ("normal_", "uniform_", "random_", "exponential_")}
    torch.randn = torch.rand = empty_from
    torch.randint = empty_randint
    torch.randn_like = torch.rand_like = like
    torch.randint_like = lambda input, *a, **k: torch.zeros_like(input)
    torch.randperm = lambda n, *a, dtype=torch.int64, device=None, **k: torch.arange(n, dtype=dtype, device=device)
    for name in methods:
        setattr(torch.Tensor, name, lambda self, *a, **k: self)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch, name, fn)
        for name, fn in methods.items():
            setattr(torch.Tensor, name, fn)
