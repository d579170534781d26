"""What torch hands out while a candidate's case runs: poisoned memory, or placeholder data.

``poisoned_allocations`` (the correctness rung) makes torch's allocators return memory filled with ktui's poison NaN
(or with ordinary-looking decoy values), so an output element a kernel never writes is found even when the kernel
allocated its output itself. ``placeholder_data`` (the dumps rung) makes torch's random generators return
uninitialized tensors of the right shape, dtype and device, since a launch's specialization needs only those.
Both patch torch only inside their ``with`` block.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ktui.worker.guards import Guards

_ALLOCATORS = ("empty", "empty_like", "empty_strided")


@contextlib.contextmanager
def poisoned_allocations(decoy_seed: int | None = None, guards: Guards | None = None) -> Iterator[None]:
    """While active, ``torch.empty``, ``torch.empty_like``, ``torch.empty_strided`` and ``Tensor.new_empty`` return
    memory filled with ktui's poison NaN, so an output element a kernel never writes is found as unwritten even when
    the kernel allocated the output itself (cases.md unwritten, result-reuse). With ``decoy_seed``, the memory holds
    ordinary-looking values instead (``tensors.decoy_``): nothing tells the kernel it is being checked. With
    ``guards``, each allocation sits between canaries (``ktui.worker.guards``: writes out of bounds, cases.md oob);
    ``out=`` calls pass through."""
    import itertools

    import torch

    from ktui.worker.tensors import decoy_, poison_

    counter = itertools.count()
    fill = poison_ if decoy_seed is None else (lambda t: decoy_(t, decoy_seed + next(counter)))

    originals = {name: getattr(torch, name) for name in _ALLOCATORS}
    orig_new_empty = torch.Tensor.new_empty

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def poisoned(*args: Any, **kwargs: Any) -> Any:
            t = fn(*args, **kwargs)
            if guards is not None and "out" not in kwargs:
                t = guards.wrap_new(t)
            if isinstance(t, torch.Tensor) and t.numel():
                fill(t)
            return t

        return poisoned

    for name, fn in originals.items():
        setattr(torch, name, wrap(fn))
    # torch's stubs declare Tensor.new_empty as a method; patching it on the class is the point here.
    torch.Tensor.new_empty = wrap(orig_new_empty)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(torch, name, fn)
        torch.Tensor.new_empty = orig_new_empty  # type: ignore[method-assign]  # restores the patch above


@contextlib.contextmanager
def placeholder_data() -> Iterator[None]:
    """While active, torch's random generators return uninitialized tensors of the right shape, dtype and device:
    the dumps rung needs only the launch's shapes, strides and alignments (what Triton specializes on), not the
    values, and a 2**28-element ``randn`` on a CPU takes seconds."""
    import torch

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
