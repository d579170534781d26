"""Flush-to-zero (``ktui.worker.ftz``): a kernel that reads a float32 subnormal input as zero, as the GPU's libdevice
and ``.ftz`` paths do, is judged against the reference on the flushed inputs; a flush of more than the subnormals
still fails."""

from __future__ import annotations

import torch

from ktui.core.results import Status
from ktui.worker.ftz import flushed, has_subnormals

from .test_cases import CASES, CHECKED, K, corr, good, run

R = CASES / "references"


def test_only_float32_subnormals_of_float32_and_bfloat16_tensors_are_flushed_keeping_their_sign():
    x = torch.tensor([1e-40, -1e-40, 1.2e-38, 0.0, -0.0, 1.0, 1e-45], dtype=torch.float32)
    y = flushed(
        {
            "x": x,
            "h": torch.tensor([1e-7], dtype=torch.float16),
            "d": torch.tensor([1e-310], dtype=torch.float64),
            "n": 3,
        }
    )
    assert y["x"].tolist() == [0.0, 0.0, float(x[2]), 0.0, 0.0, 1.0, 0.0]  # 1.2e-38 is normal (tiny = 1.18e-38)
    assert torch.signbit(y["x"]).tolist() == [False, True, False, False, True, False, False]
    assert y["h"].item() == torch.tensor(1e-7, dtype=torch.float16).item() != 0  # fp16's subnormals: normal in fp32
    assert y["d"].item() == 1e-310 and y["n"] == 3  # float64 has no flush; numbers pass through
    assert x[0].item() != 0  # the input itself untouched
    b = torch.tensor([1e-39, 2.0], dtype=torch.bfloat16)
    assert flushed(b).tolist() == [0.0, 2.0] and has_subnormals(b)
    assert has_subnormals((x,)) and not has_subnormals((torch.ones(3), torch.tensor([1e-7], dtype=torch.float16)))


def test_an_honest_libdevice_log_passes_the_extreme_family_judged_against_the_flushed_inputs(make_ws, ladder_for):
    res = good(
        run(
            make_ws,
            ladder_for,
            "ftz_log",
            K / "ftz_log_libdevice_good.py",
            reference=R / "ftz_log.py",
            rungs=CHECKED,
            seed=3,
        )
    )
    c = corr(res)
    warned = [w for w in c.warnings if "float32 subnormals flushed to zero" in w]
    assert warned, c.warnings
    assert "-inf" in warned[0] or "elements judged" in warned[0]


def _bad(make_ws, ladder_for, kernel):
    return corr(run(make_ws, ladder_for, "ftz_log", K / kernel, reference=R / "ftz_log.py", rungs=CHECKED, seed=3))


def test_a_log_that_zeroes_normal_numbers_below_a_threshold_fails_on_the_extreme_familys_small_normals(
    make_ws, ladder_for
):
    c = _bad(make_ws, ladder_for, "ftz_log_threshold_bad.py")
    assert c.status is Status.FAILED
    assert "extreme" in c.summary and "inf" in c.summary, c.summary
    assert not any("flushed to zero" in w for w in c.warnings)


def test_a_log_that_clamps_subnormals_to_the_smallest_normal_fails_against_either_truth(make_ws, ladder_for):
    c = _bad(make_ws, ladder_for, "ftz_log_clamp_bad.py")
    assert c.status is Status.FAILED
    assert "extreme" in c.summary, c.summary
