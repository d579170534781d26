"""Save-to-verdict over SSH against the same loop here: ktui's warm session with its workers on a "remote" host
reached over a loopback SSH connection, beside the same session with local workers, on the same edits.

    python3 benchmarks/ssh_latency.py [--problems softmax/v2] [--n 5] [--seed 20261201] [--seeds 2]
                                      [--server auto|openssh|asyncssh] [--pings 200] [--device cpu|cuda] [--ladder]

``--ladder`` first runs each version's whole default ladder (compile, run, correctness, benchmark, dumps; and
profile on a GPU) over SSH once and prints each rung's status and summary (on a GPU: the benchmark timed there, the
dumps and the Nsight Compute report copied back).

The remote is this machine: a real OpenSSH ``sshd`` on 127.0.0.1 with throw-away keys (``--server openssh``; the
default when sshd is installed) or an asyncssh server inside this process (``asyncssh``), and this machine's ktui
behind a Python that cannot import textual, litellm, watchdog, asyncssh, rich or mcp (``tests/ssh_harness.py``).
So the figures are what SSH itself costs ktui's loop (encryption, the channel, the path mapping and the sources sent
by hash), not a network's latency: over a real link add its round trips (about four per ladder rung that has files
to send, one per worker call otherwise).

Per problem, both paths are ``benchmarks/loop_latency.py``'s ``WarmPath`` (watcher on, ladder ``compile, run,
correctness``, seed pinned, warm spares ready before each edit), edits interleaved (local, then SSH) so that the
machine's load hits both; the first edit of each is not counted. Printed: per edit the write-to-first-verdict and
write-to-full-verdict seconds of both; then the medians, their difference and ratio, and the round trip of one
protocol call (``ping`` to the candidate, ``--pings`` of them) on each path; a markdown table last. Exits 1 when
a path fails its check or the two verdicts differ.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.loop_latency import DEFAULT_SEED, WarmPath, copy_workspace  # noqa: E402


def ping_rtt(path: WarmPath, n: int) -> float:
    """The median seconds of one ``ping`` to the candidate worker (request out, reply back), over ``n`` calls."""
    worker = path.session.pool.candidate
    worker.ensure_ready()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        worker.call("ping", {}, timeout_s=30)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def full_ladder(key: str, remote: Any, device: str, seed: int) -> bool:
    """``key``'s default ladder over SSH once, each rung printed; True when every rung passed or was skipped."""
    from ktui.core.ladder import LadderOptions
    from ktui.core.results import DEFAULT_RUNGS
    from ktui.core.session import Session
    from ktui.core.workspace import Workspace

    problem, version = key.split("/")
    d = copy_workspace(problem)
    try:
        rungs = DEFAULT_RUNGS + (("profile",) if device == "cuda" else ())  # ncu there, the report back
        options = LadderOptions(seed=seed, rungs=rungs)
        s = Session(Workspace(d), device, watch=False, remote=remote, options=options)
        s.start()
        try:
            r = s.run(Workspace(d).kernel(d / "kernels" / problem / f"{version}.py"))
        finally:
            s.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print(f"  {key} over SSH on {r.device.get('name')}:", flush=True)
    for rung in r.rungs:
        print(f"    [{rung.name}] {rung.status.value} {rung.seconds:.1f} s  {rung.summary[:160]}", flush=True)
    return all(rung.status.value in ("ok", "skipped") for rung in r.rungs)


def measure(key: str, remote: Any, n: int, seed: int, seeds: int, pings: int, device: str) -> dict[str, Any]:
    problem = key.split("/")[0]
    dirs = {"local": copy_workspace(problem), "ssh": copy_workspace(problem)}
    runs: dict[str, list[dict[str, Any]]] = {"local": [], "ssh": []}
    paths: dict[str, WarmPath] = {}
    try:
        paths["local"] = WarmPath(dirs["local"], key, device, seed, seeds, remote=None)
        paths["ssh"] = WarmPath(dirs["ssh"], key, device, seed, seeds, remote=remote)
        for i in range(n + 1):
            got = {name: paths[name].edit(i) for name in ("local", "ssh")}
            for p in paths.values():
                p.settle()
            tag = "(not counted)" if i == 0 else ""
            print(
                f"  {key} edit {i}: local first {got['local']['first_s']:.2f} s, verdict "
                f"{got['local']['verdict_s']:.2f} s; ssh first {got['ssh']['first_s']:.2f} s, verdict "
                f"{got['ssh']['verdict_s']:.2f} s ({got['ssh']['cases']} cases) {tag}",
                flush=True,
            )
            if got["local"]["cases"] != got["ssh"]["cases"]:
                counts = f"{got['local']['cases']} / {got['ssh']['cases']}"
                raise SystemExit(f"the two paths judged different cases: {counts}")
            if i:
                for name in runs:
                    runs[name].append(got[name])
        rtt = {name: ping_rtt(p, pings) for name, p in paths.items()}
    finally:
        for p in paths.values():
            p.stop()
        for d in dirs.values():
            shutil.rmtree(d, ignore_errors=True)
    return {"key": key, "runs": runs, "rtt": rtt}


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default="softmax/v2")
    ap.add_argument("--n", type=int, default=5, help="counted edits per path (one more is run first, not counted)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--server", choices=("auto", "openssh", "asyncssh"), default="auto")
    ap.add_argument("--pings", type=int, default=200)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--ladder", action="store_true", help="first the whole default ladder over SSH, once per version")
    args = ap.parse_args(argv)
    from tests.ssh_harness import asyncssh_server, openssh_server, why_no_sshd

    server = args.server
    if server == "auto":
        server = "asyncssh" if why_no_sshd() else "openssh"
    elif server == "openssh" and why_no_sshd():
        raise SystemExit(f"--server openssh: {why_no_sshd()}")
    results = []
    with ExitStack() as stack:
        base = Path(tempfile.mkdtemp(prefix="ktui-ssh-latency-"))
        stack.callback(shutil.rmtree, base, True)
        remote = stack.enter_context(openssh_server(base) if server == "openssh" else asyncssh_server(base))
        port = remote.config.port
        print(f"ssh server: {server} on 127.0.0.1:{port}; device {args.device}; {args.n} edits counted", flush=True)
        keys = [k.strip() for k in args.problems.split(",") if k.strip()]
        failed = [k for k in keys if args.ladder and not full_ladder(k, remote.config, args.device, args.seed)]
        for key in keys:
            results.append(measure(key, remote.config, args.n, args.seed, args.seeds, args.pings, args.device))
    print()
    print("| problem | path | first verdict (median) | full verdict (median, min-max) | ping round trip |")
    print("|---|---|---|---|---|")
    for r in results:
        for name in ("local", "ssh"):
            v = [x["verdict_s"] for x in r["runs"][name]]
            f = [x["first_s"] for x in r["runs"][name]]
            label = name if name == "local" else f"ssh ({server}, loopback)"
            print(
                f"| {r['key']} | {label} | {med(f):.2f} s | {med(v):.2f} s ({min(v):.2f}-{max(v):.2f}) | "
                f"{r['rtt'][name] * 1e3:.2f} ms |"
            )
        lv, sv = med([x["verdict_s"] for x in r["runs"]["local"]]), med([x["verdict_s"] for x in r["runs"]["ssh"]])
        print(
            f"| {r['key']} | ssh - local | | {sv - lv:+.2f} s ({sv / lv:.2f}x) | "
            f"{(r['rtt']['ssh'] - r['rtt']['local']) * 1e3:+.2f} ms |"
        )
    if failed:
        print(f"the ladder over SSH failed a rung: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
