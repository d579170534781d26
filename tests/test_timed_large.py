"""Outputs judged in chunks (``metrics.verdict_large``: a timed call's output over 2**22 elements, any output over
2**26) get the verdict of the same output judged whole (``metrics.verdict`` with ``compare.unwritten_mask``). Found on
the H200 (2026-12-04): an honest int8 quantizer's timed calls at 4096 x 4096 failed as "2693 elements unwritten"
where it rightly gives 90 (0x5A, the poison byte) as the reference in its own precision does."""

from __future__ import annotations

import torch

from ktui.worker import metrics
from ktui.worker.compare import unwritten_mask
from ktui.worker.tensors import INT_POISON_BYTE
from ktui.worker.tolerance import EXACT


def _quantized(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """An int8 output whose value 90 (the poison byte) is right where the native reference gives 90 and the float64
    truth says 89 or 91 (a rounding the native computation may take), the native reference, and the truth."""
    g = torch.Generator().manual_seed(seed)
    native = torch.randint(-127, 128, (n,), generator=g, dtype=torch.int8)
    native[torch.randperm(n, generator=g)[: n // 50]] = INT_POISON_BYTE
    truth = native.to(torch.float64)
    at90 = torch.nonzero(native == INT_POISON_BYTE).reshape(-1)
    truth[at90[::2]] += 1.0  # the truth across the half-way point at every other 90
    return native.clone(), native, truth


def test_a_chunked_verdict_leaves_out_the_poison_value_where_the_native_reference_has_it_too() -> None:
    out, native, truth = _quantized(1 << 14, 5)
    whole = metrics.verdict(out, truth, EXACT, unwritten=unwritten_mask(out, native))
    chunked = metrics.verdict_large(out, truth, EXACT, chunk=1 << 10, native=native)
    assert whole["unwritten"] == chunked["unwritten"] == 0
    assert whole["outside_tol"] == chunked["outside_tol"] > 0  # the 90s off the truth: the allowance judges those
    # without the native reference, the poison value off the truth reads as unwritten (the timed check before)
    blind = metrics.verdict_large(out, truth, EXACT, chunk=1 << 10)
    assert blind["unwritten"] == int(((out == INT_POISON_BYTE) & (truth != INT_POISON_BYTE)).sum()) > 0


def test_an_element_never_written_is_still_found_in_chunks() -> None:
    out, native, truth = _quantized(1 << 14, 6)
    native[native == INT_POISON_BYTE] = 3  # the native reference never gives 90 here: out's 90s are the poison
    truth = native.to(torch.float64)
    whole = metrics.verdict(out, truth, EXACT, unwritten=unwritten_mask(out, native))
    chunked = metrics.verdict_large(out, truth, EXACT, chunk=1 << 10, native=native)
    assert whole["unwritten"] == chunked["unwritten"] == int((out == INT_POISON_BYTE).sum()) > 0
    assert not whole["ok"] and not chunked["ok"]


def _quant_ref(d: tuple[torch.Tensor]) -> torch.Tensor:
    """quant_i8.py's reference: q = round(x / (amax / 127)) per row, int8 (in the inputs' dtype: bf16, or float64)."""
    x = d[0]
    s = x.abs().amax(-1, keepdim=True) / 127
    return torch.round(x / s).to(torch.int8)


def test_the_rounding_allowance_moves_a_ratio_of_two_distinct_values_in_some_draw() -> None:
    """An honest fp32 quantizer of bf16 rows (q = round(x / amax * 127), its quotient within 2 ulp as the GPU's
    approximate division gives it) differs from the float64 truth at thousands of elements, each within bf16's
    rounding of a half-way point, all inside the allowance (``integer_native_allowance``); with signs alone, one
    pair of bf16 values in 256 never moved apart (1.046875 / (3.96875 / 127) = 33.5 exactly) and 102 elements of
    2**24 failed on the H200. A quantizer that floors instead of rounding still fails."""
    from ktui.worker.native import rounding_allowance

    torch.manual_seed(1)
    x = torch.randn(2048, 4096, dtype=torch.bfloat16)
    truth, native = _quant_ref((x.double(),)), _quant_ref((x,))
    xf = x.float()
    q = xf / xf.abs().amax(-1, keepdim=True)
    ulp = torch.nextafter(q, torch.full_like(q, float("inf"))) - q
    q = q + ulp * torch.randint(-2, 3, q.shape, generator=torch.Generator().manual_seed(2)).float()
    honest = torch.round(q * 127.0).to(torch.int8)
    floored = torch.floor(q * 127.0).to(torch.int8)
    moves = rounding_allowance(_quant_ref, lambda data, f: tuple(f(t) for t in data), (x,), truth, 2.0**-9, 7)
    (moved,) = moves.values()
    r = truth.double()
    allow = torch.maximum((native.double() - r).abs(), moved.double())
    d_honest = (honest.double() - r).abs()
    assert int((d_honest > 0).sum()) > 5000  # thousands differ from the truth ...
    assert int((d_honest > allow).sum()) == 0  # ... every one where the truth sits on a rounding's edge
    assert int(((floored.double() - r).abs() > allow).sum()) > 100_000
