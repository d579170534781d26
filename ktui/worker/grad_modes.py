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
  same memory, after ktui's own writes into it); an output may then require grad, as the reference's would.

Grad modes are thread-local: the worker's request thread builds the case under ``case_mode`` and the kernel's
thread (``ktui.worker.invoke``) calls under ``call_mode``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

MODES = ("no_grad", "inference", "requires_grad")

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


def call_mode(fn: Callable[[Any], Any], case: Mapping[str, Any]) -> Callable[[Any], Any]:
    """``fn`` called in the case's mode on whatever thread calls it: under ``torch.no_grad()`` or
    ``torch.inference_mode()``, or as it is."""
    mode = case.get("grad")
    if mode not in ("no_grad", "inference"):
        return fn

    def called(data: Any) -> Any:
        with torch.no_grad() if mode == "no_grad" else torch.inference_mode():
            return fn(data)

    return called


def requires_grad_again(data: Any, paths: frozenset[str], flatten: Callable[[Any, str], list[tuple[str, Any]]]) -> int:
    """Make the floating leaves of ``data`` at ``paths`` (those ``generate_input`` made requiring grad, as
    ``flatten(data, "in")`` names them) require grad again, in place. Returns how many."""
    n = 0
    for path, leaf in flatten(data, "in"):
        if path in paths and isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.is_leaf:
            leaf.requires_grad_(True)
            n += 1
    return n
