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
  slip is met by the grad cases on the largest fixed spec, ``core.ladder.cases``). The outputs' gradients are
  judged too (red team round 29, #8: a SiLU whose backward dropped a term passed, its backward never run): the
  outputs that require grad are differentiated against a seeded cotangent (``cotangent``, ``input_grads``), in the
  candidate through the version's own backward, in the judge through the reference's, in float64 and natively.

Grad modes are thread-local: the worker's request thread builds the case under ``case_mode`` and the kernel's
thread (``ktui.worker.invoke``) enters ``CallMode`` just before the call and leaves it just after.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from ktui.protocol import COTANGENT_LAYOUTS
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


def live_grad_paths(paths: frozenset[str], case: Mapping[str, Any]) -> frozenset[str]:
    """The inputs of ``paths`` (those ``generate_input`` made requiring grad) that require grad on ``case``: all but
    the one its ``frozen`` index names (in sorted order), where there are two or more; else all."""
    return paths - {frozen} if (frozen := frozen_path(paths, case)) else paths


def frozen_path(paths: frozenset[str], case: Mapping[str, Any]) -> str | None:
    """The input ``case["frozen"]`` keeps frozen (by index in ``sorted(paths)``), or None: no ``frozen``, fewer than
    two paths, or an index past them."""
    k = case.get("frozen")
    names = sorted(paths)
    return names[k] if isinstance(k, int) and len(names) >= 2 and 0 <= k < len(names) else None


def requires_grad_again(data: Any, paths: frozenset[str]) -> int:
    """Make the floating leaves of ``data`` at ``paths`` (those ``generate_input`` made requiring grad, as
    ``flatten(data, "in")`` names them) require grad again, in place. Returns how many."""
    n = 0
    for path, leaf in flatten(data, "in"):
        if path in paths and isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.is_leaf:
            leaf.requires_grad_(True)
            n += 1
    return n


PAD = 3  # the padded cotangent's extra elements per row (its row stride: the row's length + 3)


def cotangent_layout(seed: int) -> str:
    """The layout of a case's cotangents (``cotangent``), by its seed: one of ``COTANGENT_LAYOUTS`` (an output of one
    dimension is given a transposed one contiguous)."""
    return COTANGENT_LAYOUTS[seed % len(COTANGENT_LAYOUTS)]


def cotangent(path: str, like: torch.Tensor, seed: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    """The cotangent of output ``path`` (the gradient a loss gives it) on a ``requires_grad`` case: standard normal
    values drawn in float32 on the CPU from a generator keyed by ``seed`` and ``path`` (the same on the candidate's
    side and the judge's), of ``like``'s shape, rounded to ``dtype`` (default ``like.dtype``: the output's own
    precision) and then held in ``like``'s dtype on its device (the float64 reference's cotangent holds the native
    one's values exactly).

    Its layout, by the case's seed (``seed % 6``: the requires_grad cases' seeds cover the six,
    ``core.ladder.cases``), is one of ``COTANGENT_LAYOUTS`` as real losses hand it to a backward: contiguous;
    expanded (one value at every element, stride 0, as ``y.sum()`` and ``y.mean()`` give it: red team round 31, #4,
    a backward reading its gradient as contiguous gave NaN there and passed); transposed (the last two dimensions'
    strides swapped, as a consumer of ``y.t()`` gives it); padded (each row ``PAD`` elements longer than the output's,
    unit stride along it, as the slice of a ``torch.cat`` consumer's gradient is: red team round 32b, #6, a backward
    checking only ``stride(-1) == 1`` read its rows as packed and passed); per_row (one value per row, stride 0 along
    the last dimension, as ``y.sum(-1)`` gives it) and per_column (one value per column, stride 0 along the first, as
    ``y.sum(0)`` and a batch mean give it: red team round 33, #3, a backward reading any stride-0 gradient as one
    value passed). A 0-d or one-element output's is contiguous, a 1-D output's transposed, padded, per_row or
    per_column one too."""
    key = (seed * 1_000_003 + zlib.crc32(path.encode())) % (1 << 63)
    gen = torch.Generator().manual_seed(key)
    shape = tuple(like.shape)
    layout = cotangent_layout(seed) if like.numel() > 1 else "contiguous"
    if layout in ("transposed", "padded", "per_row", "per_column") and like.dim() < 2:
        layout = "contiguous"
    drawn = {"expanded": (), "per_row": (*shape[:-1], 1), "per_column": (1, *shape[1:])}.get(layout, shape)
    values = torch.randn(drawn, generator=gen, dtype=torch.float32)
    out = values.to(dtype or like.dtype).to(device=like.device, dtype=like.dtype)
    if layout in ("expanded", "per_row", "per_column"):
        return out.expand(shape)
    if layout == "transposed":
        return out.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == "padded":
        wide = torch.zeros((*shape[:-1], shape[-1] + PAD), dtype=out.dtype, device=out.device)
        wide[..., : shape[-1]] = out
        return wide[..., : shape[-1]]
    return out.contiguous()


def grad_inputs(data: Any, paths: frozenset[str]) -> list[tuple[str, torch.Tensor]]:
    """The leaves of ``data`` at ``paths`` (``flatten(data, "in")``'s names) that require grad, in sorted path order:
    the inputs whose gradients a ``requires_grad`` case judges (``input_grads``)."""
    leaves = dict(flatten(data, "in"))
    return [(p, t) for p in sorted(paths) if isinstance(t := leaves.get(p), torch.Tensor) and t.requires_grad]


def input_grads(
    out: Any, data: Any, paths: frozenset[str], seed: int, dtypes: Mapping[str, torch.dtype] | None = None
) -> list[torch.Tensor]:
    """The gradients of the floating outputs of ``out`` that require grad, each against its ``cotangent``, with
    respect to the leaves of ``data`` at ``paths`` that require grad (``flatten(data, "in")``'s names, in sorted
    order), by ``torch.autograd.grad``: one tensor per such leaf, of its shape and dtype, zeros where no output
    depends on it. [] when no output requires grad or no input does. ``dtypes`` (output path -> dtype) rounds each
    cotangent to the native output's precision (the float64 reference's run).

    Raises:
        what the outputs' backward raises (a version whose backward fails fails its case)."""
    outs = [
        (p, t) for p, t in flatten(out) if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()
    ]
    wrt = [t for _, t in grad_inputs(data, paths)]
    if not outs or not wrt:
        return []
    cots = [cotangent(p, t, seed, (dtypes or {}).get(p)) for p, t in outs]
    grads = torch.autograd.grad([t for _, t in outs], wrt, grad_outputs=cots, allow_unused=True)
    return [torch.zeros_like(w) if g is None else g.detach() for g, w in zip(grads, wrt, strict=True)]
