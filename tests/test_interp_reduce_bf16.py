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


SCALAR_MASK = """
import os
os.environ["TRITON_INTERPRET"] = "1"
from ktui.worker import interp_fixes
interp_fixes.install()
import torch, triton, triton.language as tl


@triton.jit
def seg_kernel(x_ptr, off_ptr, out_ptr, BLOCK: tl.constexpr):
    start = tl.load(off_ptr)
    end = tl.load(off_ptr + 1)
    cols = tl.arange(0, BLOCK)
    cmask = cols < BLOCK
    x = tl.load(x_ptr + cols, mask=cmask & (end > start), other=0.0)
    tl.store(out_ptr + cols, x + 1.0, mask=cmask & (end > start))


x, out = torch.arange(16, dtype=torch.float32), torch.zeros(16)
seg_kernel[(1,)](x, torch.tensor([0, 5]), out, BLOCK=16)
print(out.tolist() == (x + 1).tolist())
seg_kernel[(1,)](x, torch.tensor([5, 5]), out.zero_(), BLOCK=16)
print(out.tolist() == [0.0] * 16)
"""


def test_a_block_mask_anded_with_a_scalar_comparison_loads_and_stores_under_the_interpreter(tmp_path):
    """New-user trial 24, F5 (and trial 23, F2): ``mask=cmask & (end > start)`` with ``end``, ``start`` loaded
    scalars failed "mask has unsupported dtype" under the interpreter (a scalar comparison typed int64, its splat and
    the ``&`` int32) where the GPU compiles it; comparisons are int1 (``interp_fixes._install_compares``)."""
    script = tmp_path / "scalar_mask.py"
    script.write_text(SCALAR_MASK)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.stdout.split() == ["True", "True"], done.stdout + done.stderr
