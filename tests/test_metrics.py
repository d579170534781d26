"""Accuracy metrics against values computed by hand."""

import math

import pytest
import torch

from ktui.worker import metrics
from ktui.worker.tensors import poison_, poisoned_mask
from ktui.worker.tolerance import Tolerance, resolve


def test_known_psnr_mse_and_errors():
    ref = torch.tensor([1.0, 2.0, 3.0, 4.0])
    out = torch.tensor([1.0, 2.0, 3.0, 4.5])
    m = metrics.error_metrics(out, ref)
    # mse = 0.5^2 / 4 = 0.0625; peak = 4; psnr = 10 log10(16 / 0.0625) = 10 log10(256) = 24.0824 dB
    assert m["mse"] == pytest.approx(0.0625)
    assert m["rmse"] == pytest.approx(0.25)
    assert m["psnr_db"] == pytest.approx(24.08239965, abs=1e-6)
    assert m["max_abs_err"] == pytest.approx(0.5)
    assert m["max_rel_err"] == pytest.approx(0.125)
    assert m["worst_index"] == [3]
    # rel L2 = 0.5 / sqrt(1 + 4 + 9 + 16) = 0.5 / sqrt(30)
    assert m["rel_l2_err"] == pytest.approx(0.5 / math.sqrt(30))


def test_known_cosine():
    ref = torch.tensor([1.0, 0.0])
    out = torch.tensor([1.0, 1.0])
    # cos 45 degrees
    assert metrics.error_metrics(out, ref)["cosine"] == pytest.approx(1 / math.sqrt(2))
    assert metrics.error_metrics(-ref, ref)["cosine"] == pytest.approx(-1.0)


def test_exact_match_is_infinite_psnr_and_unit_cosine():
    x = torch.randn(100)
    m = metrics.error_metrics(x.clone(), x)
    assert m["psnr_db"] == math.inf and m["mse"] == 0 and m["cosine"] == pytest.approx(1.0)


def test_zero_output_against_nonzero_reference_has_cosine_zero_not_nan():
    ref = torch.full((1000,), 4e-6)
    m = metrics.error_metrics(torch.zeros(1000), ref)
    assert m["cosine"] == 0.0
    assert m["rel_l2_err"] == pytest.approx(1.0)
    v = metrics.verdict(torch.zeros(1000), ref, resolve("bfloat16", None))
    assert not v["ok"] and "cosine" in v["reason"]


def test_nan_in_output_makes_figures_nan_and_fails_allclose():
    ref = torch.ones(10)
    out = torch.ones(10)
    out[7] = float("nan")
    v = metrics.verdict(out, ref, Tolerance("allclose", atol=1.0, rtol=1.0))
    assert math.isnan(v["max_abs_err"]) and math.isnan(v["mse"])
    assert v["nan_count"] == 1 and v["nonfinite_mismatch"] == 1
    assert not v["ok"] and "[7]" in v["reason"]


def test_matching_nan_and_inf_count_as_equal():
    ref = torch.tensor([float("nan"), float("inf"), 1.0])
    out = torch.tensor([float("nan"), float("inf"), 1.0])
    v = metrics.verdict(out, ref, resolve("float32", None), allow_nan=True)
    assert v["ok"], v["reason"]
    assert v["max_abs_err"] == 0.0
    strict = metrics.verdict(out, ref, resolve("float32", None))
    assert not strict["ok"] and strict["reason"].startswith("reference invalid: 1 NaN in the reference")


def test_nan_is_no_wildcard():
    ref = torch.tensor([1.0, 2.0, 3.0])
    out = torch.tensor([1.0, float("nan"), 3.0])
    v = metrics.verdict(out, ref, Tolerance("allclose", atol=1e9, rtol=1e9))
    assert not v["ok"] and "NaN positions must match" in v["reason"] and "[1]" in v["reason"]


def test_allclose_verdict_names_worst_element():
    ref = torch.zeros(3, 4)
    out = ref.clone()
    out[2, 1] = 1e-3
    v = metrics.verdict(out, ref, Tolerance("allclose", atol=1e-5, rtol=1e-5))
    assert not v["ok"]
    assert v["outside_tol"] == 1
    assert "[2, 1]" in v["reason"]
    ok = metrics.verdict(ref + 1e-6, ref, Tolerance("allclose", atol=1e-5, rtol=1e-5))
    assert ok["ok"] and ok["score"] == pytest.approx(0.1, rel=1e-3)


def test_unwritten_elements_are_counted_from_the_poison_pattern():
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int32):
        out = torch.empty(2, 129, dtype=dtype)
        poison_(out)
        out[:, :128] = 1
        mask = poisoned_mask(out)
        assert int(mask.sum()) == 2, dtype
        assert bool(mask[0, 128]) and bool(mask[1, 128])
    out = torch.empty(2, 129)
    poison_(out)
    out[:, :128] = 1
    v = metrics.verdict(out, torch.ones(2, 129), resolve("float32", None), poisoned_mask(out))
    assert not v["ok"] and v["unwritten"] == 2
    assert v["reason"].startswith("2 elements unwritten at [0, 128]")
    # the figures are the written elements' (a new user saw max_abs, psnr and cosine all nan), the verdict fails
    out[0, :128] += 1e-3
    v = metrics.verdict(out, torch.ones(2, 129), resolve("float32", None), poisoned_mask(out))
    assert not v["ok"] and v["unwritten"] == 2 and v["max_abs_err"] == pytest.approx(1e-3, rel=1e-3)
    assert math.isfinite(v["psnr_db"]) and v["cosine"] > 0.99


def test_a_computed_nan_is_not_mistaken_for_unwritten():
    out = torch.zeros(4) / torch.zeros(4)  # canonical NaNs produced by arithmetic
    assert int(poisoned_mask(out).sum()) == 0


def test_low_precision_verdict_uses_psnr_and_cosine():
    torch.manual_seed(0)
    ref = torch.randn(4096, dtype=torch.float64)
    good = ref.to(torch.bfloat16)  # one bf16 rounding: ~59 dB and up
    v = metrics.verdict(good, ref, resolve("bfloat16", None))
    assert v["ok"] and v["psnr_db"] > 50
    noisy = (ref + 0.05 * torch.randn(4096, dtype=torch.float64)).to(torch.bfloat16)
    bad = metrics.verdict(noisy, ref, resolve("bfloat16", None))
    assert not bad["ok"] and "psnr_db" in bad["reason"]
    # where, as an allclose failure says (new-user trial 29, F21): a PSNR failure of a half-garbage row names the
    # elements, the first of them and the rows
    half = ref.reshape(64, 64).to(torch.bfloat16)
    half[5, 32:] = 1e4
    v = metrics.verdict(half, ref.reshape(64, 64), resolve("bfloat16", None))
    assert not v["ok"] and v["reason"].startswith("psnr_db"), v["reason"]
    assert "32 of 4096 elements grossly wrong, first at [5, 32]: got 9984, expected" in v["reason"], v["reason"]
    assert "(bad elements in rows 5" in v["reason"], v["reason"]


def test_integer_outputs_compare_exactly():
    ref = torch.arange(10, dtype=torch.int32)
    out = ref.clone()
    out[3] += 1
    v = metrics.verdict(out, ref, resolve("int32", None))
    assert not v["ok"] and v["outside_tol"] == 1


def test_bad_elements_are_located_by_rows_and_columns():
    ref = torch.ones(7, 129)
    out = ref.clone()
    out[:, 128] = 0.0  # the tail column
    v = metrics.verdict(out, ref, resolve("float32", None))
    assert v["where"] == "cols 128 entirely (of 7 x 129)"
    assert "bad elements in cols 128 entirely (of 7 x 129)" in v["reason"]
    gemm = torch.ones(65, 65)
    bad = gemm.clone()
    bad[64, :] = 0
    bad[:, 64] = 0
    assert metrics.verdict(bad, gemm, resolve("float32", None))["where"] == "rows 64 and cols 64 entirely (of 65 x 65)"
    scattered = gemm.clone()
    scattered[3, 5] = scattered[9, 7] = 0
    assert metrics.verdict(scattered, gemm, resolve("float32", None))["where"] == "rows 3, 9 of 65, cols 5, 7 of 65"
    one_d = metrics.verdict(torch.tensor([1.0, 2.0, 0.0]), torch.tensor([1.0, 2.0, 3.0]), resolve("float32", None))
    assert one_d["where"] == "indices 2 of 3"


def test_atol_larger_than_the_output_scale_warns():
    ref = torch.full((1000,), 4e-6)
    v = metrics.verdict(torch.zeros(1000), ref, resolve("float32", {"float32": {"atol": 1e-5}}))
    assert v["outside_tol"] == 0  # the elementwise test alone is fooled ...
    assert not v["ok"] and v["rel_l2_err"] == pytest.approx(1.0)  # ... the whole-tensor check is not
    assert "rel_l2_err 1 > 0.001" in v["reason"]
    assert v["warnings"] and "larger than the output's scale" in v["warnings"][0]


def test_shape_mismatch_raises():
    with pytest.raises(ValueError, match="shape"):
        metrics.error_metrics(torch.zeros(3), torch.zeros(4))


@pytest.mark.parametrize("kind", ["good", "nan", "unwritten", "off"])
def test_chunked_verdict_agrees_with_the_full_one(kind):
    torch.manual_seed(1)
    ref = torch.randn(10_000, dtype=torch.float64)
    out = ref.to(torch.float32)
    if kind == "nan":
        out[7777] = float("nan")
    elif kind == "unwritten":
        poison_(out[9000:])
    elif kind == "off":
        out[1234] += 1.0
    tol = resolve("float32", None)
    full = metrics.verdict(out, ref, tol, unwritten=poisoned_mask(out))
    chunked = metrics.verdict_large(out, ref, tol, chunk=999)
    assert chunked["ok"] == full["ok"]
    for key in ("outside_tol", "unwritten", "nan_count", "nonfinite_mismatch", "worst_index"):
        assert chunked[key] == full[key], key
    for key in ("max_abs_err", "mse", "psnr_db", "cosine", "rel_l2_err", "max_rel_err", "scale_err"):
        a, b = chunked[key], full[key]
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-9), key
    if kind == "unwritten":
        assert chunked["reason"].startswith("1000 elements unwritten at [9000]")
        assert chunked["where"] == "flat indices 9000..9999 of 10000"


@pytest.mark.parametrize("dtype,factor", [("bfloat16", 1.03), ("bfloat16", 0.97), ("float16", 1.005)])
def test_a_uniform_scale_error_fails_at_low_precision_although_cosine_is_one(dtype, factor):
    torch.manual_seed(2)
    ref = torch.randn(64, 257, dtype=torch.float64)
    tol = resolve(dtype, None)
    honest = metrics.verdict(ref.to(getattr(torch, dtype)), ref, tol)
    assert honest["ok"] and honest["scale_err"] < 1e-3
    truncated = (ref.to(torch.float32).view(torch.int32) & ~0xFFFF).view(torch.float32).to(torch.bfloat16)
    chopped = metrics.verdict(truncated, ref, resolve("bfloat16", None))  # rounding toward zero is no scale error,
    assert chopped["scale_err"] < 0.01 and "err toward zero" in chopped["reason"], chopped["reason"]  # but a lean
    out = (ref * factor).to(getattr(torch, dtype))
    v = metrics.verdict(out, ref, tol)
    assert v["cosine"] > 0.99999 and v["psnr_db"] > tol.min_psnr_db  # the figures that cannot see it
    assert not v["ok"] and v["reason"].startswith("scale_err")
    assert v["scale_err"] == pytest.approx(abs(factor - 1), rel=0.05)
    big = metrics.verdict_large(out, ref, tol, chunk=1000)
    assert not big["ok"] and "scale_err" in big["reason"]


def test_small_values_flushed_to_zero_at_low_precision_are_shown():
    torch.manual_seed(3)
    ref = torch.softmax(3 * torch.randn(2, 4099, dtype=torch.float64), dim=-1)
    out = ref.clone()
    out[out < 5e-4 * out.amax(dim=-1, keepdim=True)] = 0
    v = metrics.verdict(out.to(torch.bfloat16), ref, resolve("bfloat16", None))
    # below the tensor's noise floor for PSNR and cosine, but most elements are off: the elementwise bound fails it
    assert v["psnr_db"] > 40 and v["cosine"] > 0.9999
    # cases.md mass-loss: many elements off by 8 u |ref| (the largest flushed ones by 8 u max(|ref|, rms(ref)) too)
    assert not v["ok"] and "off by more than" in v["reason"] and "elements (" in v["reason"]
    assert any("flushed to zero" in w for w in v["warnings"])
    honest = metrics.verdict(ref.to(torch.bfloat16), ref, resolve("bfloat16", None))
    assert not any("flushed" in w for w in honest["warnings"])
