"""Real problems through ktui: a dozen KernelBench level-1 problems and GPU MODE's pmpp and pmpp_v2 sets, every
shipped solution run, one table (issue 14).

Two steps, because the GPU machine has no network and upstream code is never committed here:

    python benchmarks/import_table.py prepare --kernelbench KB_CLONE --gpumode RK_CLONE [--bench .bench]
    python benchmarks/import_table.py run [--bench .bench] [--ws DIR] [--device cpu|cuda] [--budget S] [--json F]

``prepare`` (here, with the clones) imports the problems into a ktui workspace under ``.bench/ws`` (git-ignored,
about 1 MB: references, versions, no results) with ktui's own importers, and writes ``.bench/labels.json`` (what each
version is and what upstream expects of it). KernelBench ships no solutions, so each problem gets two versions made
from its own file: ``model`` (its ``Model`` renamed ``ModelNew``, through ``ktui import modelnew``: expected
correct) and ``scaled`` (the same, every float output times 1.001: expected wrong, also under KernelBench's own
``allclose(atol=rtol=1e-4)``). GPU MODE ships ``solutions/{correct,wrong}/*.py``; each is a version.

``run`` copies ``.bench/ws`` to ``--ws`` (once: a later run resumes from the results stored there, so on the GPU,
where one call is limited to 10 minutes, ``--budget`` stops starting versions after that many seconds and the step
is run again while the machine is warm), runs every version through the ladder as ``ktui eval --all-versions`` does
(with the torch eager and torch.compile baselines), and prints the table last: per version its upstream label, ktui's
verdict, the upstream checker's (GPU MODE's ``check_implementation``, run in the judge), where the two differ, the
speedups; then which correct solutions pass, which wrong ones fail, and where ktui and the upstream checker differ.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# A dozen level-1 problems: matmuls, elementwise, softmax, norms, pooling, a reduction, a convolution, a scan, a loss
KB_IDS = (1, 19, 21, 23, 26, 36, 40, 42, 47, 63, 89, 94)
GM_SETS = ("pmpp", "pmpp_v2")
SCALE = 1.001  # the wrong KernelBench version: every float output times this (outside fp32's 1e-5 and KB's 1e-4)


def _git_commit(path: Path) -> str:
    try:
        done = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    except OSError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def model_new(source: str) -> str:
    """A KernelBench problem file as a ``ModelNew`` module: its ``Model`` class renamed (and ``super(Model, ...)``),
    everything else as written (the adapter of ``ktui import modelnew`` passes the weights to it by name)."""
    tree = ast.parse(source)
    if not any(isinstance(n, ast.ClassDef) and n.name == "Model" for n in tree.body):
        raise ValueError("no class Model")
    return source.replace("class Model(", "class ModelNew(").replace("super(Model,", "super(ModelNew,")


def scaled_model_new(source: str) -> str:
    """``model_new`` with every floating-point output of ``forward`` times ``SCALE``: a wrong version."""
    return (
        model_new(source)
        + f"""

_ktui_bench_forward = ModelNew.forward


def _ktui_bench_scaled(self, *args, **kwargs):
    out = _ktui_bench_forward(self, *args, **kwargs)
    return out * {SCALE} if isinstance(out, torch.Tensor) and out.is_floating_point() else out


ModelNew.forward = _ktui_bench_scaled
"""
    )


def prepare(args: argparse.Namespace) -> int:
    """Import the problems into ``<bench>/ws`` and write ``<bench>/labels.json``."""
    from ktui.importers import gpumode, kernelbench
    from ktui.importers.common import ImporterError, check_workspace

    bench = Path(args.bench).resolve()
    ws = bench / "ws"
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir(parents=True)
    check_workspace(ws)
    labels: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    kb_root = Path(args.kernelbench).resolve()
    level = kb_root / "KernelBench" / "level1"
    files = [f for i in KB_IDS for f in sorted(level.glob(f"{i}_*.py"))]
    written, failed = kernelbench.import_files(files, ws, level=1, allow_torch=True)
    notes += [f"kernelbench: not imported: {f}" for f in failed]
    scratch = bench / "scratch"
    scratch.mkdir(exist_ok=True)
    by_name = {kernelbench.parse(f, 1).name: f for f in files}
    for w in written:
        source = by_name[w.problem].read_text(encoding="utf-8")
        notes += [f"{w.problem}: test spec dropped ({d})" for d in w.dropped]
        for kind, text, expected in (("model", model_new, "correct"), ("scaled", scaled_model_new, "wrong")):
            path = scratch / f"{w.problem}_{kind}.py"
            path.write_text(text(source), encoding="utf-8")
            out = kernelbench.import_modelnew(path, ws, w.problem, None, False)
            labels[f"{w.problem}/{out.stem}"] = {"origin": "kernelbench", "solution": kind, "expected": expected}
    shutil.rmtree(scratch)
    gm_root = Path(args.gpumode).resolve()
    for set_name in GM_SETS:
        for folder in sorted((gm_root / "problems" / set_name).iterdir()):
            if not (folder / "task.yml").is_file():
                continue
            try:
                w = gpumode.import_problem(folder, ws, allow_torch=True)
            except ImporterError as exc:
                notes.append(f"gpumode {set_name}/{folder.name}: not imported: {exc}")
                continue
            notes += [f"{w.problem}: {n}" for n in w.notes if '"cuda" left as written' not in n]
            for v in w.versions:
                sol = gpumode.solution_of(v.read_text(encoding="utf-8"))
                rel, expected = sol if sol else ("?", "unknown")
                labels[f"{w.problem}/{v.stem}"] = {"origin": "gpumode", "solution": rel, "expected": expected}
    manifest = {
        "kernelbench": {
            "path": str(kb_root),
            "commit": args.kernelbench_rev or _git_commit(kb_root),
            "ids": list(KB_IDS),
        },
        "gpumode": {"path": str(gm_root), "commit": args.gpumode_rev or _git_commit(gm_root), "sets": list(GM_SETS)},
        "labels": labels,
        "notes": notes,
    }
    (bench / "labels.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    size = sum(f.stat().st_size for f in bench.rglob("*") if f.is_file())
    print("\n".join(notes))
    print(
        f"prepared {len(labels)} versions of {len(list((ws / 'references').glob('*.py')))} problems in {bench} "
        f"({size / 1e6:.2f} MB)"
    )
    return 0


def _cell(x: float | None) -> str:
    return f"{x:.2f}x" if x is not None else "-"


def run(args: argparse.Namespace) -> int:
    """Evaluate every version of the prepared workspace (resuming), print the table."""
    from ktui.core.device import resolve_device
    from ktui.core.envelope import jsonable
    from ktui.core.ladder import LadderOptions
    from ktui.core.results import DEFAULT_RUNGS, expand_rungs
    from ktui.core.session import Session
    from ktui.core.timeouts import load_policy
    from ktui.core.workspace import Workspace
    from ktui.importers import evaluate

    bench = Path(args.bench).resolve()
    manifest = json.loads((bench / "labels.json").read_text(encoding="utf-8"))
    labels: dict[str, dict[str, str]] = manifest["labels"]
    ws_dir = Path(args.ws).resolve()
    stamp = ws_dir / ".bench-sha256"
    digest = hashlib.sha256()
    for f in sorted(p for p in (bench / "ws").rglob("*") if p.is_file() and ".ktui" not in p.parts):
        digest.update(str(f.relative_to(bench)).encode() + b"\0" + f.read_bytes())
    if args.fresh or not stamp.is_file() or stamp.read_text(encoding="utf-8") != digest.hexdigest():
        if ws_dir.exists():  # another preparation: its results do not stand for these files
            shutil.rmtree(ws_dir)
        shutil.copytree(bench / "ws", ws_dir)
        stamp.write_text(digest.hexdigest(), encoding="utf-8")
    ws = Workspace(ws_dir)
    device = resolve_device(args.device)
    names = [r.strip() for r in args.rungs.split(",") if r.strip()] if args.rungs else []
    rungs = expand_rungs([*names, "correctness"]) if names else DEFAULT_RUNGS
    sessions: list[Session] = []

    def start() -> Session:
        if not sessions:
            s = Session(
                ws,
                device,
                options=LadderOptions(seeds=2, seed=args.seed, rungs=rungs, baselines=True, stop_when_wrong=True)
                if not args.light
                else LadderOptions(
                    seeds=1,
                    seed=args.seed,
                    rungs=rungs,
                    baselines=True,
                    stop_when_wrong=True,
                    distributions=False,
                    layouts=False,
                    fuzz=False,
                    near_duplicates=False,
                ),
                watch=False,
                timeouts=load_policy(ws.root, None),
            )
            s.start()
            sessions.append(s)
        return sessions[0]

    try:
        only = tuple(x for x in (args.only or "").split(",") if x)
        table = evaluate.evaluate(
            ws,
            [p for p in ws.problems() if p.startswith(only)] if only else [],
            start,
            device,
            all_versions=True,
            rungs=rungs,
            say=lambda line: print(line, flush=True),
            deadline=time.monotonic() + args.budget,
        )
    finally:
        for s in sessions:
            s.stop()
    rows, left = table.rows, table.not_run
    if args.json:
        # rows are dataclasses: jsonable writes them as ``ktui eval --json`` does
        data = jsonable({**table.to_json(), "labels": labels, "left": left})
        Path(args.json).write_text(json.dumps(data, indent=1))
    print()
    lines = evaluate.render(table)
    print("\n".join(lines[lines.index("") + 1 :]))  # its summary: the rows follow, with upstream's labels
    print()
    head = ("version", "label", "ktui", "upstream check", "vs ref", "vs eager", "vs compile", "where they differ / why")
    body = []
    for r in rows:
        lab = labels.get(f"{r.problem}/{r.version}", {})
        why = r.differs or ("" if r.ok else r.reason[:110])
        body.append(
            (
                f"{r.problem}/{r.version} ({lab.get('solution', '?')})",
                lab.get("expected", "?"),
                r.verdict,
                r.upstream or "-",
                _cell(r.speedup),
                _cell(r.eager_speedup),
                "no compile" if r.compile_error else _cell(r.compile_speedup),
                why,
            )
        )
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for cells in body:
        print("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    correct = [r for r in rows if labels.get(f"{r.problem}/{r.version}", {}).get("expected") == "correct"]
    wrong = [r for r in rows if labels.get(f"{r.problem}/{r.version}", {}).get("expected") == "wrong"]
    judged = [r for r in rows if r.upstream in ("pass", "fail", "error")]
    print()
    print(f"correct solutions that pass in ktui: {sum(r.ok for r in correct)}/{len(correct)}")
    print(f"wrong solutions that fail in ktui: {sum(not r.ok for r in wrong)}/{len(wrong)}")
    print(
        f"upstream check_implementation agrees with ktui on {sum(not r.differs for r in judged)}/{len(judged)}; "
        f"differs on: {', '.join(f'{r.problem}/{r.version} ({r.differs})' for r in judged if r.differs) or 'none'}"
    )
    if left:
        print(f"NOT RUN (budget of {args.budget:g} s spent): {len(left)} versions: run the step again (results kept)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/import_table.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare", help="import the problems from the clones into <bench>/ws (run where they are)")
    p.add_argument("--kernelbench", required=True, help="a KernelBench clone (with KernelBench/level1/)")
    p.add_argument("--gpumode", required=True, help="a gpu-mode/reference-kernels clone (with problems/)")
    p.add_argument("--bench", default=str(ROOT / ".bench"), help="the git-ignored folder to fill")
    p.add_argument("--kernelbench-rev", default="", help="the clone's commit, when it is no git checkout")
    p.add_argument("--gpumode-rev", default="", help="the clone's commit, when it is no git checkout")
    r = sub.add_parser("run", help="run every version of the prepared workspace and print the table")
    r.add_argument("--bench", default=str(ROOT / ".bench"))
    r.add_argument("--ws", default=str(ROOT / ".bench-ws"), help="where the workspace runs (results kept there)")
    r.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    r.add_argument("--rungs", default=None, help="rungs to run (default: compile, run, correctness, benchmark, dumps)")
    r.add_argument("--budget", type=float, default=float("inf"), help="seconds after which no version starts")
    r.add_argument("--seed", type=int, default=None)
    r.add_argument("--only", default=None, help="problems whose names start so (gm_pmpp_v2_,kb1_): a part of the table")
    r.add_argument("--json", default=None, help="write the table as JSON here")
    r.add_argument("--fresh", action="store_true", help="start from the prepared workspace again (drop results)")
    r.add_argument(
        "--light",
        action="store_true",
        help="one seed, native contiguous inputs, no fuzzed sizes (a loaded CPU: GPU MODE's conv2d in float64 is slow)",
    )
    args = parser.parse_args()
    return prepare(args) if args.step == "prepare" else run(args)


if __name__ == "__main__":
    sys.exit(main())
