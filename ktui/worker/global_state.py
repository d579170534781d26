"""torch's process-wide settings a kernel call must leave as it found them (red team round 19, W7).

A kernel is a function its caller runs among other code: one that calls ``torch.manual_seed(0)`` returns the right
output and resets the caller's random stream (a training loop's dropout masks repeat from step to step), one that
sets ``torch.backends.cuda.matmul.allow_tf32`` changes every later matmul of the program. ``snapshot`` reads those
settings on the thread that runs the kernel (grad and inference mode are per thread), before and after each checked
call; ``changes`` names what differs, and the case fails on it.

What is read: the CPU generator's ``initial_seed`` (and every CUDA device's once CUDA is in use) -- not the
generators' states, which an honest kernel that draws random numbers (dropout) advances --, the default dtype and
device, grad and inference mode, the float32 matmul precision and the TF32 and reduced-precision reduction flags,
deterministic algorithms and the number of CPU threads. A setting changed at import time (the module's top level)
is not a call's side effect and is not seen here.
"""

from __future__ import annotations

from typing import Any

import torch


def snapshot() -> dict[str, Any]:
    """The settings above, by the name a message shows (``torch.initial_seed()``...), as plain values."""
    state: dict[str, Any] = {
        "torch.initial_seed()": torch.initial_seed(),
        "torch.get_default_dtype()": torch.get_default_dtype(),
        "torch.get_default_device()": str(torch.get_default_device()),
        "torch.is_grad_enabled()": torch.is_grad_enabled(),
        "torch.is_inference_mode_enabled()": torch.is_inference_mode_enabled(),
        "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision(),
        "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": (
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        ),
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": (
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        ),
        "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "torch.are_deterministic_algorithms_enabled()": torch.are_deterministic_algorithms_enabled(),
        "torch.get_num_threads()": torch.get_num_threads(),
    }
    if torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        state["torch.cuda.initial_seed()"] = torch.cuda.initial_seed()
    return state


def changes(before: dict[str, Any], after: dict[str, Any]) -> str:
    """What a call changed, e.g. ``custom_kernel changed torch's global settings: torch.initial_seed() 8812... -> 0
    (...)``, or '' when nothing. A setting read only after the call (CUDA first used by it) is not compared."""
    diff = [f"{k} {before[k]!r} -> {after[k]!r}" for k in before if k in after and before[k] != after[k]]
    if not diff:
        return ""
    return (
        f"custom_kernel changed torch's global settings: {'; '.join(diff)} (a seed reset repeats the caller's random "
        "stream, a precision flag changes every later op of the program): leave them as the call found them (a "
        "local torch.Generator, torch.random.fork_rng, or restore what you set)"
    )
