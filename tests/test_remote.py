"""Workers on a remote host over SSH (``ktui --remote``, ``ktui.core.remote``), against two servers on 127.0.0.1: a
real OpenSSH ``sshd`` with a throw-away host key and user key (skipped, with the reason, only where sshd cannot be
had: ``.ci/run`` installs it as root), and an asyncssh server in this process, which needs no system package, so
the SSH path is always exercised. The "remote" ktui is this machine's behind a Python that cannot import textual,
litellm, watchdog, asyncssh, rich or mcp (``tests/ssh_harness.py``), with its own work folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ktui.core.events import RungProgress
from ktui.core.ladder import LadderOptions
from ktui.core.remote.config import RemoteConfig, RemoteConfigError, load_remote
from ktui.core.remote.link import LinkError, SSHLink
from ktui.core.remote.paths import PathMap
from ktui.core.results import Status
from ktui.core.session import Session
from ktui.core.workspace import Workspace
from tests.ssh_harness import NOT_ON_REMOTE, Proxy, Remote, asyncssh_server, openssh_server, through, why_no_sshd

ROOT = Path(__file__).resolve().parents[1]
RUNGS = ("compile", "run", "correctness")
SERVERS = ["asyncssh", pytest.param("openssh", marks=pytest.mark.skipif(bool(why_no_sshd()), reason=why_no_sshd()))]


@pytest.fixture(params=SERVERS)
def remote(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Remote]:
    server = openssh_server if request.param == "openssh" else asyncssh_server
    with server(tmp_path) as r:
        yield r


@pytest.fixture
def a_remote(tmp_path: Path) -> Iterator[Remote]:
    """The in-process server only: for what does not depend on the server's kind."""
    with asyncssh_server(tmp_path) as r:
        yield r


# vector_add on fewer specs, inputs as generated and contiguous only: the SSH path, not the checks, is under test
REFERENCE = (
    (ROOT / "references" / "vector_add.py")
    .read_text()
    .replace(
        'tests = [{"n": n} for n in (1, 127, 129, 1023, 1025, 4099, 65_537)]',
        "\n".join(
            ('tests = [{"n": n} for n in (1, 129, 4099)]', 'input_distributions = ["native"]', "contiguous_only = True")
        )
        + "\nfuzz = False",
    )
)


def workspace(tmp_path: Path, kernels: dict[str, str] | None = None) -> Workspace:
    """A workspace with the vector_add problem (a small reference, ``REFERENCE``, and v2), plus ``kernels``
    (version -> source)."""
    ws = tmp_path / "ws"
    (ws / "references").mkdir(parents=True)
    (ws / "kernels" / "vector_add").mkdir(parents=True)
    assert "fuzz = False" in REFERENCE
    (ws / "references" / "vector_add.py").write_text(REFERENCE)
    shutil.copy(ROOT / "kernels" / "vector_add" / "v2.py", ws / "kernels" / "vector_add" / "v2.py")
    for name, src in (kernels or {}).items():
        (ws / "kernels" / "vector_add" / f"{name}.py").write_text(src)
    return Workspace(ws)


def session(ws: Workspace, config: RemoteConfig, rungs: tuple[str, ...] = RUNGS) -> Session:
    s = Session(ws, "cpu", watch=False, remote=config, options=LadderOptions(seed=11, rungs=rungs))
    s.start()
    return s


# -- the ladder over SSH -------------------------------------------------------------------------------------------


def test_ladder_runs_on_the_remote(remote: Remote, tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    s = session(ws, remote.config, RUNGS + ("dumps",))
    try:
        link = s.pool.transport.link  # type: ignore[attr-defined]
        result = s.run(ws.kernel(ws.root / "kernels" / "vector_add" / "v2.py"))
        assert [(r.name, r.status) for r in result.rungs] == [(n, Status.OK) for n in RUNGS + ("dumps",)], [
            (r.name, r.summary, r.error) for r in result.rungs
        ]
        assert result.rung("correctness").figures["cases"] >= 6  # type: ignore[union-attr]
        # the dumps were made there and copied back, then disassembled here
        dumps = result.rung("dumps")
        assert dumps is not None
        files = dumps.figures["kernels"][0]["files"]
        assert (ws.root / files["ptx"]).read_text().startswith("//")
        assert (ws.root / files["cubin"]).stat().st_size > 1000
        # the sources went as content-addressed blobs, the mirror links to them
        probe = link.probe
        blobs = Path(probe["workdir"]) / "blobs"
        snap = Path(link.pmap.mirror) / ".ktui" / "snapshots" / "vector_add"
        linked = [p for p in snap.iterdir() if p.name.startswith("v2-")]
        assert len(linked) == 1 and linked[0].is_symlink() and Path(os.readlink(linked[0])).parent == blobs
        assert linked[0].read_bytes() == (ws.root / "kernels" / "vector_add" / "v2.py").read_bytes()
        assert all(not os.access(p, os.W_OK) or os.geteuid() == 0 for p in blobs.iterdir())
        assert s.pool.judge.last_hello["device"]["interpreter"] is True  # type: ignore[index]
        assert "pid" in s.pool.judge._proc.where  # type: ignore[union-attr]
        scratch = link.scratch
        assert Path(scratch).is_dir()
    finally:
        s.stop()
    assert not Path(scratch).exists()  # the connection's output folder there is removed with it


def test_the_remote_python_lacks_what_workers_never_need(a_remote: Remote) -> None:
    """The harness's remote cannot import the screen's or the agent's packages: a ladder that passes there ran
    workers that import only what they need."""
    for name in NOT_ON_REMOTE:
        p = subprocess.run([a_remote.config.python, "-c", f"import {name}"], capture_output=True, text=True)
        assert p.returncode != 0 and "not installed on this remote host" in p.stderr, name
    p = subprocess.run(
        [a_remote.config.python, "-m", "ktui.worker.remote", "probe", "--workdir", str(a_remote.workdir)],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["workdir"] == str(a_remote.workdir.resolve())


def test_sources_are_sent_once_by_content(a_remote: Remote, tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    k = ws.root / "kernels" / "vector_add" / "v2.py"
    twin = ws.root / "kernels" / "vector_add" / "v9.py"
    twin.write_bytes(k.read_bytes())
    link = SSHLink(a_remote.config, ws)
    try:
        link.connect()
        size = len(k.read_bytes())
        assert link.call(link.sync([k, twin]), 30) == size  # one content, two paths: sent once
        assert link.call(link.sync([k, twin]), 30) == 0  # nothing changed: nothing sent
        twin.write_text(twin.read_text() + "\n# changed\n")
        assert link.call(link.sync([k, twin]), 30) == len(twin.read_bytes())
        mirrored = Path(link.pmap.remote_path(twin))  # type: ignore[union-attr, arg-type]
        assert mirrored.read_bytes() == twin.read_bytes()
        # something there deletes a mirrored file and its blob (a kernel can reach the work folder): once
        # forgotten (a SnapshotMissing reply), the next sync sends it again
        blob = Path(os.readlink(mirrored))
        mirrored.unlink()
        blob.unlink()
        assert link.call(link.sync([twin]), 30) == 0  # the cache still trusts it
        link.forget([twin])
        assert link.call(link.sync([twin]), 30) == len(twin.read_bytes())
        assert mirrored.read_bytes() == twin.read_bytes()
        link2 = SSHLink(a_remote.config, ws)  # a new connection asks the remote before sending
        try:
            link2.connect()
            assert link2.call(link2.sync([k, twin]), 30) == 0
        finally:
            link2.close()
    finally:
        link.close()


# -- refusals ------------------------------------------------------------------------------------------------------


def test_an_unknown_host_key_is_refused(remote: Remote, tmp_path: Path) -> None:
    other = tmp_path / "other_known_hosts"
    line = Path(remote.config.known_hosts).read_text().split()
    # the same address with another key: as a host whose key changed
    import asyncssh

    fake = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    other.write_text(f"{line[0]} {fake}\n")
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    for known in (other, empty):
        link = SSHLink(replace(remote.config, known_hosts=str(known)), workspace(tmp_path / f"ws-{known.name}"))
        try:
            with pytest.raises(LinkError, match="host key of .* is not trusted .* known_hosts"):
                link.connect()
        finally:
            link.close()


def test_a_configuration_that_turns_host_key_checking_off_is_refused(a_remote: Remote, tmp_path: Path) -> None:
    """``UserKnownHostsFile none`` in an OpenSSH configuration makes asyncssh trust any key: ktui refuses."""
    config = tmp_path / "ssh_config"
    config.write_text("Host 127.0.0.1\n  UserKnownHostsFile none\n")
    link = SSHLink(replace(a_remote.config, known_hosts="", ssh_config=(str(config),)), workspace(tmp_path))
    try:
        with pytest.raises(LinkError, match="turns host-key checking off"):
            link.connect()
    finally:
        link.close()


def test_a_remote_with_another_ktui_is_refused(
    a_remote: Remote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ktui.core.remote.link as link_module

    monkeypatch.setattr(link_module, "_FINGERPRINT", "0" * 64)
    link = SSHLink(a_remote.config, workspace(tmp_path))
    try:
        with pytest.raises(LinkError, match="is not this one: the worker and protocol sources differ"):
            link.connect()
    finally:
        link.close()


def test_a_remote_without_ktui_says_how_to_fix_it(a_remote: Remote, tmp_path: Path) -> None:
    link = SSHLink(replace(a_remote.config, python="/bin/false"), workspace(tmp_path))
    try:
        with pytest.raises(LinkError, match="probe` failed"):
            link.connect()
    finally:
        link.close()


def test_ktui_run_with_an_unreachable_remote_exits_3(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    from tests.ssh_harness import free_port

    (ws.root / "ktui.toml").write_text(f'[remote]\nhost = "127.0.0.1"\nport = {free_port()}\nconnect_timeout_s = 5\n')
    p = subprocess.run(
        [sys.executable, "-m", "ktui", "run", "kernels/vector_add/v2.py", "--no-record"],
        cwd=ws.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 3, p.stderr
    assert p.stderr.strip().startswith("ktui: error: cannot connect to 127.0.0.1:")
    assert len(p.stderr.strip().splitlines()) == 1
    p = subprocess.run(
        [sys.executable, "-m", "ktui", "run", "kernels/vector_add/v2.py", "--no-record", "--local", "--remote", "x"],
        cwd=ws.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "exclude each other" in p.stderr


def test_ktui_run_remote_from_ktui_toml(a_remote: Remote, tmp_path: Path) -> None:
    """``[remote]`` of ``ktui.toml`` alone sends ``ktui run``'s workers there; ``--local`` keeps them here."""
    ws = workspace(tmp_path)
    c = a_remote.config
    (ws.root / "ktui.toml").write_text(
        "[remote]\n"
        + "".join(
            f"{k} = {json.dumps(v)}\n"
            for k, v in (
                ("host", c.host),
                ("user", c.user),
                ("port", c.port),
                ("key", c.key),
                ("python", c.python),
                ("workdir", c.workdir),
                ("known_hosts", c.known_hosts),
                ("ssh_config", list(c.ssh_config)),
            )
        )
    )
    cmd = [sys.executable, "-m", "ktui", "run", "kernels/vector_add/v2.py", "--no-record", "--rungs", "run", "--device"]
    p = subprocess.run([*cmd, "cpu"], cwd=ws.root, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    header = p.stdout.splitlines()[0]
    assert header.startswith("vector_add/v2") and header.endswith(f"over SSH ({c.label})"), header
    assert "[run] ok" in p.stdout
    assert (a_remote.workdir / "blobs").is_dir()
    p = subprocess.run([*cmd, "cpu", "--local"], cwd=ws.root, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "over SSH" not in p.stdout, p.stdout + p.stderr


# -- failures on the way -------------------------------------------------------------------------------------------

SLOW = """
import time
import torch, triton, triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    time.sleep(0.3)
    out = torch.empty_like(a)
    add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
"""

EXITS = SLOW.replace("time.sleep(0.3)", "import os\n    if a.numel() == 4099:\n        os._exit(3)")


def test_a_dropped_connection_fails_the_rung_and_the_queue_goes_on(remote: Remote, tmp_path: Path) -> None:
    """The connection drops while ``run`` runs: that rung fails saying so (not blaming the kernel; the result is
    published, not stored as the version's verdict), the version queued behind it runs on a new connection and
    passes."""
    ws = workspace(tmp_path, {"v5": SLOW})
    with Proxy(remote.config.port) as proxy:
        s = session(ws, through(remote, proxy))
        try:
            link = s.pool.transport.link  # type: ignore[attr-defined]
            s.device_info()  # connected, the workers started
            cut = threading.Event()

            def on_event(ev: object) -> None:
                # Cut once the candidate reported its first executed case: its ``execute`` is then on the wire (9
                # calls of 0.3 s). Not a time after RungStarted: run first awaits the judge's prepare, which a loaded
                # machine stretches past any such delay, and the cut then loses the judge's call instead (CI, stop 27).
                if (
                    isinstance(ev, RungProgress)
                    and ev.rung == "run"
                    and ev.key.endswith("v5")
                    and 0 < ev.done < ev.total
                    and not cut.is_set()
                ):
                    cut.set()
                    threading.Timer(0.2, proxy.cut).start()

            s.bus.subscribe(on_event)
            t0 = time.monotonic()
            first = s.submit(ws.kernel(ws.root / "kernels" / "vector_add" / "v5.py"))
            second = s.submit(ws.kernel(ws.root / "kernels" / "vector_add" / "v2.py"))
            r1 = first.result(240)
            r2 = second.result(240)
            assert r1 is not None and r2 is not None
            run = r1.rung("run")
            assert run is not None and run.status is Status.FAILED, r1.rungs
            assert run.error is not None
            message = run.error.message
            assert "was lost while running" in message and "the kernel is not the cause" in message, message
            assert "SSH connection to" in message or "SSH channel" in message, message
            assert run.error.type == "WorkerLost"
            assert s.store.load("vector_add", "v5") is None  # a lost run says nothing about the kernel: not stored
            assert [(r.name, r.status) for r in r2.rungs] == [(n, Status.OK) for n in RUNGS], r2.rungs
            assert link.connects >= 2 and proxy.accepted >= 2
            assert time.monotonic() - t0 < 200
        finally:
            s.stop()


def test_a_remote_worker_that_dies_is_replaced(a_remote: Remote, tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"v6": EXITS})
    s = session(ws, a_remote.config, ("compile", "run"))
    try:
        r = s.run(ws.kernel(ws.root / "kernels" / "vector_add" / "v6.py"))
        failed = [x for x in r.rungs if x.status is Status.FAILED]
        assert len(failed) == 1 and failed[0].error is not None, r.rungs
        message = failed[0].error.message  # the exit status crossed the SSH channel
        assert "worker died (exit code 3)" in message and "os._exit()" in message, message
        r2 = s.run(ws.kernel(ws.root / "kernels" / "vector_add" / "v2.py"))
        assert [(x.name, x.status) for x in r2.rungs] == [("compile", Status.OK), ("run", Status.OK)]
    finally:
        s.stop()


def test_a_killed_remote_worker_leaves_nothing_there(a_remote: Remote, tmp_path: Path) -> None:
    """Killing the handle closes the channel; the remote ``serve`` kills the worker's process group (here the
    "remote" is this machine, so its pid can be watched)."""
    ws = workspace(tmp_path)
    s = Session(ws, "cpu", watch=False, remote=a_remote.config)
    try:
        w = s.pool.judge
        w.ensure_ready()
        proc = w._proc
        assert proc is not None
        pid = int(str(proc.where).rsplit(" ", 1)[1])  # type: ignore[attr-defined]
        assert Path(f"/proc/{pid}").exists()
        w.kill()
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid)
        scratch = Path(s.pool.transport.link.scratch)  # type: ignore[attr-defined]
        assert scratch.is_dir()
    finally:
        s.stop()
    assert not scratch.exists()  # a session never started still closes its connection (and its scratch there)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# -- the pieces ----------------------------------------------------------------------------------------------------


def test_path_map_both_ways() -> None:
    pm = PathMap.for_workspace(Path("/home/u/ws"), "/r/work", "/dev/shm/ktui-ssh-u-1", ["/dev/shm", "/tmp"])
    assert pm.mirror.startswith("/r/work/ws/ws-")
    snap = "/home/u/ws/.ktui/snapshots/p/v1-abc.py"
    assert pm.to_remote(snap) == f"{pm.mirror}/.ktui/snapshots/p/v1-abc.py"
    assert pm.to_local(pm.to_remote(snap)) == snap
    assert pm.to_remote("/home/u/ws") == pm.mirror  # the root itself
    assert pm.to_remote("/tmp/ktui-out-x1/case0") == "/dev/shm/ktui-ssh-u-1/1-ktui-out-x1/case0"
    assert pm.to_local("/dev/shm/ktui-ssh-u-1/0-ktui-out-y") == "/dev/shm/ktui-out-y"
    assert pm.to_remote("/home/u/wsother/x.py") == "/home/u/wsother/x.py"  # another folder: untouched
    tb = f'File "{pm.mirror}/kernels/p/v1.py", line 3'
    assert (
        pm.line_to_local(json.dumps({"id": 1, "error": {"traceback": tb}}).encode() + b"\n")
        == (
            json.dumps(
                {"id": 1, "error": {"traceback": 'File "/home/u/ws/kernels/p/v1.py", line 3'}}, separators=(",", ":")
            )
            + "\n"
        ).encode()
    )
    line = b'{"id":1,"progress":{"done":1}}\n'
    assert pm.line_to_local(line) is line  # no remote path in it: not decoded
    assert pm.remote_path(Path("/etc/passwd")) is None
    other = PathMap.for_workspace(Path("/home/v/ws"), "/r/work", "/s", ["/tmp"])
    assert other.mirror != pm.mirror  # two workspaces named alike never share a mirror


def test_remote_settings(tmp_path: Path) -> None:
    assert load_remote(tmp_path) is None
    (tmp_path / "ktui.toml").write_text(
        '[remote]\nhost = "gpu1"\nuser = "me"\nport = 2222\npython = "~/v/bin/python"\nworkdir = "/scratch/k"\n'
    )
    c = load_remote(tmp_path)
    assert c == RemoteConfig(host="gpu1", user="me", port=2222, python="~/v/bin/python", workdir="/scratch/k")
    assert c.label == "me@gpu1:2222"
    assert load_remote(tmp_path, "gpu2") == replace(c, host="gpu2")
    assert load_remote(tmp_path, local=True) is None and load_remote(tmp_path, "local") is None
    (tmp_path / "ktui.toml").write_text('[remote]\nhost = "gpu1"\nprot = 22\n')
    with pytest.raises(RemoteConfigError, match="unknown key 'prot'"):
        load_remote(tmp_path)
    (tmp_path / "ktui.toml").write_text('[remote]\nhost = "gpu1"\nport = "22"\n')
    with pytest.raises(RemoteConfigError, match="port must be a integer|port must be an integer"):
        load_remote(tmp_path)
    (tmp_path / "ktui.toml").write_text("[remote]\nport = 22\n")
    assert load_remote(tmp_path) is None  # no host: here
    assert load_remote(tmp_path, "gpu3") == RemoteConfig(host="gpu3", port=22)


def test_a_malformed_remote_read_by_default_is_a_warning(tmp_path: Path) -> None:
    """A session reading ``[remote]`` by itself (``ktui mcp``, ``ktui replay --rerun``) warns and runs here; the
    command line's own reading of it (``ktui run``) stops with a usage error."""
    ws = workspace(tmp_path)
    (ws.root / "ktui.toml").write_text('[remote]\nhost = "gpu1"\nport = "x"\n')
    s = Session(ws, "cpu", watch=False)
    from ktui.core.workers.transport import LocalTransport

    assert isinstance(s.pool.transport, LocalTransport) and s.remote == ""
    assert "port must be a" in s._remote_error and s._remote_error.endswith("the workers run here")
    p = subprocess.run(
        [sys.executable, "-m", "ktui", "run", "kernels/vector_add/v2.py", "--no-record"],
        cwd=ws.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "port must be a" in p.stderr, p.stderr


def test_tools_run_beside_the_remote_workers(a_remote: Remote, tmp_path: Path) -> None:
    """``SSHTransport`` as the profile rung's ``ToolHost``: a tool is found there, its JSON input goes there with the
    sources it names, it runs there, the file it made comes back and its output names local paths; its exit code
    crosses; one that runs past its limit is killed there (ncu itself needs a GPU: benchmarks/h200.sh, step ssh)."""
    import tempfile

    from ktui.core.remote.transport import SSHTransport
    from ktui.core.workers.transport import ToolHost

    ws = workspace(tmp_path)
    k = ws.root / "kernels" / "vector_add" / "v2.py"
    t = SSHTransport(a_remote.config, ws)
    out = Path(tempfile.mkdtemp(prefix="ktui-out-"))
    try:
        assert isinstance(t, ToolHost)
        assert str(t.find_tool("sh", [])).endswith("/sh")
        assert t.find_tool("no-such-tool-ktui", ["/nonexistent/*/no-such-tool-ktui"]) is None
        py = t.tool_python()
        pfile, made = out / "params.json", ws.root / ".ktui" / "profiles" / "vector_add" / "v2.txt"
        script = (
            "import json, pathlib, sys; p = json.load(open(sys.argv[1])); "
            "pathlib.Path(sys.argv[2]).write_text(open(p['kernel']['path']).read()); print(sys.argv[2])"
        )
        params = {"kernel": {"path": str(k), "search_dir": ""}}
        argv = [py, "-c", script, str(pfile), str(made)]
        proc = t.run_tool(argv, timeout_s=60, json_files={pfile: params}, fetch=[made])
        assert proc.returncode == 0, proc.stderr
        assert made.read_text() == k.read_text()  # the source went there, the file it made came back
        assert proc.stdout.strip() == str(made)  # printed there with the remote path, read here with the local one
        assert t.run_tool([py, "-c", "import sys; sys.exit(4)"], timeout_s=60).returncode == 4
        marker = "import time; time.sleep(31.5)"
        with pytest.raises(subprocess.TimeoutExpired):
            t.run_tool([py, "-c", marker], timeout_s=2)
        deadline = time.monotonic() + 10
        while _running(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(marker)
    finally:
        t.close()
        shutil.rmtree(out, ignore_errors=True)


def _running(marker: str) -> bool:
    for d in Path("/proc").glob("[0-9]*"):
        try:
            if marker.encode() in (d / "cmdline").read_bytes() and _alive(int(d.name)):
                return True
        except OSError:
            continue
    return False


def test_the_probe_clears_scratch_left_by_a_ktui_that_ended_abruptly(tmp_path: Path) -> None:
    from ktui.worker.remote import STALE_S, clear_stale_scratch

    old, fresh, other = tmp_path / "ktui-ssh-me-aaaa", tmp_path / "ktui-ssh-me-bbbb", tmp_path / "ktui-ssh-you-cccc"
    for d in (old, fresh, other):
        (d / "0-ktui-out-x").mkdir(parents=True)
    then = time.time() - STALE_S - 60
    os.utime(old, (then, then))
    os.utime(other, (then, then))
    assert clear_stale_scratch(tmp_path, "me") == [old]
    assert not old.exists() and fresh.is_dir() and other.is_dir()  # another user's is not ours to remove
