"""fp8 casts under the Triton interpreter, made to compute what an H200 computes.

Triton 3.9's interpreter converts to and from fp8 with bit arithmetic (``runtime/interpreter.py``,
``_convert_float``) that is wrong in three ways (red team round 14, F1): a rounding carry into the next binade is
OR'ed into the exponent and lost (7.87 -> 4, 31.9 -> 16), nothing saturates (500 -> 256 in e4m3), and results below
the smallest normal are truncated (1e-3 -> 0). Widening reads e4m3's NaN code 0x7F as 480 and e5m2's inf and NaN as
finite numbers.

What the GPU does (Triton's NVIDIA backend, ``third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/ElementwiseOpToLLVM.cpp``,
``FpToFpOpConversion``; the same PTX strings are in Triton 3.9's ``libtriton.so``), for compute capability >= 90:

- f32 -> e4m3 / e5m2 (default rounding, RTNE): ``cvt.rn.satfinite.e4m3x2.f32`` / ``cvt.rn.satfinite.e5m2x2.f32``;
  f16 -> fp8: ``cvt.rn.satfinite.e4m3x2.f16x2`` / ``cvt.rn.satfinite.e5m2x2.f16x2``; bf16 -> fp8: ``cvt.f32.bf16``
  (exact) then the f32 instruction. One rounding to nearest even of the source value, subnormals included. PTX ISA,
  ``cvt``: with ``.satfinite`` "if the input value is NaN, then the result is NaN in the specified destination
  format. If the absolute value of input (ignoring sign) is greater than MAX_NORM of the specified destination
  format, then the result is sign-preserved MAX_NORM": +-inf and anything past it give +-448 (e4m3) or +-57344
  (e5m2, never its inf). NaN gives 0x7F (the sign and payload of a NaN are not observable through its value).
- f32 -> e5m2 with ``fp_downcast_rounding="rtz"``: ``cvt.rz.f16.f32`` then the high byte of the f16 (truncation),
  so rounding toward zero with no saturation to inf from a finite value (f16's RTZ stops at 65504, which truncates
  to 57344) and inf kept as inf. Every other fp8 conversion with ``"rtz"`` is refused by the backend ("Unsupported
  rounding mode for conversion"), so it is refused here too, naming it.
- e4m3 / e5m2 -> f16: ``cvt.rn.f16x2.e4m3x2`` / ``cvt.rn.f16x2.e5m2x2``, exact (NaN and inf kept); -> f32 through
  f16 (exact); e4m3 -> bf16 through f16 (exact). e5m2 -> bf16 is a bit trick (``Fp8E5M2_to_Bf16``: the byte shifted
  into a bf16's exponent and mantissa and multiplied by 2**112 with ``mul.rn.bf16x2``) that treats the all-ones
  exponent as a number: inf -> 65536 and the NaN codes -> 81920, 98304, 114688 (with their sign); finite values,
  subnormals included, are exact.
- fp8e4b15 (``triton/language/extra/cuda/utils.py``, ``convert_custom_float8_sm80``): f32 -> f16 with RTZ, then
  ``|h|`` clamped to 1.75 with ``min.f16x2`` (so NaN and inf give 1.75), doubled, 0x80 added (round half up in
  magnitude) and the high byte kept, the f16's sign bit OR'ed back; widening is exact (f16 bits ``sign | (b & 0x7F)
  << 7``, so 0x7F reads as 1.875).

The AMD-only FNUZ formats (fp8e4b8, fp8e5b16) are left to the interpreter.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ktui.worker.interp_bf16 import bf16_to_f32 as _bf16_to_f32
from ktui.worker.interp_bf16 import to_bf16 as _to_bf16


class _Format:
    """An IEEE-like 8-bit float: ``values`` the value of each of the 256 codes (float64), ``finite`` the positive
    finite values in code order (increasing), ``max_code`` the largest finite positive code."""

    def __init__(self, exp_bits: int, mant_bits: int, bias: int, kind: str):
        self.mant = mant_bits
        self.bias = bias
        codes = np.arange(256)
        e = (codes >> mant_bits) & ((1 << exp_bits) - 1)
        m = codes & ((1 << mant_bits) - 1)
        mag = np.where(
            e == 0,
            np.ldexp(m.astype(np.float64), 1 - bias - mant_bits),
            np.ldexp(1.0 + m / float(1 << mant_bits), e - bias),
        )
        values = np.where(codes >= 128, -mag, mag)
        wide_bf16 = values.copy()  # what the GPU's e5m2 -> bf16 bit trick gives (the top exponent read as a number)
        top = e == (1 << exp_bits) - 1
        if kind == "e4m3fn":  # S.1111.111 is NaN, no inf
            values = np.where((codes & 0x7F) == 0x7F, np.nan, values)
        elif kind == "e5m2":  # IEEE: exponent all ones is inf (m = 0) or NaN
            values = np.where(top & (m == 0), np.copysign(np.inf, values), values)
            values = np.where(top & (m != 0), np.nan, values)
        self.values = values
        self.wide_bf16 = wide_bf16 if kind == "e5m2" else values
        self.max_code = int(np.flatnonzero(np.isfinite(values[:128]))[-1])
        self.finite = values[: self.max_code + 1]
        self.max_norm = float(self.finite[-1])


E4M3 = _Format(4, 3, 7, "e4m3fn")
E5M2 = _Format(5, 2, 15, "e5m2")
NAN_CODE = 0x7F


def _quantum(a: np.ndarray, mant: int, bias: int) -> np.ndarray:
    """The spacing of the format's values at ``|a|`` (a float64 array, >= 0): ``2**(floor(log2 a) - mant)``, never
    below the subnormal step ``2**(1 - bias - mant)``."""
    _, e = np.frexp(a)
    return np.asarray(np.ldexp(1.0, np.maximum(e.astype(np.int64) - 1 - mant, 1 - bias - mant)))


def encode(x: np.ndarray, fmt: _Format, rtz: bool = False) -> np.ndarray:
    """float64 -> fp8 codes (uint8), rounded once to nearest even (``cvt.rn.satfinite``) or toward zero (``rtz``,
    e5m2 only: inf stays inf, as the GPU's f16 truncation keeps it); finite values past MAX_NORM and (RTNE) inf
    saturate to +-MAX_NORM; NaN gives 0x7F."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):
        q = _quantum(np.where(np.isfinite(a), a, 0.0), fmt.mant, fmt.bias)
        r = (np.trunc(a / q) if rtz else np.rint(a / q)) * q
    code = np.searchsorted(fmt.finite, np.minimum(np.where(np.isnan(r), 0.0, r), fmt.max_norm)).astype(np.uint8)
    if rtz:
        code = np.where(np.isinf(a), np.uint8(fmt.max_code + 1), code)  # e5m2's inf
    code = code | (np.signbit(x).astype(np.uint8) << 7)
    return np.where(np.isnan(x), np.uint8(NAN_CODE), code).astype(np.uint8)


def _f32_to_f16_rtz(x: np.ndarray) -> np.ndarray:
    """float64 (holding float32 values) -> float16 rounded toward zero, as ``cvt.rz.f16.f32``: finite values never
    overflow (65504 at most), inf stays inf, NaN is the canonical 0x7FFF."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):
        q = _quantum(np.where(np.isfinite(a), a, 0.0), 10, 15)
        r = np.minimum(np.trunc(a / q) * q, 65504.0)
    r = np.where(np.isinf(a), np.inf, r)
    h = np.copysign(r, x).astype(np.float16).view(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FFF), h).astype(np.uint16)


def encode_e4b15(h: np.ndarray) -> np.ndarray:
    """f16 bits -> fp8e4b15 codes, as ``convert_float16_to_fp8e4b15`` (sm_80+, ``min.f16x2``) computes them."""
    h = np.asarray(h, dtype=np.uint16).astype(np.uint32)
    a = h & 0x7FFF
    a = np.where(a > 0x3F00, 0x3F00, a)  # min.f16x2 with 1.75: inf, NaN (not taken by min) and larger -> 1.75
    return (((h & 0x8000) | (2 * a + 0x80)) >> 8).astype(np.uint8)


def decode_e4b15(b: np.ndarray) -> np.ndarray:
    """fp8e4b15 codes -> float64, as ``convert_fp8e4b15_to_float16``: the f16 ``sign | (b & 0x7F) << 7``."""
    b = np.asarray(b, dtype=np.uint8).astype(np.uint16)
    return (((b & 0x80) << 8) | ((b & 0x7F) << 7)).astype(np.uint16).view(np.float16).astype(np.float64)


def _from_dtype(data: np.ndarray, dtype: Any, tl: Any) -> np.ndarray:
    """The interpreter's storage of ``dtype`` -> float64 values (exact)."""
    if dtype == tl.float8e4nv:
        return E4M3.values[data.view(np.uint8)]
    if dtype == tl.float8e5:
        return E5M2.values[data.view(np.uint8)]
    if dtype == tl.float8e4b15:
        return decode_e4b15(data.view(np.uint8))
    if dtype == tl.bfloat16:
        return _bf16_to_f32(data).astype(np.float64)
    return np.asarray(data).astype(np.float64)


def _to_dtype(values: np.ndarray, dtype: Any, tl: Any) -> np.ndarray:
    """float64 values exactly representable in ``dtype`` (or inf/NaN) -> the interpreter's storage of it."""
    if dtype == tl.bfloat16:
        return _to_bf16(values.astype(np.float32))
    kinds = {tl.float16: np.float16, tl.float32: np.float32, tl.float64: np.float64}
    if dtype not in kinds:  # an AMD fp8 (FNUZ) format beside an NVIDIA one: not a conversion the GPU makes
        raise NotImplementedError(f"a cast to {dtype} from an NVIDIA fp8 format under the Triton interpreter")
    return values.astype(kinds[dtype])


def _rounding_name(rounding_mode: Any) -> str:
    if rounding_mode is None:
        return "RTNE"
    return str(getattr(rounding_mode, "name", rounding_mode)).split(".")[-1].upper()


def convert(data: np.ndarray, src: Any, dst: Any, rounding_mode: Any, tl: Any) -> np.ndarray:
    """``src`` -> ``dst`` (Triton dtypes, one of them fp8e4nv, fp8e5 or fp8e4b15) as the GPU converts; see the
    module's docstring. ``data`` is the interpreter's storage of ``src``; the result is the storage of ``dst``."""
    rtz = _rounding_name(rounding_mode) == "RTZ"
    if dst == tl.float8e4b15:
        if src == tl.float16:
            h = np.asarray(data).view(np.uint16)
        elif src == tl.float8e4b15:
            return np.asarray(data).view(np.uint8).copy()
        else:  # the GPU takes f32 (cvt.rz.f16.f32 first) and f16 only
            h = _f32_to_f16_rtz(_from_dtype(data, src, tl).astype(np.float32).astype(np.float64))
        return encode_e4b15(h)
    if dst in (tl.float8e4nv, tl.float8e5):
        fmt = E4M3 if dst == tl.float8e4nv else E5M2
        if rtz and not (src == tl.float32 and dst == tl.float8e5):
            raise NotImplementedError(
                f"casting {src} to {dst} with fp_downcast_rounding='rtz': Triton's NVIDIA backend has no such "
                "conversion (only float32 -> float8e5 rounds toward zero; the GPU compile stops with 'Unsupported "
                "rounding mode for conversion'), so the Triton interpreter does not emulate one"
            )
        return encode(_from_dtype(data, src, tl), fmt, rtz=rtz)
    # fp8 -> a wider float: exact (e5m2 -> bf16 as the GPU's bit trick gives it)
    if src == tl.float8e5 and dst == tl.bfloat16:
        return _to_dtype(E5M2.wide_bf16[np.asarray(data).view(np.uint8)], dst, tl)
    return _to_dtype(_from_dtype(data, src, tl), dst, tl)


def fp8_types(tl: Any) -> tuple[Any, ...]:
    """The fp8 formats NVIDIA GPUs convert (the AMD-only FNUZ ones are left to the interpreter)."""
    return (tl.float8e4nv, tl.float8e5, tl.float8e4b15)


def install(builder_cls: Any, handle_cls: Any, tl: Any) -> None:
    """Patch ``create_fp_to_fp`` (every cast to or from fp8 goes through it, fp8e4b15's through the interpreter's
    ``convert_custom_types``)."""
    orig = getattr(builder_cls, "create_fp_to_fp", None)
    if orig is None:
        return
    fp8 = fp8_types(tl)

    def create_fp_to_fp(self: Any, src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        s, d = src.dtype.scalar, dst_type.scalar
        if (s in fp8 or d in fp8) and s != d:
            with np.errstate(invalid="ignore", over="ignore"):
                return handle_cls(convert(src.data, s, d, rounding_mode, tl), d)
        return orig(self, src, dst_type, rounding_mode)

    builder_cls.create_fp_to_fp = create_fp_to_fp


def widen_for_dot(h: Any, handle_cls: Any, tl: Any) -> Any:
    """An fp8 dot operand as exact float16 (every e4m3, e5m2 and e4b15 value is one; NaN and inf kept), so the dot
    paths for f16 operands apply; other operands as they are."""
    s = h.dtype.scalar
    if s not in fp8_types(tl):
        return h
    return handle_cls(_from_dtype(h.data, s, tl).astype(np.float16), tl.float16)
