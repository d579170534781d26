"""``ktui mcp`` driven by an MCP client of the same SDK, over stdio, the server a subprocess (``python -m ktui mcp``):
the tools it lists, the problems, the confinement of writes, the resources, a ladder run with its progress
notifications and structured result, the cancel of a hanging kernel and of a run queued behind it, and the
session log of it all.

CPU only: the candidate runs the Triton interpreter (tens of seconds for vector_add's correctness rung here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ktui.sessions.log import read_log

ROOT = Path(__file__).resolve().parents[1]
V1 = ROOT / "kernels" / "vector_add" / "v1.py"
HANG = (Path(__file__).resolve().parent / "kernels" / "hangs.py").read_text()

TOOLS = {
    "list_problems",
    "read_source",
    "write_version",
    "run_ladder",
    "diff_versions",
    "profile",
    "trace",
    "search_context",
}


def _server(ws: Path, *extra: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k.startswith(("KTUI_", "PYTHON", "TRITON_", "CUDA_", "TORCH"))}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "ktui", "mcp", str(ws), "--device", "cpu", "--seeds", "1", *extra],
        env=env,
        cwd=str(ws),
    )


async def _client(ws: Path, body: Any, errlog: Path, *extra: str) -> Any:
    with errlog.open("w") as err:
        async with stdio_client(_server(ws, *extra), errlog=err) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                return await body(s)


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def test_mcp_lists_tools_problems_resources_and_refuses_writes_outside_kernels(make_ws, tmp_path):
    ws = make_ws(["vector_add"], {"vector_add/v1": V1})
    outside = tmp_path / "evil.py"
    source = "def custom_kernel(data):\n    a, b = data\n    return a + b\n"

    async def body(s: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        tools = (await s.list_tools()).tools
        out["tools"] = {t.name: t for t in tools}
        out["problems"] = (await s.call_tool("list_problems", {})).structured_content
        out["reference"] = (await s.call_tool("read_source", {"problem": "vector_add"})).structured_content
        refused = {}
        for name, args in {
            "traversal": {"path": "../evil.py", "source": source},
            "deep_traversal": {"path": "kernels/vector_add/../../../evil.py", "source": source},
            "absolute": {"path": str(outside), "source": source},
            "reference": {"path": "references/vector_add.py", "source": source},
            "bad_problem": {"problem": "../vector_add", "version": "v2", "source": source},
            "bad_version": {"problem": "vector_add", "version": "../../evil", "source": source},
        }.items():
            r = await s.call_tool("write_version", args)
            refused[name] = (r.is_error, _text(r))
        out["refused"] = refused
        out["written"] = (
            await s.call_tool("write_version", {"path": "kernels/vector_add/v2.py", "source": source})
        ).structured_content
        out["resources"] = sorted(str(r.uri) for r in (await s.list_resources()).resources)
        fmt = await s.read_resource("ktui://docs/problem-format")
        out["format"] = fmt.contents[0].text
        return out

    out = anyio.run(_client, ws.root, body, tmp_path / "err.log", "--no-record")
    assert TOOLS <= set(out["tools"])
    run_schema = out["tools"]["run_ladder"].output_schema
    assert {"rungs", "ok", "verdict", "report"} <= set(run_schema["properties"])
    assert "rungs" in out["tools"]["run_ladder"].input_schema["properties"]

    (problem,) = out["problems"]["problems"]
    assert problem["problem"] == "vector_add" and problem["reference"] == "references/vector_add.py"
    assert [v["version"] for v in problem["versions"]] == ["v1"]
    assert problem["versions"][0]["verdict"] == "· not run" and problem["versions"][0]["ok"] is None
    assert out["reference"]["path"] == "references/vector_add.py"
    assert out["reference"]["text"] == (ws.root / "references/vector_add.py").read_text()

    r = out["refused"]
    assert all(is_error for is_error, _ in r.values()), r
    assert "refused: '../evil.py' resolves to" in r["traversal"][1] and "outside the workspace" in r["traversal"][1]
    assert "outside the workspace" in r["deep_traversal"][1]
    assert f"refused: {str(outside)!r} is an absolute path; only kernels/<problem>/<version>.py" in r["absolute"][1]
    assert "refused: 'references/vector_add.py' is not a kernel version" in r["reference"][1]
    assert "refused: '../vector_add' is not a problem name" in r["bad_problem"][1]
    assert "refused: '../../evil' is not a version name" in r["bad_version"][1]
    assert not outside.exists() and not (tmp_path / "evil.py").exists()
    assert (ws.root / "references/vector_add.py").read_text() == (ROOT / "references/vector_add.py").read_text()

    w = out["written"]
    assert (w["problem"], w["version"], w["path"], w["new_file"]) == (
        "vector_add",
        "v2",
        "kernels/vector_add/v2.py",
        True,
    )
    assert (ws.root / "kernels/vector_add/v2.py").read_text() == source and w["added"] == 3 and w["removed"] == 0

    assert out["resources"] == ["ktui://docs/cases", "ktui://docs/checks", "ktui://docs/problem-format"]
    assert out["format"].startswith("## The workspace and the problem format")
    assert "custom_kernel" in out["format"] and "## What the checks catch" not in out["format"]
    assert not (ws.root / "sessions").exists()  # --no-record


@pytest.mark.slow
def test_mcp_runs_the_ladder_with_progress_cancels_a_hanging_kernel_and_records_it(make_ws, tmp_path):
    ws = make_ws(["vector_add"], {"vector_add/v1": V1})

    async def body(s: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        msgs: list[tuple[float, float | None, str]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            msgs.append((progress, total, message or ""))

        r = await s.call_tool(
            "run_ladder",
            {"problem": "vector_add", "version": "v1", "rungs": ["compile", "run", "correctness"]},
            read_timeout_seconds=600,
            progress_callback=on_progress,
        )
        assert not r.is_error, _text(r)
        out["run"] = r.structured_content
        out["msgs"] = msgs

        # the pool is warm now (spares replaced the candidate-side workers): the hang spins in compile's dry call
        w = await s.call_tool("write_version", {"problem": "vector_add", "version": "v9", "source": HANG})
        assert not w.is_error, _text(w)
        hang_msgs: list[tuple[float, str]] = []
        compiling = anyio.Event()

        async def on_hang(progress: float, total: float | None, message: str | None) -> None:
            hang_msgs.append((progress, message or ""))
            if message == "[compile] started":  # compile's dry call runs custom_kernel (the compiler worker)
                compiling.set()

        async def hang() -> None:
            out["hang_result"] = await s.call_tool(
                "run_ladder", {"problem": "vector_add", "version": "v9", "rungs": ["run"]}, progress_callback=on_hang
            )

        queued_msgs: list[str] = []
        waiting = anyio.Event()

        async def on_queued(progress: float, total: float | None, message: str | None) -> None:
            queued_msgs.append(message or "")
            if (message or "").startswith("vector_add/v1: waiting for vector_add/v9"):  # the heartbeat of a queued run
                waiting.set()

        async def queued(scope: anyio.CancelScope) -> None:
            with scope:
                out["queued_result"] = await s.call_tool(
                    "run_ladder",
                    {"problem": "vector_add", "version": "v1", "rungs": ["compile"]},
                    progress_callback=on_queued,
                )

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(hang)
                await compiling.wait()
                # a second request, queued behind the hanging one: its cancel takes it out of the queue unrun
                scope = anyio.CancelScope()
                tg.start_soon(queued, scope)
                await waiting.wait()
                scope.cancel()  # the SDK sends notifications/cancelled for that request alone
                await anyio.sleep(1)
                tg.cancel_scope.cancel()  # the client stops waiting for the hang: notifications/cancelled
        out["hang_msgs"] = hang_msgs
        out["queued_msgs"] = queued_msgs
        t0 = time.monotonic()
        out["after_cancel"] = (await s.call_tool("list_problems", {}, read_timeout_seconds=60)).structured_content
        out["answered_s"] = time.monotonic() - t0
        prof = await s.call_tool("profile", {"problem": "vector_add", "version": "v1"}, read_timeout_seconds=300)
        assert not prof.is_error, _text(prof)
        out["profile"] = prof.structured_content
        out["listed"] = (await s.call_tool("list_problems", {})).structured_content
        return out

    out = anyio.run(_client, ws.root, body, tmp_path / "err.log")
    err = (tmp_path / "err.log").read_text()

    # the hang: cancelled in compile's dry call, and the server answered the next call at once
    assert ("vector_add/v9: ladder started (compile, run)") in [m for _, m in out["hang_msgs"]], out["hang_msgs"]
    assert "hang_result" not in out and "queued_result" not in out  # a cancelled request is never answered
    assert out["queued_msgs"][0].startswith("vector_add/v1: waiting for vector_add/v9 ("), out["queued_msgs"]
    assert out["answered_s"] < 20, err
    v9 = {v["version"]: v for v in out["after_cancel"]["problems"][0]["versions"]}["v9"]
    assert v9["verdict"] == "· not run" and v9["ok"] is None  # a cancel is no verdict

    # the pool ran the next version after the cancel: the profile rung, skipped on the CPU (and it says why)
    prof = out["profile"]
    assert prof["ok"] is True and [g["name"] for g in prof["rungs"]] == ["compile", "profile"]
    assert prof["rungs"][1]["status"] == "skipped" and prof["rungs"][1]["summary"]

    # the ladder on v1: every rung asked for, ok, with figures; progress per rung and per batch of cases
    run = out["run"]
    assert run["key"] == "vector_add/v1" and run["ok"] is True and run["failed_rung"] is None
    assert run["verdict"] == "✓ ok" and run["device"] == "cpu (interpreter)"
    assert [g["name"] for g in run["rungs"]] == ["compile", "run", "correctness"]
    assert all(g["status"] == "ok" and g["error"] is None for g in run["rungs"])
    corr = run["rungs"][2]
    assert corr["summary"].startswith("worst=") and corr["figures"]["cases"] > 7
    assert "add_kernel" in run["rungs"][0]["summary"]
    assert run["report"].startswith("Ladder results for vector_add/v1")
    msgs = out["msgs"]
    texts = [m for _, _, m in msgs]
    for rung in ("compile", "run", "correctness"):
        assert f"[{rung}] started" in texts
        assert any(t.startswith(f"[{rung}] ok") for t in texts), texts
    assert any(t.startswith("[correctness] first verdict: ok") for t in texts), texts
    assert any("/" in t and t.startswith(("[run] ", "[correctness] ")) and t.split()[1][0].isdigit() for t in texts)
    values = [p for p, _, _ in msgs]
    assert values == sorted(values) and len(set(values)) == len(values)  # strictly increasing (the spec's rule)
    assert {t for _, t, _ in msgs} == {3.0} and values[-1] <= 3.0
    listed = {v["version"]: v for v in out["listed"]["problems"][0]["versions"]}
    assert listed["v1"]["verdict"] == "✓ ok" and listed["v1"]["ok"] is True

    # the session log: the MCP session, its tool calls, the cancel and the run
    (folder,) = (ws.root / "sessions").iterdir()
    log = read_log(folder / "events.jsonl")
    assert log.meta is not None and log.meta["command"] == "mcp" and log.meta["argv"][:2] == ["ktui", "mcp"]
    kinds = [r.type for r in log.records]
    assert kinds[-1] == "end" and log.records[-1].data["reason"] == "done"
    calls = [(r.data["name"], r.data["state"]) for r in log.records if r.type == "ToolCall"]
    assert ("write_version", "done") in calls and calls.count(("run_ladder", "error")) == 2
    assert ("run_ladder", "done") in calls
    notices = [r.data["message"] for r in log.records if r.type == "Notice"]
    # the queued request's run left the queue when its request was cancelled, and never ran (no LadderStarted)
    assert "vector_add/v1: queued run withdrawn, cancelled by the MCP client (it never ran)" in notices, notices
    started = [(r.data["key"], r.data["rungs"]) for r in log.records if r.type == "LadderStarted"]
    assert ("vector_add/v1", ["compile"]) not in started, started
    cancels = [m for m in notices if m.startswith("vector_add/v9: run cancelled by the MCP client (no verdict")]
    assert len(cancels) == 1 and "compiler worker" in cancels[0] and cancels[0].endswith("restarted"), notices
    (hung,) = [r.data for r in log.records if r.type == "RungFinished" and r.data["key"] == "vector_add/v9"]
    assert hung["result"]["name"] == "compile" and hung["result"]["error"]["type"] == "RunCancelled"
    finished = [r.data["result"] for r in log.records if r.type == "LadderFinished"]
    # the run, the cancelled hang (published, never stored: `· not run` above), the profile
    assert [(f["version"], f["ok"]) for f in finished] == [("v1", True), ("v9", False), ("v1", True)]
    assert any(r.type == "source" and r.data.get("path") == "kernels/vector_add/v9.py" for r in log.records)
    assert f"recording session {folder.name}" in err
    json.dumps(run)  # structured content is plain JSON


def test_the_mcp_server_imports_neither_textual_nor_torch():
    """``ktui mcp`` runs in ktui's own process: the workers own torch (the contract in pyproject.toml, at run time)."""
    code = "import ktui.mcp.cli, ktui.mcp.server, sys; print(' '.join(sys.modules))"
    mods = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    assert "mcp.server.mcpserver" in mods and "ktui.agent.tools" in mods
    assert not mods & {"textual", "torch", "triton", "numpy", "litellm"}


def test_run_progress_follows_one_run_strictly_increasing_with_heartbeats(monkeypatch):
    """The notifications of a run: its own events only (not another version's, not an earlier run's), a rung's
    share growing with its cases, a later rung's reference outputs reported without moving the value, and a
    heartbeat once ``HEARTBEAT_S`` passed without news."""
    from ktui.core.events import FirstVerdict, LadderStarted, RungFinished, RungProgress, RungStarted
    from ktui.core.results import RungResult, Status
    from ktui.mcp import server

    p = server.RunProgress("vector_add/v1", ("compile", "run", "correctness"))
    key = "vector_add/v1"
    for ev in (
        RungStarted(key="vector_add/v2", run_id=1, rung="compile"),  # another version: dropped
        LadderStarted(key=key, run_id=7, source_sha256="ab", rungs=("compile", "run", "correctness")),
        RungStarted(key=key, run_id=6, rung="compile"),  # an earlier run of the same version: dropped
        RungStarted(key=key, run_id=7, rung="compile"),
        RungProgress(key=key, run_id=7, rung="correctness", done=4, total=9, detail="reference outputs"),
        RungProgress(key=key, run_id=7, rung="benchmark", done=1, total=2, detail="reference outputs"),  # not planned
        RungFinished(key=key, run_id=7, result=RungResult("compile", Status.OK, summary="triton: add_kernel")),
        RungStarted(key=key, run_id=7, rung="run"),
        RungProgress(key=key, run_id=7, rung="run", done=10, total=20),
        FirstVerdict(key=key, run_id=7, result=RungResult("correctness", Status.OK), cases=9, seconds=3.5),
    ):
        p.on_event(ev)
    got = p.drain()
    assert [m for _, _, m in got] == [
        "vector_add/v1: ladder started (compile, run, correctness)",
        "[compile] started",
        "[correctness] 4/9 reference outputs",
        "[compile] ok  triton: add_kernel",
        "[run] started",
        "[run] 10/20",
        "[correctness] first verdict: ok on 9 cases after 3.5 s; the rest running",
    ]
    values = [v for v, _, _ in got]
    assert all(b > a for a, b in zip(values, values[1:])) and {t for _, t, _ in got} == {3.0}
    assert values[2] < 0.01  # the judge's outputs for correctness did not move compile's share
    assert abs(values[3] - 0.95) < 1e-9 and 1.0 <= values[4] < 1.01 and abs(values[5] - (1 + 0.5 * 0.9)) < 1e-9
    assert p.drain() == []  # nothing new, and no heartbeat yet
    monkeypatch.setattr(server, "HEARTBEAT_S", 0.0)
    (beat,) = p.drain()
    assert beat[0] > values[-1] and beat[2].startswith("[run] running ")


def test_mcp_over_streamable_http_on_localhost(make_ws, tmp_path):
    """``--http``: the same server on 127.0.0.1 (endpoint /mcp); it ends on SIGTERM with its session log closed."""
    import signal
    import socket

    from mcp.client.streamable_http import streamable_http_client

    ws = make_ws(["vector_add"], {"vector_add/v1": V1})
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    err = (tmp_path / "err.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ktui", "mcp", str(ws.root), "--http", "--port", str(port), "--device", "cpu"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=err,
    )

    async def talk() -> tuple[set[str], Any]:
        deadline = time.monotonic() + 60
        while True:
            try:
                async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
                    async with ClientSession(read, write) as s:
                        await s.initialize()
                        names = {t.name for t in (await s.list_tools()).tools}
                        return names, (await s.call_tool("list_problems", {})).structured_content
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                await anyio.sleep(0.5)

    try:
        names, problems = anyio.run(talk)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
        err.close()
    assert TOOLS <= names
    assert [v["version"] for v in problems["problems"][0]["versions"]] == ["v1"]
    text = (tmp_path / "err.log").read_text()
    assert f"MCP over streamable HTTP at http://127.0.0.1:{port}/mcp" in text
    assert code in (0, 128 + signal.SIGTERM), text
    (folder,) = (ws.root / "sessions").iterdir()
    log = read_log(folder / "events.jsonl")
    assert log.records[-1].type == "end" and log.meta is not None and log.meta["command"] == "mcp"


@pytest.mark.slow
def test_mcp_diff_versions_makes_the_missing_dumps_then_reuses_them(make_ws, tmp_path):
    """``diff_versions``: what ``ktui diff`` shows of vector_add v1 (a scalar add) and v2 (vectorized loads); the
    dumps rung runs once per side (progress across both runs in one request), a second diff runs nothing."""
    ws = make_ws(["vector_add"], {"vector_add/v1": V1, "vector_add/v2": ROOT / "kernels/vector_add/v2.py"})

    async def body(s: ClientSession) -> list[tuple[Any, list[tuple[float, float | None, str]]]]:
        out = []
        for _ in range(2):
            msgs: list[tuple[float, float | None, str]] = []

            async def on(progress: float, total: float | None, message: str | None) -> None:
                msgs.append((progress, total, message or ""))

            r = await s.call_tool(
                "diff_versions",
                {"problem": "vector_add", "a": "v1", "b": "v2"},
                read_timeout_seconds=300,
                progress_callback=on,
            )
            assert not r.is_error, _text(r)
            out.append((r.structured_content, msgs))
        return out

    (first, msgs), (second, again) = anyio.run(_client, ws.root, body, tmp_path / "err.log", "--no-record")
    assert first["stage"] == "sass" and first["diff"][:2] == [
        "--- kernels/vector_add/v1.py",
        "+++ kernels/vector_add/v2.py",
    ]
    mix = {d["family"]: d for d in first["mix_delta"]}
    assert mix["LDG.128"]["a"] == 0 and mix["LDG.128"]["b"] > 0 and mix["LDG.128"]["delta"] == mix["LDG.128"]["b"]
    assert {d["resource"] for d in first["resources"]} >= {"registers", "local", "shared"} and first["changed"] > 0
    texts = [m for _, _, m in msgs]
    assert (
        "vector_add/v1: ladder started (compile, dumps)" in texts
        and "vector_add/v2: ladder started (compile, dumps)" in texts
    )
    bad = [(a, b) for a, b in zip(msgs, msgs[1:]) if b[0] <= a[0]]
    assert not bad and {t for _, t, _ in msgs} == {4.0}, bad
    assert second == first and again == []  # the dumps of the current sources were there: nothing ran


def test_ktui_mcp_usage_errors_exit_2_with_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "ktui", "mcp", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.strip() == (
        f"ktui: error: {tmp_path} is not a ktui workspace: it has no references/ and no kernels/ folder"
    ), p.stderr
    p = subprocess.run([sys.executable, "-m", "ktui", "mcp", str(ROOT), "--seeds", "0"], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.strip() == "ktui: error: --seeds must be at least 1", p.stderr
