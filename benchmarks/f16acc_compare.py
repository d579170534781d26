"""How the interpreter's fp16-accumulator emulation (ktui.worker.interp_fixes.f16_accumulate: rounded to fp16 after
every k-step of 16) compares with the GPU's own tl.dot(out_dtype=tl.float16), against one rounding per tl.dot (the
interpreter before red team round 12 W3). Runs tests/cases/kernels/rt12_qk16_f16_acc_bad.py on CUDA.

Prints per shape: the share of elements bit-identical to the GPU and the largest absolute difference, for the
per-16 emulation and for one rounding. Expect the per-16 emulation to match most elements (and be closer than one
rounding); a large mismatch means the GPU rounds otherwise (say so in the lead's notes).

    python3 benchmarks/f16acc_compare.py
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import torch

from ktui.worker.interp_fixes import f16_accumulate

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    spec = importlib.util.spec_from_file_location("qk16", ROOT / "tests/cases/kernels/rt12_qk16_f16_acc_bad.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    torch.manual_seed(0)
    print("| (m, n, d) | per-16 equal | per-16 max abs diff | once equal | once max abs diff |")
    print("| --- | --- | --- | --- | --- |")
    for m, n, d in ((129, 200, 64), (129, 200, 128), (512, 512, 128)):
        q = torch.randn(m, d, device="cuda").half()
        k = torch.randn(n, d, device="cuda").half()
        gpu = mod.custom_kernel((q, k)).cpu().numpy()
        qn, kn = q.cpu().numpy(), k.cpu().numpy()
        per16 = f16_accumulate(qn, kn.T.copy(), np.zeros((m, n), np.float16))
        once = (qn.astype(np.float32) @ kn.T.astype(np.float32)).astype(np.float16)
        row = [f"({m}, {n}, {d})"]
        for emu in (per16, once):
            diff = float(np.abs(emu.astype(np.float32) - gpu.astype(np.float32)).max())
            row += [f"{float((emu.view(np.int16) == gpu.view(np.int16)).mean()):.4f}", f"{diff:.3g}"]
        print("| " + " | ".join(row) + " |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
