"""Fixes to the Triton interpreter that ktui's CPU path depends on.

bf16 ``tl.dot``: the interpreter stores bfloat16 as ``uint16`` (numpy has no bfloat16) and its ``create_dot`` hands
those integers to ``np.matmul`` (Triton 3.9: ``runtime/interpreter.py``), so every bf16 matmul kernel computes
garbage on the CPU. The fix widens bf16 operands to float32 exactly (a bf16 value is the top 16 bits of the float32
with the same value) before the product; the accumulator's dtype is unchanged, so "bf16 in, fp32 accumulate" kernels
get what the GPU computes up to summation order.
"""

from __future__ import annotations

import numpy as np

_DONE = False


def _bf16_to_f32(data: np.ndarray) -> np.ndarray:
    return (data.astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16(data: np.ndarray) -> np.ndarray:
    """Round to nearest even, as the GPU's cvt.rn.bf16.f32 does (NaN stays NaN: it keeps a mantissa bit)."""
    bits = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(data), np.uint16(0x7FC0), rounded)


def install() -> None:
    """Patch ``InterpreterBuilder.create_dot`` (idempotent; a no-op on Triton releases without it)."""
    global _DONE
    if _DONE:
        return
    _DONE = True
    try:
        import triton.language as tl
        from triton.runtime.interpreter import InterpreterBuilder, TensorHandle
    except ImportError:
        return
    orig = getattr(InterpreterBuilder, "create_dot", None)
    if orig is None:
        return

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if a.dtype.scalar == tl.bfloat16 or b.dtype.scalar == tl.bfloat16:
            a_data = _bf16_to_f32(a.data) if a.dtype.scalar == tl.bfloat16 else a.data
            b_data = _bf16_to_f32(b.data) if b.dtype.scalar == tl.bfloat16 else b.data
            prod = np.matmul(a_data, b_data, dtype=np.float32)
            if d.dtype.scalar == tl.bfloat16:
                return TensorHandle(_f32_to_bf16(prod + _bf16_to_f32(d.data)), d.dtype.scalar)
            return TensorHandle(prod.astype(d.data.dtype) + d.data, d.dtype.scalar)
        return orig(self, a, b, d, input_precision, max_num_imprecise_acc)

    InterpreterBuilder.create_dot = create_dot
