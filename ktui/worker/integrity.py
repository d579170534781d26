"""Worker integrity: what candidate code patched in its own worker process.

The candidate worker takes a ``fingerprint`` when it starts, before any kernel is imported; ``tampered`` compares the
process with it after the kernel ran. A kernel that patches torch, the clock, CUDA events or ktui's own worker code
(its timing loop, its hashing, its request handlers) to fool a later check is named in the rung's result.
"""

from __future__ import annotations

import sys
from typing import Any

_OWN_MODULES = (
    "ktui.worker.timing",
    "ktui.worker.candidate",
    "ktui.worker.checked",
    "ktui.worker.timed",
    "ktui.worker.capture",
    "ktui.worker.allocation",
    "ktui.worker.tensors",
    "ktui.worker.cases",
    "ktui.worker.server",
    "ktui.worker.integrity",
    "ktui.worker.errors",
)


def fingerprint() -> dict[str, int]:
    """Identity of every callable a candidate could patch to fool later checks: the functions of torch,
    torch.cuda, torch.nn.functional, time, triton.testing, builtins and ktui's own worker modules (those imported),
    and every method (inherited ones too) of torch.Tensor, torch.cuda.Event and the classes of those modules."""
    import builtins
    import time as time_mod

    import torch
    import torch.nn.functional as F

    modules: list[tuple[str, Any]] = [
        ("torch", torch),
        ("torch.cuda", torch.cuda),
        ("F", F),
        ("time", time_mod),
        ("builtins", builtins),
    ]
    try:
        import triton.testing

        modules.append(("triton.testing", triton.testing))
    except ImportError:
        pass
    classes: list[tuple[str, type]] = [("torch.Tensor", torch.Tensor), ("torch.cuda.Event", torch.cuda.Event)]
    for name in _OWN_MODULES:  # ktui's own worker code: its timing loop, its hashing, its request handlers
        mod = sys.modules.get(name)
        if mod is not None:
            modules.append((name, mod))
            classes += [
                (f"{name}.{k}", v) for k, v in vars(mod).items() if isinstance(v, type) and v.__module__ == name
            ]
    out: dict[str, int] = {}
    for prefix, mod in modules:
        for k, v in list(vars(mod).items()):
            if callable(v) and not isinstance(v, type(mod)):
                out[f"{prefix}.{k}"] = id(v)
    for prefix, cls in classes:
        for klass in reversed(cls.__mro__):  # the raw attribute that lookup finds: subclasses override bases
            for k, v in vars(klass).items():
                if k not in ("__dict__", "__doc__", "__module__", "__weakref__"):
                    out[f"{prefix}.{k}"] = id(v)
    return out


def tampered(baseline: dict[str, int]) -> list[str]:
    """Names whose object changed since ``baseline`` (``fingerprint()`` at worker start); for the classes (torch.Tensor,
    torch.cuda.Event, ktui's own), names that appeared count too (a patched ``Tensor.__sub__`` shadows the inherited
    one)."""
    now = fingerprint()
    changed = [k for k, v in now.items() if k in baseline and baseline[k] != v]
    owners = {k.rsplit(".", 1)[0] for k in baseline} - {
        "torch",
        "torch.cuda",
        "F",
        "time",
        "builtins",
        "triton.testing",
        *_OWN_MODULES,
    }
    appeared = [k for k in now if k not in baseline and k.rsplit(".", 1)[0] in owners]
    return sorted(changed + appeared)
