"""Recording sessions (issue 12): ``ktui run`` and ``ktui agent`` write ``sessions/<id>/events.jsonl`` with the
metadata, every event, the sources by hash and an end; no secret's value reaches any file under ``sessions/``; a
SIGKILL at any moment leaves a log whose complete lines all read; the recorder survives failures around it.

Every workspace here is a temporary folder: nothing is written to the repository's own ``sessions/``."""

from __future__ import annotations

import os
import random
import secrets
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import ktui.agent.events  # noqa: F401  (registers the agent's kinds for Event.from_json)
from ktui.agent.events import ChatDelta, ChatMessage
from ktui.core.events import Event, EventBus, FileChanged, LadderFinished, Notice, RungProgress, WorkerState
from ktui.sessions.log import LOG_NAME, SESSION_ID, read_log
from ktui.sessions.record import (
    Recorder,
    config_env_names,
    env_secrets,
    maybe_record,
    recording_enabled,
)

from .conftest import ROOT
from .jsonout import data_of
from .scripted_llm import Call, Reply, ScriptedLLM

V1 = ROOT / "kernels/vector_add/v1.py"


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "KTUI_FORCE_CPU": "1", "PYTHONUNBUFFERED": "1", **extra}


def _sessions(root: Path) -> list[Path]:
    d = root / "sessions"
    return sorted(p for p in d.iterdir() if p.is_dir()) if d.is_dir() else []


def _ktui_run(ws_root: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ktui", "run", str(ws_root / "kernels/vector_add/v1.py"), "--device", "cpu", *extra],
        capture_output=True,
        text=True,
        env=env or _env(),
        timeout=300,
    )


def _contiguous(log) -> bool:
    return [r.seq for r in log.records] == list(range(len(log.records)))


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory):
    """One ``ktui run --rungs compile`` of vector_add/v1 in a fresh workspace: (workspace root, the process, its
    seconds). The kill test places its kill points over those seconds."""
    root = tmp_path_factory.mktemp("recorded") / "ws"
    (root / "references").mkdir(parents=True)
    (root / "kernels/vector_add").mkdir(parents=True)
    (root / "references/vector_add.py").write_bytes((ROOT / "references/vector_add.py").read_bytes())
    (root / "kernels/vector_add/v1.py").write_bytes(V1.read_bytes())
    t0 = time.monotonic()
    p = _ktui_run(root, "--rungs", "compile", "--json")
    return root, p, time.monotonic() - t0


# -- (a) a ktui run ------------------------------------------------------------------------------------------------
def test_ktui_run_records_metadata_events_sources_and_an_end(recorded_run):
    root, p, _ = recorded_run
    assert p.returncode == 0, p.stdout + p.stderr
    data_of(p.stdout, "run")  # --json stdout is the envelope alone: the session's id went to stderr
    (folder,) = _sessions(root)
    assert SESSION_ID.match(folder.name)
    assert f"ktui: recording session {folder.name}\n" in p.stderr
    log = read_log(folder)
    assert log.problems == [] and log.ended and _contiguous(log)
    meta = log.meta
    assert meta is not None and log.records[0].type == "session"
    assert meta["id"] == folder.name and meta["command"] == "run" and meta["workspace"] == str(root)
    assert meta["argv"][:2] == ["ktui", "run"] and "--rungs" in meta["argv"]
    assert meta["ktui_version"] == ktui_version() and meta["device_type"] == "cpu" and meta["model"] is None
    assert "KTUI_FORCE_CPU" in meta["env"]
    device = meta["device"] or next(r.data for r in log.records if r.type == "device")
    assert device["type"] == "cpu" and device["interpreter"] is True and device["torch"]
    kinds = [r.type for r in log.records]
    assert kinds[-1] == "end" and log.records[-1].data["reason"] == "done"
    assert "RungProgress" not in kinds and "ChatDelta" not in kinds
    (finished,) = [r for r in log.records if r.type == "LadderFinished"]
    ev = Event.from_json({"event": finished.type, **finished.data})
    assert isinstance(ev, LadderFinished) and ev.key == "vector_add/v1" and ev.at == finished.t
    assert [r.name for r in ev.result.rungs] == ["compile"] and ev.result.ok
    # the kernel's exact bytes, by hash, before the run that used them
    started = kinds.index("LadderStarted")
    src = [r for r in log.records[:started] if r.type == "source"]
    kernel = next(r for r in src if r.data["role"] == "kernel")
    assert kernel.data["path"] == "kernels/vector_add/v1.py" and kernel.data["sha256"] == ev.result.source_sha256
    assert (folder / "blobs" / kernel.data["sha256"]).read_bytes() == (root / "kernels/vector_add/v1.py").read_bytes()
    ref = next(r for r in src if r.data["role"] == "reference")
    assert ref.data["sha256"] == ev.result.reference_sha256
    assert (folder / "blobs" / ref.data["sha256"]).read_bytes() == (root / "references/vector_add.py").read_bytes()
    assert sorted(p.name for p in (folder / "blobs").iterdir()) == sorted(
        {ev.result.source_sha256, ev.result.reference_sha256}
    )


def ktui_version() -> str:
    import ktui

    return ktui.__version__


# -- (b) secrets ---------------------------------------------------------------------------------------------------
def test_no_secret_value_reaches_any_file_under_sessions(make_ws):
    """An API key in the environment, in the human's message, in the model's reply and in the kernel it writes:
    the key is nowhere under sessions/ (every byte of every file searched), its variable's name is in the
    metadata, and the redaction names it."""
    ws = make_ws(["vector_add"])
    key = "sk-test-" + secrets.token_hex(16)
    source = V1.read_text() + f"\n# api key: {key}\n"
    script = [
        Reply(
            f"Your key {key} is safe with me.",
            tool_calls=[Call("write_kernel", {"problem": "vector_add", "source": source})],
        ),
        Reply(f"Done; wrote it with {key} in a comment."),
    ]
    with ScriptedLLM(script) as llm:
        env = _env(OPENAI_API_KEY=key, KTUI_API_BASE=llm.api_base)
        env.pop("KTUI_MODEL", None)
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "ktui",
                "agent",
                "vector_add",
                "-m",
                f"my key is {key}; make it faster",
                "--model",
                "openai/scripted",
                "--yes",
                "--max-rounds",
                "0",
                "--workspace",
                str(ws.root),
                "--device",
                "cpu",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    assert p.returncode == 0, p.stdout + p.stderr
    (folder,) = _sessions(ws.root)
    assert f"ktui: recording session {folder.name}" in p.stderr
    files = [f for f in folder.rglob("*") if f.is_file()]
    assert files and all(key.encode() not in f.read_bytes() for f in files), [str(f) for f in files]
    assert key[8:].encode() not in b"".join(f.read_bytes() for f in files)  # nor its random part alone
    log = read_log(folder)
    assert log.problems == [] and log.ended and _contiguous(log)
    assert log.meta is not None and "OPENAI_API_KEY" in log.meta["env"] and "KTUI_API_BASE" in log.meta["env"]
    assert log.meta["model"] == "openai/scripted" and log.meta["command"] == "agent"
    text = folder.joinpath(LOG_NAME).read_text()
    assert "[redacted OPENAI_API_KEY]" in text
    user = [r for r in log.records if r.type == "ChatMessage" and r.data["role"] == "user"]
    assert [r.data["text"] for r in user] == ["my key is [redacted OPENAI_API_KEY]; make it faster"]
    replies = [r.data["text"] for r in log.records if r.type == "ChatReplyDone"]
    assert replies[0] == "Your key [redacted OPENAI_API_KEY] is safe with me."
    assert any(r.type == "ToolCall" and r.data["name"] == "write_kernel" for r in log.records)


def test_a_source_holding_a_secret_is_kept_redacted_by_its_own_hash(make_ws):
    ws = make_ws(["vector_add"])
    key = "tok-" + secrets.token_hex(12)
    path = ws.root / "kernels/vector_add/v1.py"
    path.write_text(V1.read_text() + f"# {key}\n")
    rec = Recorder(ws, "tui", ["ktui"], environ={"MY_TOKEN": key, "HOME": "/home/x", "KTUI_X": "1"})
    rec(FileChanged(path=str(path)))
    rec.close()
    log = read_log(rec.dir)
    (src,) = [r for r in log.records if r.type == "source"]
    blob = (rec.dir / "blobs" / src.data["sha256"]).read_bytes()
    assert key.encode() not in blob and blob == path.read_bytes().replace(key.encode(), b"[redacted MY_TOKEN]")
    import hashlib

    assert hashlib.sha256(blob).hexdigest() == src.data["sha256"]
    assert src.data["original_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert src.data["redacted"] == ["MY_TOKEN"] and log.meta["env"] == ["KTUI_X"]
    assert [r.type for r in log.records] == ["session", "source", "FileChanged", "end"]


def test_secret_names_and_config_names():
    env = {
        "OPENAI_API_KEY": "sk-12345678",
        "GH_TOKEN": "short",  # under 8 characters: not redacted (a 1, a port)
        "DB_PASSWORD": "hunter2hunter2",
        "GIT_AUTHOR_NAME": "Someone Long Name",
        "PATH": "/usr/bin:/bin",
        "KTUI_MODEL": "openai/x",
        "MY_LLM": "custom-secret-value",
        "ANTHROPIC_BASE_URL": "http://h",
    }
    pairs = env_secrets(env, extra=["MY_LLM"])
    assert dict((n, v) for v, n in pairs) == {
        "OPENAI_API_KEY": "sk-12345678",
        "DB_PASSWORD": "hunter2hunter2",
        "MY_LLM": "custom-secret-value",
    }
    assert [len(v) for v, _ in pairs] == sorted((len(v) for v, _ in pairs), reverse=True)
    assert config_env_names(env, extra=["MY_LLM"]) == ["ANTHROPIC_BASE_URL", "KTUI_MODEL", "MY_LLM", "OPENAI_API_KEY"]


# -- (c) SIGKILL -------------------------------------------------------------------------------------------------
def _check_cut_log(folder: Path) -> str:
    """The log of a killed session reads whole up to its cut; returns what its end was."""
    log = read_log(folder)
    kinds = [p.kind for p in log.problems]
    if not (folder / LOG_NAME).exists() or (folder / LOG_NAME).stat().st_size == 0:
        return "empty"  # killed between the folder and its first line
    assert "corrupt" not in kinds[:-1] and "order" not in kinds and "schema" not in kinds, log.problems
    assert kinds in ([], ["truncated"]), log.problems
    if kinds == ["truncated"]:
        lines = (folder / LOG_NAME).read_bytes().split(b"\n")
        assert log.problems[0].line == len(lines)  # the last line, the one without its newline
    assert log.meta is not None and _contiguous(log)
    for r in log.records:
        if r.type not in ("session", "source", "device", "end"):
            Event.from_json({"event": r.type, **r.data})  # every complete event rebuilds
        if r.type == "source":
            assert (folder / "blobs" / r.data["sha256"]).is_file()  # the blob is written before its record
    return "truncated" if kinds else ("ended" if log.ended else "cut")


def test_sigkill_at_random_moments_of_ktui_run_leaves_a_readable_log(recorded_run, tmp_path):
    _, _, seconds = recorded_run
    root = tmp_path / "ws"
    (root / "references").mkdir(parents=True)
    (root / "kernels/vector_add").mkdir(parents=True)
    (root / "references/vector_add.py").write_bytes((ROOT / "references/vector_add.py").read_bytes())
    (root / "kernels/vector_add/v1.py").write_bytes(V1.read_bytes())
    rng = random.Random(12)
    slices = 6
    moments = [seconds * (i + rng.random()) / slices for i in range(slices)]  # one in each sixth of a run
    seen = set()
    outcomes = []
    for at in moments:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ktui",
                "run",
                str(root / "kernels/vector_add/v1.py"),
                "--device",
                "cpu",
                "--rungs",
                "compile",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
            start_new_session=True,
        )
        try:
            time.sleep(at)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        new = [f for f in _sessions(root) if f.name not in seen]
        seen.update(f.name for f in new)
        assert len(new) <= 1
        outcomes.append(_check_cut_log(new[0]) if new else "none")
    assert sum(o in ("cut", "truncated") for o in outcomes) >= 3, (moments, outcomes)  # most were cut mid-session


WRITER = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    from ktui.core.events import Notice, QueueChanged
    from ktui.core.workspace import Workspace
    from ktui.sessions.record import Recorder

    root = Path(sys.argv[1])
    rec = Recorder(Workspace(root), "run", ["ktui", "run"], environ={})
    print(rec.id, flush=True)

    def burst(n):
        i = 0
        while True:
            i += 1
            rec(Notice(level="info", message=f"{n}:{i} " + "x" * (i * 500_009 % 4_000_000)))
            rec(QueueChanged(running=None, rung=None, waiting=tuple(f"p/v{j}" for j in range(i % 50))))

    for n in range(2):
        threading.Thread(target=burst, args=(n,), daemon=True).start()
    threading.Event().wait()
    """
)


def test_sigkill_of_a_writer_at_many_random_moments_leaves_whole_lines(make_ws):
    """A process that records as fast as it can from two threads, killed at 12 seeded moments: each log reads
    with at most its last line truncated, every line before it whole and in sequence."""
    ws = make_ws([])
    rng = random.Random(7)
    outcomes = []
    for _ in range(12):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(ws.root)], stdout=subprocess.PIPE, text=True, env=_env()
        )
        try:
            sid = proc.stdout.readline().strip()
            time.sleep(rng.uniform(0.01, 0.4))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.stdout.close()
        assert SESSION_ID.match(sid), sid
        outcomes.append(_check_cut_log(ws.root / "sessions" / sid))
        assert len(read_log(ws.root / "sessions" / sid).records) > 1
    assert set(outcomes) <= {"cut", "truncated"}, outcomes


# -- (d) failures around the writer ------------------------------------------------------------------------------
class _Broken(Event):
    """An event whose payload does not serialize."""

    def to_json(self):
        raise RuntimeError("cannot serialize")


def test_the_recorder_survives_a_broken_subscriber_its_own_failures_and_a_cut_write(make_ws, monkeypatch):
    ws = make_ws(["vector_add"])
    bus = EventBus()

    def broken(ev):
        raise ValueError("a view that breaks")

    bus.subscribe(broken)
    rec = Recorder(ws, "run", ["ktui", "run"], environ={})
    rec.unsubscribe = bus.subscribe(rec)
    bus.publish(Notice(level="info", message="one"))
    bus.publish(_Broken())  # the recorder's own failure: logged once, not raised
    bus.publish(ChatDelta(text="streamed"))  # not recorded
    bus.publish(RungProgress(key="k", run_id=1, rung="run", done=1, total=2))  # not recorded
    # a write cut between its bytes and its counters (an exception mid-way): the next line cuts it off again
    real_write = os.write
    calls = {"n": 0}

    def failing_write(fd, data):
        calls["n"] += 1
        if calls["n"] == 1:
            real_write(fd, bytes(data)[:10])
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", failing_write)
    bus.publish(Notice(level="info", message="lost to a full disk"))
    monkeypatch.setattr(os, "write", real_write)
    bus.publish(ChatMessage(role="user", text="two"))
    with open(rec.path, "ab") as f:  # half a line from a write interrupted after its bytes went out
        f.write(b'{"v": 1, "seq": 99, "t"')
    bus.publish(WorkerState(role="judge", state="ready"))
    rec.close("done")
    bus.publish(Notice(level="info", message="after the end"))
    log = read_log(rec.dir)
    assert log.problems == [] and _contiguous(log), log.problems
    # the bus's report of the broken subscriber (a Notice, the first time for each kind) is recorded too
    got = [
        (r.type, r.data["message"].split(" failed on ")[-1].split(":")[0] if r.type == "Notice" else "")
        for r in log.records
    ]
    assert got == [
        ("session", ""),
        ("Notice", "Notice"),  # broken failed on Notice: reported before the recorder saw the Notice itself
        ("Notice", "one"),
        ("Notice", "_Broken"),  # ... the _Broken event itself is not recorded: it does not serialize
        ("Notice", "ChatDelta"),
        ("Notice", "RungProgress"),  # "lost to a full disk" is not there: its write failed, and was cut off
        ("Notice", "ChatMessage"),
        ("ChatMessage", ""),
        ("Notice", "WorkerState"),
        ("WorkerState", ""),
        ("end", ""),
    ], got
    assert rec.failures == 2  # the event that does not serialize, the full disk


def test_recording_can_be_turned_off_and_a_bad_setting_says_so(make_ws, monkeypatch):
    from ktui.cli import agent_parser, run_parser, tui_parser

    ws = make_ws(["vector_add"])
    session = SimpleNamespace(ws=ws, bus=EventBus(), device="cpu", pool=SimpleNamespace(candidate=SimpleNamespace()))
    assert maybe_record(session, "run", [], disabled=True) == (None, [])
    (ws.root / "ktui.toml").write_text("[sessions]\nrecord = false\n")
    assert recording_enabled(ws.root) == (False, "")
    assert maybe_record(session, "run", []) == (None, [])
    (ws.root / "ktui.toml").write_text('[sessions]\nrecord = "no"\n')
    enabled, warning = recording_enabled(ws.root)
    assert enabled and "record must be true or false" in warning
    assert not (ws.root / "sessions").exists()
    rec, warnings = maybe_record(session, "run", ["ktui", "run"])
    assert rec is not None and warnings == [warning]
    session.bus.publish(Notice(level="info", message="hi"))
    rec.close()
    assert [r.type for r in read_log(rec.dir).records] == ["session", "Notice", "end"]
    assert run_parser().parse_args(["k.py", "--no-record"]).no_record
    assert agent_parser().parse_args(["p", "-m", "x", "--no-record"]).no_record
    assert tui_parser().parse_args(["--no-record"]).no_record and not tui_parser().parse_args([]).no_record


def test_ktui_run_no_record_writes_no_session(recorded_run):
    root, _, _ = recorded_run
    before = _sessions(root)
    p = _ktui_run(root, "--rungs", "compile", "--no-record")
    assert p.returncode == 0, p.stderr
    assert _sessions(root) == before and "recording session" not in p.stderr


def test_the_device_arrives_as_a_record_when_the_hello_comes_later(make_ws):
    ws = make_ws([])
    hello: dict = {}
    rec = Recorder(ws, "tui", ["ktui"], device_type="cpu", device_probe=lambda: hello.get("device"), environ={})
    rec(WorkerState(role="judge", state="ready"))
    hello["device"] = {"type": "cpu", "name": "cpu", "interpreter": True}
    rec(WorkerState(role="candidate", state="ready"))
    rec(WorkerState(role="candidate", state="ready", detail="fresh after the last ladder"))  # the same device
    rec.close()
    log = read_log(rec.dir)
    assert log.meta["device"] is None
    assert [(r.type, r.data) for r in log.records if r.type == "device"] == [("device", hello["device"])]


def test_concurrent_publishers_get_one_whole_line_each(make_ws):
    ws = make_ws([])
    rec = Recorder(ws, "run", ["ktui"], environ={})

    def many(n):
        for i in range(200):
            rec(Notice(level="info", message=f"{n}-{i}" + "y" * (i * 31)))

    threads = [threading.Thread(target=many, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec.close()
    log = read_log(rec.dir)
    assert log.problems == [] and _contiguous(log) and len(log.records) == 802
    assert sorted(r.data["message"].split("y")[0] for r in log.records if r.type == "Notice") == sorted(
        f"{n}-{i}" for n in range(4) for i in range(200)
    )


# -- the TUI -------------------------------------------------------------------------------------------------------
@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_the_tui_records_its_session_and_closes_it_on_quit(make_ws, session_for):
    from ktui.tui.app import KtuiApp

    ws = make_ws(["vector_add"], {"vector_add/v1": V1})
    session = session_for(ws)
    for w in session.pool.workers:
        w.ensure_ready()  # the shared pool's hello: the metadata has the device
    app = KtuiApp(ws, session=session, record=True)
    async with app.run_test(size=(100, 30)) as pilot:
        deadline = time.monotonic() + 30
        while app.recorder is None and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert app.recorder is not None
        path = ws.root / "kernels/vector_add/v1.py"
        path.write_text(V1.read_text() + "# saved\n")
        session.bus.publish(FileChanged(path=str(path)))  # as the watcher publishes a save
        await pilot.pause(0.1)
        await pilot.press("q")
    log = read_log(app.recorder.dir)
    assert log.problems == [] and log.ended and log.records[-1].data["reason"] == "done"
    assert log.meta["command"] == "tui" and log.meta["device"]["type"] == "cpu"  # the shared pool said hello
    (src,) = [r for r in log.records if r.type == "source"]
    assert src.data["path"] == "kernels/vector_add/v1.py"
    assert (app.recorder.dir / "blobs" / src.data["sha256"]).read_bytes() == path.read_bytes()
