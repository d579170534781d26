"""Edit-to-verdict latency: ktui's warm workers against a fresh ``python`` process per check.

    python benchmarks/loop_latency.py [--device auto|cpu|cuda] [--n 10] [--kernel softmax/v2]

Warm path: a ktui ``Session`` (file watcher, scheduler, candidate and judge workers already running) on a copy of the
workspace; each iteration saves an edit of the kernel file and waits for the ``correctness`` rung's verdict. The time
runs from the write to the verdict event: debounce, snapshot, compile, run on every test spec and seed, reference and
comparison included.

Cold path: the same check the usual way: a new ``python`` process per edit that imports torch and triton, loads the
reference and the kernel, runs every test spec for the same number of seeds, computes the float64 reference and
compares with ktui's own metrics.

Also measured: ``ktui``'s start-up time to its first drawn screen (a subprocess, the app exits after the first
refresh; torch must not be imported). Prints medians and the ratio, measured side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ktui.core.device import resolve_device  # noqa: E402
from ktui.core.events import LadderFinished, RungFinished  # noqa: E402
from ktui.core.ladder import LadderOptions  # noqa: E402
from ktui.core.session import Session  # noqa: E402
from ktui.core.workspace import Workspace  # noqa: E402

COLD_CHECK = r"""
import json, sys, time
ws, problem, kernel, device, seeds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
import os
if device == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"
import torch, triton
from pathlib import Path
from ktui.worker.problem import Problem, load_module, policy_dtype
from ktui.worker import metrics
from ktui.worker.tolerance import resolve
ref = Problem(Path(ws) / "references" / f"{problem}.py", problem, "cold")
mod = load_module(Path(kernel), "cold_kernel")
ok = True
for spec in ref.tests:
    for seed in range(seeds):
        data = ref.generate(seed, spec, device)
        out = mod.custom_kernel(data)
        if device == "cuda":
            torch.cuda.synchronize()
        expected, _ = ref.reference(data)
        tol = resolve(policy_dtype(data, ref.reference_native(data)), ref.tolerance)
        ok &= metrics.verdict(out.cpu(), expected.cpu(), tol)["ok"]
print(json.dumps({"ok": bool(ok)}))
"""

FIRST_PAINT = r"""
import sys, time
t0 = time.perf_counter()
from ktui.tui.app import KtuiApp
from ktui.core.workspace import Workspace

class FirstPaint(KtuiApp):
    def on_mount(self):
        super().on_mount()
        self.call_after_refresh(lambda: self.exit(time.perf_counter() - t0))

app = FirstPaint(Workspace(sys.argv[1]), device=sys.argv[2])
elapsed = app.run(headless=True, size=(100, 30))
print(f"{elapsed:.4f} {'torch' in sys.modules}")
"""


def copy_workspace(problem: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix="ktui-latency-"))
    (d / "references").mkdir()
    shutil.copy(ROOT / "references" / f"{problem}.py", d / "references")
    shutil.copytree(ROOT / "kernels" / problem, d / "kernels" / problem)
    return d


def warm_path(ws_dir: Path, key: str, device: str, n: int) -> list[float]:
    problem, version = key.split("/")
    ws = Workspace(ws_dir)
    events: queue.Queue = queue.Queue()
    session = Session(ws, device, options=LadderOptions(rungs=("compile", "run", "correctness")))
    session.bus.subscribe(lambda ev: events.put(ev) if isinstance(ev, (RungFinished, LadderFinished)) else None)
    session.start()
    for w in session.pool.workers:
        w.ensure_ready()
    path = ws_dir / "kernels" / problem / f"{version}.py"
    base = path.read_text()
    times = []
    try:
        for i in range(n + 1):  # the first edit warms the caches and is not counted
            t0 = time.perf_counter()
            path.write_text(base + f"\n# edit {i}\n")
            verdict_at = None
            while True:
                ev = events.get(timeout=600)
                if isinstance(ev, RungFinished) and ev.result.name == "correctness":
                    verdict_at = time.perf_counter()
                    if ev.result.status.value != "ok":
                        raise SystemExit(f"warm path: correctness failed: {ev.result.summary}")
                if isinstance(ev, LadderFinished):
                    break
            if verdict_at is None:
                raise SystemExit(f"warm path: no correctness verdict: {ev.result.failed_rung}")
            if i:
                times.append(verdict_at - t0)
    finally:
        session.stop()
    return times


def cold_path(ws_dir: Path, key: str, device: str, n: int, seeds: int) -> list[float]:
    problem, version = key.split("/")
    kernel = ws_dir / "kernels" / problem / f"{version}.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        p = subprocess.run(
            [sys.executable, "-c", COLD_CHECK, str(ws_dir), problem, str(kernel), device, str(seeds)],
            capture_output=True,
            text=True,
            env=env,
        )
        times.append(time.perf_counter() - t0)
        if p.returncode or not json.loads(p.stdout.strip().splitlines()[-1])["ok"]:
            raise SystemExit(f"cold path failed: {p.stdout[-500:]} {p.stderr[-2000:]}")
    return times


def first_paint(device: str, n: int) -> list[tuple[float, float, bool]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        p = subprocess.run(
            [sys.executable, "-c", FIRST_PAINT, str(ROOT), device], capture_output=True, text=True, env=env
        )
        wall = time.perf_counter() - t0
        if p.returncode:
            raise SystemExit(f"first paint failed: {p.stderr[-2000:]}")
        inner, torch_loaded = p.stdout.split()[-2:]
        out.append((wall, float(inner), torch_loaded == "True"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="auto")
    ap.add_argument("--kernel", default="softmax/v2")
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--skip-startup", action="store_true", help="skip the first-paint measurement (no textual)")
    args = ap.parse_args()
    device = resolve_device(args.device)
    ws_dir = copy_workspace(args.kernel.split("/")[0])
    try:
        warm = warm_path(ws_dir, args.kernel, device, args.n)
        cold = cold_path(ws_dir, args.kernel, device, args.n, args.seeds)
    finally:
        shutil.rmtree(ws_dir, ignore_errors=True)
    mw, mc = statistics.median(warm), statistics.median(cold)
    print(f"edit -> correctness verdict, {args.kernel} on {device}, {args.n} edits each, {args.seeds} seeds per spec")
    print(f"  warm (ktui session)      median {mw:.3f} s   min {min(warm):.3f}  max {max(warm):.3f}")
    print(f"  cold (python per check)  median {mc:.3f} s   min {min(cold):.3f}  max {max(cold):.3f}")
    print(f"  ratio cold/warm          {mc / mw:.1f}x")
    if not args.skip_startup:
        fp = first_paint(device, 5)
        print(
            f"ktui start-up to first drawn screen (100x30, headless), 5 runs: median wall "
            f"{statistics.median(w for w, _, _ in fp):.3f} s (in-process {statistics.median(i for _, i, _ in fp):.3f}"
            f" s); torch imported: {any(t for _, _, t in fp)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
