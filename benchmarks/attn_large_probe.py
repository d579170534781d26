"""Red team 29's honest fused-attention tutorial (tests/cases/kernels/rt29_attn_tutorial_good.py) fails dist=large on
the H200 ("NaN/inf where the reference differs") and passes on the CPU: is it the GPU's fused multiply-add of
``qk * qk_scale - m`` (the max element's exponent off by half an ulp of |m| ~ 1e31, exp2 of it inf)? Runs the kernel
on ktui's own dist=large inputs (``ktui.worker.cases.build_input``) with Triton's fp fusion on (the default) and
off, and prints the NaN/inf counts of each against the float64 reference. GPU only."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ktui.worker.cases import build_input  # noqa: E402
from ktui.worker.problem import Problem, load_module  # noqa: E402


def main() -> None:
    ref_path = ROOT / "tests/cases/references/rt29_attn.py"
    problem = Problem(ref_path, "rt29_attn", hashlib.sha256(ref_path.read_bytes()).hexdigest())
    kmod = load_module(ROOT / "tests/cases/kernels/rt29_attn_tutorial_good.py", "attn_probe")
    print(f"{'spec':<28} {'seed':>5} {'fusion':>7} {'bad':>6} {'of':>6} {'max|ref|':>10}")
    for seq in (17, 40, 64, 128):
        spec = {"batch": 1, "heads": 2, "seq": seq, "head_dim": 16}
        for seed in (3, 4):
            data = build_input(problem, {"spec": spec, "seed": seed, "dist": "large"}, "cuda")
            q, k, v, scale = data
            ref = torch.softmax((q.double() @ k.double().transpose(-1, -2)) * scale, dim=-1) @ v.double()
            for fusion in (True, False):
                B, H, S, D = q.shape
                o = torch.empty_like(q)
                kmod._attn_fwd[(triton_cdiv(S, 32), B * H)](
                    q,
                    k,
                    v,
                    o,
                    scale,
                    S,
                    *q.stride(),
                    *k.stride(),
                    *v.stride(),
                    H,
                    BLOCK_M=32,
                    BLOCK_N=32,
                    D=D,
                    enable_fp_fusion=fusion,
                )
                torch.cuda.synchronize()
                bad = (~torch.isfinite(o)) & torch.isfinite(ref)
                print(
                    f"{str(tuple(spec.values())):<28} {seed:>5} {str(fusion):>7} {int(bad.sum()):>6} "
                    f"{o.numel():>6} {float(ref.abs().max()):>10.3g}"
                )


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


if __name__ == "__main__":
    main()
