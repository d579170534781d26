"""torch's process-wide settings a kernel call must leave as it found them (red team round 19, W7).

A kernel is a function its caller runs among other code: one that calls ``torch.manual_seed(0)`` returns the right
output and resets the caller's random stream (a training loop's dropout masks repeat from step to step), one that
sets ``torch.backends.cuda.matmul.allow_tf32`` changes every later matmul of the program. ``snapshot`` reads those
settings on the thread that runs the kernel (grad and inference mode are per thread), before and after each checked
call; ``changes`` names what differs, and the case fails on it.

What is read: the CPU generator's ``initial_seed`` (and every CUDA device's once CUDA is in use) -- not the
generators' states, which an honest kernel that draws random numbers (dropout) advances --, the whole state of
Python's and NumPy's global generators (a digest: a torch reference draws from neither, so a kernel that reseeds or
draws from them moves the caller's streams), the current CUDA device and stream, the default dtype and
device, grad and inference mode, the float32 matmul precision and the TF32 and reduced-precision reduction flags,
deterministic algorithms and the number of CPU threads. A setting changed at import time (the module's top level)
is not a call's side effect and is not seen here.

A change is undone after the call that made it (``settle``: the generators' states and every setting put back as
they were before it), so each call starts from ktui's own settings: a kernel that reset the seed on every call was
seen only by its first checked call while its change stayed, and not at all once the compile rung's dry call had made
it (the H200, 2026-12-05: red team 19's reseeding RMSNorm passed every rung). The dry call and the timed stretches
are settled and judged the same way (``ktui.worker.candidate``, ``ktui.worker.timed``).
"""

from __future__ import annotations

import functools
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ktui.worker import invoke


def snapshot(host_rngs: bool = True, states: tuple[Any, Any] | None = None) -> dict[str, Any]:
    """The settings above, by the name a message shows (``torch.initial_seed()``...), as plain values; with
    ``host_rngs`` False, without Python's and NumPy's generators (tens of microseconds a read: ``generate_input``,
    whose draws are its own, runs before every timed call); ``states``: those generators' states already read
    (``random.getstate()``, ``numpy.random.get_state()`` or None), digested instead of read again (``save``)."""
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
    for name, (get, _) in FLAGS.items():
        state[name] = get()
    if host_rngs:
        python_rng, numpy_rng = states if states is not None else host_states()
        state["random.getstate()"] = _digest(python_rng)
        if numpy_rng is not None:  # a kernel that seeds numpy imported it; torch may have already
            state["numpy.random.get_state()"] = _numpy_digest(numpy_rng)
    if torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        state["torch.cuda.initial_seed()"] = torch.cuda.initial_seed()
        # red team round 21b, F2: a device or stream made current and left so moves the caller's later work (onto
        # another GPU, or off the stream its other work is ordered on)
        state["torch.cuda.current_device()"] = torch.cuda.current_device()
        stream = torch.cuda.current_stream()
        state["torch.cuda.current_stream()"] = f"{stream.device} stream {stream.cuda_stream:#x}"
    return state


def _digest(value: Any) -> str:
    """A short name for a generator's whole state (a changed state names a new one): ``state 1a2b3c4d``."""
    return f"state {hash(value) & 0xFFFFFFFF:08x}"


def host_states() -> tuple[Any, Any]:
    """Python's and NumPy's global generators' states (``random.getstate()``; ``numpy.random.get_state()``, None
    when NumPy is not imported)."""
    numpy = sys.modules.get("numpy")
    return random.getstate(), numpy.random.get_state() if numpy is not None else None


def _numpy_digest(numpy_rng: Any) -> str:
    """``_digest`` of NumPy's global (legacy) generator's state (``numpy.random.get_state()``): its key words,
    position and cached Gaussian."""
    name, key, pos, has_gauss, gauss = numpy_rng
    return _digest((name, key.tobytes(), pos, has_gauss, gauss))


_SUBNORMAL = torch.tensor(1e-40, dtype=torch.float32)  # ``_flushes_denormals``'s operand and result, made once:
_PRODUCT = torch.empty((), dtype=torch.float32)  # a tensor made per read was half of ``snapshot``'s time


def _flushes_denormals() -> bool:
    """Whether ``torch.set_flush_denormal(True)`` is in effect: torch has no getter; a float32 subnormal times one
    is zero only then (the CPU's FTZ/DAZ modes)."""
    torch.mul(_SUBNORMAL, 1.0, out=_PRODUCT)
    return float(_PRODUCT) == 0.0


def _autocast(device: str) -> bool:
    """Whether autocast is on for ``device`` (``cpu``, ``cuda``), in this torch's spelling."""
    try:
        return bool(torch.is_autocast_enabled(device))
    except TypeError:  # torch before 2.4: no device argument
        return bool(torch.is_autocast_cpu_enabled() if device == "cpu" else torch.is_autocast_enabled())


def _no_setter(value: Any) -> None:
    """A setting ktui reports and cannot put back (a mode left on torch's stack is the kernel's to pop)."""


def _library(pref: Callable[[], Any]) -> str:
    """The backend ``pref`` (``torch.backends.cuda.preferred_blas_library``...) names now, by the name it takes."""
    return str(pref()).rsplit(".", 1)[-1].lower()


def _flags() -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    """More process-wide switches a call must leave as it found them, by the name a message shows, each with its
    getter and setter (red team round 21, F4: fp16 accumulation, flushing denormals, cuDNN's autotuner and
    determinism, the SDPA backends, the preferred BLAS and linear-algebra libraries). Those the installed torch
    lacks are left out."""
    b = torch.backends
    out: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
        "torch.set_flush_denormal": (_flushes_denormals, torch.set_flush_denormal),
        "torch.backends.cudnn.benchmark": (lambda: b.cudnn.benchmark, lambda v: setattr(b.cudnn, "benchmark", v)),
        "torch.backends.cudnn.deterministic": (
            lambda: b.cudnn.deterministic,
            lambda v: setattr(b.cudnn, "deterministic", v),
        ),
        "torch.backends.cudnn.enabled": (lambda: b.cudnn.enabled, lambda v: setattr(b.cudnn, "enabled", v)),
    }
    # red team round 21b, F2: autocast entered and never left (the caller's float32 matmuls in bf16 after one call),
    # anomaly detection, deterministic algorithms' warn_only, a TorchFunctionMode left pushed
    for dev in ("cpu", "cuda"):
        out[f"torch.is_autocast_enabled({dev!r})"] = (
            functools.partial(_autocast, dev),
            functools.partial(torch.set_autocast_enabled, dev),
        )
    out["torch.is_anomaly_enabled()"] = (torch.is_anomaly_enabled, torch.set_anomaly_enabled)
    out["torch.is_deterministic_algorithms_warn_only_enabled()"] = (
        torch.is_deterministic_algorithms_warn_only_enabled,
        lambda v: torch.use_deterministic_algorithms(torch.are_deterministic_algorithms_enabled(), warn_only=v),
    )
    out["torch function modes pushed"] = (torch._C._len_torch_function_stack, _no_setter)
    if hasattr(b.cuda.matmul, "allow_fp16_accumulation"):
        out["torch.backends.cuda.matmul.allow_fp16_accumulation"] = (
            lambda: b.cuda.matmul.allow_fp16_accumulation,
            lambda v: setattr(b.cuda.matmul, "allow_fp16_accumulation", v),
        )
    for kind in ("flash", "mem_efficient", "math", "cudnn"):
        get, enable = getattr(b.cuda, f"{kind}_sdp_enabled", None), getattr(b.cuda, f"enable_{kind}_sdp", None)
        if get is not None and enable is not None:
            out[f"torch.backends.cuda.{kind}_sdp_enabled()"] = (get, enable)
    for lib in ("linalg", "blas"):
        pref = getattr(b.cuda, f"preferred_{lib}_library", None)
        if pref is not None:
            out[f"torch.backends.cuda.preferred_{lib}_library()"] = (functools.partial(_library, pref), pref)
    return out


FLAGS = _flags()


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
        + (
            "; Python's and NumPy's global generators are the caller's streams: a kernel neither reseeds nor draws "
            "from them (a local random.Random or numpy.random.default_rng)"
            if any(k.startswith(("random.", "numpy.")) for k in before if k in after and before[k] != after[k])
            else ""
        )
    )


@dataclass
class Saved:
    """What ``settle`` puts back: the settings (``snapshot``) and the generators' states (the CPU's default generator's
    ByteTensor, and every CUDA device's once CUDA is in use), read on the thread that then calls the kernel."""

    settings: dict[str, Any]
    cpu_rng: torch.Tensor
    cuda_rng: list[torch.Tensor] | None
    python_rng: Any = None  # ``random.getstate()``
    numpy_rng: Any = None  # ``numpy.random.get_state()``, when NumPy is imported
    cuda_stream: Any = None  # ``torch.cuda.current_stream()``, once CUDA is in use


def save() -> Saved:
    """The settings and generator states now, for ``settle`` (on the kernel's thread: grad and inference mode are
    per thread)."""
    on_cuda = torch.cuda.is_initialized()  # type: ignore[no-untyped-call]
    cuda = torch.cuda.get_rng_state_all() if on_cuda else None
    python_rng, numpy_rng = host_states()  # read once: kept whole for ``restore``, digested for ``changes``
    return Saved(
        snapshot(states=(python_rng, numpy_rng)),
        torch.default_generator.get_state(),
        cuda,
        python_rng,
        numpy_rng,
        torch.cuda.current_stream() if on_cuda else None,
    )


def settle(saved: Saved) -> str:
    """What changed since ``saved`` (``changes``' message, '' when nothing), after putting every changed setting back
    (``restore``). Call it on the thread ``save`` ran on."""
    said = changes(saved.settings, snapshot(host_rngs=saved.python_rng is not None))
    if said:
        restore(saved)
    return said


def restore(saved: Saved) -> None:
    """Put the settings and generator states of ``saved`` back. Inference mode cannot be left from outside its
    context manager: a call that left it on is reported by ``changes`` and stays on."""
    s = saved.settings
    torch.default_generator.set_state(saved.cpu_rng)  # its initial_seed with it
    if saved.python_rng is not None:
        random.setstate(saved.python_rng)
    numpy = sys.modules.get("numpy")
    if saved.numpy_rng is not None and numpy is not None:
        numpy.random.set_state(saved.numpy_rng)
    if "torch.cuda.current_device()" in s:
        torch.cuda.set_device(s["torch.cuda.current_device()"])
    if saved.cuda_stream is not None:
        torch.cuda.set_stream(saved.cuda_stream)
    if saved.cuda_rng is not None:
        torch.cuda.set_rng_state_all(saved.cuda_rng)
    torch.set_default_dtype(s["torch.get_default_dtype()"])
    torch.set_default_device(None if s["torch.get_default_device()"] == "cpu" else s["torch.get_default_device()"])
    torch.set_grad_enabled(s["torch.is_grad_enabled()"])
    torch.set_float32_matmul_precision(s["torch.get_float32_matmul_precision()"])
    torch.backends.cuda.matmul.allow_tf32 = s["torch.backends.cuda.matmul.allow_tf32"]
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = s[
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction"
    ]
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = s[
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction"
    ]
    torch.backends.cudnn.allow_tf32 = s["torch.backends.cudnn.allow_tf32"]
    torch.use_deterministic_algorithms(s["torch.are_deterministic_algorithms_enabled()"])
    torch.set_num_threads(s["torch.get_num_threads()"])
    now = snapshot(host_rngs=False)
    for name, (_, put) in FLAGS.items():
        if name in s and now.get(name) != s[name]:
            put(s[name])


def settled_call(fn: Callable[[Any], Any], data: Any, device: str, mode: Any = None) -> tuple[Any, str]:
    """One call of ``fn(data)`` as ``invoke.call`` makes it, settled: returns (its output, what it changed of the
    settings, '' when nothing), the settings put back. Raises what the call raises, settled too. ``mode`` (a
    ``grad_modes.CallMode``, or None) is entered on the kernel's thread after the settings are read and left before
    they are compared: the call runs in it with no frame of ktui's around it."""
    saved: list[Saved] = []
    kept: list[Any] = []

    def before(i: int) -> None:
        saved.append(save())
        if mode is not None:
            mode.enter()

    def after(i: int, o: Any, s: float) -> None:
        if mode is not None:
            mode.leave()
        kept.extend((o, settle(saved[0])))

    try:
        invoke.calls(fn, data, device, 1, before=before, after=after)
    except BaseException:
        if mode is not None:
            invoke.run(mode.leave)
        if saved and len(kept) < 2:
            invoke.run(functools.partial(settle, saved[0]))
        raise
    return kept[0], kept[1]
