"""Worker logs: what a worker process writes to stderr (and stdout, which the worker points at stderr: a kernel's
``print``), drained through a pipe by a thread in ktui's process into the role's log file, capped.

A kernel that prints in a loop must not fill the disk (a red team measured 537 MB per run), and a crash message
needs the last lines of exactly the process that died (not of a spare of the same role that started later and
wrote to the same file). So each worker process gets a ``LogSink``: it keeps the last ``TAIL_BYTES`` in memory,
counts every byte, and appends to ``<role>.log`` through a ``RotatingLog`` that moves the file to ``<role>.log.1``
once it reaches ``LOG_CAP_BYTES`` (so at most twice that per role stays on disk, and always the newest part).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import BinaryIO, ClassVar

LOG_CAP_BYTES = 8 << 20  # a role's log rotates at 8 MiB: enough for every traceback, small next to any disk
TAIL_BYTES = 64 << 10  # the end of each process's output kept in memory for its crash message
_READ = 1 << 16


class RotatingLog:
    """One role's log file, shared by every process of that role (the worker in service, its spare, restarts):
    appends under a lock; at ``cap`` bytes the file becomes ``<name>.1`` (replacing the older one) and a new one
    starts. One instance per path in this process (``for_path``)."""

    _all: ClassVar[dict[Path, RotatingLog]] = {}
    _all_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: Path, cap: int = LOG_CAP_BYTES):
        self.path = path
        self.cap = cap
        self._lock = threading.Lock()
        self._file: BinaryIO | None = None
        self._size = 0
        self.printed_lines = 0  # lines the role's processes wrote (``LogSink``: prints, tracebacks), never reset

    @classmethod
    def for_path(cls, path: Path) -> RotatingLog:
        """The shared ``RotatingLog`` of ``path`` (made on first use)."""
        with cls._all_lock:
            log = cls._all.get(path)
            if log is None:
                log = cls._all[path] = cls(path)
            return log

    def write(self, data: bytes) -> None:
        """Append ``data``, rotating first when it would pass the cap. A full or read-only disk drops the data
        (the worker must never block on its log)."""
        with self._lock:
            try:
                if self._file is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._file = open(self.path, "ab", buffering=0)
                    self._size = self._file.seek(0, os.SEEK_END)
                if self._size and self._size + len(data) > self.cap:
                    self._file.close()
                    self._file = None
                    os.replace(self.path, self.path.with_name(self.path.name + ".1"))
                    self._file = open(self.path, "ab", buffering=0)
                    self._size = 0
                data = data[-self.cap :]
                self._file.write(data)
                self._size += len(data)
            except OSError:
                pass


class LogSink:
    """Drains one worker process's stderr pipe (``read_fd``) on a daemon thread into ``log``, keeping its last
    ``TAIL_BYTES`` in memory and the count of every byte it wrote (``total``)."""

    def __init__(self, read_fd: int, log: RotatingLog, header: bytes = b""):
        self.log = log
        self.total = 0
        self._fd = read_fd
        self._tail = bytearray()
        self._last_read = time.monotonic()
        self._eof = threading.Event()
        self._lock = threading.Lock()
        if header:
            log.write(header)
        self._thread = threading.Thread(target=self._drain, name="ktui-worker-log", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while True:
                try:
                    chunk = os.read(self._fd, _READ)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                with self._lock:
                    self.total += len(chunk)
                    self._tail += chunk
                    if len(self._tail) > TAIL_BYTES:
                        del self._tail[: len(self._tail) - TAIL_BYTES]
                    self._last_read = time.monotonic()
                self.log.printed_lines += chunk.count(b"\n")  # (read by ktui's ladder between runs)
                self.log.write(chunk)
        finally:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._eof.set()

    def settle(self, timeout_s: float = 2.0, quiet_s: float = 0.2) -> None:
        """Wait until the process's output is all in: its pipe closed (the process is gone), or nothing arrived for
        ``quiet_s`` (a child the kernel left may hold the pipe open), at most ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not self._eof.wait(0.05):
            now = time.monotonic()
            with self._lock:
                quiet = now - self._last_read >= quiet_s
            if quiet or now >= deadline:
                return

    def tail_text(self) -> str:
        """The last ``TAIL_BYTES`` the process wrote, decoded (undecodable bytes replaced)."""
        with self._lock:
            return bytes(self._tail).decode(errors="replace")


def open_pipe() -> tuple[int, int]:
    """A pipe for a worker's stderr: (read end, kept by ktui, not inherited; write end, handed to the worker)."""
    r, w = os.pipe()
    os.set_inheritable(r, False)
    return r, w
