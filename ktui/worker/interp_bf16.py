"""bf16 bits for the Triton interpreter's fixes (``interp_fixes``, ``interp_fp8``): numpy arrays of bf16 as uint16
bits, converted to and from float32 and rounded as the GPU rounds (``cvt.rn.bf16.f32``: to nearest even)."""

from __future__ import annotations

import numpy as np


def bf16_to_f32(data: np.ndarray) -> np.ndarray:
    """bf16 bits (uint16) to the float32 values they are (exact)."""
    return (data.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(data: np.ndarray) -> np.ndarray:
    """Round to nearest even, as the GPU's cvt.rn.bf16.f32 does (NaN stays NaN: it keeps a mantissa bit)."""
    bits = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(data), np.uint16(0x7FC0), rounded)


def to_bf16(data: np.ndarray) -> np.ndarray:
    """Any real numpy array (float16/32/64, ints, bools) to bf16 bits, rounded once to nearest even.

    float32 uses the bit trick of ``f32_to_bf16``. Everything else goes through float64 (exact for float16, ints
    below 2**53 and float64 itself): the value is rounded to a multiple of its bf16 quantum, ``2**(e - 8)`` for
    ``x = m * 2**e`` with ``0.5 <= |m| < 1`` (8 significant bits) and never below ``2**-133`` (bf16's subnormal
    step), with ``np.rint`` (ties to even). The result is exactly a bf16 value (or overflows to inf in float32), so
    its float32 bits end in 16 zeros."""
    if data.dtype == np.float32:
        return f32_to_bf16(data)
    x = np.asarray(data, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        _, e = np.frexp(x)
        q = np.ldexp(1.0, np.maximum(e.astype(np.int64) - 8, -133))
        rounded = np.where(np.isfinite(x), np.rint(x / q) * q, x).astype(np.float32)
    return f32_to_bf16(rounded)
