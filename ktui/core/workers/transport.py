"""Where a worker process runs: the ``Transport`` seam, and ``LocalTransport`` (a child process of ktui).

A transport only makes the process; ``ktui.core.workers.client.WorkerProcess`` speaks the protocol over its pipes,
restarts it and kills it.

A local worker dies with ktui whatever ends ktui (SIGKILL included): it is spawned with ``PR_SET_PDEATHSIG``
(Linux ``prctl``), so the kernel sends it SIGKILL when ktui's process is gone. The parent-death signal fires when
the *thread* that forked the child ends, so every worker is forked by one thread that lives as long as ktui
(``spawn_thread``), never by the short-lived threads that start spares or restart a worker.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar, runtime_checkable

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

T = TypeVar("T")


def _load_prctl() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None  # not Linux: workers are stopped by ktui's signal handlers only


_PRCTL = _load_prctl()  # resolved here: the child between fork and exec only calls it


def die_with_parent(parent: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child receive SIGKILL when ``parent`` (ktui's pid; the forking thread, in
    fact) ends, and exit at once when ``parent`` already ended before the ``prctl``. None where there is no
    ``prctl``."""
    prctl = _PRCTL
    if prctl is None:
        return None

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # ktui died between the fork and the prctl: nobody would ever stop us
            os._exit(1)

    return preexec


class _SpawnThread:
    """The one long-lived thread that forks the workers (see the module docstring): ``run(fn)`` calls ``fn`` there
    and returns its result or raises its exception."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pid = 0

    def run(self, fn: Callable[[], T]) -> T:
        if threading.current_thread() is self._thread:
            return fn()
        with self._lock:
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._pid = os.getpid()  # (a forked copy of ktui has no such thread: start its own)
                self._thread = threading.Thread(target=self._serve, name="ktui-spawner", daemon=True)
                self._thread.start()
        done: Future[T] = Future()
        self._jobs.put((fn, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            fn, done = self._jobs.get()
            try:
                done.set_result(fn())
            except BaseException as exc:  # handed to the caller's thread
                done.set_exception(exc)

    @property
    def thread(self) -> threading.Thread | None:
        return self._thread


spawn_thread = _SpawnThread()


class RequestPipe(Protocol):
    """Where a worker's requests are written (a pipe's ``IO[bytes]`` for a local worker)."""

    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class WorkerHandle(Protocol):
    """A running worker as ``WorkerProcess`` sees it: the subset of ``subprocess.Popen`` it uses, and
    ``kill_tree``.

    ``stdin`` takes the requests (``write`` then ``flush``; a ``BrokenPipeError`` or ``OSError`` when the worker is
    gone), ``stdout`` gives the replies (a real file descriptor, read non-blocking with ``selectors``; end of file once
    the worker ended), ``poll``/``wait``/``returncode`` its exit status (negative: the signal that ended it).
    """

    @property
    def pid(self) -> int:
        """The process id (a local one for ``LocalTransport``; see the transport for others)."""
        ...

    @property
    def stdin(self) -> RequestPipe | None: ...

    @property
    def stdout(self) -> IO[bytes] | None: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int:
        """The exit status, once the worker ended; ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
        ...

    def kill_tree(self) -> None:
        """Kill the worker and every process it started, now (SIGKILL; no grace)."""
        ...


class Transport(Protocol):
    """The seam for *where* a worker runs: it makes the process, and nothing else.

    ``spawn`` starts ``python -m ktui.worker --role ROLE --device DEVICE`` somewhere and returns its handle
    (``WorkerHandle``): the protocol travels over the handle's ``stdin`` (requests) and ``stdout`` (replies, read
    non-blocking), the worker's stderr goes to ``stderr`` (a pipe that ktui drains into the role's log,
    ``ktui.core.workers.logs``), and ``kill_tree`` stops it and every process it started. ``LocalTransport`` runs it
    as a child of ktui's process; ``ktui.core.remote.transport.SSHTransport`` on a remote host over SSH (the paths in
    requests are mapped to the remote's and the files they name sent there; dumps come back).
    """

    def spawn(self, role: str, device: str, env: dict[str, str], stderr: IO[bytes]) -> WorkerHandle:
        """Start the worker for ``role`` on ``device`` with ``env`` added to its environment. ``stderr`` may be
        closed by the caller once this returns (a transport that writes to it later keeps its own copy)."""
        ...


@runtime_checkable
class ToolHost(Protocol):
    """Where the tools that must run beside the workers run (Nsight Compute profiles the GPU the workers use): a
    transport that is also a ``ToolHost`` runs them there. Paths are local ones; a remote host maps them to its own
    and copies ``fetch`` back."""

    def find_tool(self, name: str, candidates: Sequence[str]) -> str | None:
        """``name`` on PATH there, else the first executable of ``candidates`` (paths or globs, ``$VAR`` expanded);
        None when none is."""
        ...

    def tool_python(self) -> str:
        """The interpreter of the workers there (it imports ktui)."""
        ...

    def run_tool(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float,
        json_files: Mapping[Path, Any] | None = None,
        fetch: Sequence[Path] = (),
    ) -> subprocess.CompletedProcess[str]:
        """Write each of ``json_files`` (path -> JSON value; the sources a ``ktui.protocol.Sources`` in it names go
        there too), run ``argv`` with ktui importable, and bring back the files of ``fetch`` that it made.

        Raises:
            subprocess.TimeoutExpired: it ran past ``timeout_s`` (it was killed).
            OSError: it could not be started, or a file not moved.
        """
        ...


def ktui_pythonpath() -> str:
    """PYTHONPATH for a process of this machine that must import this ktui (a profiled program)."""
    here = str(Path(__file__).resolve().parents[3])
    rest = os.environ.get("PYTHONPATH", "")
    return here + (os.pathsep + rest if rest else "")


class LocalWorker(subprocess.Popen[bytes]):
    """A local worker process: ``subprocess.Popen`` in a session of its own, killed with its process group."""

    def kill_tree(self) -> None:
        """SIGKILL the worker's process group (the worker and what it started in its session)."""
        if self.poll() is not None:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            self.kill()


@dataclass(frozen=True)
class LocalTransport:
    """The worker as a child process of ktui, in a session of its own (a kill reaches the worker's children too).

    Attributes:
        python: the interpreter that runs the worker (ktui's own by default: the same torch and the same ktui).
    """

    python: str = sys.executable

    def command(self, role: str, device: str) -> list[str]:
        """The worker's command line."""
        return [self.python, "-m", "ktui.worker", "--role", role, "--device", device]

    def find_tool(self, name: str, candidates: Sequence[str]) -> str | None:
        """``ToolHost.find_tool`` on this machine."""
        found = shutil.which(name)
        if found:
            return found
        for c in candidates:
            for path in sorted(glob.glob(os.path.expandvars(c)), reverse=True):
                if os.path.isfile(path) and os.access(path, os.X_OK):
                    return path
        return None

    def tool_python(self) -> str:
        return self.python

    def run_tool(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float,
        json_files: Mapping[Path, Any] | None = None,
        fetch: Sequence[Path] = (),
    ) -> subprocess.CompletedProcess[str]:
        """``ToolHost.run_tool`` here: ``subprocess.run`` with ktui on PYTHONPATH (nothing to fetch)."""
        for path, value in (json_files or {}).items():
            path.write_text(json.dumps(value))
        return subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, "PYTHONPATH": ktui_pythonpath()},
        )

    def spawn(self, role: str, device: str, env: dict[str, str], stderr: IO[bytes]) -> LocalWorker:
        """``LocalWorker`` (a ``subprocess.Popen``) of ``command`` with pipes for the protocol and ktui's environment
        plus ``env``, forked by ``spawn_thread`` with the parent-death signal set (``die_with_parent``)."""
        command, full_env, parent = self.command(role, device), {**os.environ, **env}, os.getpid()
        return spawn_thread.run(
            lambda: LocalWorker(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=full_env,
                start_new_session=True,
                preexec_fn=die_with_parent(parent),
            )
        )
