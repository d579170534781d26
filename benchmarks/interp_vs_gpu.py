"""The CPU interpreter's semantics against the GPU's: fp8 casts and libdevice functions, run once compiled on the
GPU and once under ``TRITON_INTERPRET=1`` with ktui's interpreter fixes (``ktui.worker.interp_fixes.install``, as
ktui's CPU workers run them), on the same inputs; one row per operation: elements compared, how many are
bit-identical, the largest difference in units in the last place of the output dtype, and one input where they
differ. Needs a GPU (run by ``benchmarks/h200.sh interp-vs-gpu``).

    python benchmarks/interp_vs_gpu.py [--n 65536] [--only exp,fast_expf,...]

Why: red team rounds 14 and 15 found that the interpreter cast fp8 and computed libdevice differently from an H200
(``interp_fp8``, ``interp_libdevice``); their tests pin values worked out by hand. This measures the emulation
against the hardware. ``fast_*`` (``.approx`` instructions) are expected to differ by a few ulp: the interpreter
computes them exactly and the run rung says so (``interp_libdevice.note``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# name -> (expression on x (and y), input dtype, output dtype); y is a second input of the same dtype
UNARY = [
    "exp",
    "exp2",
    "log",
    "log2",
    "log10",
    "log1p",
    "expm1",
    "sin",
    "cos",
    "tan",
    "tanh",
    "erf",
    "sqrt",
    "rsqrt",
    "sinh",
    "atan",
    "asin",
    "cbrt",
    "rint",
    "round",
    "fast_expf",
    "fast_exp10f",
    "fast_logf",
    "fast_log2f",
    "fast_sinf",
    "fast_cosf",
    "fast_tanf",
]
OPS: dict[str, tuple[str, str, str]] = {f: (f"libdevice.{f}(x)", "float32", "float32") for f in UNARY}
OPS.update(
    {
        "pow": ("libdevice.pow(x, y)", "float32", "float32"),
        "fast_powf": ("libdevice.fast_powf(x, y)", "float32", "float32"),
        "fast_dividef": ("libdevice.fast_dividef(x, y)", "float32", "float32"),
        "div_rn": ("libdevice.div_rn(x, y)", "float32", "float32"),
        "float2int_rn": ("libdevice.float2int_rn(x)", "float32", "int32"),
        "erfinv64": ("libdevice.erfinv(x)", "float64", "float64"),
        "f32->e4m3": ("x.to(tl.float8e4nv)", "float32", "float8_e4m3fn"),
        "f16->e4m3": ("x.to(tl.float8e4nv)", "float16", "float8_e4m3fn"),
        "bf16->e4m3": ("x.to(tl.float8e4nv)", "bfloat16", "float8_e4m3fn"),
        "f32->e5m2": ("x.to(tl.float8e5)", "float32", "float8_e5m2"),
        "f16->e5m2": ("x.to(tl.float8e5)", "float16", "float8_e5m2"),
        "e4m3->f32": ("x.to(tl.float32)", "float8_e4m3fn", "float32"),
        "e5m2->f16": ("x.to(tl.float16)", "float8_e5m2", "float16"),
    }
)

KERNELS = """
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice


@triton.jit
def k_{i}(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(o_ptr + offs, ({expr}).to(o_ptr.dtype.element_ty), mask=m)
"""


def inputs(name: str, dtype: str, n: int):
    """``n`` inputs for ``name`` as (x, y) CPU tensors of ``dtype``: log-uniform magnitudes over the dtype's range of
    interest with both signs, exact zeros, ±inf, NaN, subnormals, halves (rounding) and every fp8 code for fp8 inputs.
    """
    import torch

    g = torch.Generator().manual_seed(0)
    if dtype.startswith("float8"):
        codes = torch.arange(256, dtype=torch.uint8).repeat((n + 255) // 256)[:n]
        x = codes.view(getattr(torch, dtype))
        return x, x
    span = {"float16": (-24, 16), "bfloat16": (-30, 30), "float64": (-30, 0)}.get(dtype, (-40, 40))
    if name in ("log", "log2", "log10", "log1p", "sqrt", "rsqrt", "cbrt", "fast_logf", "fast_log2f"):
        span = (-130, 127)
    mag = torch.exp2(torch.empty(n, dtype=torch.float64).uniform_(*span, generator=g))
    sign = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).double()
    x = mag * sign
    if name == "erfinv64":
        x = torch.empty(n, dtype=torch.float64).uniform_(-1, 1, generator=g)
    specials = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 0.5, 1.5, 2.5, -2.5, 1e-40, -1e-40, 3e9, -3e9]
    specials += [448.0, 464.0, 480.0, 57344.0, 61440.0, 2.0**-9, 2.0**-10, 2.0**-17, 1.0625, 1.1875]
    x[: len(specials)] = torch.tensor(specials, dtype=torch.float64)
    y = torch.empty(n, dtype=torch.float64).uniform_(-4, 4, generator=g)
    if name in ("div_rn", "fast_dividef"):
        y = torch.exp2(torch.empty(n, dtype=torch.float64).uniform_(-20, 20, generator=g)) * sign.flip(0)
    return x.to(getattr(torch, dtype)), y.to(getattr(torch, dtype))


def compute(mode: str, names: list[str], n: int, folder: Path) -> None:
    """Runs each op (``mode``: gpu, or interp under TRITON_INTERPRET=1) and saves its output as ``<i>.<mode>.pt``."""
    import torch

    if mode == "interp":
        from ktui.worker import interp_fixes

        interp_fixes.install()
    sys.path.insert(0, str(folder))
    import ivg_kernels as mod  # written by main()

    dev = "cuda" if mode == "gpu" else "cpu"
    for i, name in enumerate(names):
        expr, src, dst = OPS[name]
        x, y = inputs(name, src, n)
        out = torch.empty(n, dtype=getattr(torch, dst), device=dev)
        try:
            getattr(mod, f"k_{i}")[(triton_cdiv(n, 1024),)](x.to(dev), y.to(dev), out, n, BLOCK=1024)
            torch.save(out.cpu(), folder / f"{i}.{mode}.pt")
        except Exception as exc:  # one op's failure is its row; the others still run
            (folder / f"{i}.{mode}.err").write_text(f"{type(exc).__name__}: {str(exc)[:300]}")


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def ulps(a, b):
    """Per-element distance in units in the last place between same-dtype tensors (NaN == NaN; inf == inf)."""
    import torch

    if not a.dtype.is_floating_point:
        return (a.long() - b.long()).abs().double()
    bits = {8: torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[a.element_size() * 8]
    if a.element_size() == 1:
        ia, ib = a.view(torch.uint8).long(), b.view(torch.uint8).long()
        sa, sb = ia >= 128, ib >= 128
        ia, ib = torch.where(sa, -(ia - 128), ia), torch.where(sb, -(ib - 128), ib)
    else:
        ia, ib = a.view(bits).long(), b.view(bits).long()
        top = 1 << (a.element_size() * 8 - 1)
        ia = torch.where(ia < 0, -(ia + top), ia)  # sign-magnitude to a monotone integer line
        ib = torch.where(ib < 0, -(ib + top), ib)
    d = (ia - ib).abs().double()
    fa, fb = a.double(), b.double()
    d[torch.isnan(fa) & torch.isnan(fb)] = 0
    return d


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=65536)
    ap.add_argument("--only", default="")
    ap.add_argument("--mode", default="")  # internal: one side, in a child process
    ap.add_argument("--folder", default="")
    args = ap.parse_args()
    names = [x for x in args.only.split(",") if x] or list(OPS)
    if args.mode:
        compute(args.mode, names, args.n, Path(args.folder))
        return 0
    import torch

    folder = Path(tempfile.mkdtemp(prefix="ivg-"))
    src = "".join(KERNELS.format(i=i, expr=OPS[name][0]) for i, name in enumerate(names))
    (folder / "ivg_kernels.py").write_text(src)
    base = [sys.executable, __file__, "--n", str(args.n), "--only", ",".join(names), "--folder", str(folder)]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{os.environ.get('PYTHONPATH', '')}"}
    subprocess.run([*base, "--mode", "gpu"], env=env, check=False)
    subprocess.run([*base, "--mode", "interp"], env={**env, "TRITON_INTERPRET": "1"}, check=False)
    print("| op | in -> out | elements | bit-identical | max ulp | an input where they differ (gpu, interp) |")
    print("|---|---|---|---|---|---|")
    for i, name in enumerate(names):
        _, s, d_ = OPS[name]
        cells = [name, f"{s} -> {d_}"]
        errs = [(folder / f"{i}.{m}.err") for m in ("gpu", "interp")]
        if any(e.exists() for e in errs):
            why = "; ".join(f"{e.name.split('.')[1]}: {e.read_text()[:150]}" for e in errs if e.exists())
            print("| " + " | ".join([*cells, "-", "-", "-", why.replace("|", "/")]) + " |")
            continue
        a, b = torch.load(folder / f"{i}.gpu.pt"), torch.load(folder / f"{i}.interp.pt")
        d = ulps(a, b)
        raw = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        same = int((a.view(raw) == b.view(raw)).sum())  # bits: -0 and +0 differ here (the ulp column counts them 0)
        x, _ = inputs(name, s, args.n)
        where = ""
        if same < d.numel():
            j = int(d.argmax())
            where = f"x={x[j].double().item():.9g}: {a[j].double().item():.9g}, {b[j].double().item():.9g}"
        print(f"| {name} | {s} -> {d_} | {d.numel()} | {same} | {d.max().item():g} | {where} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
