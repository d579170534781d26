"""Datasheet peaks: what the hardware can do at most, looked up by device name (cases.md blind-timer).

The benchmark rung bounds every time from below by physics: the bytes a spec moves over the HBM bandwidth and its
flops over the tensor cores' peak. Measured ceilings (a device copy, ``torch.matmul``) sit below the datasheet
figures (an H200's copy reads about 4,250 GB/s of 4,800), so a slack on them is room a cheat fits into, and without
one an honest kernel that beats ``torch.matmul`` would fail. The datasheet is the bound that no honest kernel
crosses; a device not in the table falls back to the measured ceilings (``benchmark.MEASURED_SLACK``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Peaks:
    """One device's datasheet figures: ``hbm_gbps`` (1e9 B/s), ``tflops`` per torch dtype name of the inputs
    (dense, no sparsity) and ``basis`` per dtype (which unit's peak it is, for messages)."""

    name: str
    hbm_gbps: float
    tflops: dict[str, float] = field(default_factory=dict)
    basis: dict[str, str] = field(default_factory=dict)
    source: str = ""


# NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200, H200 SXM column): GPU memory bandwidth
# 4.8 TB/s (HBM3e); BF16 / FP16 Tensor Core 1,979 TFLOPS and TF32 Tensor Core 989 TFLOPS *with sparsity*, i.e. 989
# and 494 dense; FP32 67 TFLOPS (CUDA cores); FP64 Tensor Core 67 TFLOPS; FP8 3,958 with sparsity (1,979 dense);
# INT8 3,958 TOPS with sparsity.
# float32 inputs are bounded by TF32 (494): the tensor cores run an fp32 matmul in TF32 faster than the 67 TFLOP/s
# of the CUDA cores, and whether that precision is good enough is the correctness rung's verdict, not the timer's.
_H200 = Peaks(
    name="H200",
    hbm_gbps=4800.0,
    tflops={
        "bfloat16": 989.0,
        "float16": 989.0,
        "float32": 494.0,
        "float64": 67.0,
        "float8_e4m3fn": 1979.0,
        "float8_e5m2": 1979.0,
        "int8": 1979.0,
    },
    basis={
        "bfloat16": "bf16 tensor cores",
        "float16": "fp16 tensor cores",
        "float32": "TF32 tensor cores (fp32 CUDA cores: 67)",
        "float64": "fp64 tensor cores",
        "float8_e4m3fn": "fp8 tensor cores",
        "float8_e5m2": "fp8 tensor cores",
        "int8": "int8 tensor cores",
    },
    source="NVIDIA H200 datasheet (SXM)",
)
# NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100, H100 SXM column): 3.35 TB/s (HBM3);
# the same tensor-core figures as the H200 SXM (same GH100 chip and clocks): BF16 1,979 / TF32 989 with sparsity.
_H100_SXM = Peaks(
    name="H100 SXM",
    hbm_gbps=3350.0,
    tflops=dict(_H200.tflops),
    basis=dict(_H200.basis),
    source="NVIDIA H100 datasheet (SXM)",
)


def datasheet_for(device_name: str | None) -> Peaks | None:
    """The datasheet figures for ``device_name`` as CUDA reports it (``NVIDIA H200``, ``NVIDIA H100 80GB HBM3``),
    or None for a device not in the table (the caller falls back to measured ceilings). Only the parts whose
    figures are certain are listed: an H100 PCIe or NVL (lower clocks and bandwidth) is not an H100 SXM."""
    if not device_name:
        return None
    name = device_name.upper()
    if "H200" in name:
        return _H200
    if "H100" in name and ("HBM3" in name or "SXM" in name) and "NVL" not in name:
        return _H100_SXM
    return None


def ceilings(roof: Mapping[str, Any], dtype: str | None) -> tuple[float, float, str]:
    """The ceilings a call's % of peak is reported against: HBM bandwidth (GB/s) and the tensor-core peak of
    ``dtype`` (TFLOP/s), each the larger of the datasheet's (``datasheet_for(roof["device_name"])``) and the measured
    one in ``roof`` (``bandwidth_gbps``, ``peak_tflops``), so that an honest kernel never shows more than 100%;
    without datasheet figures, the measured ceilings (an honest kernel may then pass 100%: ``source`` says so).
    NaN where neither is known. Returns (GB/s, TFLOP/s, source)."""
    peaks = datasheet_for(roof.get("device_name"))
    bw = _finite(roof.get("bandwidth_gbps"))
    measured_peak = _finite((roof.get("peak_tflops") or {}).get(str(dtype)))
    if peaks is None:
        return bw, measured_peak, "measured ceilings (no datasheet figures for this device)"
    hbm = max(peaks.hbm_gbps, 0.0 if math.isnan(bw) else bw)
    top = math.nan
    if str(dtype) in peaks.tflops:
        top = max(peaks.tflops[str(dtype)], 0.0 if math.isnan(measured_peak) else measured_peak)
    return hbm, top, peaks.source


# Devices without datasheet figures: a time under 80% of the measured floor cannot be real (the measured ceilings
# are within a few % of what kernels reach; the slack keeps an honest kernel that beats torch.matmul from failing).
MEASURED_SLACK = 0.8


def _finite(x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) and v > 0 else math.nan


def roofline(ref: Mapping[str, Any], roof: Mapping[str, Any], median_us: float) -> tuple[dict[str, Any], str | None]:
    """The floors of one benchmark spec and whether ``median_us`` beats them.

    ``ref`` is the judge's reference timing of the spec (``bytes``, ``flops``, ``dtype``: the lowest input
    precision), ``roof`` the measured ceilings (``bandwidth_gbps``, ``peak_tflops`` per dtype) and the judge's
    ``device_name``. Returns the figures (µs and %) and the reason the time is impossible, or None:

    - ``measured_us`` / ``measured_pct``: ``max(bytes / bandwidth, flops / peak)`` over the measured ceilings;
    - with datasheet figures (``datasheet_for``): ``roofline_us`` = ``max(bytes / hbm, flops / peak)``, each
      ceiling the larger of the datasheet's and the measured one, ``sol_pct`` = 100 roofline_us / median_us (an
      honest kernel never shows more than 100%) and impossible when ``median_us < roofline_us``, with no slack.
      No byte comes from or stays in the L2 for free: the flush before each timed call reads inputs out of it and
      leaves it full of dirty lines, so every byte an output writes into it evicts one to HBM;
    - without: ``roofline_us`` = ``measured_us``, impossible under ``MEASURED_SLACK`` of it.
    """
    peaks = datasheet_for(roof.get("device_name"))
    bw = _finite(roof.get("bandwidth_gbps"))
    dtype = str(ref.get("dtype"))
    measured_peak = _finite((roof.get("peak_tflops") or {}).get(dtype))
    nbytes, flops = ref.get("bytes") or 0, ref.get("flops") or 0
    measured, physical, terms = [], [], []
    if nbytes and not math.isnan(bw):
        measured.append(nbytes / (bw * 1e9) * 1e6)
    if flops and not math.isnan(measured_peak):
        measured.append(flops / (measured_peak * 1e12) * 1e6)
    if peaks is not None:
        if nbytes:
            hbm = max(peaks.hbm_gbps, 0.0 if math.isnan(bw) else bw)
            physical.append(nbytes / (hbm * 1e9) * 1e6)
            terms.append(f"{nbytes / 1e6:.4g} MB at {hbm / 1e3:.3g} TB/s")
        if flops and dtype in peaks.tflops:
            top = max(peaks.tflops[dtype], 0.0 if math.isnan(measured_peak) else measured_peak)
            physical.append(flops / (top * 1e12) * 1e6)
            terms.append(f"{flops:.4g} flop at {top:.4g} TFLOP/s, {peaks.basis.get(dtype, dtype)}")
    fig: dict[str, Any] = {}
    if measured:
        fig["measured_us"] = max(measured)
        fig["measured_pct"] = 100.0 * fig["measured_us"] / median_us
    if physical:
        fig["roofline_us"] = max(physical)
        fig["sol_pct"] = 100.0 * fig["roofline_us"] / median_us
        fig["peak_source"] = peaks.source if peaks else ""
        if median_us < fig["roofline_us"]:
            return fig, (
                f"impossible: {median_us:.4g} us is faster than the speed of light {fig['roofline_us']:.4g} us "
                f"({peaks.source if peaks else ''}: {'; '.join(terms)}); the kernel skips work or the timer misses it"
            )
        return fig, None
    if measured:
        fig["roofline_us"] = fig["measured_us"]
        fig["sol_pct"] = fig["measured_pct"]
        fig["peak_source"] = "measured"
        if median_us < MEASURED_SLACK * fig["roofline_us"]:
            return fig, (
                f"impossible: {median_us:.4g} us is faster than the speed of light {fig['roofline_us']:.4g} us "
                "(declared bytes/flops over the measured ceilings; no datasheet figures for this device); the "
                "kernel skips work or the timer misses it"
            )
    return fig, None
