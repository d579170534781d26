"""``SSHTransport``: the workers on a remote host, over the session's one SSH connection (``SSHLink``).

Each worker is an SSH channel running ``python -m ktui.worker.remote serve --role ROLE --device DEVICE`` in the
remote work folder (which runs ``python -m ktui.worker`` on the channel and kills it when the channel closes). Its
handle, ``RemoteWorker``, looks to ``WorkerProcess`` like a local process (``WorkerHandle``): requests are written to
``stdin``, replies read from a local pipe (``stdout``), the exit status is the channel's (a signal's as a negative
number, as ``Popen``'s). On the way:

- a request's sources (ktui's snapshots, the ``.py`` files of the folders a version imports from) are sent to the
  remote first, by content hash (``SSHLink.sync``: only what the remote lacks), and every local path in it is
  rewritten to the remote's (``PathMap``: the workspace's mirror, the connection's scratch folder for outputs);
- every line back, and the worker's stderr, is rewritten to local paths (tracebacks name the user's files);
- a ``dumps`` reply is held until its files (IR, PTX, cubin) are copied back into the local ``dumps_dir``.

A dropped connection ends every worker on it with ``lost`` set (``the SSH connection to gpu1 was lost: ...``):
``WorkerProcess`` raises that as ``WorkerCrashed`` (the rung fails saying so, not blaming the kernel) and starts the
worker again, which connects again. Spawning returns at once; the channel opens in the background, so a host that
cannot be reached is a worker that did not start (``WorkerStartError`` with the reason).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import queue
import re
import shlex
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path, PurePosixPath
from typing import IO, Any

import asyncssh

from ktui.core.remote.config import RemoteConfig
from ktui.core.remote.link import SYNC_MAX_BYTES, SYNC_MAX_FILES, LinkError, SSHLink
from ktui.core.remote.paths import walk_strings
from ktui.core.workspace import Workspace
from ktui.protocol import decode, encode

OPEN_RETRIES = 10
SEND_TIMEOUT_S = 120.0  # a request's files sent and its line written (a dead connection is found in ~15 s)
TOOL_TIMEOUT_S = 60.0  # finding a tool there; what a tool run adds to its own limit (files there and back)
READ_CHUNK = 1 << 16
_PID_LINE = re.compile(rb"ktui-remote: \w+ worker pid (\d+) on (\S+)")
_IDS = itertools.count(1)


def import_folder_files(folder: Path) -> list[Path]:
    """The ``.py`` files directly in ``folder`` (a version's or a reference's folder, on ``sys.path`` while it
    imports), at most ``SYNC_MAX_FILES`` of at most ``SYNC_MAX_BYTES`` each; [] when it cannot be listed."""
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".py" and p.is_file())
    except OSError:
        return []
    out = []
    for p in files[:SYNC_MAX_FILES]:
        try:
            if p.stat().st_size <= SYNC_MAX_BYTES:
                out.append(p)
        except OSError:
            continue
    return out


def request_files(params: dict[str, Any]) -> list[Path]:
    """The local files a request needs on the remote: the ``kernel`` and ``reference`` snapshots it names
    (``ktui.protocol.Sources``) and the ``.py`` files of their ``search_dir``."""
    files: list[Path] = []
    for key in ("kernel", "reference"):
        src = params.get(key)
        if not isinstance(src, dict):
            continue
        if src.get("path"):
            files.append(Path(src["path"]))
        if src.get("search_dir"):
            files += import_folder_files(Path(src["search_dir"]))
    return files


class _Requests:
    """The worker's ``stdin``: lines written are sent when flushed (``RemoteWorker.send``), each only once its files
    are on the remote; ``BrokenPipeError`` when the worker is gone."""

    def __init__(self, worker: RemoteWorker):
        self._worker = worker
        self._buf = b""
        self.closed = False

    def write(self, data: bytes) -> int:
        if self.closed:
            raise ValueError("write to a closed worker channel")
        self._buf += data
        return len(data)

    def flush(self) -> None:
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            if line.strip():
                self._worker.send(line + b"\n")

    def close(self) -> None:
        self.closed = True


class RemoteWorker:
    """One worker on the remote host (``WorkerHandle``): see the module docstring.

    Attributes:
        pid: a negative number unique in this process (no local process: ``where`` names the remote one).
        where: ``gpu1 pid 4567`` once the remote said its worker's pid (``gpu1`` before).
        lost: why the worker was lost ('' unless its connection dropped or could not be made).
        foreign_dirs: the remote's ktui folder: its frames in a crash dump are not the kernel's.
    """

    def __init__(self, link: SSHLink, role: str, device: str, env: dict[str, str], stderr: IO[bytes]):
        self._link = link
        self.role = role
        self.pid = -next(_IDS)
        self.where = link.config.host
        self.lost = ""
        self.foreign_dirs: tuple[str, ...] = ()
        self.returncode: int | None = None
        self._ended = threading.Event()
        read_fd, self._out_fd = os.pipe()
        self.stdout: IO[bytes] = os.fdopen(read_fd, "rb", buffering=0)
        self.stdin = _Requests(self)
        self._err_fd = os.dup(stderr.fileno())
        self._err_buf = b""
        self._out_q: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._pending: dict[Any, tuple[str, dict[str, Any]]] = {}  # request id -> (method, local params)
        self._proc: asyncssh.SSHClientProcess[bytes] | None = None
        self._started: Future[bool] = Future()  # True once the channel is open; False when it never will be
        self._killed = False
        threading.Thread(target=self._write_out, name=f"ktui-ssh-{role}-out", daemon=True).start()
        self._task = asyncio.run_coroutine_threadsafe(self._run(role, device, env), link.loop)

    # -- WorkerHandle ------------------------------------------------------------------------------------------
    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"{self.role} worker on {self.where}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def kill_tree(self) -> None:
        """Close the channel: the remote ``serve`` then kills the worker's process group and what it left.
        Returns at once; the exit status reads SIGKILL."""
        if self._ended.is_set():
            return
        self._killed = True
        proc = self._proc
        if proc is not None:
            self._link.loop.call_soon_threadsafe(proc.close)
        self._end(-signal.SIGKILL, "")

    # -- the channel -------------------------------------------------------------------------------------------
    def _command(self, role: str, device: str, env: dict[str, str]) -> str:
        probe = self._link.probe
        assert probe is not None
        assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
        return (
            f"cd {shlex.quote(probe['workdir'])} && exec env {assigns} {shlex.quote(probe['executable'])} "
            f"-m ktui.worker.remote serve --role {role} --device {device}"
        )

    async def _run(self, role: str, device: str, env: dict[str, str]) -> None:
        try:
            await self._serve(role, device, env)
        except BaseException as exc:  # never leave a caller waiting on a worker that will not come
            if not self._started.done():
                self._started.set_result(False)
            self._end(None, f"the {role} worker's channel failed: {type(exc).__name__}: {exc}")
            if not isinstance(exc, Exception):
                raise

    async def _serve(self, role: str, device: str, env: dict[str, str]) -> None:
        try:
            conn = await self._link.connected()
            if self._killed:
                raise LinkError("killed before it started")
            probe = self._link.probe
            assert probe is not None
            self.foreign_dirs = (probe["ktui_dir"].rstrip("/") + "/",)
            proc = await self._open(conn, self._command(role, device, env))
        except (LinkError, OSError, asyncssh.Error) as exc:
            self._started.set_result(False)
            self._end(None, str(exc) if isinstance(exc, LinkError) else self._lost_text(exc))
            return
        self._proc = proc
        self._started.set_result(True)
        if self._killed:
            proc.close()
        err = asyncio.ensure_future(self._pump_stderr(proc))
        try:
            await self._pump_stdout(proc)
            await err
            await asyncio.wait_for(proc.wait_closed(), 10)
        except (TimeoutError, OSError, asyncssh.Error) as exc:
            self._end(None, self._lost_text(exc))
            return
        code = proc.returncode
        self._end(code, "" if code is not None else self._lost_text(None))

    async def _open(self, conn: asyncssh.SSHClientConnection, command: str) -> asyncssh.SSHClientProcess[bytes]:
        """The worker's channel. A server at its limit of sessions per connection (OpenSSH's ``MaxSessions``, 10 by
        default; ktui holds up to 8 at once while its spares start) refuses a channel until another closes: tried
        again for up to ``OPEN_RETRIES`` half seconds."""
        for attempt in range(OPEN_RETRIES + 1):
            try:
                return await conn.create_process(command, encoding=None)
            except asyncssh.ChannelOpenError as exc:
                if attempt == OPEN_RETRIES:
                    raise LinkError(
                        f"{self._link.config.label} refused a channel for the {self.role} worker ({exc.reason}): "
                        "its SSH server may allow too few sessions per connection (MaxSessions)"
                    ) from None
                await asyncio.sleep(0.5)
        raise AssertionError("unreachable")

    def _lost_text(self, exc: BaseException | None) -> str:
        if self._link.lost_reason:
            return self._link.lost_reason
        why = f": {exc}" if exc is not None and str(exc) else ""
        return (
            f"the SSH channel of the {self.role} worker on {self._link.config.label} closed without an exit status{why}"
        )

    async def _pump_stdout(self, proc: asyncssh.SSHClientProcess[bytes]) -> None:
        """Reply lines, each handed on whole (a long line arrives in many chunks: only the new chunk is searched)."""
        parts: list[bytes] = []
        while True:
            chunk = await proc.stdout.read(READ_CHUNK)
            if not chunk:
                break
            while b"\n" in chunk:
                head, chunk = chunk.split(b"\n", 1)
                line, parts = b"".join([*parts, head, b"\n"]), []
                self._out_q.put(await self._reply(line))
            if chunk:
                parts.append(chunk)
        if parts:
            self._out_q.put(await self._reply(b"".join(parts)))

    async def _reply(self, line: bytes) -> bytes:
        """One line back from the worker, in local paths; a ``dumps`` result once its files are here."""
        pmap = self._link.pmap
        assert pmap is not None
        local = pmap.line_to_local(line)
        if b'"result"' not in local and b'"error"' not in local:
            return local
        try:
            msg = decode(local)
        except ValueError:
            return local
        method, params = self._pending.pop(msg.get("id"), ("", {}))
        error = msg.get("error")
        if isinstance(error, dict) and error.get("type") == "SnapshotMissing":
            # something there deleted or changed the mirror of a snapshot (a kernel can reach the work folder):
            # the runner takes its snapshot again and retries, and this sends it again instead of trusting the cache
            self._link.forget(request_files(params))
        if method == "dumps" and isinstance(msg.get("result"), dict):
            try:
                await self._fetch_dumps(params, msg["result"])
            except (LinkError, OSError, asyncssh.Error) as exc:
                text = f"the dumps were made on {self._link.config.label} but could not be copied back: {exc}"
                return encode({"id": msg["id"], "error": {"type": "RemoteCopyError", "message": text}})
        return local

    async def _fetch_dumps(self, params: dict[str, Any], result: dict[str, Any]) -> None:
        pmap = self._link.pmap
        assert pmap is not None
        folder = Path(params["dumps_dir"])
        remote = pmap.to_remote(str(folder))
        names = {name for launch in result.get("launches", []) for name in (launch.get("files") or {}).values()}
        await self._link.fetch((f"{remote}/{name}", folder / name) for name in sorted(names))

    async def _pump_stderr(self, proc: asyncssh.SSHClientProcess[bytes]) -> None:
        pmap = self._link.pmap
        assert pmap is not None
        while True:
            try:
                chunk = await proc.stderr.read(READ_CHUNK)
            except (OSError, asyncssh.Error):
                break  # the connection is gone: the reply side reports it
            if not chunk:
                break
            self._err_buf += chunk
            cut = self._err_buf.rfind(b"\n") + 1  # whole lines only: a path is never split between two writes
            if not cut and len(self._err_buf) < READ_CHUNK:
                continue
            cut = cut or len(self._err_buf)
            out, self._err_buf = self._err_buf[:cut], self._err_buf[cut:]
            m = _PID_LINE.search(out)
            if m:
                self.where = f"{self._link.config.host} pid {m[1].decode()}"
            self._write_err(pmap.text_to_local(out))
        if self._err_buf:
            self._write_err(pmap.text_to_local(self._err_buf))
            self._err_buf = b""

    def _write_err(self, data: bytes) -> None:
        try:
            os.write(self._err_fd, data)
        except OSError:
            pass

    def _write_out(self) -> None:
        """The thread that writes reply lines into the local pipe (a blocking write never stalls the link's loop);
        closes it after the last one."""
        while True:
            line = self._out_q.get()
            if line is None:
                break
            try:
                os.write(self._out_fd, line)
            except OSError:
                break
        try:
            os.close(self._out_fd)
        except OSError:
            pass

    def _end(self, code: int | None, lost: str) -> None:
        """The worker ended with ``code`` (None: unknown) or was lost (``lost``): the status is set before the
        reply pipe closes, so a reader that sees its end reads the status."""
        if self._ended.is_set():
            return
        if lost and not self._killed:
            self.lost = lost
        self.returncode = code if code is not None else -signal.SIGKILL
        self._ended.set()
        self._out_q.put(None)
        try:
            os.close(self._err_fd)
        except OSError:
            pass

    # -- requests ----------------------------------------------------------------------------------------------
    def send(self, line: bytes) -> None:
        """Send one request line (blocking until its files are there and it is written).

        Raises:
            BrokenPipeError: the worker ended, was lost, or the line could not be sent (the worker is then ended,
                with ``lost`` saying why).
        """
        if b'"method":"shutdown"' in line and not self._started.done():  # never opened: nothing to ask
            self.kill_tree()
            return
        try:
            if not self._started.result(SEND_TIMEOUT_S) or self._ended.is_set():
                raise BrokenPipeError(self.lost or f"the {self.role} worker ended")
            self._link.call(self._send(line), SEND_TIMEOUT_S)
        except BrokenPipeError:
            raise
        except (LinkError, OSError, asyncssh.Error, TimeoutError) as exc:
            why = f"could not send a request to the {self.role} worker on {self._link.config.label}: {exc}"
            proc = self._proc
            if proc is not None:
                self._link.loop.call_soon_threadsafe(proc.close)
            self._end(None, self._link.lost_reason or why)
            raise BrokenPipeError(self.lost or why) from None

    async def _send(self, line: bytes) -> None:
        proc, pmap = self._proc, self._link.pmap
        assert proc is not None and pmap is not None
        msg = decode(line)
        params = msg.get("params")
        if isinstance(params, dict) and msg.get("method") != "shutdown":
            await self._link.sync(request_files(params))
            self._pending[msg.get("id")] = (str(msg.get("method")), params)
            remote_params = walk_strings(params, pmap.to_remote)
            if isinstance(remote_params.get("out_dir"), str):
                self._link.run_out_dir(remote_params["out_dir"])
            msg = {**msg, "params": remote_params}
        if proc.stdin.is_closing():
            raise BrokenPipeError(self.lost or f"the {self.role} worker's channel is closed")
        proc.stdin.write(encode(msg))
        await proc.stdin.drain()


class SSHTransport:
    """Workers on ``config.host`` (``Transport``); one ``SSHLink`` for all of them.

    Args:
        config: the remote (``[remote]``, ``--remote``).
        workspace: the local workspace (mirrored there, file by file as requests need them).
    """

    def __init__(self, config: RemoteConfig, workspace: Workspace):
        self.config = config
        self.link = SSHLink(config, workspace)

    def spawn(self, role: str, device: str, env: dict[str, str], stderr: IO[bytes]) -> RemoteWorker:
        """A ``RemoteWorker`` for ``role`` on ``device`` (returns at once; it connects in the background)."""
        return RemoteWorker(self.link, role, device, env, stderr)

    def resolve_device(self, choice: str) -> str:
        """``auto`` -> ``cuda`` when the remote has a usable GPU, else ``cpu``; ``cpu`` and ``cuda`` pass through.

        Raises:
            LinkError: the remote cannot be reached or used (to decide ``auto``).
            ValueError: any other choice.
        """
        if choice == "auto":
            return "cuda" if self.link.connect()["cuda"] else "cpu"
        if choice in ("cpu", "cuda"):
            return choice
        raise ValueError(f"unknown device {choice!r}: use auto, cpu or cuda")

    # -- ToolHost: what runs beside the workers (Nsight Compute) -------------------------------------------------
    def find_tool(self, name: str, candidates: Sequence[str]) -> str | None:
        """``ToolHost.find_tool`` there (``python -m ktui.worker.remote which``).

        Raises:
            LinkError: the remote cannot be reached.
        """
        return self.link.call(self._which(name, candidates), TOOL_TIMEOUT_S)

    async def _which(self, name: str, candidates: Sequence[str]) -> str | None:
        conn = await self.link.connected()
        probe = self.link.probe
        assert probe is not None
        cmd = shlex.join([probe["executable"], "-m", "ktui.worker.remote", "which", name, *candidates])
        res = await conn.run(cmd, check=False, timeout=TOOL_TIMEOUT_S)
        found = str(res.stdout or "").strip()
        return found if res.exit_status == 0 and found else None

    def tool_python(self) -> str:
        """The remote interpreter that has ktui (the probe's)."""
        return self.link.connect()["executable"]

    def run_tool(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float,
        json_files: Mapping[Path, Any] | None = None,
        fetch: Sequence[Path] = (),
    ) -> subprocess.CompletedProcess[str]:
        """``ToolHost.run_tool`` there: the sources the JSON files name are sent (by content), the files written
        with remote paths, ``argv`` (local paths mapped) run under ``python -m ktui.worker.remote run`` in the work
        folder (killed with what it started if the channel closes), and the files of ``fetch`` it made copied back.
        Its output comes back with local paths.

        Raises:
            subprocess.TimeoutExpired: it ran past ``timeout_s``.
            OSError: the remote cannot be reached, or a file not moved (``LinkError`` is not one: it is wrapped).
        """
        try:
            return self.link.call(self._run_tool(argv, timeout_s, json_files or {}, fetch), timeout_s + TOOL_TIMEOUT_S)
        except (LinkError, asyncssh.Error) as exc:
            if isinstance(exc, asyncssh.TimeoutError):
                raise subprocess.TimeoutExpired(list(argv), timeout_s) from None
            raise OSError(f"{self.config.label}: {exc}") from None
        except TimeoutError:
            raise subprocess.TimeoutExpired(list(argv), timeout_s) from None

    async def _run_tool(
        self, argv: Sequence[str], timeout_s: float, json_files: Mapping[Path, Any], fetch: Sequence[Path]
    ) -> subprocess.CompletedProcess[str]:
        link = self.link
        conn = await link.connected()
        pmap, probe = link.pmap, link.probe
        assert pmap is not None and probe is not None
        for path, value in json_files.items():
            remote = pmap.remote_path(path)
            if remote is None:
                raise OSError(f"{path} has no place on {self.config.label} (not in the workspace or an output folder)")
            if isinstance(value, dict):
                await link.sync(request_files(value))
            await link.write_file(remote, json.dumps(walk_strings(value, pmap.to_remote)).encode())
        back = [(pmap.remote_path(f), f) for f in fetch]
        for remote, local in back:
            if remote is None:
                raise OSError(f"{local} has no place on {self.config.label}")
            await link.makedirs(str(PurePosixPath(remote).parent))
        remote_argv = [pmap.to_remote(a) for a in argv]
        cmd = (
            f"cd {shlex.quote(probe['workdir'])} && exec {shlex.quote(probe['executable'])} -m ktui.worker.remote "
            f"run -- {shlex.join(remote_argv)}"
        )
        proc = await conn.create_process(cmd, encoding="utf-8", errors="replace")
        try:
            res = await proc.wait(check=False, timeout=timeout_s)
        except asyncssh.TimeoutError:
            proc.close()  # the channel closes: ``run`` there kills the tool and whatever it started
            raise
        present = [(r, f) for r, f in back if r is not None and await link.exists(r)]
        await link.fetch(present)
        code = res.returncode if res.returncode is not None else -signal.SIGKILL
        out, err = pmap.to_local(str(res.stdout or "")), pmap.to_local(str(res.stderr or ""))
        return subprocess.CompletedProcess(list(argv), code, out, err)

    def describe(self) -> str:
        """``gpu1 (me@gpu1.lab:22)``: where the workers run, for the screen and the reports."""
        probe = self.link.probe
        host = probe["host"] if probe else self.config.host
        return f"{host} over SSH ({self.config.label})"

    def close(self) -> None:
        """Close the connection (the workers on it end) and remove the remote scratch folder."""
        self.link.close()
