"""Fixes to the Triton interpreter that ktui's CPU path depends on.

The interpreter stores bfloat16 as ``uint16`` (numpy has no bfloat16) and hands those integers to numpy as they are
(Triton 3.9: ``runtime/interpreter.py``): ``tl.dot`` on bf16 and every bf16 arithmetic op (``acc += x``, ``a * b``,
``tl.exp``...) compute on the bit patterns, i.e. garbage, and a correct bf16 kernel fails on the CPU.

The fixes widen bf16 operands to float32 exactly (a bf16 value is the top 16 bits of the float32 with the same
value), compute in float32, and round results that are bf16 back to nearest-even, as the GPU's ``cvt.rn.bf16.f32``
does. ``tl.dot`` keeps the accumulator's dtype: "bf16 in, fp32 accumulate" gets what the GPU computes up to
summation order, and a bf16 accumulator rounds after every step, as on the GPU (cases.md bf16-accum).

Reductions and scans of bf16 (``tl.sum``, ``tl.max``, ``tl.argmax``, ``tl.cumsum``, ``tl.reduce``,
``tl.associative_scan``) run on the widened float32 values and round each bf16 result once
(``_install_reduce_scan``).

Casts into and out of bf16 are fixed the same way (``cast_impl``, which every ``fp_trunc``, ``fp_ext``,
``si_to_fp``, ``fp_to_si``... goes through): the interpreter truncates float32 -> bf16 (round toward zero, so every
bf16 output computed in float32 came out biased low by up to one ulp) and converts ints, float64 and float16 to and
from bf16 as integers (``astype(uint16)`` of the value, or of the bit pattern). The fix rounds to nearest even
(``cvt.rn.bf16.f32``, ``cvt.rn.bf16.f64``) and widens bf16 exactly; an explicit ``fp_downcast_rounding="rtz"``
still truncates, as it does on the GPU.

``tl.dot`` on float32 operands with TF32 input precision (Triton's default, ``input_precision="tf32"``; on every
NVIDIA GPU since sm_80 the tensor cores read 10 mantissa bits) rounds each operand to TF32 first (to nearest, ties
away from zero, as ``cvt.rna.tf32.f32`` does), so a float32 matmul that leaves the default computes on the CPU what
it computes on the GPU (red team round 11: the interpreter's exact float32 product passed a default-precision dot
that the GPU computes in TF32); ``"tf32x3"`` (three TF32 products, near float32) and ``"ieee"`` stay exact.

``tl.dot`` of fp16 operands into an fp16 accumulator (``out_dtype=tl.float16``, or an fp16 ``acc``) rounds the
accumulator to fp16 after every k-step of 16, as the GPU's ``HGMMA.64xNx16.F16`` does (``f16_accumulate``; red team
round 12 W3: the interpreter summed the whole K in float32 and rounded once, and an fp16-accumulating attention
score kernel passed on the CPU).

Casts to and from fp8 are exact, as the GPU's ``cvt.rn.satfinite`` computes them (``interp_fp8``: the interpreter
lost a rounding carry into the next binade, did not saturate and truncated subnormals; red team round 14 F1), and
fp8 dot operands are widened exactly (NaN and inf kept). The functions of ``triton.language.extra.libdevice`` (and
``...extra.cuda.libdevice``) compute under the interpreter with numpy in the right precision (``interp_libdevice``:
the interpreter returned None from every one of them; round 14), float32 ones flushing subnormal arguments and
results to zero as libdevice does on the GPU (``__CUDA_FTZ=1``; H200 measurement, ``benchmarks/interp_vs_gpu.py``).

Inline PTX (``tl.inline_asm_elementwise``) cannot run under the interpreter, nor can a kernel compiled ahead with
``kernel.warmup(...)`` be read or launched (its registers, shared memory): a version that does either needs a GPU,
and its rungs that call it are skipped saying so (``capture.NeedsGPU``), as a CuTeDSL kernel's are on the CPU.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ktui.worker.interp_bf16 import bf16_to_f32 as _bf16_to_f32
from ktui.worker.interp_bf16 import f32_to_bf16 as _f32_to_bf16
from ktui.worker.interp_bf16 import to_bf16 as _to_bf16

_DONE = False


def _to_tf32(data: np.ndarray) -> np.ndarray:
    """float32 rounded to TF32 (10 explicit mantissa bits) to nearest, ties away from zero, as the GPU's
    ``cvt.rna.tf32.f32`` does (PTX ISA, ``cvt``: ``.rna`` on ``.tf32``); the result is float32 with its low 13 bits
    zero. inf and NaN stay as they are."""
    bits = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(data), rounded, data).astype(np.float32)


def _float_to_int(data: np.ndarray, dst: Any) -> np.ndarray:
    """``data`` (floats) converted to the integer type ``dst`` as sm_90 converts them: toward zero, saturated to the
    destination's range, NaN to 0 (PTX ISA, ``cvt``: "for float-to-integer conversions, the result is clamped to the
    destination range by default", NaN gives 0; Triton lowers ``.to(tl.int32)`` of a float to ``cvt.rzi.s32.f32``).
    numpy's ``astype`` gives INT_MIN for NaN, +-inf and out-of-range values: an honest int8 quantizer (round,
    ``.to(tl.int32)``, clamp in integers) got -128 where the GPU and torch give 127 or 0 (red team round 28, #3)."""
    bits = dst.int_bitwidth
    if dst.is_int_signed():
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    else:
        lo, hi = 0, 2**bits - 1
    wide = np.asarray(data, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        clipped = np.clip(np.trunc(np.nan_to_num(wide, nan=0.0, posinf=hi, neginf=lo)), lo, hi)
    return clipped.astype(np.dtype(f"{'int' if dst.is_int_signed() else 'uint'}{bits}"))


def _install_casts(builder: Any, handle: Any, tl: Any) -> None:
    """Patch ``builder.cast_impl`` so casts to and from bf16 convert values, rounding to nearest even, and casts from
    a float to an integer saturate as the GPU's do (``_float_to_int``)."""
    orig = getattr(builder, "cast_impl", None)
    if orig is None:
        return
    bf16 = tl.bfloat16

    def cast_impl(self: Any, src: Any, dst_type: Any) -> Any:
        s, d = src.dtype.scalar, dst_type.scalar
        if s.is_floating() and d.is_int() and d != tl.int1:
            return handle(_float_to_int(_bf16_to_f32(src.data) if s == bf16 else src.data, d), d)
        if s == d or bf16 not in (s, d):
            return orig(self, src, dst_type)
        if d == bf16:
            return handle(_to_bf16(src.data), bf16)
        wide = _bf16_to_f32(src.data)
        if d == tl.float32:
            return handle(wide, d)
        with np.errstate(invalid="ignore"):
            return handle(orig(self, handle(wide, tl.float32), dst_type).data, d)

    builder.cast_impl = cast_impl


MMA_K_F16 = 16  # k of one fp16 warpgroup MMA step: wgmma.mma_async.m64nNk16 (PTX ISA, "Asynchronous Warpgroup MMA")


def f16_accumulate(a: np.ndarray, b: np.ndarray, acc: np.ndarray, k_step: int = MMA_K_F16) -> np.ndarray:
    """``acc + a @ b`` with an fp16 accumulator as the GPU computes it: per k-step of ``k_step`` (16) the products
    summed in float32 and added into the accumulator, which is rounded to fp16 after each step (sm_90a: one
    ``HGMMA.64xNx16.F16`` per step, its accumulator registers fp16; ktui's own SASS dump of a ``tl.dot(q, k.T,
    out_dtype=tl.float16)`` with d = 128 holds 8 of them, red team round 12 W3). The interpreter's own dot rounds once
    (``np.matmul(..., dtype=float16)``), so an fp16 accumulator over a long K passed on the CPU while the GPU's
    rounds K / 16 times; one rounding per step is the least the GPU does, never more error than it has.

    a: (..., M, K), b: (..., K, N), acc: (..., M, N), all float16 (numpy). Returns float16 (..., M, N)."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    out = np.asarray(acc, dtype=np.float16)
    with np.errstate(over="ignore", invalid="ignore"):
        for k0 in range(0, a.shape[-1], k_step):
            part = np.matmul(a32[..., :, k0 : k0 + k_step], b32[..., k0 : k0 + k_step, :])
            out = (out.astype(np.float32) + part).astype(np.float16)
    return out


def matmul_in(a: np.ndarray, b: np.ndarray, dtype: Any) -> np.ndarray:
    """``a @ b`` computed in ``dtype`` (float32 for a dot's fp32 accumulator): the operands cast to it, then
    ``np.matmul``. ``np.matmul(a, b, dtype=...)``, the interpreter's own call, computes the same products and sums in
    the same precision but never reaches BLAS: 22 ms against 0.05 ms for a 128x64 @ 64x128 float32 block (measured
    here, numpy 2.4, 2026-12-07), 57% of a CPU bf16 GEMM's interpreted time."""
    out: np.ndarray = np.matmul(a.astype(dtype, copy=False), b.astype(dtype, copy=False))
    return out


def _inline_asm_needs_gpu(self: Any, asm: str, constraints: str, *_: Any) -> Any:
    """``tl.inline_asm_elementwise`` under the interpreter: its PTX runs only on a GPU, so the version needs one
    (``capture.NeedsGPU``: its rungs that call it are skipped with this reason, as a CuTeDSL kernel's are) instead of
    failing with the interpreter's NotImplementedError. Since the stand-in driver (``target_device``) answers as an
    H200, a kernel's ``tl.target_info.is_cuda()`` branch is the one the GPU runs: checking its non-CUDA fallback
    instead would pass what the GPU never runs."""
    from ktui.worker.capture import raise_needs_gpu

    first = " ".join(str(asm).split())[:60]
    raise_needs_gpu(
        f"the kernel's inline PTX (tl.inline_asm_elementwise: {first!r}) runs only on a CUDA GPU: the Triton "
        "interpreter cannot execute it (run with --device cuda on a GPU machine to check this version)"
    )


def _skip_discarded_overflow_checks() -> None:
    """Turn off the interpreter's ``sanitize_overflow`` where its result is thrown away. Triton's semantic layer
    widens both operands of every int32 ``+``, ``-`` and ``*`` to int64, computes, compares with the int32 range and
    hands the condition to ``device_assert``, which returns without asserting unless ``options.debug``
    (``TritonSemantic.binary_op_sanitize_overflow_impl`` and ``device_assert``, Triton 3.9): without debug the work
    checks nothing, and it was about a quarter of an index-heavy kernel's interpreted time (``pid * BLOCK``,
    ``offs * stride``; vector_add/v1 profiled with py-spy). With ``debug`` on, the check stays."""
    import dataclasses

    from triton.runtime import interpreter as interp

    builder: Any = getattr(interp, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if options is None or getattr(options, "debug", True) or not getattr(options, "sanitize_overflow", False):
        return
    builder.options = dataclasses.replace(options, sanitize_overflow=False)


def _warmup_needs_gpu(self: Any, *args: Any, grid: Any = None, **kwargs: Any) -> Any:
    """``kernel.warmup(...)`` under the interpreter: Triton's returns None (nothing is compiled), and the code after
    it (the fused-softmax tutorial's ``kernel._init_handles()``, ``kernel.n_regs``, ``kernel.metadata.shared``,
    ``kernel[grid](...)``) failed with an AttributeError on None (red team round 15, F1). Those facts come from a
    kernel compiled and loaded on a GPU: the version needs one (``capture.NeedsGPU``, its rungs that call it
    skipped with this reason)."""
    from ktui.worker.capture import raise_needs_gpu

    name = getattr(self, "__name__", "kernel")
    raise_needs_gpu(
        f"{name}.warmup() compiles and loads the kernel on a GPU (its n_regs, metadata.shared and launches of the "
        "compiled kernel): the Triton interpreter has none of them (run with --device cuda on a GPU machine to check "
        "this version)"
    )


def _is_tf32(input_precision: Any) -> bool:
    """``input_precision`` (Triton's ``INPUT_PRECISION`` enum, or its name) is plain TF32 (not ``TF32x3``)."""
    name = getattr(input_precision, "name", str(input_precision))
    return str(name).split(".")[-1].upper() == "TF32"


def install() -> None:
    """Patch ``InterpreterBuilder`` (idempotent; a no-op on Triton releases without these methods)."""
    global _DONE
    if _DONE:
        return
    _DONE = True
    # numpy's overflow and invalid-value warnings from the interpreter's arithmetic (a GPU computes inf and NaN
    # silently): in the candidate's log they read as lines the version printed (new-user trial 31, F3)
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"triton\.runtime\.interpreter")
    try:
        import triton.language as tl
        from triton.runtime.interpreter import InterpreterBuilder, TensorHandle
    except ImportError:
        return
    bf16 = tl.bfloat16
    _install_casts(InterpreterBuilder, TensorHandle, tl)
    from triton.runtime.interpreter import GridExecutor, interpreter_builder

    from ktui.worker import interp_fp8, interp_libdevice, interp_races, interp_sched, interp_waits

    interp_fp8.install(InterpreterBuilder, TensorHandle, tl)
    interp_libdevice.install()
    # bf16 atomics first: the wait watch, the scheduler and the race record wrap them as every other atomic (installed
    # last, they bypassed all three: a relaxed ticket's read of bf16 sums was never judged)
    _install_bf16_atomics(InterpreterBuilder, TensorHandle, bf16)
    interp_waits.install(InterpreterBuilder)
    interp_sched.install(interpreter_builder, GridExecutor)  # programs interleaved at atomics (inside the record)
    interp_races.install(InterpreterBuilder, GridExecutor)  # (before interp_bounds: inside its launch wrapper)
    if hasattr(InterpreterBuilder, "create_inline_asm"):
        InterpreterBuilder.create_inline_asm = _inline_asm_needs_gpu
    from triton.runtime.interpreter import InterpretedFunction

    InterpretedFunction.warmup = _warmup_needs_gpu
    _skip_discarded_overflow_checks()

    def widen(h: Any) -> Any:
        return TensorHandle(_bf16_to_f32(h.data), tl.float32) if h.dtype.scalar == bf16 else h

    def narrow(res: Any, want_bf16: bool) -> Any:
        if want_bf16 and res.dtype.scalar == tl.float32 and res.data.dtype == np.float32:
            return TensorHandle(_f32_to_bf16(res.data), bf16)
        return res

    orig_dot = getattr(InterpreterBuilder, "create_dot", None)
    if orig_dot is not None:

        def create_dot(self: Any, a: Any, b: Any, d: Any, input_precision: Any, max_num_imprecise_acc: Any) -> Any:
            a, b = interp_fp8.widen_for_dot(a, TensorHandle, tl), interp_fp8.widen_for_dot(b, TensorHandle, tl)
            if bf16 in (a.dtype.scalar, b.dtype.scalar, d.dtype.scalar):
                prod = matmul_in(widen(a).data, widen(b).data, np.float32)
                if d.dtype.scalar == bf16:
                    return TensorHandle(_f32_to_bf16(prod + _bf16_to_f32(d.data)), bf16)
                return TensorHandle(prod.astype(d.data.dtype) + d.data, d.dtype.scalar)
            if d.dtype.scalar == tl.float16 and a.dtype.scalar == tl.float16 and b.dtype.scalar == tl.float16:
                return TensorHandle(f16_accumulate(a.data, b.data, d.data), tl.float16)
            if _is_tf32(input_precision) and a.dtype.scalar == tl.float32 and b.dtype.scalar == tl.float32:
                a = TensorHandle(_to_tf32(a.data), a.dtype.scalar)
                b = TensorHandle(_to_tf32(b.data), b.dtype.scalar)
            if isinstance(d.data, np.ndarray) and d.data.dtype in (np.float32, np.float64, np.int32, np.int64):
                # the interpreter's own ``np.matmul(a, b, dtype=d.dtype)``, with the operands cast first
                return TensorHandle(matmul_in(a.data, b.data, d.data.dtype) + d.data, d.dtype.scalar)
            return orig_dot(self, a, b, d, input_precision, max_num_imprecise_acc)

        InterpreterBuilder.create_dot = create_dot

    for name, nargs in (("binary_op", 2), ("unary_op", 1), ("ternary_op", 3)):
        orig = getattr(InterpreterBuilder, name, None)
        if orig is None:
            continue

        def make(orig: Callable[..., Any], nargs: int) -> Callable[..., Any]:
            def op(self: Any, *args: Any) -> Any:
                handles, fn = args[:nargs], args[nargs]
                if not any(h.dtype.scalar == bf16 for h in handles):
                    return orig(self, *args)
                result_is_bf16 = handles[-1 if nargs == 3 else 0].dtype.scalar == bf16
                return narrow(orig(self, *[widen(h) for h in handles], fn), result_is_bf16)

            return op

        setattr(InterpreterBuilder, name, make(orig, nargs))

    _install_compares(InterpreterBuilder, TensorHandle, tl)

    orig_fma = getattr(InterpreterBuilder, "create_fma", None)
    if orig_fma is not None:

        def create_fma(self: Any, x: Any, y: Any, z: Any) -> Any:
            if bf16 in (x.dtype.scalar, y.dtype.scalar, z.dtype.scalar):
                return narrow(orig_fma(self, widen(x), widen(y), widen(z)), z.dtype.scalar == bf16)
            return orig_fma(self, x, y, z)

        InterpreterBuilder.create_fma = create_fma
    _install_reduce_scan(tl, TensorHandle)


def bf16_atomic_rmw(op: str, ptrs: np.ndarray, vals: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A bf16 atomic read-modify-write (``op``: add, max, min, xchg) on the elements at the addresses ``ptrs``
    (uint64) of ``vals`` (bf16 bits, uint16) where ``mask``, in lane order: each lane reads the value the lanes
    before it left (duplicate addresses in one block each applied), adds in float64 and rounds once to bf16 (to
    nearest even, as sm_90's ``atom.add.noftz.bf16``); returns the values each lane read (0 where masked off). The
    Triton interpreter has no bf16 atomics ("Unsupported data type") where sm_90 has them: an honest bf16
    scatter-add (embedding backward, MoE combine) failed run on the CPU (red team round 28, #1).

    Raises:
        ValueError: an ``op`` sm_90 has no bf16 atomic for.
    """
    from triton._C.libtriton import interpreter as native

    if op not in ("add", "max", "min", "xchg"):
        raise ValueError(f"a bf16 atomic {op} has no sm_90 instruction (atom .add/.max/.min/.exch take bf16)")
    shape = np.shape(vals)
    a = np.broadcast_to(ptrs, shape).reshape(-1)
    v = np.broadcast_to(vals, shape).reshape(-1).astype(np.uint16)
    m = np.broadcast_to(mask, shape).reshape(-1).astype(bool)
    old = np.zeros(v.shape, dtype=np.uint16)
    lanes = np.nonzero(m)[0]
    if lanes.size:
        # rounds: the k-th lane at each address goes in round k (vectorized over distinct addresses)
        order = np.argsort(a[lanes], kind="stable")
        sorted_a = a[lanes][order]
        starts = np.r_[True, sorted_a[1:] != sorted_a[:-1]]
        group_start = np.maximum.accumulate(np.where(starts, np.arange(sorted_a.size), 0))
        rank = np.empty(lanes.size, dtype=np.int64)
        rank[order] = np.arange(sorted_a.size) - group_start
        for r in range(int(rank.max()) + 1):
            sel = lanes[rank == r]
            at = np.ascontiguousarray(a[sel])
            on = np.ones(sel.size, dtype=bool)
            cur = native.load(at, on, np.zeros(sel.size, dtype=np.uint16), np.dtype(np.uint16))
            old[sel] = cur
            x, y = _bf16_to_f32(cur).astype(np.float64), _bf16_to_f32(v[sel]).astype(np.float64)
            if op == "add":
                new = _to_bf16(x + y)
            elif op == "xchg":
                new = v[sel]
            else:
                take = (y > x) if op == "max" else (y < x)
                new = np.where(take | np.isnan(x), v[sel], cur).astype(np.uint16)
            native.store(at, np.ascontiguousarray(new, dtype=np.uint16), on)
    return old.reshape(shape)


def _install_bf16_atomics(builder: Any, handle: Any, bf16: Any) -> None:
    """Patch ``builder.create_atomic_rmw`` so bf16 atomics run (``bf16_atomic_rmw``); other dtypes as before."""
    orig = getattr(builder, "create_atomic_rmw", None)
    if orig is None:
        return
    try:
        from triton._C.libtriton import interpreter as native
    except ImportError:
        return
    names = {native.RMW_OP.FADD: "add", native.RMW_OP.MAX: "max", native.RMW_OP.MIN: "min", native.RMW_OP.XCHG: "xchg"}

    def create_atomic_rmw(self: Any, rmw_op: Any, ptr: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
        if val.dtype.scalar != bf16:
            return orig(self, rmw_op, ptr, val, mask, sem, scope)
        op = self.ir_rmw_op_to_interpreter_rmw_op.get(rmw_op)
        return handle(bf16_atomic_rmw(names.get(op, str(op)), ptr.data, val.data, mask.data), bf16)

    builder.create_atomic_rmw = create_atomic_rmw


def _install_compares(builder: Any, handle: Any, tl: Any) -> None:
    """Every ``create_icmp*`` / ``create_fcmp*`` returns an ``int1`` handle of numpy bools, as the compiler's ``i1``.
    Triton 3.9's interpreter types a comparison by its operands (``binary_op``: ``lhs.dtype.scalar``), so a scalar
    ``end > start`` of int64 loads is an int64 handle, its splat an int64 block, and ``cmask & (end > start)`` an
    int32 mask that ``tl.load`` / ``tl.store`` refuse ("mask has unsupported dtype"), where the GPU compiles and runs
    it (new-user trial 24, F5; trial 23, F2)."""
    for name in [n for n in dir(builder) if n.startswith(("create_icmp", "create_fcmp"))]:
        orig = getattr(builder, name)

        def make(orig: Callable[..., Any]) -> Callable[..., Any]:
            def compare(self: Any, lhs: Any, rhs: Any) -> Any:
                out = orig(self, lhs, rhs)
                return handle(np.asarray(out.data).astype(np.bool_), tl.int1)

            return compare

        setattr(builder, name, make(orig))


# combine functions whose bf16 result does not depend on rounding each step (a maximum, a minimum, their arg- forms)
EXACT_COMBINES = frozenset(
    {
        "_elementwise_max", "_elementwise_min", "maximum", "minimum", "_argmax_combine_tie_break_left",
        "_argmax_combine_tie_break_fast", "_argmin_combine_tie_break_left", "_argmin_combine_tie_break_fast",
        "_argmax_combine", "_argmin_combine",
    }
)  # fmt: skip
rounded_once: set[str] = set()  # the combine functions of bf16 reductions and scans the interpreter rounded once


def note() -> list[str]:
    """One warning when a kernel reduced or scanned bf16 values with a combine that rounds (``tl.sum``'s
    ``_sum_combine``, ``tl.cumsum``, a ``tl.reduce`` of its own) under the interpreter, else []: Triton reduces bf16
    in bf16 (``tl.sum`` keeps its input's dtype), so the GPU rounds every combine step (``HADD2.BF16``) where the
    interpreter computes in float32 and rounds once (``_install_reduce_scan``): the CPU verdict does not show those
    roundings (new-user trial 34, F2: a variance summed in bf16 passed)."""
    if not rounded_once:
        return []
    return [
        f"bf16 reduced or scanned with {', '.join(sorted(rounded_once))}: on the GPU each combine step rounds to bf16; "
        "the interpreter computes in float32 and rounds once, so this CPU verdict does not show those roundings "
        "(sum in float32: x.to(tl.float32), or tl.sum(x, dtype=tl.float32); or check on a GPU)"
    ]


def _install_reduce_scan(tl: Any, handle: Any) -> None:
    """Reductions and scans (``tl.sum``, ``tl.max``, ``tl.argmax``, ``tl.cumsum``, ``tl.reduce``,
    ``tl.associative_scan``) of bf16 inputs: the interpreter summed and scanned the uint16 bit patterns (a bf16
    ``tl.cumsum`` off by 1e36, NaN; ``tl.sum`` -2e-21 for -11.4; ``tl.argmax`` the wrong index: new-user trial 19).
    Each bf16 input is widened to float32 exactly, the op runs on float32 and each result whose input was bf16 is
    rounded back to nearest even once (the GPU rounds each combine step to bf16: its error is a few steps' worth
    larger, which the GPU run measures; here the sum is the float32 one). Index results (argmax) are untouched."""
    try:
        from triton.runtime.interpreter import ReduceOps, ScanOps
    except ImportError:
        return
    bf16 = tl.bfloat16

    def widened(t: Any) -> Any:
        if not isinstance(t, tl.core.tensor) or t.dtype.scalar != bf16:
            return t
        ty = tl.block_type(tl.float32, list(t.shape)) if t.shape else tl.float32
        return tl.core.tensor(handle(_bf16_to_f32(t.handle.data), tl.float32), ty)

    def narrowed(t: Any) -> Any:
        if not isinstance(t, tl.core.tensor) or t.dtype.scalar != tl.float32:
            return t
        ty = tl.block_type(bf16, list(t.shape)) if t.shape else bf16
        return tl.core.tensor(handle(_f32_to_bf16(t.handle.data), bf16), ty)

    for cls in (ReduceOps, ScanOps):
        orig = cls.apply_impl

        def make(orig: Callable[..., Any]) -> Callable[..., Any]:
            def apply_impl(self: Any, input: Any) -> Any:
                args = input if isinstance(input, tuple) else (input,)
                was = [isinstance(a, tl.core.tensor) and a.dtype.scalar == bf16 for a in args]
                if not any(was):
                    return orig(self, input)
                combine = getattr(getattr(self.combine_fn, "fn", self.combine_fn), "__name__", "a combine function")
                if combine not in EXACT_COMBINES and any(
                    w and len(a.shape) and a.shape[self.axis if self.axis is not None else 0] > 1
                    for w, a in zip(was, args, strict=False)
                ):
                    rounded_once.add(combine)
                ret = orig(self, tuple(widened(a) for a in args) if isinstance(input, tuple) else widened(input))
                outs = list(ret) if isinstance(ret, (list, tuple)) else [ret]
                outs = [narrowed(o) if i < len(was) and was[i] else o for i, o in enumerate(outs)]
                return type(ret)(outs) if isinstance(ret, (list, tuple)) else outs[0]

            return apply_impl

        cls.apply_impl = make(orig)
