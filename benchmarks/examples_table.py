"""Run ``ktui run --json`` on every example version and print one table: rung verdicts, worst accuracy, timings.

Each run prints the envelope of ``docs/json.md``; the table reads its ``data`` (``LadderJson``).

    python benchmarks/examples_table.py [--device cuda] [--out DIR]

Each version runs in its own ``ktui run`` process, as a user would run it; the JSON of each run is kept under
``--out`` when given. Exit code 1 when a version that should pass did not.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The foundation issue's performance targets on an H200, checked when the benchmark rung ran.
TARGETS = {
    "vector_add/v2": ("gbps", 3500.0, "GB/s at 2^28 fp32 elements"),
    "matmul/v2": ("speedup", 0.6, "x torch's speed at 4096^3 bf16"),
}
sys.path.insert(0, str(ROOT))

from ktui.core.workspace import Workspace  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="auto")
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None, help="problem/version keys, comma-separated")
    args = ap.parse_args()
    ws = Workspace(ROOT)
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    rows = []
    bad = 0
    checks = []
    for k in ws.all_versions():
        if args.only and k.key not in args.only.split(","):
            continue
        t0 = time.perf_counter()
        p = subprocess.run(
            [sys.executable, "-m", "ktui", "run", str(k.path), "--json", "--device", args.device],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        wall = time.perf_counter() - t0
        try:
            env = json.loads(p.stdout)  # the envelope: {"schema_version", "command", "exit_code", "data"|"error"}
        except ValueError:
            print(f"{k.key}: exit {p.returncode}, no JSON\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
            bad += 1
            continue
        if out:
            (out / f"{k.problem}_{k.version}.json").write_text(json.dumps(env, indent=1))
        if "data" not in env:  # a usage or environment error: no result
            print(f"{k.key}: exit {p.returncode}: {env['error']['kind']}: {env['error']['message']}")
            bad += 1
            continue
        res = env["data"]
        rungs = {r["name"]: r for r in res["rungs"]}
        verdicts = " ".join(f"{n}:{r['status']}" for n, r in rungs.items())
        corr = rungs.get("correctness", {})
        bench = rungs.get("benchmark", {})
        rows.append(
            (
                k.key,
                res["device"].get("name", "?"),
                verdicts,
                corr.get("summary", ""),
                bench.get("summary", "") if bench.get("status") == "ok" else bench.get("status", "-"),
                f"{wall:.1f}s",
            )
        )
        if k.key in TARGETS and bench.get("status") == "ok":
            field, floor, what = TARGETS[k.key]
            value = min(s.get(field) or 0.0 for s in bench["specs"])
            checks.append(f"{'PASS' if value >= floor else 'FAIL'} {k.key}: {value:.2f} {what} (target >= {floor:g})")
            bad += value < floor
        failed = [r for r in res["rungs"] if r["status"] == "FAILED"]
        for r in failed:
            print(f"--- {k.key} [{r['name']}] {r.get('summary') or r.get('error', {}).get('message', '')}")
            tb = r.get("error", {}).get("traceback", "")
            if tb:
                print("\n".join(tb.rstrip().splitlines()[-12:]))
        bad += bool(failed)
    print("\n| version | device | rungs | correctness | benchmark | wall |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    for c in checks:
        print(c)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
