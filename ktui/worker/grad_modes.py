"""The autograd modes real use calls a kernel in (red team round 25, #4 and #5).

Every checked call used to run with grad enabled on inputs ``Problem.generate`` detaches, so a kernel's path for
``torch.no_grad()`` / ``torch.inference_mode()`` (an inference server's), for ``x.is_inference()``, or for
``x.requires_grad`` (training, whose inputs the reference made with ``requires_grad=True``) was never called: a SiLU
wrong only there passed every rung. A case's ``grad`` (``ktui.protocol.Case``) names the mode its call runs in:

- ``no_grad``: the call under ``torch.no_grad()``;
- ``inference``: the case built and called under ``torch.inference_mode()``: the inputs are inference tensors, as
  an inference server's are, and an output may be one where the reference's is not (the reference called the
  same way makes one);
- ``requires_grad``: the inputs that ``generate_input`` made requiring grad require it again for the call (the
  same memory, after ktui's own writes into it); an output may then require grad, as the reference's would. A
  reference declares a kernel's training use so; one that makes plain tensors (every GPU MODE and KernelBench
  reference) is not given requires_grad inputs: as leaves they make an in-place write raise, and a kernel for
  inference alone may take ``x.numpy()`` (tried and withdrawn for red team round 27, #5: the training path's size
  slip is met by the grad cases on the largest fixed spec, ``core.ladder.cases``).

Grad modes are thread-local: the worker's request thread builds the case under ``case_mode`` and the kernel's
thread (``ktui.worker.invoke``) enters ``CallMode`` just before the call and leaves it just after.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from ktui.worker.tensors import flatten

# the output flags (``tensors.OUTPUT_FLAGS``) a mode makes where the reference's output, called the same way, has them
MODE_FLAGS = {"inference": "inference", "requires_grad": "requires_grad"}


@contextlib.contextmanager
def case_mode(case: Mapping[str, Any]) -> Iterator[None]:
    """The mode the case's inputs are made in, on the request thread: inference mode for ``inference``, else none."""
    if case.get("grad") == "inference":
        with torch.inference_mode():
            yield
    else:
        yield


class CallMode:
    """The case's mode for its call, entered and left on the kernel's thread by ``global_state.settled_call`` just
    before and after the call's steps (``enter``, ``leave``): no frame of ktui's between the kernel and the thread's
    loop, so a grad-mode case's stack is every other case's (red team round 10: every call on one stack)."""

    def __init__(self, case: Mapping[str, Any]) -> None:
        mode = case.get("grad")
        self._make: Callable[[], Any] | None = (
            torch.no_grad if mode == "no_grad" else torch.inference_mode if mode == "inference" else None
        )
        self._ctx: Any = None

    def enter(self) -> None:
        if self._make is not None and self._ctx is None:
            self._ctx = self._make()
            self._ctx.__enter__()

    def leave(self) -> None:
        if self._ctx is not None:
            ctx, self._ctx = self._ctx, None
            ctx.__exit__(None, None, None)


def requires_grad_again(data: Any, paths: frozenset[str]) -> int:
    """Make the floating leaves of ``data`` at ``paths`` (those ``generate_input`` made requiring grad, as
    ``flatten(data, "in")`` names them) require grad again, in place. Returns how many."""
    n = 0
    for path, leaf in flatten(data, "in"):
        if path in paths and isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.is_leaf:
            leaf.requires_grad_(True)
            n += 1
    return n
