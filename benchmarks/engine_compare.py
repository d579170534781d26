"""``ktui eval`` on the examples with the local worker pool and with the Ray engine: wall time, and whether the two
agree (verdicts, and speedups within a band on a GPU).

    python benchmarks/engine_compare.py [--device cpu|cuda] [--problems vector_add softmax ...] [--actors N]
                                        [--engines local ray] [--seed S] [--band PCT] [--out DIR]

Each engine gets a fresh copy of the repository's examples (references/ and kernels/) and runs
``ktui eval --all-versions --rerun --json --seed S --engine E``; ``ready`` is when ktui printed the device (the
workers, or Ray and its actors, up), ``wall`` the whole command. With one GPU the Ray engine has one actor, so its
ladders run one after another as the local pool's do: the difference is Ray's start-up and overhead, and the
speedups must agree (same kernels, same GPU, one timed run at a time). With N GPUs (or CPU actors) the versions run
N at a time. The per-version table and a summary table are printed last; the eval logs and JSON go to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_eval(engine: str, args: argparse.Namespace, out: Path) -> dict:
    """One ``ktui eval`` in a fresh copy of the examples; its JSON table plus ``wall_s``, ``ready_s``, ``load``."""
    ws = Path(tempfile.mkdtemp(prefix=f"ktui-{engine}-"))
    for d in ("references", "kernels"):
        shutil.copytree(ROOT / d, ws / d)
    for p in (ws / "kernels").iterdir():
        if args.problems and p.name not in args.problems:
            shutil.rmtree(p)
    cmd = [sys.executable, "-m", "ktui", "eval", "--all-versions", "--rerun", "--json"]
    cmd += ["--device", args.device, "--seed", str(args.seed), "--engine", engine]
    if engine == "ray" and args.actors:
        cmd += ["--actors", str(args.actors)]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{os.environ.get('PYTHONPATH', '')}", "RAY_ADDRESS": ""}
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    ready: list[float] = []
    err_lines: list[str] = []
    proc = subprocess.Popen(cmd, cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def read_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err_lines.append(f"{time.monotonic() - t0:7.1f}  {line.rstrip()}")
            if line.startswith("ktui eval: device") and not ready:
                ready.append(time.monotonic() - t0)

    reader = threading.Thread(target=read_err, daemon=True)  # (the one reader of stderr: communicate() would be
    reader.start()  # a second one, and each would get pieces of its lines)
    timer = threading.Timer(args.timeout, proc.kill)
    timer.start()
    assert proc.stdout is not None
    stdout = proc.stdout.read()
    proc.wait()
    timer.cancel()
    reader.join(5)
    wall = time.monotonic() - t0
    (out / f"eval_{engine}.log").write_text("\n".join(err_lines) + "\n")
    (out / f"eval_{engine}.json").write_text(stdout)
    shutil.rmtree(ws, ignore_errors=True)
    try:
        env = json.loads(stdout)  # the envelope (docs/json.md): data, or error
    except ValueError:
        env = {"error": {"message": " | ".join(err_lines[-3:])}}
    if "data" in env:
        table = env["data"]
    else:
        table = {"rows": [], "error": f"exit {proc.returncode}: {env.get('error', {}).get('message', '')[:300]}"}
    table.update(
        engine=engine,
        wall_s=wall,
        ready_s=ready[0] if ready else None,
        load=(load0, os.getloadavg()[0]),
        rc=proc.returncode,
    )
    return table


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--problems", nargs="*", default=None, help="examples to run (default: all)")
    p.add_argument("--engines", nargs="*", default=["local", "ray"], choices=("local", "ray"))
    p.add_argument("--actors", type=int, default=None, help="the Ray engine's actors (default: ktui's)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--band", type=float, default=10.0, help="speedups agree within this many percent (GPU)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per eval")
    p.add_argument("--out", default="engine-compare-out")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tables = {}
    for engine in args.engines:
        print(f"== ktui eval --engine {engine} --device {args.device}", flush=True)
        tables[engine] = run_eval(engine, args, out)
        t = tables[engine]
        print(f"   {t['wall_s']:.1f} s, rc {t['rc']}" + (f"  {t['error']}" if "error" in t else ""), flush=True)
    (out / "summary.json").write_text(json.dumps(tables, indent=1))
    keys = sorted({f"{r['problem']}/{r['version']}" for t in tables.values() for r in t["rows"]})
    rows = {e: {f"{r['problem']}/{r['version']}": r for r in t["rows"]} for e, t in tables.items()}
    disagree = 0
    print("\n| version | " + " | ".join(f"{e} verdict | {e} ran on" for e in tables) + " | agree |")
    print("|---|" + "---|---|" * len(tables) + "---|")
    for k in keys:
        cells, verdicts, speeds = [], set(), []
        for e in tables:
            r = rows[e].get(k, {})
            cells += [r.get("verdict", "-"), r.get("ran_on") or "-"]
            verdicts.add(r.get("verdict", "-").split(" ")[0])  # ✓ / ✗ / ◌: the speedup itself is compared below
            if r.get("speedup"):
                speeds.append(r["speedup"])
        agree = len(verdicts) == 1
        if agree and len(speeds) == 2:
            agree = abs(speeds[0] - speeds[1]) <= args.band / 100 * max(speeds)
        disagree += not agree
        print(f"| {k} | " + " | ".join(cells) + f" | {'yes' if agree else 'NO'} |")
    print("\n| engine | ready s | wall s | correct | fast_1 | geomean | load (start, end) |")
    print("|---|---|---|---|---|---|---|")
    for e, t in tables.items():
        ready = f"{t['ready_s']:.1f}" if t.get("ready_s") is not None else "-"
        fp = f"{t['fast_p']:.2f}" if t.get("fast_p") is not None else "-"
        gm = f"{t['geomean_speedup']:.2f}x" if t.get("geomean_speedup") else "-"
        corr = f"{t.get('correct', '-')}/{t.get('total', len(t['rows']))}"
        load = f"{t['load'][0]:.1f}, {t['load'][1]:.1f}"
        print(f"| {e} | {ready} | {t['wall_s']:.1f} | {corr} | {fp} | {gm} | {load} |")
    print(f"\nversions where the engines disagree: {disagree} (cores here: {os.cpu_count()})")
    return 1 if disagree or any(t["rc"] not in (0, 1) for t in tables.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
