"""Launch capture: what a version compiles and launches, seen from inside Triton and CuTeDSL.

The compile rung calls ``custom_kernel`` once in *dry* mode, where nothing runs:

- on a GPU, every Triton launch is compiled for the device and not launched (``JITFunction.run(warmup=True)``);
- without a GPU (*cross* mode, in the ``compiler`` worker, which does not use the Triton interpreter), every Triton
  launch is compiled for sm_90a with ``triton.compile`` from its real arguments: Triton's CUDA backend needs no GPU,
  so a kernel that would not compile on a Hopper GPU fails ``compile`` on a laptop too;
- every autotuner config is compiled, none is benchmarked;
- CuTeDSL's ``cute.compile`` runs (it needs no GPU: ``CUTE_DSL_ARCH=sm_90a``) and its result is not called.

Each launch is recorded with its real signature, constexprs, ``num_warps`` and ``num_stages``: the compile rung
reports them, and later rungs (dumps) compile exactly those. Patches are installed once per worker process and do
nothing unless a capture is active.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ktui.worker.integrity import fingerprint, tampered  # noqa: F401 - where they lived; ktui.worker.integrity now

CROSS_TARGET = ("cuda", 90, 32)  # sm_90a, warp size 32
_ACTIVE: Capture | None = None
_LOCK = threading.Lock()
_INSTALLED: set[str] = set()


class NeedsGPU(RuntimeError):
    """A CuTeDSL kernel was called on a machine without a CUDA GPU."""


@dataclass
class Capture:
    """What one dry call of ``custom_kernel`` launched."""

    dry: bool = True
    cross: bool = False  # compile Triton launches for sm_90a instead of the (absent) device
    launches: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    autotune_configs: int = 0  # the most configs of any autotuned kernel launched
    keep: bool = False  # keep each compiled kernel (``_compiled`` in its record) for the dumps

    @property
    def languages(self) -> list[str]:
        """The languages of the recorded launches, sorted: ``["cutedsl", "triton"]``."""
        return sorted({rec["language"] for rec in self.launches})


@contextlib.contextmanager
def capturing(cap: Capture) -> Iterator[Capture]:
    """Make ``cap`` the active capture for the duration of the block."""
    global _ACTIVE
    with _LOCK:
        _ACTIVE = cap
    try:
        yield cap
    finally:
        with _LOCK:
            _ACTIVE = None


def active() -> Capture | None:
    """The capture in progress, if any."""
    return _ACTIVE


# -- Triton ------------------------------------------------------------------------------------------------------
def install_triton() -> None:
    """Wrap ``JITFunction.run`` and ``Autotuner.run`` (idempotent)."""
    if "triton" in _INSTALLED:
        return
    _INSTALLED.add("triton")
    from triton.runtime import autotuner, jit

    orig_run = jit.JITFunction.run

    def jit_run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        cap = _ACTIVE
        if cap is None:
            return orig_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        if cap.cross:
            _cross_compile(cap, self, args, kwargs)
            return None
        t0 = time.perf_counter()
        kernel = orig_run(self, *args, grid=grid, warmup=True if cap.dry else warmup, **kwargs)
        rec = _triton_record(self, kernel, kwargs, time.perf_counter() - t0, target="device")
        if cap.keep:
            rec["_compiled"] = kernel
        cap.launches.append(rec)
        return kernel

    jit.JITFunction.run = jit_run

    orig_at = autotuner.Autotuner.run

    def autotune_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        cap = _ACTIVE
        if cap is not None and cap.dry:
            for config in self.configs:  # compile every config; none is benchmarked or cached
                self.fn.run(*args, **{**kwargs, **config.all_kwargs()})
            return None
        return orig_at(self, *args, **kwargs)

    autotuner.Autotuner.run = autotune_run


def _triton_record(jf: Any, kernel: Any, kwargs: dict[str, Any], seconds: float, target: str) -> dict[str, Any]:
    meta = getattr(kernel, "metadata", None)
    src = getattr(kernel, "src", None)
    rec: dict[str, Any] = {
        "language": "triton",
        "kernel": getattr(jf, "__name__", None) or getattr(getattr(jf, "fn", None), "__name__", "?"),
        "target": target,
        "compile_s": round(seconds, 4),
        "num_warps": getattr(meta, "num_warps", kwargs.get("num_warps")),
        "num_stages": getattr(meta, "num_stages", kwargs.get("num_stages")),
    }
    sig = getattr(src, "signature", None)
    if sig:
        rec["signature"] = {str(k): str(v) for k, v in sig.items()}
    consts = getattr(src, "constants", None) or getattr(src, "constexprs", None)
    if consts:
        rec["constexprs"] = _named(jf, consts)
    shared = getattr(meta, "shared", None)
    if shared is not None:
        rec["shared_bytes"] = shared
    asm = getattr(kernel, "asm", None)
    ttir = asm.get("ttir") if isinstance(asm, dict) else None
    if isinstance(ttir, str):  # the kernel multiplies matrices (tl.dot, tl.dot_scaled): the TF32 flag may apply
        rec["dot"] = "tt.dot" in ttir
    for attr in ("n_regs", "n_spills"):
        v = getattr(kernel, attr, None)
        if isinstance(v, int):
            rec[attr] = v
    return rec


def _plain(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)


def _named(jf: Any, consts: dict[Any, Any]) -> dict[str, Any]:
    """Triton keys constexprs by argument path, ``(3,)``; name them after the kernel's parameters instead."""
    names = list(getattr(jf, "arg_names", []) or [])
    out: dict[str, Any] = {}
    for k, v in consts.items():
        if isinstance(k, tuple) and len(k) == 1 and isinstance(k[0], int) and k[0] < len(names):
            out[names[k[0]]] = _plain(v)
        else:
            out[str(k)] = _plain(v)
    return out


_CROSS: dict[str, Any] = {}


def _cross_compile(cap: Capture, jf: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Compile one launch of ``jf`` for sm_90a, as ``JITFunction.run`` would for a device, and record it (once per
    specialization).

    A kernel that does not compile raises (``CompilationError``, a ptxas error, a wrong argument count): the compile
    rung reports it. A failure of ktui's use of Triton internals (a release that moved them) becomes a warning.
    """
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource, make_backend
        from triton.runtime.jit import create_function_from_signature

        if "backend" not in _CROSS:
            _CROSS["target"] = GPUTarget(*CROSS_TARGET)
            _CROSS["backend"] = make_backend(_CROSS["target"])
        target, backend = _CROSS["target"], _CROSS["backend"]
        binder = create_function_from_signature(jf.signature, jf.params, backend)
    except (ImportError, AttributeError) as exc:
        cap.warnings.append(f"sm_90a cross-compile unavailable with this Triton ({type(exc).__name__}: {exc})")
        return
    kw = dict(kwargs)
    bound, specialization, options = binder(*args, **kw)
    options, signature, constexprs, attrs = jf._pack_args(backend, kw, bound, specialization, options)
    key = f"{jf.fn.__qualname__}|{signature}|{constexprs}|{options.num_warps}|{options.num_stages}"
    if any(rec.get("_key") == key for rec in cap.launches):
        return
    t0 = time.perf_counter()
    kernel = triton.compile(ASTSource(jf, signature, constexprs, attrs), target=target, options=options.__dict__)
    rec = _triton_record(jf, kernel, kw, time.perf_counter() - t0, target="sm_90a")
    rec["signature"] = {str(k): str(v) for k, v in signature.items()}
    rec["constexprs"] = _named(jf, constexprs)
    rec["_key"] = key
    if cap.keep:
        rec["_compiled"] = kernel
    cap.launches.append(rec)


# -- CuTeDSL -----------------------------------------------------------------------------------------------------
class CuteCompiled:
    """What ``cute.compile`` returns inside a ktui worker: the real compiled function, recorded, and not called in
    dry mode or without a GPU."""

    def __init__(self, compiled: Any, name: str, has_gpu: bool):
        self._compiled = compiled
        self._name = name
        self._has_gpu = has_gpu

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        cap = _ACTIVE
        if cap is not None and cap.dry:
            return None
        if not self._has_gpu:
            raise NeedsGPU(
                f"CuTeDSL kernel {self._name} compiled for {os.environ.get('CUTE_DSL_ARCH', 'sm_90a')}, but running it "
                "needs a CUDA GPU (this worker is on the CPU; run with --device cuda on a GPU machine)"
            )
        return self._compiled(*args, **kwargs)

    def __getattr__(self, item: str) -> Any:
        return getattr(self._compiled, item)


def install_cute(has_gpu: bool) -> bool:
    """Wrap CuTeDSL's ``cute.compile`` (idempotent). Returns False when CuTeDSL is not installed."""
    if "cute" in _INSTALLED:
        return True
    try:
        from cutlass.base_dsl.compiler import CompileCallable
    except ImportError:
        return False
    _INSTALLED.add("cute")
    orig_call = CompileCallable.__call__

    def compile_call(self: Any, *args: Any, **kwargs: Any) -> CuteCompiled:
        t0 = time.perf_counter()
        cap = _ACTIVE
        if cap is not None and cap.keep:  # the dumps need the PTX and the cubin kept
            opts = str(kwargs.get("options") or "")
            for flag in ("--keep-ptx", "--keep-cubin"):
                if flag not in opts:
                    opts = f"{opts} {flag}".strip()
            kwargs["options"] = opts
        compiled = orig_call(self, *args, **kwargs)
        fn = args[0] if args else None
        own_name: Any = getattr(fn, "__name__", None)  # typed apart: inline, mypy infers the fallback as Optional
        name = own_name or getattr(getattr(fn, "func", None), "__name__", "cute_kernel")
        if cap is not None:
            rec: dict[str, Any] = {
                "language": "cutedsl",
                "kernel": name,
                "compile_s": round(time.perf_counter() - t0, 4),
                "target": os.environ.get("CUTE_DSL_ARCH") or ("device" if has_gpu else "sm_90a"),
            }
            if cap.keep:
                rec["_compiled"] = compiled
            cap.launches.append(rec)
        return CuteCompiled(compiled, name, has_gpu)

    # A deliberate patch of cutlass's method; unused-ignore: without the optional cute extra the class is Any.
    CompileCallable.__call__ = compile_call  # type: ignore[method-assign, unused-ignore]
    return True


# -- correctness-time hooks ----------------------------------------------------------------------------------------
_PIN: int | None = None


@contextlib.contextmanager
def pinned_config(index: int | None) -> Iterator[None]:
    """While active, every autotuned kernel launches config ``index`` (modulo its number of configs) without
    benchmarking: each config is checked alone, on its own inputs and output (cases.md autotune-mutation)."""
    global _PIN
    prev, _PIN = _PIN, index
    try:
        yield
    finally:
        _PIN = prev


def _pruned(tuner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The configs the autotuner itself would try on this call: its ``early_config_prune`` / ``perf_model`` pruning
    applied (a kernel that keeps only the blocks that hold a whole row must never be run with the others)."""
    prune = getattr(tuner, "prune_configs", None)
    if prune is None:
        return list(tuner.configs)
    tuner.nargs = dict(zip(tuner.arg_names, args, strict=False))  # what prune_configs reads, as Autotuner.run sets
    return list(prune(kwargs)) or list(tuner.configs)


def install_autotune_hooks() -> None:
    """Config pinning, config counting in dry mode, and restored inputs around each config's benchmark."""
    if "autotune" in _INSTALLED:
        return
    _INSTALLED.add("autotune")
    import torch
    from triton.runtime import autotuner

    inner_run = autotuner.Autotuner.run  # already wrapped by install_triton for dry mode

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        cap = _ACTIVE
        if cap is not None and cap.dry:
            cap.autotune_configs = max(cap.autotune_configs, len(self.configs))
        if _PIN is not None and (cap is None or not cap.dry):
            configs = _pruned(self, args, kwargs)
            config = configs[_PIN % len(configs)]
            if config.pre_hook is not None:
                config.pre_hook({**dict(zip(self.arg_names, args)), **kwargs, **config.all_kwargs()})
            return self.fn.run(*args, **kwargs, **config.all_kwargs())
        return inner_run(self, *args, **kwargs)

    autotuner.Autotuner.run = run

    orig_bench = getattr(autotuner.Autotuner, "_bench", None)
    if orig_bench is not None:

        def bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
            saved = [(a, a.clone()) for a in args if isinstance(a, torch.Tensor)]
            try:
                return orig_bench(self, *args, config=config, **meta)
            finally:
                for a, copy in saved:
                    a.copy_(copy)

        autotuner.Autotuner._bench = bench
