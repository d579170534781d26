"""``ktui eval --engine ray`` end to end: a Ray instance of its own on this machine (CPU actors: the interpreter), the
versions in parallel, a table whose rows say where each ran, and a second eval that reuses them without starting
Ray. ``ray`` is in the dev extra: this runs in CI."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

from .conftest import BAD, ROOT
from .jsonout import data_of
from .test_ray_engine import HONEST, TINY


def test_ktui_eval_on_ray_runs_the_versions_on_actors_and_says_where(tmp_path):
    root = tmp_path / "ws"
    (root / "references").mkdir(parents=True)
    (root / "references" / "tiny.py").write_text(TINY)
    (root / "kernels" / "tiny").mkdir(parents=True)
    (root / "kernels" / "tiny" / "v1.py").write_text(HONEST)
    (root / "kernels" / "tiny" / "v2.py").write_text(HONEST + "\n# the same, again\n")
    actors = "2" if (os.cpu_count() or 1) >= 2 else "1"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_ADDRESS": ""}

    def ktui_eval(*extra: str) -> subprocess.CompletedProcess[str]:
        args = ["eval", "--all-versions", "--device", "cpu", "--json", "--seed", "7", *extra]
        return subprocess.run(
            [sys.executable, "-m", "ktui", *args], cwd=root, capture_output=True, text=True, env=env, timeout=600
        )

    r = ktui_eval("--engine", "ray", "--actors", actors)
    assert r.returncode == 0, r.stderr[-3000:]
    table = data_of(r.stdout, "eval")  # stdout is the envelope alone: the actors' output stays in Ray's logs
    rows = {row["version"]: row for row in table["rows"]}
    assert set(rows) == {"v1", "v2"} and all(row["ok"] and row["verdict"] == "✓ ok" for row in rows.values())
    assert all(" CPU actor " in row["ran_on"] for row in rows.values()), rows
    if actors == "2":  # in parallel, one on each actor
        assert sorted(row["ran_on"].rsplit(" ", 1)[1] for row in rows.values()) == ["0", "1"]
    assert f"ktui eval: ray: {actors} actor" in r.stderr and "a local Ray instance" in r.stderr
    # Ray's own log lines (WARNING authentication_token_setup.py:85 -- ...) go to .ktui/logs/ray.log, not stderr
    assert not re.search(r"^\S+ \S+\s+(DEBUG|INFO|WARNING|ERROR) \S+\.py:\d+ -- ", r.stderr, re.M), r.stderr
    assert "authentication_token_setup" not in r.stderr and (root / ".ktui/logs/ray.log").is_file()
    t0 = time.monotonic()
    again = ktui_eval("--engine", "ray")  # everything stored: nothing runs, Ray never starts
    assert again.returncode == 0 and all(row["cached"] for row in data_of(again.stdout, "eval")["rows"])
    assert "ray:" not in again.stderr and time.monotonic() - t0 < 60


def test_sigterm_stops_ktui_eval_on_ray_its_actors_and_their_workers(tmp_path):
    """ray.init sets a SIGTERM handler of its own (sys.exit): ktui puts its own back, so a SIGTERM stops the engine
    (actors killed, their workers die with them) and the exit code is 128 + 15."""
    root = tmp_path / "ws"
    (root / "references").mkdir(parents=True)
    (root / "references" / "tiny.py").write_text(TINY)
    (root / "kernels" / "tiny").mkdir(parents=True)
    (root / "kernels" / "tiny" / "v1.py").write_text((BAD / "hangs.py").read_text())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_ADDRESS": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ktui", "eval", "--device", "cpu", "--engine", "ray", "--actors", "1"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if "tiny/v1: running" in line:
            break
    logs = root / ".ktui" / "logs" / "ray-0"
    end = time.monotonic() + 120
    while not (logs / "compiler.log").exists() and time.monotonic() < end:  # (on the CPU the compile hangs there)
        time.sleep(0.5)
    time.sleep(2)
    pids = [int(x) for f in logs.glob("*.log") for x in re.findall(r"worker start \S+ pid (\d+)", f.read_text())]
    assert pids and all(_alive(p) for p in pids), (pids, lines)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 128 + signal.SIGTERM, "".join(lines)
    end = time.monotonic() + 30
    while any(_alive(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.5)
    assert not any(_alive(p) for p in pids), pids  # the actor's workers died with it


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (whoever adopts an orphan may reap it late)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
