"""The low-precision rule on which way the errors point (``ktui.worker.metrics.rounding_lean``, derivation in
``ktui.worker.tolerance``): a conversion rounding one way fails, round to nearest and a bf16-rounded constant pass."""

from __future__ import annotations

import math

import pytest
import torch

from ktui.worker.metrics import verdict
from ktui.worker.tolerance import DEFAULTS


def _gelu(n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, dtype=torch.float64, generator=g)
    return x * 0.5 * (1 + torch.erf(x / math.sqrt(2)))


def _chop(f32: torch.Tensor) -> torch.Tensor:
    """float32 to bf16 keeping the high 16 bits (round toward zero)."""
    return (f32.view(torch.int32) & ~0xFFFF).view(torch.float32).bfloat16()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_round_to_nearest_passes_and_one_way_rounding_fails_naming_the_way(dtype):
    tol = DEFAULTS[dtype]
    truth = _gelu(65536)
    f32 = truth.float()
    nearest = f32.to(getattr(torch, dtype))
    m = verdict(nearest, truth, tol)
    assert m["ok"], m["reason"]
    if dtype == "bfloat16":
        toward = _chop(f32)
    else:  # float16 toward zero: the nearest value, stepped back where it rounded up in magnitude
        toward = torch.where(
            nearest.double().abs() > truth.abs(), torch.nextafter(nearest, torch.zeros_like(nearest)), nearest
        )
    m = verdict(toward, truth, tol)
    assert not m["ok"] and "err toward zero, by 0.5" in m["reason"] and "truncates" in m["reason"], m["reason"]
    down = torch.where(nearest.double() > truth, torch.nextafter(nearest, torch.full_like(nearest, -math.inf)), nearest)
    m = verdict(down, truth, tol)
    assert not m["ok"] and "err down, by 0.5" in m["reason"], m["reason"]


def test_the_rule_needs_256_erring_elements():
    truth = _gelu(200)
    m = verdict(_chop(truth.float()), truth, DEFAULTS["bfloat16"])
    assert m["ok"], m["reason"]


@pytest.mark.parametrize("c", [1 / math.sqrt(96), 0.1, 0.3, 1 / 3, 0.7])
@pytest.mark.parametrize("spread", ["randn", "top of the binade"])
def test_a_constant_rounded_to_bf16_passes(c, spread):
    """A scale rounded to bf16 shifts every element's error the same way, by up to half an ulp times |ref| / 2**e:
    75-99% of the erring elements one way, below the 97% bound even where every |ref| sits at the top of a binade."""
    g = torch.Generator().manual_seed(1)
    y = torch.randn(65536, dtype=torch.float64, generator=g)
    if spread != "randn":
        y = 0.98 + 0.02 * torch.rand(65536, dtype=torch.float64, generator=g)
    cb = float(torch.tensor(c).bfloat16())
    m = verdict((y.float() * cb).bfloat16(), y * c, DEFAULTS["bfloat16"])
    assert m["ok"], m["reason"]


def test_against_a_truth_in_the_output_dtype_truncation_errs_a_whole_ulp():
    truth = _gelu(65536)
    native = truth.float().bfloat16().double()  # a reference that computed in bf16 itself
    m = verdict(_chop(truth.float()), native, DEFAULTS["bfloat16"])
    assert not m["ok"] and "err toward zero, by 1.00 ulp on average" in m["reason"], m["reason"]


def test_a_reference_whose_op_truncates_turns_the_rule_off_with_max_one_way():
    from ktui.worker.tolerance import resolve

    truth = _gelu(65536)
    chopped = _chop(truth.float())
    assert not verdict(chopped, truth, resolve("bfloat16", None))["ok"]
    tol = resolve("bfloat16", {"bfloat16": {"max_one_way": 1.0}})
    m = verdict(chopped, truth, tol)
    assert m["ok"], m["reason"]
