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
import hashlib
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
    """A CuTeDSL kernel, or a Triton kernel's inline PTX, was called on a machine without a CUDA GPU."""


_NEEDS_GPU: list[str] = []  # what ``CuteCompiled`` raised during the current request (ktui's own record of it)


def raise_needs_gpu(message: str) -> None:
    """Record ``message`` as this request's ``needs_gpu`` (``take_needs_gpu``) and raise ``NeedsGPU`` with it."""
    _NEEDS_GPU.append(message)
    raise NeedsGPU(message)


def take_needs_gpu() -> str:
    """The message of the first ``NeedsGPU`` that a compiled CuTeDSL function, or the interpreter meeting inline PTX,
    raised since the last call ('' when none), and forget them. Set by ``CuteCompiled.__call__`` itself (and
    ``interp_fixes``' ``create_inline_asm``), so an exception a kernel raises or catches
    under that name cannot make it up, and a ``NeedsGPU`` the kernel caught (falling back to torch, say) is still
    known: the server attaches it to the request's reply (``needs_gpu``)."""
    first = _NEEDS_GPU[0] if _NEEDS_GPU else ""
    _NEEDS_GPU.clear()
    return first


@dataclass
class Capture:
    """What one dry call of ``custom_kernel`` launched."""

    dry: bool = True
    cross: bool = False  # compile Triton launches for sm_90a instead of the (absent) device
    launches: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    autotune_configs: int = 0  # the most configs of any autotuned kernel launched
    keep: bool = False  # keep each compiled kernel (``_compiled`` in its record) for the dumps
    ran: bool = False  # a launch ran all the same (a kernel the version compiled itself, ``compiled[grid](...)``)
    # the tensors a dry call's Triton launches were given (none ran: what they hold, host code put there); read by
    # ``candidate.answer_fed`` and dropped with the capture
    fed: list[Any] = field(default_factory=list)

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
            if _CALL is not None and not warmup:
                _record_triton(self, args, kwargs)
            return orig_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        if cap.dry:
            cap.fed.extend(_tensors_of(args, kwargs))
        if cap.cross:
            _cross_compile(cap, self, args, kwargs, grid)
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

    from triton.runtime import interpreter  # the CPU candidate's kernels (TRITON_INTERPRET=1) launch through this

    orig_interp = interpreter.InterpretedFunction.run

    def interp_run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        if _CALL is not None and not warmup:
            _record_triton(self, args, kwargs)
        return orig_interp(self, *args, grid=grid, warmup=warmup, **kwargs)

    interpreter.InterpretedFunction.run = interp_run

    from triton.compiler import compiler  # a kernel compiled by the version itself, launched as compiled[grid](...)

    orig_getitem = compiler.CompiledKernel.__getitem__

    def compiled_getitem(self: Any, grid: Any) -> Any:
        runner = orig_getitem(self, grid)

        def run(*args: Any, **kwargs: Any) -> Any:
            if _ACTIVE is not None:  # the dry call does not stop these: its output is not "with no launch"
                _ACTIVE.ran = True
            if _CALL is not None:
                name = str(getattr(self, "name", "kernel"))
                _record(f"compiled|{name}|{id(self)}", lambda key: _own_launch(key, "triton", name))
            return runner(*args, **kwargs)

        return run

    compiler.CompiledKernel.__getitem__ = compiled_getitem


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


def _grid_of(grid: Any, bound: Any) -> list[int] | None:
    """The launch grid (x, y, z) as ``JITFunction.run`` computes it (``grid(bound_args)`` when callable), or None
    when it cannot be computed here."""
    try:
        g = grid(bound) if callable(grid) else grid
        dims = [int(d) for d in tuple(g)]
    except Exception:  # a grid ktui cannot evaluate is not the kernel's error: no limit checked
        return None
    return (dims + [1, 1, 1])[:3] if 1 <= len(dims) <= 3 else None


def _cross_compile(cap: Capture, jf: Any, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any = None) -> None:
    """Compile one launch of ``jf`` for sm_90a, as ``JITFunction.run`` would for a device, and record it (once per
    specialization, with the largest ``grid`` per dimension of its launches: the dumps rung checks CUDA's limits).

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
    # attrs too: launches that differ only in divisibility by 16 compile to different code
    key = f"{jf.fn.__qualname__}|{signature}|{constexprs}|{attrs}|{options.num_warps}|{options.num_stages}"
    dims = _grid_of(grid, bound) if grid is not None else None
    for rec in cap.launches:
        if rec.get("_key") == key:
            if dims is not None:
                rec["grid"] = [max(a, b) for a, b in zip(rec.get("grid") or dims, dims, strict=True)]
            return
    t0 = time.perf_counter()
    kernel = triton.compile(ASTSource(jf, signature, constexprs, attrs), target=target, options=options.__dict__)
    rec = _triton_record(jf, kernel, kw, time.perf_counter() - t0, target="sm_90a")
    rec["signature"] = {str(k): str(v) for k, v in signature.items()}
    rec["constexprs"] = _named(jf, constexprs)
    rec["_key"] = key
    if dims is not None:
        rec["grid"] = dims
    if cap.keep:
        rec["_compiled"] = kernel
    cap.launches.append(rec)


# -- launches of real calls ---------------------------------------------------------------------------------------
# While a checked call runs (``recording``), every Triton launch (``JITFunction.run`` on a GPU, the interpreter's
# ``InterpretedFunction.run`` on the CPU) and every call of a ``cute.compile`` result is recorded by what the compiler
# specializes it on: the kernel, each pointer's dtype and whether its address is divisible by 16, each int's width,
# divisibility by 16 and equality to 1, the constexprs and the launch options. The run rung reads them per case (a
# spec whose calls launched nothing computes in torch: cases.md hidden-torch) and has the compiler compile every
# distinct one (a path only other sizes dispatch is compiled for sm_90a too).
_CALL: dict[str, int] | None = None  # the call being recorded: launch key -> launches
_TABLE: dict[str, dict[str, Any]] = {}  # every distinct launch recorded since the last ``take_launches``
_PER_CASE: dict[int, tuple[Any, dict[str, int]]] = {}  # id(case) -> (the case, its launches); the case kept alive
_BACKWARD: dict[int, tuple[Any, dict[str, int]]] = {}  # id(case) -> (the case, its backward's launches)
_BINDERS: dict[int, tuple[Any, Any, Any]] = {}  # id(kernel) -> (kernel, its JITFunction, binder)


@contextlib.contextmanager
def recording(case: Any, backward: bool = False) -> Iterator[None]:
    """Record the launches made inside the block as ``case``'s (added to what earlier blocks of the same case
    recorded: a repeated call), or, ``backward``, as its backward's (a training op's ``autograd.grad``: compiled and
    dumped as the case's launches, but no launch of the call itself, which ``hidden-torch`` judges). ``take_launches``
    hands them out."""
    global _CALL
    prev, _CALL = _CALL, {}
    try:
        yield
    finally:
        counts, _CALL = _CALL, prev
        per_case = _BACKWARD if backward else _PER_CASE
        _, seen = per_case.setdefault(id(case), (case, {}))
        for key, n in (counts or {}).items():
            seen[key] = seen.get(key, 0) + n


def take_launches(cases: list[Any], entries: list[Any]) -> dict[str, Any]:
    """Put each recorded case's launches into its reply entry (``entries[i]["launches"]``: key -> launches; cases
    that launched nothing, and those the kernel does not take (``unsupported``), get ``{}``) and return the table of
    the distinct launches they made (key -> ``ObservedLaunch``). Everything recorded is forgotten."""
    used: set[str] = set()
    for case, entry in zip(cases, entries, strict=False):
        got, back = _PER_CASE.get(id(case)), _BACKWARD.get(id(case))
        counts = got[1] if got is not None and got[0] is case else {}
        backward = back[1] if back is not None and back[0] is case else {}
        if entry.get("unsupported"):
            # a case the kernel does not take (it raised on a layout or an empty spec): its launches are not compiled
            # for the GPU either (``BLOCK=triton.next_power_of_2(cols)`` is 0 for an empty row: on the H100 the
            # run rung failed honest kernels "one does not compile", 2026-12-06)
            counts, backward = {}, {}
        entry["launches"] = dict(counts)
        if backward:
            entry["backward_launches"] = dict(backward)
        used |= set(counts) | set(backward)
    table = {k: v for k, v in _TABLE.items() if k in used}
    _PER_CASE.clear()
    _BACKWARD.clear()
    _TABLE.clear()
    return table


def _record(raw: str, describe: Any) -> None:
    """Count one launch under the digest of ``raw`` (its identity); ``describe(digest)`` makes its table entry the
    first time."""
    if _CALL is None:
        return
    key = _DIGESTS.get(raw)
    if key is None:
        key = _DIGESTS[raw] = hashlib.sha256(raw.encode()).hexdigest()[:16]
    _CALL[key] = _CALL.get(key, 0) + 1
    if key not in _TABLE:
        _TABLE[key] = describe(key)


_DIGESTS: dict[str, str] = {}


def _own_launch(key: str, language: str, name: str) -> dict[str, Any]:
    """A launch of a kernel the version compiled itself (a ``cute.compile`` result, a Triton ``CompiledKernel``):
    recorded, but not compiled again (the version's own compile call compiled it)."""
    return {
        "key": key,
        "language": language,
        "kernel": name,
        "qualname": name,
        "signature": {},
        "constexprs": {},
        "options": {},
        "args": {},
        "unreplayable": f"compiled by the version itself ({'cute.compile' if language == 'cutedsl' else 'warmup'})",
    }


def _binder(kernel: Any) -> tuple[Any, Any]:
    """The kernel's JITFunction (made from an interpreted function's source on the CPU) and Triton's own binder:
    what ``JITFunction.run`` computes a launch's specialization with, here with the target-independent rules."""
    got = _BINDERS.get(id(kernel))
    if got is None or got[0] is not kernel:
        from triton.backends.compiler import BaseBackend
        from triton.runtime import jit

        jf = kernel if isinstance(kernel, jit.JITFunction) else jit.JITFunction(kernel.fn, **kernel.kwargs)
        binder = jit.create_function_from_signature(jf.signature, jf.params, BaseBackend)
        got = _BINDERS[id(kernel)] = (kernel, jf, binder)
    return got[1], got[2]


def _tensors_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The plain tensors among a launch's arguments (a tuple argument's items too)."""
    import torch

    out = []
    for v in (*args, *kwargs.values()):
        for x in v if isinstance(v, tuple) else (v,):
            if type(x) in (torch.Tensor, torch.nn.Parameter):
                out.append(x)
    return out


def _record_triton(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Record one launch of ``kernel`` in the call being recorded. A launch whose arguments do not bind is not
    recorded: the launch itself raises the same error, which the run reports."""
    try:
        jf, binder = _binder(kernel)
        bound, specialization, options = binder(*args, **kwargs)
    except Exception:
        return
    qualname = f"{jf.fn.__module__}:{jf.fn.__qualname__}"
    raw = f"triton|{qualname}|{specialization!r}|{sorted((k, repr(v)) for k, v in options.items())}"
    _record(raw, lambda key: _triton_launch(key, jf, qualname, bound, specialization, options))


def _triton_launch(
    key: str, jf: Any, qualname: str, bound: dict[str, Any], spec: list[Any], options: dict[str, Any]
) -> dict[str, Any]:
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    args: dict[str, Any] = {}
    unreplayable = []
    for (name, value), (ty, attr) in zip(bound.items(), spec, strict=False):
        if ty == "constexpr":
            signature[name] = "constexpr"
            constexprs[name] = _plain(getattr(value, "value", value))
        else:
            signature[name] = f"{ty}:16" if attr == "D" else str(ty)
        args[name] = _describe_arg(value)
        if _opaque(args[name]):
            unreplayable.append(f"{name} ({type(value).__name__})")
    rec: dict[str, Any] = {
        "key": key,
        "language": "triton",
        "kernel": jf.fn.__name__,
        "qualname": qualname,
        "signature": signature,
        "constexprs": constexprs,
        "options": {k: _plain(v) for k, v in options.items()},
        "args": args,
    }
    if unreplayable:
        rec["unreplayable"] = f"arguments ktui cannot rebuild: {', '.join(unreplayable)}"
    return rec


def _opaque(desc: dict[str, Any]) -> bool:
    """Whether ``_describe_arg``'s description holds an argument ``rebuild`` cannot make."""
    return "opaque" in desc or any(_opaque(x) for x in desc.get("tuple", ()))


def _describe_arg(v: Any) -> Any:
    """How to rebuild an argument that specializes as ``v`` does (``rebuild``): a tensor by dtype and 16-byte
    alignment, numbers and strings by value, a Triton dtype by name, a tuple item by item."""
    import torch

    if isinstance(v, torch.Tensor):
        return {"tensor": str(v.dtype).removeprefix("torch."), "aligned": v.data_ptr() % 16 == 0}
    if v is None or isinstance(v, (bool, int, float, str)):
        return {"value": v}
    cls = type(v).__name__
    if cls == "constexpr":
        return _describe_arg(v.value)
    if cls == "dtype" and type(v).__module__.startswith("triton"):
        return {"dtype": str(v)}
    if isinstance(v, (tuple, list)):
        return {"tuple": [_describe_arg(x) for x in v]}
    fn = getattr(v, "fn", None)
    if fn is not None and hasattr(fn, "__qualname__"):
        return {"jit": f"{fn.__module__}:{fn.__qualname__}"}
    return {"opaque": cls}


def rebuild(desc: Any) -> Any:
    """An argument made from ``_describe_arg``'s description that Triton specializes the same way: a tensor of the
    dtype (a one-element offset makes an address not divisible by 16), the value itself, a ``tl.dtype``, a tuple.

    Raises:
        ValueError: an argument described as opaque, or a kernel that cannot be found.
    """
    import torch

    if "tensor" in desc:
        t = torch.empty(64, dtype=getattr(torch, desc["tensor"]))
        return t if desc["aligned"] else t[1:]
    if "value" in desc:
        return desc["value"]
    if "dtype" in desc:
        import triton.language as tl

        return tl.dtype(desc["dtype"])
    if "tuple" in desc:
        return tuple(rebuild(x) for x in desc["tuple"])
    if "jit" in desc:
        return find_kernel(desc["jit"])
    raise ValueError(f"cannot rebuild an argument of type {desc.get('opaque', '?')}")


def find_kernel(qualname: str, module: Any = None) -> Any:
    """The JITFunction registered as ``module:qualname`` (Triton's registry of every JITFunction made in this
    process), else one found among ``module``'s globals (directly or inside an autotuner or heuristics).

    Raises:
        ValueError: no such kernel in this process.
    """
    from triton.runtime import jit

    registry = getattr(jit, "_triton_jit_function_registry", {})
    if qualname in registry:
        return registry[qualname]
    for obj in vars(module).values() if module is not None else ():
        while obj is not None and not isinstance(obj, jit.JITFunction):
            obj = getattr(obj, "fn", None) if not isinstance(obj, type) else None
        if obj is not None and f"{obj.fn.__module__}:{obj.fn.__qualname__}" == qualname:
            return obj
    raise ValueError(f"kernel {qualname} not found after importing the version (made inside a function?)")


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
        if _CALL is not None:
            _record(f"cutedsl|{self._name}|{id(self._compiled)}", lambda key: _own_launch(key, "cutedsl", self._name))
        if not self._has_gpu:
            message = (
                f"CuTeDSL kernel {self._name} compiled for {os.environ.get('CUTE_DSL_ARCH', 'sm_90a')}, but running it "
                "needs a CUDA GPU (this worker is on the CPU; run with --device cuda on a GPU machine)"
            )
            raise_needs_gpu(message)
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
AUTO = "auto"  # a case's ``config``: nothing pinned, the autotuner benchmarks and chooses
_PIN: int | None = None  # the pinned config index of the active block; None: the autotuner's own choice
_PINNING = False  # a ``pinned_config`` block is active (a checked call)
_SALT = ""
_RAN: dict[str, int] = {}  # the configs the autotuned kernels of the latest block launched, by kernel name


@contextlib.contextmanager
def pinned_config(index: int | str | None, salt: str = "") -> Iterator[None]:
    """While active (a checked call), the autotuned kernels launch the configs ktui picks, without benchmarking.

    With an int ``index`` each autotuned kernel launches config ``(index + config_shift(salt, kernel)) % n`` of the
    n configs its own pruning keeps for the call (``_pruned``): every config is checked alone, on its own inputs and
    output (cases.md autotune-mutation), the cases of one ``salt`` with indices 0 .. n - 1 launch every config of
    every kernel, and since the shift is drawn per kernel, two kernels do not move in lockstep (cases.md uncrossed:
    two kernels whose split factors must agree fail). With ``"auto"`` (``AUTO``) or None nothing is pinned: the
    autotuner benchmarks its configs and launches its choice (under the Triton interpreter, which has no GPU to time
    on, ktui times each config's call itself: ``_interpreter_bench``). ``configs_ran()`` says afterwards which
    config each kernel launched.
    """
    global _PIN, _PINNING, _SALT
    prev = (_PIN, _PINNING, _SALT)
    _PIN, _PINNING, _SALT = (None if index is None or index == AUTO else int(index)), True, salt
    _RAN.clear()
    try:
        yield
    finally:
        _PIN, _PINNING, _SALT = prev


def configs_ran() -> dict[str, int]:
    """Per autotuned kernel launched in the latest ``pinned_config`` block, the index into its ``configs`` of the
    config it launched (pinned or the autotuner's choice; -1 when the choice is not one of them): ``{"add": 1}``."""
    return dict(_RAN)


def config_shift(salt: str, kernel: str) -> int:
    """The offset added to a pinned config index for ``kernel``: the first 32 bits of sha256(``salt|kernel``), so
    each kernel's configs are drawn apart from the others' and the same case (its ``salt``) replays them."""
    return int(hashlib.sha256(f"{salt}|{kernel}".encode()).hexdigest()[:8], 16)


def _kernel_name(tuner: Any) -> str:
    return str(getattr(getattr(tuner, "base_fn", None), "__name__", None) or getattr(tuner.fn, "__name__", "kernel"))


def _index_of(tuner: Any, config: Any) -> int:
    for i, c in enumerate(tuner.configs):
        if c is config:
            return i
    for i, c in enumerate(tuner.configs):
        if c == config:
            return i
    return -1


def _interpreter_bench(kernel_call: Any, quantiles: Any = None) -> Any:
    """What the autotuner's ``do_bench`` returns (ms, one per quantile), timed on the host over one call: under the
    Triton interpreter Triton's own benchmarker needs a GPU driver ("0 active drivers") and cannot run."""
    t0 = time.perf_counter()
    kernel_call()
    ms = (time.perf_counter() - t0) * 1e3
    return [ms] * len(quantiles) if quantiles else ms


def _interpreting() -> bool:
    try:
        from triton import knobs

        return bool(knobs.runtime.interpret)
    except (ImportError, AttributeError):
        return os.environ.get("TRITON_INTERPRET") == "1"


def _pruned(tuner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The configs the autotuner itself would try on this call: its ``early_config_prune`` / ``perf_model`` pruning
    applied (a kernel that keeps only the blocks that hold a whole row must never be run with the others)."""
    prune = getattr(tuner, "prune_configs", None)
    if prune is None:
        return list(tuner.configs)
    tuner.nargs = dict(zip(tuner.arg_names, args, strict=False))  # what prune_configs reads, as Autotuner.run sets
    return list(prune(kwargs)) or list(tuner.configs)


def install_autotune_hooks() -> None:
    """Config pinning (``pinned_config``), config counting in dry mode, and the interpreter's benchmarker for the
    autotuner's own choice. The autotuner benchmarks its configs on the call's own arguments, as in real use: an
    output it accumulates into without ``reset_to_zero`` or an input it updates in place without ``restore_value``
    is left as Triton leaves it (ktui restored every tensor argument after each config's benchmark, an implicit
    ``restore_value`` the user's autotuner does not have, and a split-K ``atomic_add`` row sum that returns 3x the
    sum on the first call of each key in real use passed: red team round 26, #7)."""
    if "autotune" in _INSTALLED:
        return
    _INSTALLED.add("autotune")
    from triton.runtime import autotuner

    inner_run = autotuner.Autotuner.run  # already wrapped by install_triton for dry mode

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        cap = _ACTIVE
        if cap is not None and cap.dry:
            cap.autotune_configs = max(cap.autotune_configs, len(self.configs))
        if not _PINNING or (cap is not None and cap.dry):
            return inner_run(self, *args, **kwargs)
        name = _kernel_name(self)
        if _PIN is None:  # the autotuner's own choice
            if _interpreting() and getattr(self, "_do_bench", None) is None and "do_bench" not in self.__dict__:
                self.__dict__["do_bench"] = _interpreter_bench  # shadows Triton's cached_property
            try:
                return inner_run(self, *args, **kwargs)
            finally:
                _RAN[name] = _index_of(self, getattr(self, "best_config", None))
        configs = _pruned(self, args, kwargs)
        config = configs[(_PIN + config_shift(_SALT, name)) % len(configs)]
        _RAN[name] = _index_of(self, config)
        self.best_config = config  # as Autotuner.run leaves it: host code may read it
        if config.pre_hook is not None:
            config.pre_hook({**dict(zip(self.arg_names, args)), **kwargs, **config.all_kwargs()})
        return self.fn.run(*args, **kwargs, **config.all_kwargs())

    autotuner.Autotuner.run = run
