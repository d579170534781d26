"""Bounds checks for the Triton interpreter: every ``tl.load`` and ``tl.store`` against its tensors' storage
(cases.md oob).

The interpreter (Triton 3.9, ``runtime/interpreter.py``) runs a kernel on the host: a tensor argument becomes its
raw address (``_implicit_cvt``: ``data_ptr()``), and ``create_masked_load`` / ``create_masked_store`` hand the
addresses of the lanes whose mask is on straight to ``_interpreter.load`` / ``store``, which read and write process
memory with no check. A missing load mask reads whatever lies past the buffer (on the CPU often zeros, so the
kernel passes); a missing store mask writes into the heap and the worker later dies in ``free(): invalid pointer``
with no word about the kernel.

While a launch runs, the allowed ranges are the storages of its tensor arguments (including tuple elements,
``TensorWrapper`` bases and ``TensorDescriptor`` bases): a guarded allocation (``ktui.worker.guards``) counts as its
payload only, without the canaries. Each load, store and atomic checks the addresses of its active lanes (mask on)
and raises ``OutOfBoundsAccess``: ``out-of-bounds store at offset 129 of out_ptr (float32, 129 elements in its
storage), v1.py line 9``; the offset is in elements of the nearest argument at or below the address (a negative
offset when below every argument). Lanes whose mask is off are never checked: computing an address out of bounds
is fine, touching it is not.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ktui.worker import heartbeat

_DONE = False
_HERE = str(Path(__file__).resolve())


class KernelFault(RuntimeError):
    """A fault the interpreter found in a kernel's own memory accesses: a failure of the kernel on any layout,
    never a layout it refuses (``is_out_of_bounds``)."""


class OutOfBoundsAccess(KernelFault):
    """A load, store or atomic of an interpreted Triton kernel touched memory outside its tensor arguments."""


@dataclass
class _Arg:
    name: str
    data_ptr: int
    elsize: int
    dtype: str
    lo: int  # the storage's allowed bytes: [lo, hi)
    hi: int
    strides: tuple[int, ...] | None = None  # a tensor that is not contiguous: its strides (elements), else None
    shape: tuple[int, ...] = ()  # its sizes (a race's element is named by its index: ``interp_races._where``)
    all_strides: tuple[int, ...] = ()  # its strides (elements), contiguous or not


@dataclass
class _Ranges:
    args: list[_Arg]
    los: np.ndarray  # merged allowed intervals, sorted: [los[i], his[i])
    his: np.ndarray


_CURRENT: list[_Ranges | None] = [None]
FAR = 16  # an address this many storage sizes past the nearest argument below is named by address, not by that argument


def _ranges(named: list[tuple[str, Any]]) -> _Ranges:
    from ktui.worker.guards import payload_of

    args: list[_Arg] = []

    def add(name: str, v: Any) -> None:
        if isinstance(v, tuple):
            for i, x in enumerate(v):
                add(f"{name}[{i}]", x)
            return
        base = getattr(v, "base", None)
        if not hasattr(v, "untyped_storage") and base is not None and hasattr(base, "data_ptr"):
            v = base  # TensorWrapper, TensorDescriptor
        if not hasattr(v, "untyped_storage") or not hasattr(v, "data_ptr"):
            return
        s = v.untyped_storage()
        lo, hi = payload_of(s) or (s.data_ptr(), s.data_ptr() + s.nbytes())
        strides = None
        try:
            if not v.is_contiguous():
                strides = tuple(v.stride())
        except (AttributeError, RuntimeError):
            pass
        try:
            shape, every = tuple(int(n) for n in v.shape), tuple(int(n) for n in v.stride())
        except (AttributeError, RuntimeError, TypeError):
            shape, every = (), ()
        dtype = str(v.dtype).removeprefix("torch.")
        args.append(_Arg(name, v.data_ptr(), v.element_size(), dtype, lo, hi, strides, shape, every))

    for name, v in named:
        add(name, v)
    spans = sorted((a.lo, a.hi) for a in args if a.hi > a.lo)
    merged: list[list[int]] = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    los = np.array([m[0] for m in merged], dtype=np.uint64)
    his = np.array([m[1] for m in merged], dtype=np.uint64)
    return _Ranges(args, los, his)


def _kernel_line() -> str:
    """``v1.py line 9``: the innermost frame outside Triton and ktui (the kernel's own source line)."""
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        if "triton" not in Path(name).parts and name != _HERE and "/ktui/worker/" not in name:
            return f", {Path(name).name} line {f.f_lineno}"
        f = f.f_back  # type: ignore[assignment]  # None ends the loop
    return ""


def active(ptrs: Any, mask: Any) -> np.ndarray:
    """The addresses of an op's active lanes: ``ptrs`` (a block of addresses) flattened to uint64 where ``mask``
    (broadcast to ``ptrs``' shape; None: every lane) holds."""
    p: np.ndarray = np.asarray(ptrs).astype(np.uint64, copy=False).reshape(-1)
    if mask is None:
        return p
    kept: np.ndarray = p[np.broadcast_to(np.asarray(mask, dtype=bool), np.shape(ptrs)).reshape(-1)]
    return kept


def _check(ptrs: Any, mask: Any, what: str) -> None:
    r = _CURRENT[-1]
    if r is None:
        return
    p = active(ptrs.data, None if mask is None else mask.data)
    if not p.size:
        return
    try:
        from triton.runtime.interpreter import _get_np_dtype

        es = np.dtype(_get_np_dtype(ptrs.get_element_ty())).itemsize
    except Exception:  # an element type numpy has no name for: check the first byte only
        es = 1
    idx = np.searchsorted(r.los, p, side="right").astype(np.int64) - 1
    ok = (idx >= 0) & (p + np.uint64(es) <= r.his[np.maximum(idx, 0)]) if r.los.size else np.zeros(p.shape, bool)
    if ok.all():
        return
    bad = int(p[~ok][0])
    # the argument nearest the address, before or after it (new-user trial 35, F3: a load 100 elements before x_ptr,
    # a label of -100 used as an index, was named by the nearest argument below, 470,200 bytes away)
    arg = min(r.args, key=lambda a: a.lo - bad if bad < a.lo else max(0, bad - a.hi + 1), default=None)
    n_bad = int((~ok).sum())
    lanes = f"{n_bad} of {p.size} active lane{'s' if p.size != 1 else ''} outside every tensor argument"
    if arg is None:
        raise OutOfBoundsAccess(f"out-of-bounds {what} at address {bad:#x}: the launch has no tensor arguments")
    offset = (bad - arg.data_ptr) // arg.elsize
    held = (arg.hi - arg.data_ptr) // arg.elsize
    strided = [a for a in r.args if a.strides is not None]
    # a flat index into a strided view runs past its storage as a missing mask does: name both fixes (a new user's
    # stride bug read "mask every access" with every access masked)
    # the strided inputs first when there are any: new-user trial 24 F12 read the generic advice first, where the
    # cause was an offsets input given with strides (2,) and indexed as if contiguous
    hint = (
        ", ".join(f"{a.name} is strided {a.strides}" for a in strided[:3])
        + ": index it by its strides (or mask every access: offs < n)"
        if strided
        else "mask every access (offs < n)"
    )
    size = max(arg.hi - arg.lo, 1)
    if bad >= arg.hi + FAR * size or bad + FAR * size < arg.lo:
        # far past every argument: the nearest one below is no clue to which pointer it came from (a scalar load at an
        # index read from garbage was reported "of t_ptr" on a line loading from x_ptr: new-user trial 29, F5)
        raise OutOfBoundsAccess(
            f"out-of-bounds {what} at address {bad:#x}, far outside every tensor argument (the nearest, "
            f"{arg.name}, is {abs(bad - arg.data_ptr):,} bytes away){_kernel_line()}: {lanes}; an index computed "
            f"from a wrong value (a misread stride or an unmasked load's garbage); {hint}"
        )
    if bad < arg.lo:
        raise OutOfBoundsAccess(
            f"out-of-bounds {what} at offset {offset} of {arg.name} ({arg.dtype}, {-offset:,} element"
            f"{'s' if offset != -1 else ''} before its first: a negative index){_kernel_line()}: {lanes}; an index "
            f"that can be negative (a label such as ignore_index = -100, a padding id) needs its own mask; {hint}"
        )
    raise OutOfBoundsAccess(
        f"out-of-bounds {what} at offset {offset} of {arg.name} ({arg.dtype}, {held} element{'s' if held != 1 else ''}"
        f" up to the end of its storage){_kernel_line()}: {lanes}; {hint}"
    )


def is_out_of_bounds(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is a ``KernelFault`` (an ``OutOfBoundsAccess``, a flag polled
    with a plain load: ``interp_races.PlainWait``): never an unsupported layout."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, KernelFault):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def install() -> None:
    """Patch the interpreter's loads, stores, atomics and launches (idempotent; a no-op on Triton releases without
    these methods)."""
    global _DONE
    if _DONE:
        return
    _DONE = True
    try:
        from triton.runtime.interpreter import GridExecutor, InterpreterBuilder, InterpreterError
    except ImportError:
        return

    orig_load = InterpreterBuilder.create_masked_load
    orig_store = InterpreterBuilder.create_masked_store

    def create_masked_load(self: Any, ptrs: Any, mask: Any, other: Any, cache_policy: Any, is_volatile: Any) -> Any:
        _check(ptrs, mask, "load")
        return orig_load(self, ptrs, mask, other, cache_policy, is_volatile)

    def create_masked_store(self: Any, ptrs: Any, value: Any, mask: Any, cache_policy: Any) -> Any:
        _check(ptrs, mask, "store")
        return orig_store(self, ptrs, value, mask, cache_policy)

    InterpreterBuilder.create_masked_load = create_masked_load
    InterpreterBuilder.create_masked_store = create_masked_store

    orig_rmw = getattr(InterpreterBuilder, "create_atomic_rmw", None)
    if orig_rmw is not None:

        def create_atomic_rmw(self: Any, op: Any, ptr: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
            _check(ptr, mask, "atomic")
            return orig_rmw(self, op, ptr, val, mask, sem, scope)

        InterpreterBuilder.create_atomic_rmw = create_atomic_rmw

    orig_cas = getattr(InterpreterBuilder, "create_atomic_cas", None)
    if orig_cas is not None:

        def create_atomic_cas(self: Any, ptr: Any, cmp: Any, val: Any, sem: Any, scope: Any) -> Any:
            _check(ptr, None, "atomic")
            return orig_cas(self, ptr, cmp, val, sem, scope)

        InterpreterBuilder.create_atomic_cas = create_atomic_cas

    orig_grid_idx = getattr(InterpreterBuilder, "set_grid_idx", None)
    if orig_grid_idx is not None:

        def set_grid_idx(self: Any, x: Any, y: Any, z: Any) -> Any:
            heartbeat.beat()  # a program starts: the one before it ended (``ktui.worker.heartbeat``)
            return orig_grid_idx(self, x, y, z)

        InterpreterBuilder.set_grid_idx = set_grid_idx

    orig_init = GridExecutor._init_args_hst
    orig_call = GridExecutor.__call__

    def init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
        args_hst, kwargs_hst = orig_init(self, args_dev, kwargs)
        named = list(zip(self.arg_names, args_hst)) + list(kwargs_hst.items())
        _CURRENT[-1] = _ranges(named)
        return args_hst, kwargs_hst

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        _CURRENT.append(None)
        try:
            return orig_call(self, *args, **kwargs)
        except InterpreterError as exc:
            if isinstance(exc.__cause__, KernelFault):
                raise exc.__cause__.with_traceback(None) from None
            raise
        finally:
            _CURRENT.pop()

    GridExecutor._init_args_hst = init_args_hst
    GridExecutor.__call__ = call
