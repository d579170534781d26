"""The round 10 red team's kinds on a device: each bad kernel and its honest twin through ``ktui run --json`` over a
few seeds, one table: the correctness verdict, how many specs failed, the first words of the reason, and the largest
``gross_ratio`` of any spec (low precision: the largest error over the gross bound, 32 u max(|ref|, rms(ref)); above
1 fails), the honest margin under that bound.

    python benchmarks/round10_table.py [--device cuda] [--seeds 11,12,13] [--only powi,topk] [--out DIR]

``--only`` keeps the pairs whose problem or kernel file name contains one of the comma-separated words (the 14 pairs
times 3 seeds are 42 ``ktui run`` processes: split them across calls where one call has a time limit).

Each pair runs in a fresh workspace under a temporary folder (the reference as ``references/<problem>.py``, the
kernel as ``kernels/<problem>/v1.py``) with ``--rungs correctness``. Exit code 1 when a bad kernel passed or a twin
failed on some seed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
K = ROOT / "tests" / "cases" / "kernels"
R = ROOT / "tests" / "cases" / "references"
# (problem, reference, kernel, should pass)
PAIRS = [
    ("powi", R / "powi.py", K / "powi_int_folded_bad.py", False),
    ("powi", R / "powi.py", K / "powi_good.py", True),
    ("vadd_shape", R / "vadd_shape.py", K / "vadd_shape_even_path_bad.py", False),
    ("vadd_shape", R / "vadd_shape.py", K / "vadd_shape_good.py", True),
    ("gelu_bf16", R / "gelu_bf16.py", K / "gelu_chunk_offbyone_bad.py", False),
    ("gelu_bf16", R / "gelu_bf16.py", K / "gelu_chunk_good.py", True),
    ("scale_bf16", R / "scale_bf16_chunked.py", K / "scale_chunk_offbyone_bad.py", False),
    ("scale_bf16", R / "scale_bf16_chunked.py", K / "scale_chunk_good.py", True),
    ("topk", R / "topk.py", K / "topk_first_of_ties_good.py", True),
    ("topk", R / "topk_declared.py", K / "topk_tie_repeat_bad.py", False),
    ("softmax", ROOT / "references" / "softmax.py", ROOT / "kernels" / "softmax" / "v2.py", True),
    ("matmul", ROOT / "references" / "matmul.py", ROOT / "kernels" / "matmul" / "v2.py", True),
    ("softmax_lse", R / "softmax_lse.py", K / "softmax_lse_good.py", True),
    ("rowsum16", R / "rowsum16.py", K / "rowsum16_good.py", True),
]


def run_one(problem: str, ref: Path, kernel: Path, seed: int, device: str, out: Path | None) -> dict:
    """One ``ktui run`` of ``kernel`` against ``ref`` in a fresh workspace: the correctness rung's figures."""
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        (ws / "references").mkdir()
        (ws / "kernels" / problem).mkdir(parents=True)
        shutil.copy(ref, ws / "references" / f"{problem}.py")
        shutil.copy(kernel, ws / "kernels" / problem / "v1.py")
        cmd = [sys.executable, "-m", "ktui", "run", f"kernels/{problem}/v1.py", "--json", "--no-record"]
        cmd += ["--device", device, "--rungs", "correctness", "--seed", str(seed)]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ws)
    if out:
        (out / f"{kernel.stem}_{seed}.json").write_text(p.stdout)
    try:
        data = json.loads(p.stdout)["data"]
    except (ValueError, KeyError):
        return {"status": f"exit {p.returncode}, no result", "reason": p.stderr.strip()[-300:]}
    corr = next((r for r in data["rungs"] if r["name"] == "correctness"), None)
    if corr is None:
        failed = next((r for r in data["rungs"] if r["status"] != "ok"), {})
        return {"status": f"{failed.get('name')}: {failed.get('status')}", "reason": failed.get("summary", "")}
    specs = corr.get("specs", [])
    ratios = [float(s["gross_ratio"]) for s in specs if isinstance(s.get("gross_ratio"), (int, float))]
    honest = [float(s["gross_ratio"]) for s in specs if s["ok"] and isinstance(s.get("gross_ratio"), (int, float))]
    return {
        "status": corr["status"],
        "failed": sum(not s["ok"] for s in specs),
        "specs": len(specs),
        "reason": corr["summary"],
        "gross": max(ratios, default=None),
        "gross_ok": max(honest, default=None),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="auto")
    ap.add_argument("--seeds", default="11,12,13")
    ap.add_argument("--only", default="", help="comma-separated words: keep the pairs whose problem or kernel has one")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    words = [w for w in args.only.split(",") if w]
    pairs = [p for p in PAIRS if not words or any(w in p[0] or w in p[2].name for w in words)]
    if not pairs:
        ap.error(f"--only {args.only!r} keeps no pair")
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    rows, wrong = [], 0
    for problem, ref, kernel, should_pass in pairs:
        for seed in seeds:
            t0 = time.perf_counter()
            r = run_one(problem, ref, kernel, seed, args.device, out)
            ok = r["status"] == "ok"
            wrong += ok != should_pass
            g, gok = r.get("gross"), r.get("gross_ok")
            gross = "" if g is None else f"{g:.3g}" + ("" if gok is None else f" (passing specs {gok:.3g})")
            rows.append(
                f"| {kernel.name} | {seed} | {'pass' if should_pass else 'fail'} | {r['status']}"
                f"{'' if ok == should_pass else ' !'} | {r.get('failed', '')}/{r.get('specs', '')} | {gross} | "
                f"{time.perf_counter() - t0:.0f} s | {r['reason'][:110]} |"
            )
            print(rows[-1], flush=True)
    print("\n| kernel | seed | expected | correctness | specs failed | max gross_ratio | wall | reason |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    print(f"\n{wrong} verdict(s) other than expected")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
