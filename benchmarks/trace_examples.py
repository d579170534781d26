"""Trace every example version (``ktui run --rungs trace``) and print what the markers cost and what they found.

    python benchmarks/trace_examples.py [--out DIR] [--only problem/version,...] [--proton]

Each version runs in its own ``ktui run`` process on the GPU (``--device cuda``), as a user would run it. The table
printed last has, per version: the trace rung's status, each region's share of the warps' time and median, the CTAs'
imbalance and tail, the untraced and traced medians (CUDA events, L2 flushed, 30 calls each), the overhead, and
one marker's cost in SM cycles (the calibration kernel of empty regions). ``--proton`` also traces the Triton
versions with Proton's instrumentation mode (rows marked ``proton``). The JSON of each run and its Chrome trace go
to ``--out``. Exit code 1 when a version that marks regions was not traced.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ktui.core.workspace import Workspace  # noqa: E402

PERFETTO_MAX = 48 << 20  # larger Chrome traces stay under .ktui/traces (the device tool brings back smaller files)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None, help="problem/version keys, comma-separated")
    ap.add_argument("--proton", action="store_true", help="also trace the Triton versions with Proton")
    args = ap.parse_args()
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    rows, bad = [], 0
    for k in Workspace(ROOT).all_versions():
        if args.only and k.key not in args.only.split(","):
            continue
        cute = "ktui.trace.cute" in k.path.read_text()
        for tracer in ("ktui", "proton") if args.proton and not cute else ("ktui",):
            t0 = time.perf_counter()
            p = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "ktui",
                    "run",
                    str(k.path),
                    "--rungs",
                    "trace",
                    "--device",
                    "cuda",
                    "--json",
                    "--no-record",
                    "--tracer",
                    tracer,
                ],
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            wall = time.perf_counter() - t0
            name = f"{k.problem}_{k.version}" + ("_proton" if tracer == "proton" else "")
            try:
                res = json.loads(p.stdout)
            except ValueError:
                print(f"{k.key} ({tracer}): exit {p.returncode}, no JSON\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
                bad += 1
                continue
            if "error" in res:  # the --json envelope (docs/json.md): an error instead of data
                print(f"{k.key} ({tracer}): {res['error'].get('kind')}: {res['error'].get('message', '')[:300]}")
                rows.append((f"{k.key} {tracer}", "error", res["error"].get("message", "")[:100], *[""] * 5))
                bad += 1
                continue
            res = res.get("data", res)
            tr = next((r for r in res["rungs"] if r["name"] == "trace"), None)
            if out:
                (out / f"{name}.json").write_text(json.dumps(res, indent=1))
                report = ROOT / tr["report"] if tr and tr.get("report") else None
                if report and report.is_file() and report.stat().st_size <= PERFETTO_MAX:
                    shutil.copy(report, out / f"{name}.perfetto.json")
            if tr is None or tr["status"] != "ok":
                bad += tracer == "ktui"
                why = (tr or {}).get("summary") or (tr or {}).get("error", {}).get("message", "no trace rung")
                rows.append((f"{k.key} {tracer}", (tr or {}).get("status", "-"), why[:100], "", "", "", "", ""))
                print(f"{k.key} ({tracer}): {why}")
                for line in (tr or {}).get("error", {}).get("traceback", "").splitlines()[-12:]:
                    print("   ", line)
                continue
            print(f"{k.key} ({tracer}, {wall:.0f} s): {tr['summary']}")
            for kern in tr["kernels"]:
                regions = " ".join(
                    f"{r['name']}={r['share_pct']:.0f}%/{r['median_ns'] / 1000:.3g}us"
                    for r in kern["regions"]
                    if r.get("share_pct") is not None
                )
                ctas = (
                    f"{kern['imbalance']:.2f}x, tail "
                    + (f"{kern['tail_pct']:.0f}%" if kern.get("tail_pct") is not None else "-")
                    + (f", {kern['waves']:.2g} waves" if kern.get("waves") is not None else "")
                    if kern.get("imbalance")
                    else "-"
                )
                if kern.get("sample_every", 1) > 1:
                    ctas += f", 1/{kern['sample_every']} CTAs"
                rows.append(
                    (
                        f"{k.key} {tracer}",
                        "ok",
                        f"{kern['kernel']}: {regions}",
                        ctas,
                        f"{tr['untraced_us']:.4g}",
                        f"{tr['traced_us']:.4g}",
                        f"{tr['overhead_pct']:+.1f}%",
                        f"{tr['marker_cycles']:.0f}" if tr.get("marker_cycles") is not None else "-",
                    )
                )
                for prob in kern.get("problems", []):
                    print(f"   problem: {prob}")
            for w in tr.get("warnings", []):
                print(f"   warning: {w}")
    print()
    print(
        "| version | trace | regions (share/median) | CTAs (imbalance, tail, waves) | untraced us | traced us "
        "| overhead | marker cycles |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
