"""The command lines of ``ktui import``, ``ktui export gpumode|kernelbench`` and ``ktui eval``.

    ktui import kernelbench PATH [--level N] [--problems 1,19,23 | --all] [--workspace W] [--force] [--no-check]
    ktui import gpumode PATH/problems/<set>/<problem> [--workspace W] [--force] [--no-check] [--allow-torch]
    ktui import modelnew FILE --problem P [--version vN] [--workspace W] [--force]
    ktui export gpumode|kernelbench PROBLEM VERSION | PROBLEM/VERSION [--workspace W] [--out FILE]
    ktui eval [PROBLEMS...] [--workspace W] [--json] [--device auto|cpu|cuda] [--all-versions] [--p P] [--rerun]
              [--rungs compile,run,correctness] [--budget S]
              [--engine local|ray [--address ADDR] [--actors N]]

Each ``*_cli`` returns the exit code; bad input raises ``ImporterError`` or ``ValueError`` (``ktui.cli`` prints
them as usage errors, exit 2). ``ktui eval`` exits 0 when no row failed (a row that needs a GPU, on a machine
without one, is neither failed nor correct), 1 otherwise, 3 when no worker starts
(``ktui.core.envelope.EnvironmentFailure``); ``--json`` prints the envelope (``ktui.core.envelope``).
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path

from ktui.core import envelope
from ktui.core.engines import add_engine_args
from ktui.importers import gpumode, kernelbench
from ktui.importers.common import ImporterError, read_meta


def _workspace_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workspace", default=".", help="the ktui workspace (default: the current folder)")


def import_parser() -> argparse.ArgumentParser:
    p = envelope.ArgumentParser(
        prog="ktui import",
        description="Bring problems from KernelBench or GPU MODE's reference-kernels (your own clone) into the "
        "workspace as references/<name>.py (and solutions as versions). Upstream files are read with ast and YAML; "
        "the generated specs are tried in a child process (--no-check skips that).",
    )
    sub = p.add_subparsers(dest="format", required=True)
    kb = sub.add_parser("kernelbench", help="KernelBench/level{N}/{id}_{Name}.py files")
    kb.add_argument("path", help="a KernelBench clone, its KernelBench/ folder, a level folder or one problem file")
    kb.add_argument("--level", type=int, default=None, help="the level (1-3; 4 is refused: Hugging Face models)")
    which = kb.add_mutually_exclusive_group()
    which.add_argument("--problems", default=None, help="problem ids: 1,19,23 or 1-10")
    which.add_argument("--all", action="store_true", help="every problem of the level")
    gm = sub.add_parser("gpumode", help="a problems/<set>/<problem>/ folder of gpu-mode/reference-kernels")
    gm.add_argument("path", help="the problem folder (with reference.py, task.py, task.yml)")
    mn = sub.add_parser("modelnew", help="a KernelBench ModelNew file as a version of an imported problem")
    mn.add_argument("path", help="the ModelNew module")
    mn.add_argument("--problem", required=True, help="the imported KernelBench problem (references/<problem>.py)")
    mn.add_argument("--version", default=None, help="the version name (default: the next free vN)")
    for q in (kb, gm, mn):
        _workspace_arg(q)
        q.add_argument("--force", action="store_true", help="overwrite files that exist")
    for q in (kb, gm):
        q.add_argument("--no-check", action="store_true", help="do not try the specs in a child process")
        q.add_argument(
            "--allow-torch",
            action="store_true",
            help="let versions compute in torch alone (allow_torch = True; default: a version must launch a kernel)",
        )
    return p


def import_cli(argv: list[str]) -> int:
    """``ktui import ...``: prints what was written, what was dropped and what was not imported."""
    args = import_parser().parse_args(argv)
    root = Path(args.workspace).resolve()
    if args.format == "modelnew":
        out = kernelbench.import_modelnew(Path(args.path), root, args.problem, args.version, args.force)
        print(f"created {out.relative_to(root)} (ModelNew with ktui's adapter)")
        return 0
    path = Path(args.path)
    if not path.exists():
        raise ImporterError(f"no such file or folder: {args.path}")
    if args.format == "kernelbench":
        folder, level = kernelbench.level_folder(path, args.level)
        if level == 4:
            raise ImporterError(kernelbench.refuse_reason("", ast.parse(""), 4))
        if path.is_file():
            files = [path]
        else:
            if args.problems is None and not args.all:
                raise ImporterError("name the problems: --problems 1,19,23 or --all")
            ids = kernelbench.parse_ids(args.problems) if args.problems is not None else None
            files = kernelbench.select(folder, ids)
        written, failed = kernelbench.import_files(
            files, root, level, args.force, check=not args.no_check, allow_torch=args.allow_torch
        )
    else:
        written = [gpumode.import_problem(path, root, args.force, not args.no_check, args.allow_torch)]
        failed = []
    for w in written:
        print(
            f"created {w.reference.relative_to(root)}"
            + "".join(f"\n  version {v.relative_to(root)}" for v in w.versions)
        )
        for d in w.dropped:
            print(f"  test spec dropped ({d})")
        for note in w.notes:
            print(f"  note: {note}")
        if not w.versions:  # (new-user trial 20 L10: unlike ktui init, no word on what to write next)
            problem = w.reference.stem
            print(
                f"  next: write kernels/{problem}/v1.py with custom_kernel(data) (the reference's docstring says what "
                f"data holds), then `ktui run {problem}/v1` (or `ktui` to watch every save)"
            )
    for f in failed:
        print(f"not imported: {f}")
    if not written:
        return 2
    return 0


def export_parser() -> argparse.ArgumentParser:
    p = envelope.ArgumentParser(
        prog="ktui export gpumode|kernelbench",
        description="Write the file the upstream harness takes from a version of an imported problem: GPU MODE's "
        "submission.py (custom_kernel) or a KernelBench ModelNew module.",
    )
    p.add_argument("format", choices=("gpumode", "kernelbench"))
    p.add_argument("problem", metavar="PROBLEM", help="the problem, or problem/version (then no VERSION)")
    p.add_argument("version", metavar="VERSION", nargs="?", default=None, help="v3, or kernels/<problem>/v3.py")
    _workspace_arg(p)
    p.add_argument("--out", default=None, help="the file to write (default: stdout)")
    return p


def export_cli(argv: list[str]) -> int:
    """``ktui export gpumode|kernelbench PROBLEM VERSION``, or ``PROBLEM/VERSION`` (or a kernel file) alone."""
    args = export_parser().parse_args(argv)
    root = Path(args.workspace).resolve()
    if args.version is None:  # PROBLEM is problem/version (or a kernel file)
        from ktui.core.workspace import WorkspaceError, resolve_kernel

        try:
            ws, kernel = resolve_kernel(args.problem, root)
        except WorkspaceError as exc:
            raise ImporterError(f"{exc}; or give PROBLEM VERSION") from None
        if ws.root != root:
            raise ImporterError(f"{args.problem} is in the workspace {ws.root}, not in {root} (--workspace)")
        args.problem, args.version = kernel.problem, kernel.version
    ref = root / "references" / f"{args.problem}.py"
    if not ref.is_file():
        raise ImporterError(f"no problem {args.problem} in {root} (no references/{args.problem}.py)")
    version = Path(args.version).stem
    vpath = root / "kernels" / args.problem / f"{version}.py"
    if not vpath.is_file():
        from ktui.core.workspace import version_sort_key

        stems = sorted(
            (p.stem for p in (root / "kernels" / args.problem).glob("*.py") if not p.name.startswith("_")),
            key=version_sort_key,
        )
        have = ", ".join(stems) or "none"
        raise ImporterError(f"no version {version} of {args.problem} ({vpath.relative_to(root)}; versions: {have})")
    meta = read_meta(ref) or {}
    if meta.get("format") != args.format:
        origin = meta.get("format") or "ktui itself"
        raise ImporterError(
            f"{args.problem} was not imported from {args.format} (it comes from {origin}): `ktui export "
            f"{args.format}` writes the submission of a problem `ktui import {args.format}` brought in (its "
            "reference keeps the upstream's harness); a session's report is `ktui export SESSION --format md`"
        )
    text = vpath.read_text(encoding="utf-8")
    if args.format == "gpumode":
        out = gpumode.export(text, vpath.name)
    else:
        out = kernelbench.export(ref.read_text(encoding="utf-8"), text, vpath.name)
    if args.out:
        Path(args.out).write_text(out, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(out)
    return 0


def eval_parser() -> argparse.ArgumentParser:
    p = envelope.ArgumentParser(
        prog="ktui eval",
        description="Run the ladder on the best version (or every version) of each problem and print one table: "
        "verdict, speedup over the reference, over torch eager and over torch.compile of the reference (GPU only), "
        "% of roofline, fast_p and the geometric mean speedups, and the upstream checker's verdict beside ktui's "
        "(GPU MODE's check_implementation). Stored results of unchanged files on the same kind of device are reused, "
        "so an interrupted eval resumes.",
        epilog="exit codes: 0 no row failed (a row that needs a GPU, on a machine without one, is not run: not "
        "failed, not counted correct), 1 a row failed or has no result, 2 usage, 3 no worker could start",
    )
    p.add_argument("problems", nargs="*", metavar="PROBLEM", help="problems to evaluate (default: all)")
    _workspace_arg(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of the table: the envelope (`ktui schema eval`, docs/json.md)",
    )
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--remote", default=None, metavar="HOST", help="run the workers on HOST over SSH ([remote])")
    p.add_argument("--local", action="store_true", help="run the workers here, whatever [remote] says")
    p.add_argument("--all-versions", action="store_true", help="every version, not only each problem's best")
    p.add_argument("--p", type=float, default=1.0, help="fast_p's speedup threshold (default 1: faster than torch)")
    p.add_argument("--rerun", action="store_true", help="run every version again, ignoring stored results")
    p.add_argument("--seed", type=int, default=None, help="base seed for correctness inputs (default: fresh)")
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds after which no version starts (those left are listed; a later eval resumes with them)",
    )
    p.add_argument(
        "--rungs",
        default=None,
        help="comma-separated rungs to run, with what they need first (default: compile, run, correctness, "
        "benchmark, dumps); correctness is always among them",
    )
    p.add_argument(
        "--timeout",
        default=None,
        metavar="SECONDS|RUNG=SECONDS,...",
        help="time limit of each worker call, as `ktui run --timeout` takes it: every rung (300) or some "
        "(compile=20,run=90); default: [ladder.timeouts] in ktui.toml, else derived from the last runs",
    )
    add_engine_args(p)
    return p


def eval_cli(argv: list[str]) -> int:
    """``ktui eval``: progress on stderr (with ``--json``) or stdout, then the table."""
    args = eval_parser().parse_args(argv)
    from ktui.core.device import resolve_device
    from ktui.core.engines import Engine, EngineError, make_engine
    from ktui.core.engines import require as require_engine
    from ktui.core.ladder import LadderOptions
    from ktui.core.results import DEFAULT_RUNGS, expand_rungs
    from ktui.core.session import Session
    from ktui.core.timeouts import TimeoutConfigError, load_policy, parse_timeout_arg
    from ktui.core.workers.client import WorkerStartError
    from ktui.core.workspace import Workspace, WorkspaceError
    from ktui.importers.evaluate import evaluate, render

    try:
        ws = Workspace.find(Path(args.workspace))
    except WorkspaceError as exc:
        raise ImporterError(str(exc)) from None
    try:  # (new-user trial 26, F13: `ktui run` took --timeout and eval refused it)
        policy = load_policy(ws.root, parse_timeout_arg(args.timeout) if args.timeout is not None else None)
    except TimeoutConfigError as exc:
        raise ImporterError(str(exc)) from None
    names = [r.strip() for r in args.rungs.split(",") if r.strip()] if args.rungs is not None else []
    try:  # correctness always: a row's verdict is correct or not
        rungs = expand_rungs([*names, "correctness"]) if names else DEFAULT_RUNGS
    except ValueError as exc:
        raise ImporterError(str(exc)) from None
    from ktui.core.remote.config import RemoteConfigError, load_remote

    if args.remote and args.local:
        raise ImporterError("--remote and --local exclude each other")
    try:
        remote = load_remote(ws.root, args.remote, args.local)
    except RemoteConfigError as exc:
        raise ImporterError(str(exc)) from None
    if remote is not None and args.engine != "local":
        raise ImporterError(
            f"--engine {args.engine} and a remote host ({remote.host}) exclude each other: Ray places its actors "
            "on its cluster's GPUs itself (use --local, or drop --engine)"
        )
    if remote is None:
        device = resolve_device(args.device)
    else:  # the device is the remote's: resolved there
        from ktui.core.remote.transport import SSHTransport

        probe = SSHTransport(remote, ws)
        try:
            device = probe.resolve_device(args.device)
        except WorkerStartError as exc:
            raise envelope.EnvironmentFailure(str(exc)) from None
        finally:
            probe.close()
    try:  # Ray (--engine ray) must be there whether or not something runs: exit 3 now, not a table
        require_engine(args.engine)
    except EngineError as exc:
        raise envelope.EnvironmentFailure(str(exc)) from None
    out = sys.stderr if args.json else sys.stdout
    sessions = []
    # the benchmark also times torch eager and torch.compile of the reference (the judge's baselines)
    options = LadderOptions(seeds=2, seed=args.seed, rungs=rungs, baselines=True, stop_when_wrong=True)
    engines: list[Engine | None] = []

    # a cluster's kind of device is known once joined (--address with --device auto); else the remote's or this
    # machine's (resolved above)
    want = args.device if args.engine == "ray" and args.address else device

    def engine() -> Engine | None:
        if not engines:
            try:
                engines.append(make_engine(args.engine, ws, want, options, args.address, args.actors))
            except ValueError as exc:
                raise ImporterError(str(exc)) from None
            except EngineError as exc:
                raise envelope.EnvironmentFailure(str(exc)) from None
        return engines[0]

    device = want  # the kind of device for which stored results stand
    if args.engine == "local":
        engine()  # (checks that --address and --actors are not given)
    elif want == "auto":
        joined = engine()
        device = joined.device if joined is not None else device

    def start() -> Session:
        s = Session(
            ws,
            device,
            options=options,
            watch=False,
            timeouts=policy,
            remote=remote,
            engine=engine(),
        )
        sessions.append(s)
        s.start()
        try:
            info = s.device_info()
        except WorkerStartError as exc:
            raise envelope.EnvironmentFailure(str(exc)) from None
        print(f"ktui eval: device {info.get('name') or info.get('type', device)}", file=out, flush=True)
        if s.engine is not None:
            print(f"ktui eval: {s.engine.describe()}", file=out, flush=True)
        return s

    # the header first: a stored result's line came before "ktui eval: device ..." (printed when a version must run)
    # and read as output of no run (new-user trial 33, F5)
    which = ", ".join(args.problems) if args.problems else "every problem"
    print(f"ktui eval: {which} in {ws.root} on {device} (stored results of that device reused)", file=out, flush=True)
    try:
        table = evaluate(
            ws,
            list(args.problems),
            start,
            device,
            all_versions=args.all_versions,
            rerun=args.rerun,
            p=args.p,
            say=lambda line: print(line, file=out, flush=True),
            rungs=rungs,
            deadline=time.monotonic() + args.budget if args.budget is not None else None,
        )
    finally:
        for s in sessions:
            s.stop()
        for e in engines:
            if e is not None:
                e.stop()
    code = envelope.OK if all(r.ok for r in table.rows) else envelope.FAILED
    if args.json:
        return envelope.emit("eval", table.to_json(), code)
    print("\n".join(render(table)))
    return code
