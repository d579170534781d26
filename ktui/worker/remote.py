"""The remote host's side of ``ktui --remote HOST``: what ktui runs there over SSH, besides the workers themselves.

``python -m ktui.worker.remote probe --workdir DIR`` prints one JSON line (``ktui.protocol.RemoteProbe``): the
remote's ktui and its fingerprint (a hash of its worker and protocol sources, which must equal the local one's),
Python, whether a CUDA GPU is usable, the absolute work folder (made if missing) and where candidate outputs travel
to the judge (``/dev/shm`` with 16 GiB free, else the temporary folder: the rule of ``ktui.core.ladder.runner``).

``python -m ktui.worker.remote serve --role ROLE --device DEVICE`` runs ``python -m ktui.worker`` as its child, with
the SSH channel as the worker's stdin, stdout and stderr (the child inherits them: no byte is copied), in a session
of its own, and watches the channel: when the channel closes (ktui killed the worker, or the connection dropped),
sshd closes its end of the worker's stdout and this process kills the worker's process group and every process the
worker left (it is their subreaper), so a kernel that hangs on the remote GPU does not outlive its connection. When
the worker ends by itself, this process ends the same way (the same exit code, or the same signal), which sshd
reports to ktui as the channel's exit status or exit signal.

Imports only the standard library (no torch: the probe must answer in a fraction of a second) and never
``ktui.core``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ktui.protocol.remote import RemoteProbe, fingerprint

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PR_SET_CHILD_SUBREAPER = 36
SHM_MIN_FREE = 16 << 30  # /dev/shm is used for outputs only with this much free (as ktui.core.ladder.runner)


def cuda_usable() -> bool:
    """True when the CUDA driver loads and reports a device (``cuInit`` + ``cuDeviceGetCount``, as
    ``ktui.core.device.cuda_available`` decides locally; ``KTUI_FORCE_CPU=1`` makes it False)."""
    if os.environ.get("KTUI_FORCE_CPU") == "1":
        return False
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        count = ctypes.c_int(0)
        return lib.cuInit(0) == 0 and lib.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
    except (OSError, AttributeError):
        return False


def out_root() -> str:
    """Where candidate outputs travel to the judge on this host: ``/dev/shm`` with ``SHM_MIN_FREE`` free, else the
    temporary folder."""
    try:
        if shutil.disk_usage("/dev/shm").free > SHM_MIN_FREE:
            return "/dev/shm"
    except OSError:
        pass
    return tempfile.gettempdir()


def probe(workdir: str) -> RemoteProbe:
    """The facts ktui checks before it starts a worker here (``ktui.protocol.RemoteProbe``)."""
    import ktui

    folder = Path(os.path.expanduser(workdir)).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    package = Path(ktui.__file__).resolve().parent
    user = _user()
    root = out_root()
    clear_stale_scratch(Path(root), user)
    return {
        "ktui": ktui.__version__,
        "fingerprint": fingerprint(package),
        "ktui_dir": str(package),
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "cuda": cuda_usable(),
        "workdir": str(folder),
        "out_root": root,
        "user": user,
        "host": os.uname().nodename,
    }


def _user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


STALE_S = 24 * 3600  # a connection's scratch folder untouched this long was left by a ktui that ended abruptly


def clear_stale_scratch(root: Path, user: str) -> list[Path]:
    """Remove ``root/ktui-ssh-<user>-*`` folders (a connection's scratch: candidate outputs) not modified for
    ``STALE_S`` seconds: a ktui that was killed or lost its connection could not remove its own (a live one adds a
    run's folder to its own at every ladder, which touches it). Returns the folders removed."""
    removed = []
    now = time.time()
    for folder in root.glob(f"ktui-ssh-{user}-*"):
        try:
            if folder.is_dir() and not folder.is_symlink() and now - folder.stat().st_mtime > STALE_S:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
        except OSError:
            continue
    return removed


def _set_pdeathsig(parent: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


def _descendants() -> list[int]:
    """Every process whose parent is this one (the worker, and what the worker left and this process adopted)."""
    me, out = os.getpid(), []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me:
                out.append(int(d.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def _kill_all(worker: subprocess.Popen[bytes]) -> None:
    """SIGKILL the worker's process group, then every adopted process, a few generations deep; reap them."""
    try:
        os.killpg(worker.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for _ in range(8):
        kids = _descendants()
        if not kids:
            break
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in kids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _channel_closed(fd: int) -> bool:
    """True when the reading end of ``fd`` (the channel: a pipe or a socket from sshd) is gone: ``poll`` reports
    POLLERR on a pipe whose reader closed, POLLHUP on a socket whose peer did."""
    p = select.poll()
    p.register(fd, 0)  # no event asked for: the error and hang-up conditions are always reported
    return any(ev & (select.POLLERR | select.POLLHUP | select.POLLNVAL) for _, ev in p.poll(0))


def serve(role: str, device: str, poll_s: float = 0.2) -> int:
    """Run the worker for ``role`` on ``device`` and watch the channel (see the module docstring). Returns the exit
    code to end with; a worker killed by a signal makes this process end by the same signal."""
    argv = [sys.executable, "-m", "ktui.worker", "--role", role, "--device", device]
    return supervise(argv, f"{role} worker", poll_s)


def supervise(argv: list[str], what: str, poll_s: float = 0.2) -> int:
    """Run ``argv`` on the channel (``serve``'s rule: killed with what it left when the channel closes; ends as it
    ended). Also what ktui runs there besides the workers (Nsight Compute: ``python -m ktui.worker.remote run``)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    me = os.getpid()
    try:
        worker = subprocess.Popen(argv, start_new_session=True, preexec_fn=lambda: _set_pdeathsig(me))
    except OSError as exc:
        sys.stderr.write(f"ktui-remote: cannot run {argv[0]}: {exc}\n")
        return 127
    stop: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        stop.append(signum)

    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):
        signal.signal(s, on_signal)
    sys.stderr.write(f"ktui-remote: {what} pid {worker.pid} on {os.uname().nodename}\n")
    sys.stderr.flush()
    while True:
        code = worker.poll()
        if code is not None:
            _kill_all(worker)  # what the worker left behind
            break
        if stop or _channel_closed(1):
            _kill_all(worker)
            return 255
        time.sleep(poll_s)
    if code < 0:  # end by the worker's signal, so that sshd reports it as the channel's exit signal
        sys.stderr.flush()
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ktui.worker.remote")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("probe", help="print this host's facts as one JSON line")
    p.add_argument("--workdir", required=True)
    s = sub.add_parser("serve", help="run a worker on the channel and kill it when the channel closes")
    s.add_argument("--role", choices=("candidate", "judge", "compiler"), required=True)
    s.add_argument("--device", choices=("cpu", "cuda"), required=True)
    r = sub.add_parser("run", help="run a command on the channel and kill it when the channel closes")
    r.add_argument("argv", nargs=argparse.REMAINDER)
    f = sub.add_parser("which", help="print where a tool is: PATH, then the given candidates (globs)")
    f.add_argument("name")
    f.add_argument("candidates", nargs="*")
    args = parser.parse_args(argv)
    if args.command == "probe":
        sys.stdout.write(json.dumps(probe(args.workdir)) + "\n")
        return 0
    if args.command == "which":
        found = which(args.name, args.candidates)
        if found:
            sys.stdout.write(found + "\n")
        return 0 if found else 1
    if args.command == "run":
        cmd = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        if not cmd:
            parser.error("run needs a command")
        return supervise(cmd, os.path.basename(cmd[0]))
    return serve(args.role, args.device)


def which(name: str, candidates: list[str]) -> str | None:
    """``name`` on PATH, else the first of ``candidates`` (each a path or a glob, ``$VAR`` expanded; a glob's
    matches newest name first) that is an executable file; None when none is."""
    import glob

    found = shutil.which(name)
    if found:
        return found
    for c in candidates:
        for path in sorted(glob.glob(os.path.expandvars(c)), reverse=True):
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


if __name__ == "__main__":
    sys.exit(main())
