"""bf16 reductions and scans under the Triton interpreter (``interp_fixes._install_reduce_scan``): the interpreter
summed and scanned bf16's uint16 bit patterns (new-user trial 19: a bf16 ``tl.cumsum`` off by 1e36 and NaN, failing
an honest kernel on the CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from .conftest import ROOT

SCRIPT = textwrap.dedent(
    """
    import json, torch, triton, triton.language as tl
    from ktui.worker import interp_fixes
    interp_fixes.install()

    @triton.jit
    def k(x_ptr, red_ptr, scan_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0.0)
        tl.store(red_ptr + 0, tl.sum(x, axis=0))
        tl.store(red_ptr + 1, tl.max(tl.where(m, x, -float("inf")), axis=0))
        tl.store(red_ptr + 2, tl.min(tl.where(m, x, float("inf")), axis=0))
        tl.store(red_ptr + 3, tl.argmax(tl.where(m, x, -float("inf")), axis=0).to(tl.bfloat16))
        tl.store(scan_ptr + offs, tl.cumsum(x, axis=0), mask=m)

    torch.manual_seed(0)
    x = torch.randn(100, dtype=torch.bfloat16)
    red, scan = torch.empty(4, dtype=torch.bfloat16), torch.empty_like(x)
    k[(1,)](x, red, scan, 100, BLOCK=128)
    want = torch.cumsum(x.double(), 0)
    print(json.dumps({
        "red": red.tolist(),
        "sum": x.double().sum().item(), "max": x.max().item(), "min": x.min().item(), "argmax": x.argmax().item(),
        "scan_err": (scan.double() - want).abs().max().item(), "scan_ulp": 2.0 ** -8 * want.abs().max().item(),
        "finite": bool(torch.isfinite(scan.float()).all()),
    }))
    """
)


def test_bf16_sum_max_argmax_and_cumsum_compute_on_values_not_bits():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    cmd = [sys.executable, "-c", SCRIPT]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    r = json.loads(done.stdout.strip().splitlines()[-1])
    total, top, bottom, at = r["red"]
    assert abs(total - r["sum"]) <= 2.0**-8 * max(abs(r["sum"]), 1.0)  # the float32 sum, rounded once to bf16
    assert (top, bottom, int(at)) == (r["max"], r["min"], r["argmax"])
    assert r["finite"] and r["scan_err"] <= r["scan_ulp"], r
