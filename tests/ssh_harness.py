"""SSH servers on 127.0.0.1 for the remote tests and the latency benchmark: a real OpenSSH ``sshd`` with a throw-away
host key and user key, or an asyncssh server in this process (no system package needed), and the "remote" ktui
environment both serve: this machine's ktui, behind a Python wrapper that refuses to import what the workers never
need (textual, litellm, watchdog, asyncssh, rich, mcp), with its own work folder.

Nothing here reaches beyond the loopback address; every server stops with its ``with`` block.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ktui.core.remote.config import RemoteConfig

NOT_ON_REMOTE = ("textual", "litellm", "watchdog", "asyncssh", "rich", "mcp")


def sshd_path() -> str | None:
    """The OpenSSH server binary, or None when it is not installed."""
    return shutil.which("sshd") or next(
        (p for p in ("/usr/sbin/sshd", "/usr/local/sbin/sshd") if os.path.exists(p)), None
    )


def why_no_sshd() -> str:
    """'' when a loopback sshd can run here, else the precise reason (for a skip)."""
    path = sshd_path()
    if path is None:
        how = "`.ci/run` installs it as root with apt-get" if shutil.which("apt-get") else "no apt-get here"
        return f"OpenSSH's sshd is not installed ({how}; `apt-get install openssh-server`)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen is not installed (package openssh-client)"
    if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
        try:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        except OSError as exc:
            return f"sshd needs its privilege separation folder /run/sshd, which cannot be made: {exc}"
    return ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> str:
    """An ed25519 key pair at ``path`` (and ``path.pub``); returns the public line."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


@dataclass
class Remote:
    """A loopback SSH server and how to reach the remote ktui through it."""

    config: RemoteConfig
    folder: Path  # keys, known_hosts, the server's files, the remote work folder

    @property
    def workdir(self) -> Path:
        return Path(self.config.workdir)


def remote_python(folder: Path) -> Path:
    """A wrapper for this machine's Python that refuses to import ``NOT_ON_REMOTE`` (a ``sitecustomize`` meta path
    finder): the remote host of the tests has only what the workers need."""
    block = folder / "remote-site"
    block.mkdir(parents=True, exist_ok=True)
    (block / "sitecustomize.py").write_text(
        textwrap.dedent(
            f"""
            import sys
            BLOCKED = {NOT_ON_REMOTE!r}

            class _Refuse:
                def find_spec(self, name, path=None, target=None):
                    if name.split(".")[0] in BLOCKED:
                        raise ImportError(f"{{name}} is not installed on this remote host (ktui test harness)")
                    return None

            sys.meta_path.insert(0, _Refuse())
            """
        )
    )
    wrapper = folder / "remote-python"
    # this process's own PYTHONPATH stays (on the GPU machine: the carried CuTeDSL), behind the blocker and ktui
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    pythonpath = os.pathsep.join([str(block), str(Path(__file__).resolve().parents[1]), *rest])
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={shlex.quote(pythonpath)} exec {shlex.quote(sys.executable)} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@contextmanager
def openssh_server(base: Path | None = None) -> Iterator[Remote]:
    """A real ``sshd -D`` on 127.0.0.1 (a free port), key-only login for this user, its own host key in a
    known_hosts file of its own, SFTP on. Yields the ``Remote``; stops the server after."""
    reason = why_no_sshd()  # also makes /run/sshd when missing
    if reason:
        raise RuntimeError(reason)
    folder = Path(tempfile.mkdtemp(prefix="ktui-sshd-", dir=base))
    host_pub = _keygen(folder / "host_key")
    user_pub = _keygen(folder / "user_key")
    (folder / "authorized_keys").write_text(user_pub + "\n")
    port = free_port()
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    (folder / "ssh_config").write_text("")
    config = folder / "sshd_config"
    config.write_text(
        textwrap.dedent(
            f"""
            Port {port}
            ListenAddress 127.0.0.1
            HostKey {folder / "host_key"}
            PidFile {folder / "sshd.pid"}
            AuthorizedKeysFile {folder / "authorized_keys"}
            PubkeyAuthentication yes
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            UsePAM no
            StrictModes no
            PermitRootLogin prohibit-password
            Subsystem sftp internal-sftp
            # bash reads ~/.bashrc for a command run by sshd only as a top-level shell (SHLVL < 2): the user's rc
            # files (pyenv init and its rehash lock, on this project's machines) are not what these tests test
            SetEnv SHLVL=1
            LogLevel ERROR
            """
        )
    )
    sshd = sshd_path()
    assert sshd is not None
    log = open(folder / "sshd.log", "wb")
    # in this process's session: ktui's pool kills every child of its process outside its session (the orphans a
    # kernel leaves, ktui.core.workers.orphans), and the tests run ktui in this process
    proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(config)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"sshd did not start: {(folder / 'sshd.log').read_text()[-500:]}") from None
                time.sleep(0.05)
        yield Remote(_config(folder, port), folder)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _config(folder: Path, port: int) -> RemoteConfig:
    import getpass

    return RemoteConfig(
        host="127.0.0.1",
        user=getpass.getuser(),
        port=port,
        key=str(folder / "user_key"),
        python=str(remote_python(folder)),
        workdir=str(folder / "remote-work"),
        known_hosts=str(folder / "known_hosts"),
        ssh_config=(str(folder / "ssh_config"),),
        connect_timeout_s=10.0,
    )


@contextmanager
def asyncssh_server(base: Path | None = None) -> Iterator[Remote]:
    """An asyncssh SSH server in this process, on its own loop thread, on 127.0.0.1: key-only login, SFTP on the
    local file system, commands run by ``/bin/sh -c`` with the channel as their stdin, stdout and stderr (a closed
    channel closes them, as sshd does; the exit status or signal is reported back)."""
    import asyncssh

    folder = Path(tempfile.mkdtemp(prefix="ktui-asyncssh-", dir=base))
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    user_key = asyncssh.generate_private_key("ssh-ed25519")
    user_key.write_private_key(str(folder / "user_key"))
    os.chmod(folder / "user_key", 0o600)
    (folder / "ssh_config").write_text("")
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-asyncssh-server", daemon=True)
    thread.start()

    async def start() -> tuple[object, int]:
        server = await asyncssh.create_server(
            asyncssh.SSHServer,
            "127.0.0.1",
            0,
            server_host_keys=[host_key],
            authorized_client_keys=asyncssh.import_authorized_keys(user_key.export_public_key().decode()),
            process_factory=_run_command,
            sftp_factory=True,
            encoding=None,
        )
        return server, int(server.sockets[0].getsockname()[1])

    server, port = asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key.export_public_key().decode().strip()}\n")
    try:
        yield Remote(_config(folder, port), folder)
    finally:

        async def stop() -> None:
            server.close()  # type: ignore[attr-defined]
            await server.wait_closed()  # type: ignore[attr-defined]
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in rest:
                t.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            shutil.rmtree(folder, ignore_errors=True)


async def _run_command(process: object) -> None:
    """The asyncssh server's command handler: ``/bin/sh -c COMMAND`` on socket pairs (as sshd gives its
    children), bytes copied both ways; when the client closes the channel the sockets close, and the command's
    exit status or signal goes back."""
    import asyncssh

    assert isinstance(process, asyncssh.SSHServerProcess)
    ours_in, theirs_in = socket.socketpair()
    ours_out, theirs_out = socket.socketpair()
    ours_err, theirs_err = socket.socketpair()
    child = subprocess.Popen(
        ["/bin/sh", "-c", process.command or "true"], stdin=theirs_in, stdout=theirs_out, stderr=theirs_err
    )
    for s in (theirs_in, theirs_out, theirs_err):
        s.close()
    loop = asyncio.get_running_loop()

    async def down(sock: socket.socket, writer: object) -> None:
        sock.setblocking(False)
        while True:
            data = await loop.sock_recv(sock, 1 << 16)
            if not data:
                break
            writer.write(data)  # type: ignore[attr-defined]

    async def up() -> None:
        ours_in.setblocking(False)
        while True:
            try:
                data = await process.stdin.read(1 << 16)
            except asyncssh.Error:
                break
            if not data:
                break
            await loop.sock_sendall(ours_in, data)

    copiers = [
        asyncio.ensure_future(down(ours_out, process.stdout)),
        asyncio.ensure_future(down(ours_err, process.stderr)),
        asyncio.ensure_future(up()),
    ]
    waiter = asyncio.ensure_future(loop.run_in_executor(None, child.wait))
    closed = asyncio.ensure_future(process.wait_closed())
    await asyncio.wait([waiter, closed], return_when=asyncio.FIRST_COMPLETED)
    if not waiter.done():  # the client closed the channel: close the command's side, as sshd does
        for s in (ours_in, ours_out, ours_err):
            s.close()
        for c in copiers:
            c.cancel()
        await waiter
        return
    await asyncio.gather(*copiers[:2], return_exceptions=True)
    code = child.returncode
    for s in (ours_in, ours_out, ours_err):
        s.close()
    copiers[2].cancel()
    if code < 0:
        process.exit_with_signal(signal.Signals(-code).name[3:])
    else:
        process.exit(code)


class Proxy:
    """A TCP forwarder on 127.0.0.1 in front of a server, whose ``cut()`` drops every connection through it (a reset,
    as a network that fails): the SSH client sees its connection lost, the server its peer gone.

    Use as a context manager; ``port`` is the forwarder's.
    """

    def __init__(self, target_port: int):
        self.target_port = target_port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="test-ssh-proxy", daemon=True)
        self._writers: list[asyncio.StreamWriter] = []
        self.port = 0
        self.accepted = 0

    def __enter__(self) -> Proxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    async def _start(self) -> asyncio.AbstractServer:
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = int(server.sockets[0].getsockname()[1])
        return server

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self._writers += [writer, up_w]

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(1 << 16):
                    w.write(data)
                    await w.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                w.close()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))

    def cut(self) -> None:
        """Reset every connection through the proxy now (new ones are still forwarded)."""

        async def reset() -> None:
            for w in self._writers:
                sock = w.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                w.transport.abort()
            self._writers.clear()

        asyncio.run_coroutine_threadsafe(reset(), self._loop).result(10)

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            self._server.close()
            for w in self._writers:
                w.transport.abort()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def through(remote: Remote, proxy: Proxy) -> RemoteConfig:
    """``remote``'s settings, connecting through ``proxy`` (its known_hosts gains the proxy's address)."""
    from dataclasses import replace

    known = Path(remote.config.known_hosts)
    line = known.read_text().splitlines()[0]
    key = line.split(" ", 1)[1]
    with known.open("a") as f:
        f.write(f"[127.0.0.1]:{proxy.port} {key}\n")
    return replace(remote.config, port=proxy.port)
