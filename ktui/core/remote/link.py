"""One SSH connection to the remote host (asyncssh), shared by every worker of the session, and the files it moves.

The connection lives on an asyncio loop in a thread of its own (``ktui-ssh``); the rest of ktui is threads, and
calls in with ``SSHLink.call``. ``connected()`` connects on first use and again after the connection dropped (a
failed attempt is remembered for ``RETRY_S``, so a host that is down fails each call at once instead of hanging it).
Each connection is checked before any worker starts: the host key against ``known_hosts`` (asyncssh refuses an
unknown or changed key; ktui never turns that off), then ``python -m ktui.worker.remote probe`` (the remote's ktui
must have this ktui's fingerprint: same protocol, same checks).

Files go by SFTP. ``sync`` puts local files (ktui's snapshots, the ``.py`` files of the folders a version imports
from) where the ``PathMap`` says, content-addressed: each content once in ``<workdir>/blobs/<sha256>`` (read-only),
and the mirror path a symlink to it; a content the remote already has is never sent again (this connection
remembers what it placed; a new one asks the remote). ``fetch`` brings files back (dumps, Nsight Compute reports).
Nothing secret crosses: no environment variable of ktui's is sent, a key file is read by asyncssh only.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import secrets
import shlex
import threading
import time
from collections.abc import Awaitable, Coroutine, Iterable
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import asyncssh

import ktui
from ktui.core.log import get_logger
from ktui.core.remote.config import RemoteConfig
from ktui.core.remote.paths import PathMap, local_out_roots
from ktui.core.workers.client import WorkerStartError
from ktui.core.workspace import Workspace
from ktui.protocol.remote import RemoteProbe, fingerprint

T = TypeVar("T")

log = get_logger("remote")
# asyncssh's own records (user names, host names, channel numbers; never keys) stay out of the terminal, which the
# TUI draws on: ktui logs the connection's events itself, in .ktui/logs/ktui.log
logging.getLogger("asyncssh").addHandler(logging.NullHandler())
logging.getLogger("asyncssh").propagate = False

RETRY_S = 2.0  # a failed connection attempt answers the calls of the next this-many seconds
KEEPALIVE_S = 5.0  # a keepalive every this-many seconds; KEEPALIVE_MISSES unanswered ones drop the connection
KEEPALIVE_MISSES = 3
PROBE_TIMEOUT_S = 60.0
SYNC_MAX_BYTES = 1 << 20  # a file of an import folder larger than this is not mirrored (sources are small)
SYNC_MAX_FILES = 256  # at most this many files of one import folder are mirrored


class LinkError(WorkerStartError):
    """The remote cannot be used: no connection, the host key refused, ktui missing or different there. A
    ``WorkerStartError``: where it is raised, the workers could not start (exit code 3 of ``ktui run``)."""


def remote_quote(path: str) -> str:
    """``path`` quoted for the remote shell, a leading ``~/`` left to it (``"$HOME"/...``)."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


class _Client(asyncssh.SSHClient):
    """Remembers why the connection ended (``connection_lost``)."""

    def __init__(self, link: SSHLink):
        self._link = link

    def connection_lost(self, exc: Exception | None) -> None:
        self._link._lost(exc)


class SSHLink:
    """The session's connection to one remote host.

    Args:
        config: the host and its settings (``[remote]``).
        workspace: the local workspace whose files are mirrored there.
    """

    def __init__(self, config: RemoteConfig, workspace: Workspace):
        self.config = config
        self.ws = workspace
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="ktui-ssh", daemon=True)
        self._thread.start()
        self._conn: asyncssh.SSHClientConnection | None = None
        self._sftp: asyncssh.SFTPClient | None = None
        self._lock: asyncio.Lock | None = None  # made on the loop
        self.probe: RemoteProbe | None = None
        self.pmap: PathMap | None = None
        self.scratch = ""
        self.lost_reason = ""  # why the last connection ended ('' while it is up, or never was)
        self._failed: tuple[float, str] | None = None  # (when, why) of the last failed attempt
        self._placed: dict[str, str] = {}  # remote path -> sha256 this connection put there
        self._blobs: dict[str, asyncio.Future[int]] = {}  # sha256 -> its upload (done: the remote has it)
        self._hashes: dict[str, tuple[int, int, str]] = {}  # local path -> (mtime_ns, size, sha256)
        self._out_dirs: list[str] = []  # remote output folders of the runs so far (the newest last)
        self.connects = 0
        self._token = secrets.token_hex(4)
        self._closed = False

    # -- the loop ----------------------------------------------------------------------------------------------
    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def call(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run ``coro`` on the link's loop from another thread and return its result (its exception raised here).

        Raises:
            TimeoutError: it took longer than ``timeout_s`` (it is cancelled).
        """
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout_s)
        except FutureTimeout:
            fut.cancel()
            raise TimeoutError(f"no answer from {self.config.label} within {timeout_s:g} s") from None

    # -- the connection ----------------------------------------------------------------------------------------
    def _lost(self, exc: Exception | None) -> None:
        if self._closed:
            return
        self.lost_reason = f"the SSH connection to {self.config.label} was lost" + (f": {exc}" if exc else "")
        self._conn, self._sftp = None, None
        log.warning("%s", self.lost_reason)

    async def connected(self) -> asyncssh.SSHClientConnection:
        """The connection, made (and probed) now when there is none.

        Raises:
            LinkError: it cannot be made, the host key is not trusted, or the remote's ktui cannot serve.
        """
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._conn is not None:
                return self._conn
            if self._closed:
                raise LinkError(f"the connection to {self.config.label} was closed (ktui is stopping)")
            if self._failed is not None and time.monotonic() - self._failed[0] < RETRY_S:
                raise LinkError(self._failed[1])
            try:
                conn = await self._connect()
            except LinkError as exc:
                self._failed = (time.monotonic(), str(exc))
                log.warning("%s", exc)
                raise
            self._failed = None
            return conn

    async def _connect(self) -> asyncssh.SSHClientConnection:
        c = self.config
        options: dict[str, Any] = {
            "connect_timeout": c.connect_timeout_s,
            "keepalive_interval": KEEPALIVE_S,
            "keepalive_count_max": KEEPALIVE_MISSES,
        }
        if c.user:
            options["username"] = c.user
        if c.port:
            options["port"] = c.port
        if c.key:
            options["client_keys"] = [os.path.expanduser(c.key)]
        if c.known_hosts:  # never None: that would turn host-key checking off
            options["known_hosts"] = os.path.expanduser(c.known_hosts)
        if c.ssh_config:
            options["config"] = [os.path.expanduser(p) for p in c.ssh_config]
        try:
            # the options resolved first (~/.ssh/config read): an OpenSSH configuration can turn host-key checking
            # off (``UserKnownHostsFile none``), which asyncssh honours; ktui never connects that way
            opts = await asyncio.get_running_loop().run_in_executor(
                None, lambda: asyncssh.SSHClientConnectionOptions(host=c.host, **options)
            )
        except (OSError, ValueError, asyncssh.Error) as exc:
            raise LinkError(f"cannot connect to {c.label}: the SSH settings do not read ({_reason(exc)})") from None
        if opts.known_hosts is None:
            raise LinkError(
                f"the SSH configuration of {c.host} turns host-key checking off (UserKnownHostsFile none): ktui checks "
                "every host key against known_hosts; set [remote] known_hosts, or remove that line"
            )
        try:
            conn, _ = await asyncssh.create_connection(lambda: _Client(self), c.host, options=opts)
        except asyncssh.HostKeyNotVerifiable as exc:
            raise LinkError(
                f"the host key of {c.label} is not trusted ({exc.reason}): it must be in known_hosts "
                f"({c.known_hosts or '~/.ssh/known_hosts'}); check it and add it, e.g. by connecting once with "
                f"`ssh {c.host}`"
            ) from None
        except asyncssh.PermissionDenied as exc:
            raise LinkError(f"{c.label} refused the login ({exc.reason}): check the user and the key") from None
        except (TimeoutError, OSError, asyncssh.Error, ValueError) as exc:
            raise LinkError(f"cannot connect to {c.label}: {_reason(exc)}") from None
        try:
            probe = await self._probe(conn)
            sftp = await conn.start_sftp_client()
            scratch = str(PurePosixPath(probe["out_root"]) / f"ktui-ssh-{probe['user']}-{self._token}")
            await sftp.makedirs(scratch, exist_ok=True)
        except (OSError, asyncssh.Error) as exc:
            conn.close()
            raise LinkError(f"{c.label}: cannot use SFTP there ({_reason(exc)})") from None
        except BaseException:
            conn.close()
            raise
        self.probe, self.scratch = probe, scratch
        self.pmap = PathMap.for_workspace(self.ws.root, probe["workdir"], scratch, local_out_roots())
        self._placed.clear()
        self._blobs.clear()
        self._conn, self._sftp = conn, sftp
        self.lost_reason = ""
        self.connects += 1
        log.info(
            "connected to %s (%s, ktui %s, Python %s, %s); work folder %s",
            c.label,
            probe["host"],
            probe["ktui"],
            probe["python"],
            "CUDA" if probe["cuda"] else "no GPU",
            probe["workdir"],
        )
        return conn

    async def _probe(self, conn: asyncssh.SSHClientConnection) -> RemoteProbe:
        c = self.config
        command = f"{remote_quote(c.python)} -m ktui.worker.remote probe --workdir {remote_quote(c.workdir)}"
        try:
            res = await conn.run(command, check=False, timeout=PROBE_TIMEOUT_S)
        except (TimeoutError, OSError, asyncssh.Error) as exc:
            raise LinkError(f"{c.label}: the probe did not answer ({_reason(exc)})") from None
        out, err = str(res.stdout or ""), str(res.stderr or "")
        if res.exit_status != 0:
            tail = " ".join(err.strip().splitlines()[-2:])[:300] or f"exit status {res.exit_status}"
            hint = ""
            if "No module named" in err or "not found" in err:
                hint = f": install this ktui for {c.python} there, or set [remote] python to an interpreter that has it"
            raise LinkError(f"{c.label}: `{c.python} -m ktui.worker.remote probe` failed ({tail}){hint}")
        try:
            probe: RemoteProbe = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise LinkError(f"{c.label}: the probe answered no JSON line: {out[-200:]!r}") from None
        mine = local_fingerprint()
        if probe.get("fingerprint") != mine:
            raise LinkError(
                f"{c.label}: its ktui ({probe.get('ktui')}, {probe.get('ktui_dir')}) is not this one: the worker "
                f"and protocol sources differ (fingerprint {str(probe.get('fingerprint'))[:12]} there, {mine[:12]} "
                "here); install the same ktui there"
            )
        return probe

    def connect(self) -> RemoteProbe:
        """Connect now (from any thread but the link's) and return the remote's probe.

        Raises:
            LinkError: as ``connected``.
        """
        self.call(self.connected(), self.config.connect_timeout_s + PROBE_TIMEOUT_S + 5)
        assert self.probe is not None
        return self.probe

    def close(self) -> None:
        """Remove the connection's scratch folder there, close the connection and stop the loop."""
        if self._closed:
            return
        try:
            self.call(self._close(), 10)
        except (TimeoutError, OSError, asyncssh.Error):
            pass
        self._closed = True
        self.loop.call_soon_threadsafe(self.loop.stop)

    async def _close(self) -> None:
        conn = self._conn
        self._closed = True
        if conn is not None:
            if self.scratch:
                try:
                    await asyncio.wait_for(self._remove(conn, self.scratch), 8)
                except (TimeoutError, OSError, asyncssh.Error):
                    pass
            conn.close()
            try:
                await asyncio.wait_for(conn.wait_closed(), 5)
            except TimeoutError:
                pass
        # the workers' channel tasks end with the connection: let them finish before the loop stops
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in rest:
            t.cancel()
        await asyncio.gather(*rest, return_exceptions=True)

    # -- files -------------------------------------------------------------------------------------------------
    def _sha(self, path: Path) -> tuple[str, bytes | None]:
        """sha256 of the file's content (cached by mtime and size: a file read once is not read again unchanged);
        its bytes when they were read."""
        st = path.stat()
        key = str(path)
        hit = self._hashes.get(key)
        if hit is not None and hit[:2] == (st.st_mtime_ns, st.st_size):
            return hit[2], None
        data = path.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        self._hashes[key] = (st.st_mtime_ns, st.st_size, sha)
        return sha, data

    async def sync(self, files: Iterable[Path]) -> int:
        """Make each local file (under the workspace) exist at its mirror path there with the same content; returns
        the bytes sent. A content the remote already holds is linked, not sent.

        Raises:
            LinkError: no connection; OSError or asyncssh.Error: a transfer failed.
        """
        await self.connected()
        assert self._sftp is not None and self.pmap is not None and self.probe is not None
        sftp, pmap = self._sftp, self.pmap
        jobs = []
        for path in dict.fromkeys(files):
            remote = pmap.remote_path(path)
            if remote is None:
                continue
            try:
                sha, data = self._sha(path)
            except OSError:
                continue  # gone since it was named: the worker reports the missing file itself
            if self._placed.get(remote) == sha:
                continue
            jobs.append(self._place(sftp, path, remote, sha, data))
        sent = sum(await asyncio.gather(*jobs))
        return sent

    async def _place(self, sftp: asyncssh.SFTPClient, path: Path, remote: str, sha: str, data: bytes | None) -> int:
        assert self.probe is not None
        blob = str(PurePosixPath(self.probe["workdir"]) / "blobs" / sha)
        upload = self._blobs.get(sha)
        if upload is None:  # one upload per content, however many paths hold it (a version and its snapshot)
            if data is None:
                data = path.read_bytes()
                if hashlib.sha256(data).hexdigest() != sha:  # changed since hashed: send what it holds now
                    self._hashes.pop(str(path), None)
                    return await self._place(sftp, path, remote, *self._sha(path))
            upload = self._blobs[sha] = asyncio.ensure_future(self._upload(sftp, blob, data))
            try:
                sent = await upload
            except BaseException:
                self._blobs.pop(sha, None)
                raise
        else:
            await upload
            sent = 0
        await _makedirs(sftp, str(PurePosixPath(remote).parent))
        tmp_link = f"{remote}.{self._token}.{secrets.token_hex(4)}.tmp"
        try:
            await sftp.remove(tmp_link)
        except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPFailure):
            pass
        await sftp.symlink(blob, tmp_link)
        await sftp.posix_rename(tmp_link, remote)
        self._placed[remote] = sha
        return sent

    async def _upload(self, sftp: asyncssh.SFTPClient, blob: str, data: bytes) -> int:
        """Put ``data`` at ``blob`` (read-only) unless the remote has it; the bytes sent."""
        if await sftp.exists(blob):
            return 0
        await _makedirs(sftp, str(PurePosixPath(blob).parent))
        tmp = f"{blob}.{self._token}.{secrets.token_hex(4)}.tmp"
        async with sftp.open(tmp, "wb") as f:
            await f.write(data)
        await sftp.chmod(tmp, 0o444)
        await sftp.posix_rename(tmp, blob)
        return len(data)

    def forget(self, files: Iterable[Path]) -> None:
        """The next ``sync`` checks and places ``files`` again (what the remote holds at their paths is unknown)."""
        if self.pmap is None:
            return
        for path in files:
            remote = self.pmap.remote_path(path)
            if remote is not None:
                self._placed.pop(remote, None)
            known = self._hashes.get(str(path))
            if known is not None:  # its blob may be gone too: asked again
                self._blobs.pop(known[2], None)

    async def fetch(self, pairs: Iterable[tuple[str, Path]]) -> int:
        """Copy each remote file to its local path (folders made); returns the bytes copied.

        Raises:
            LinkError: no connection; OSError or asyncssh.Error: a transfer failed.
        """
        await self.connected()
        assert self._sftp is not None
        sftp, total = self._sftp, 0
        for remote, local in pairs:
            local.parent.mkdir(parents=True, exist_ok=True)
            await sftp.get(remote, str(local))
            total += local.stat().st_size
        return total

    async def makedirs(self, folder: str) -> None:
        """Make the remote folder (and its parents) when missing."""
        await self.connected()
        assert self._sftp is not None
        await _makedirs(self._sftp, folder)

    async def exists(self, remote: str) -> bool:
        """Whether the remote path exists."""
        await self.connected()
        assert self._sftp is not None
        return bool(await self._sftp.exists(remote))

    async def write_file(self, remote: str, data: bytes) -> None:
        """Write ``data`` to the remote file ``remote`` (its folder made)."""
        await self.connected()
        assert self._sftp is not None
        await _makedirs(self._sftp, str(PurePosixPath(remote).parent))
        async with self._sftp.open(remote, "wb") as f:
            await f.write(data)

    def run_out_dir(self, remote_out: str) -> None:
        """A run's requests named the remote output folder ``remote_out``: the folders of the runs before it are
        removed there (the ladder runs one version at a time; each run's folder is new)."""
        assert self.pmap is not None
        scratch = self.scratch.rstrip("/") + "/"
        if not remote_out.startswith(scratch):
            return
        top = scratch + remote_out[len(scratch) :].split("/", 1)[0]
        if top in self._out_dirs:
            return
        old, self._out_dirs = self._out_dirs, [top]
        conn = self._conn
        if conn is not None:
            for folder in old:
                _background(self._remove(conn, folder))

    async def _remove(self, conn: asyncssh.SSHClientConnection, folder: str) -> None:
        """``rm -rf`` a folder of this connection's scratch there (one round trip; SFTP would take one per file)."""
        if not (folder.rstrip("/") + "/").startswith(self.scratch.rstrip("/") + "/"):
            raise ValueError(f"{folder} is not in this connection's scratch folder {self.scratch}")
        await conn.run(f"rm -rf -- {shlex.quote(folder)}", check=False)


async def _makedirs(sftp: asyncssh.SFTPClient, folder: str) -> None:
    """``sftp.makedirs(folder, exist_ok=True)``, also when another task makes the same folder at the same time."""
    try:
        await sftp.makedirs(folder, exist_ok=True)
    except asyncssh.SFTPFailure:
        if not await sftp.isdir(folder):
            raise


_TASKS: set[asyncio.Task[Any]] = set()


def _background(aw: Awaitable[Any]) -> None:
    """Run ``aw`` on the running loop without waiting for it (errors ignored: a clean-up)."""

    async def quiet() -> None:
        try:
            await aw
        except (OSError, asyncssh.Error):
            pass

    task = asyncio.ensure_future(quiet())
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    if isinstance(exc, asyncssh.Error) and exc.reason:
        return str(exc.reason)
    return text


_FINGERPRINT: str | None = None


def local_fingerprint() -> str:
    """``ktui.protocol.remote.fingerprint`` of this process's ktui package (computed once)."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        _FINGERPRINT = fingerprint(Path(ktui.__file__).resolve().parent)
    return _FINGERPRINT
