"""Red team round 11, the open findings (false alarms first): each fixed as a mechanism, with a bad kernel, its honest
twin and a test asserting the verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, CHECKED, K, corr, good, run

CUMSUM = CASES / "references" / "cumsum.py"


# -- F2: torch's CPU scans accumulate float32 in float64; the native bar is also a float32 scan's ---------------------
def test_an_honest_float32_scan_passes_and_its_float64_twin_too(make_ws, ladder_for):
    good(run(make_ws, ladder_for, "cumsum", K / "rt11b_scan_good.py", reference=CUMSUM, seed=4, rungs=CHECKED))
    good(run(make_ws, ladder_for, "cumsum", K / "rt11b_scan_f64_good.py", reference=CUMSUM, seed=4, rungs=CHECKED))


def test_a_scan_with_a_bfloat16_carry_or_a_dropped_block_still_fails(make_ws, ladder_for):
    bad = corr(
        run(make_ws, ladder_for, "cumsum", K / "rt11b_scan_bf16_carry_bad.py", reference=CUMSUM, seed=4, rungs=CHECKED)
    )
    assert bad.status is Status.FAILED, bad.line()
    assert "what the reference computed in float32 gets" in bad.summary, bad.summary
    drop = corr(
        run(make_ws, ladder_for, "cumsum", K / "rt11b_scan_drop_block_bad.py", reference=CUMSUM, seed=4, rungs=CHECKED)
    )
    assert drop.status is Status.FAILED and "unwritten" in drop.summary, drop.summary


def test_the_float32_scans_round_every_running_value_and_replace_only_cpu_float32_scans():
    import numpy as np
    import torch

    from ktui.worker.float32_scans import blocked_scan, run_in_float32

    x = torch.tensor([1.0, 2.0**24, 1.0, -(2.0**24), 1.0], dtype=torch.float32)
    # float32: 2**24 + 1 rounds to 2**24 (ties to even); torch's CPU cumsum carries it in float64 and keeps the 1s
    assert torch.cumsum(x, 0).tolist() == [1.0, 2.0**24, 2.0**24 + 2, 2.0, 3.0]
    assert blocked_scan(x, 0, np.add, 0.0, block=8).tolist() == [1.0, 2.0**24, 2.0**24, 0.0, 1.0]  # sequential
    # blocks of 2: [1, 2**24] [1, -2**24] [1], each scanned, then the float32 carry 0, 2**24, 1 added
    assert blocked_scan(x, 0, np.add, 0.0, block=2).tolist() == [1.0, 2.0**24, 2.0**24, 1.0, 2.0]
    out, replaced = run_in_float32(lambda d: (d.cumsum(0), torch.cumprod(d, 0), d.double().cumsum(0)), x)
    assert replaced == 2 and out[0].tolist() == [1.0, 2.0**24, 2.0**24, 0.0, 1.0]
    assert out[2].tolist() == [1.0, 2.0**24 + 1, 2.0**24 + 2, 2.0, 3.0]  # float64 asked for: left as it is
    m = torch.randn(3, 5, 7)
    for dim in (0, 1, 2, -1):  # other dimensions, several blocks: the same scan within float32's rounding
        got = blocked_scan(m, dim, np.add, 0.0, block=2)
        assert torch.allclose(got, torch.cumsum(m, dim), atol=1e-5), dim
    got = blocked_scan(m, 1, np.logaddexp, -np.inf, block=2)
    assert torch.allclose(got, torch.logcumsumexp(m, 1), atol=1e-5)
