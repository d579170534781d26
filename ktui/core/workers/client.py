"""ktui's side of a worker process: start it, send it requests, survive its crashes and hangs.

A worker is ``python -m ktui.worker --role ROLE --device DEVICE``. It imports torch (and triton) once, then serves
requests until told to stop. A kernel that segfaults, calls ``os._exit`` or hangs takes down only the worker: the
call raises ``WorkerCrashed`` or ``WorkerTimeout`` with what the worker printed last, and the next call starts a
fresh worker.

Where the process runs is the ``Transport``'s business (``ktui.core.workers.transport``; ``LocalTransport``: a child
process, today's only one). ``WorkerProcess.call(method, params)`` speaks the wire (``ktui.protocol``); the typed
per-role calls (``JudgeClient.describe``, ``CandidateClient.execute``...) are in ``ktui.core.workers.facades``.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from ktui.core.events import CANCELLED
from ktui.core.results import ErrorInfo, fmt_seconds
from ktui.core.workers import orphans
from ktui.core.workers.crash import crash_message, lost_message, stuck_frame
from ktui.core.workers.logs import LogSink, RotatingLog, open_pipe
from ktui.core.workers.transport import LocalTransport, RequestPipe, Transport, WorkerHandle
from ktui.protocol import OnProgress, decode, encode

DEFAULT_START_TIMEOUT_S = 120.0
TIMINGS_KEPT = 64  # (method, seconds) of this many results are kept: every call of one ladder run


IDLE_STEPS_CAP = 10
"""A worker call's time limit (``timeout_s``) is on time without progress; in all a call runs at most this many
limits (``WorkerProcess.call``)."""
STUCK_WAIT_S = 1.0  # how long a timed-out worker's stack dump is waited for (``_where_stuck``)


class WorkerError(Exception):
    """Base class: a request did not produce a result."""

    def __init__(self, message: str, info: ErrorInfo | None = None):
        super().__init__(message)
        self.info = info or ErrorInfo(type(self).__name__, message)


class RemoteError(WorkerError):
    """The request raised inside the worker; ``info`` carries its type, message and traceback.

    Attributes:
        needs_gpu: '' or, when a compiled CuTeDSL function was called on a worker without a GPU (the worker's own
            record, ``ErrorReply.needs_gpu``), its message: the kernel needs a GPU, it did not fail.
    """

    def __init__(self, message: str, info: ErrorInfo | None = None, needs_gpu: str = ""):
        super().__init__(message, info)
        self.needs_gpu = needs_gpu


class WorkerCrashed(WorkerError):
    """The worker process died while serving the request (segfault, ``os._exit``, killed by the OOM killer...)."""


class WorkerLost(WorkerCrashed):
    """The worker was lost, not ended by what it ran: its transport lost it (an SSH connection that dropped). Says
    nothing about the kernel: the ladder does not store a result that this failed."""


class WorkerTimeout(WorkerError):
    """The request took longer than its time limit; the worker was killed."""


class WorkerStartError(WorkerError):
    """The worker could not start (bad device, torch missing...)."""


class RunCancelled(WorkerError):
    """The run this call belonged to was cancelled (the cancel key, a newer save of the file, ctrl+c): the call
    ended, or never began, and its worker was restarted. Says nothing about the kernel."""


class CancelToken:
    """Shared by the workers of one pool: while it is set, every call they serve fails at once with
    ``RunCancelled`` (``WorkerPool.cancel_run`` sets it and kills the busy workers; ``clear`` once the run ended).

    Attributes:
        reason: why the run is cancelled, for the message (``cancelled with the x key``...).
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def set(self, reason: str) -> None:
        self.reason = reason
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()


# glibc's malloc serves every allocation over 32 MiB with its own mmap and gives it back on free, so each large
# tensor a worker makes (the judge's float64 copies of a 2**25-element output: 256 MB) is page-faulted in afresh:
# 20 rounds of three 256 MB temporaries took 6.7 s (9.2 s of system time) as glibc's default against 1.6 s with
# these settings (measured on the 2-core CPU machine, torch 2.13), and a 136-case vector add run with sizes up to
# 2**25 spent more system time than user time. Up to 4 GiB from the heap, kept until 1 GiB of it is free at its top.
# Not for a worker that runs the Triton interpreter (the candidate and compiler on the CPU): its many small arrays ran
# 1.7x slower with these settings (a bf16 row sum's run rung: 110 s against 68 s, same seed, side by side).
MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=1073741824"


def malloc_env(role: str, device: str) -> dict[str, str]:
    """``{"GLIBC_TUNABLES": MALLOC_TUNABLES}`` for the environment of a worker of ``role`` on ``device`` that
    works on large host tensors (the judge anywhere; every role on a GPU), else {}; {} too when ktui's own
    environment sets ``GLIBC_TUNABLES`` (the user's settings stand). Other C libraries ignore the variable."""
    if "GLIBC_TUNABLES" in os.environ or (role != "judge" and not device.startswith("cuda")):
        return {}
    return {"GLIBC_TUNABLES": MALLOC_TUNABLES}


def threads_env(role: str, device: str) -> dict[str, str]:
    """How many threads the CPU workers' math libraries take: ``OMP_NUM_THREADS`` (torch's intra-op pool) and
    ``OPENBLAS_NUM_THREADS`` (numpy's BLAS), each unless ktui's own environment sets it (the user's setting stands);
    {} for workers on a GPU. The candidate and the compiler run the Triton interpreter (Python, one op at a time on
    blocks of ~128x64): one thread. The judge runs beside the candidate: half the machine's cores (at least one).

    Both pools spin and wait for their threads: beside other busy processes, 2-thread pools made the judge's
    elementwise figures on 1M float64 elements take 237 ms at the median against 33 ms with one thread, and an
    interpreted dot's 128x64 @ 64x256 block up to 44 ms against 0.15 ms (the 2-core CPU machine beside a test run,
    2026-12-07)."""
    if device.startswith("cuda"):
        return {}
    n = "1" if role != "judge" else str(max(1, (os.cpu_count() or 2) // 2))
    return {k: n for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS") if k not in os.environ}


def _where(proc: WorkerHandle) -> str:
    """Where the worker runs, for its states and its log's header: ``pid 123``, or the transport's own words
    (``proc.where``: ``gpu1 pid 4567``)."""
    return str(getattr(proc, "where", "") or f"pid {proc.pid}")


def _stdin(proc: WorkerHandle) -> RequestPipe:
    assert proc.stdin is not None, "a worker is spawned with a pipe for its requests"
    return proc.stdin


def _stdout(proc: WorkerHandle) -> IO[bytes]:
    assert proc.stdout is not None, "a worker is spawned with a pipe for its replies"
    return proc.stdout


class WorkerProcess:
    """One worker process, restarted on demand. Calls are serialized by a lock: one request at a time.

    Args:
        role: ``candidate`` (runs kernel versions), ``judge`` (runs references and decides verdicts) or ``compiler``
            (without a GPU: compiles versions for sm_90a; on a GPU the candidate compiles).
        device: ``cpu`` or ``cuda``.
        log_dir: where the worker's stderr and stdout go (``<role>.log``, appended, rotated at
            ``logs.LOG_CAP_BYTES``); its tail is quoted when it dies.
        env: variables added to the worker's environment.
        on_state: called with (role, state, detail) on ``starting``, ``ready``, ``restarting``, ``stopped`` and
            ``failed`` (it could not start).
        start_timeout_s: how long ``ensure_ready`` waits for the hello by default.
        transport: makes the process (``LocalTransport()`` by default).
        cancel: the pool's ``CancelToken``: while set, calls fail with ``RunCancelled``.
    """

    def __init__(
        self,
        role: str,
        device: str,
        log_dir: Path,
        env: dict[str, str] | None = None,
        on_state: Callable[[str, str, str], None] | None = None,
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
        transport: Transport | None = None,
        cancel: CancelToken | None = None,
    ):
        self.role = role
        self.device = device
        self.log_dir = Path(log_dir)
        self.env = env or {}
        self.on_state = on_state or (lambda role, state, detail: None)
        self.start_timeout_s = start_timeout_s
        self.transport: Transport = transport or LocalTransport()
        self.hello: dict[str, Any] | None = None
        self.last_hello: dict[str, Any] | None = None  # survives restarts: what the device was
        self.starts = 0
        self._proc: WorkerHandle | None = None
        self._buf = b""
        self._next_id = 0
        self._lock = threading.RLock()
        self._closed = False
        self._log_path = self.log_dir / f"{role}.log"
        self._sink: LogSink | None = None  # drains the running process's stderr into the log
        self._printed_before = 0  # bytes the earlier processes of this worker wrote
        self._doing = ""  # the request running now and the case its last progress line named
        self.cancel = cancel
        self._busy = False  # a call waits on the process
        self.calls = 0  # calls that returned a result, ever
        self.timings: list[tuple[int, str, float]] = []  # (call number, method, seconds) of the last results

    # -- lifecycle ---------------------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The process id of the running worker (None when none runs)."""
        return self._proc.pid if self._proc else None

    def alive(self) -> bool:
        """A worker process is running (it may still be importing torch)."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def busy(self) -> bool:
        """A call is under way (its request sent, or the worker starting for it)."""
        return self._busy

    def timings_since(self, calls: int) -> list[tuple[str, float]]:
        """(method, wall seconds) of each call that returned a result after the first ``calls`` did (``calls``:
        this worker's ``calls`` then). Errors, crashes and timeouts are not counted."""
        return [(m, s) for n, m, s in self.timings if n > calls]

    def start(self) -> None:
        """Spawn the process through ``transport`` if it is not running; returns at once (``ensure_ready`` waits for
        its hello)."""
        with self._lock:
            if self.alive():
                return
            if self._closed:
                raise WorkerStartError(f"the {self.role} worker was stopped")
            self.log_dir.mkdir(parents=True, exist_ok=True)
            env = {
                **malloc_env(self.role, self.device),
                **threads_env(self.role, self.device),
                **self.env,
                "PYTHONUNBUFFERED": "1",
                "PYTHONFAULTHANDLER": "1",
            }
            read_fd, write_fd = open_pipe()
            try:
                with orphans.spawning(), os.fdopen(write_fd, "wb", buffering=0) as stderr:
                    proc = self._proc = self.transport.spawn(self.role, self.device, env, stderr)
                    orphans.register(proc.pid)
            except BaseException:
                os.close(read_fd)
                raise
            if self._sink is not None:
                self._printed_before += self._sink.total
            header = f"\n=== ktui {self.role} worker start {time.strftime('%H:%M:%S')} {_where(proc)} ===\n"
            self._sink = LogSink(read_fd, RotatingLog.for_path(self._log_path), header.encode())
            self._doing = ""
            os.set_blocking(_stdout(proc).fileno(), False)
            self._buf = b""
            self.hello = None
            self.starts += 1
            self.on_state(self.role, "starting", _where(proc))

    def ensure_ready(self, timeout_s: float | None = None) -> dict[str, Any]:
        """Start if needed and wait for the worker's hello (device, versions). Returns the hello.

        Raises:
            WorkerStartError: the worker exited or said it cannot serve (e.g. ``--device cuda`` without a GPU).
        """
        with self._lock:
            if self.hello is not None and self.alive():
                return self.hello
            self.start()
            deadline = time.monotonic() + (timeout_s or self.start_timeout_s)
            try:
                msg = self._read_message(deadline)
            except WorkerCrashed as exc:
                if self._cancelled():  # killed by WorkerPool.cancel_run while it started: not a failure
                    self.restart(CANCELLED)
                    raise RunCancelled(self._cancel_message("its start")) from None
                self.on_state(self.role, "failed", str(exc))
                raise WorkerStartError(f"the {self.role} worker did not start: {exc}") from None
            except WorkerTimeout:
                self.kill()
                self.on_state(self.role, "failed", "no hello")
                raise WorkerStartError(f"the {self.role} worker did not start within {timeout_s} s") from None
            if "fatal" in msg:
                self.kill()
                self.on_state(self.role, "failed", msg["fatal"])
                raise WorkerStartError(msg["fatal"])
            self.hello = self.last_hello = msg.get("hello", {})
            where = _where(self._proc) if self._proc is not None else ""
            self.on_state(self.role, "ready", f"{where}, started in {self.hello.get('startup_s', 0):.1f} s")
            return self.hello

    def kill(self) -> None:
        """Kill the process group now (no grace period: after a crash or a hang, or at shutdown). Safe to call from
        another thread while a call waits on the worker: that call then fails with ``WorkerCrashed``."""
        proc, self._proc = self._proc, None
        self.hello = None
        if proc is None:
            return
        proc.kill_tree()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for f in (proc.stdin, proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        orphans.unregister(proc.pid)

    def restart(self, reason: str) -> None:
        """Kill and spawn again at once, so the next call finds torch already imported (not after ``stop``)."""
        if self._closed:
            self.kill()
            return
        self.on_state(self.role, "restarting", reason)
        self.kill()
        self.start()

    def request_shutdown(self) -> None:
        """Ask the worker to exit after its current request, without waiting (see ``stop``)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                _stdin(proc).write(encode({"id": -1, "method": "shutdown", "params": {}}))
                _stdin(proc).flush()
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        """From now on the worker is never restarted (ktui is shutting down)."""
        self._closed = True

    @property
    def closed(self) -> bool:
        """``close`` or ``stop`` was called: the worker is never restarted."""
        return self._closed

    def stop(self, grace_s: float = 3.0) -> None:
        """Ask the worker to exit; kill it if it has not within ``grace_s``. The worker is not restarted after."""
        self._closed = True
        idle = self._lock.acquire(blocking=False)  # busy with a request: a kernel runs; nothing to wait for
        if idle:
            self._lock.release()
        self.request_shutdown()
        proc = self._proc
        if proc is not None and self.hello is not None and idle:  # still importing torch: nothing to wait for
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        self.on_state(self.role, "stopped", "")

    # -- requests ----------------------------------------------------------------------------------------------
    def call(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        timeout_s: float = 60.0,
        on_progress: OnProgress | None = None,
    ) -> dict[str, Any]:
        """Send one request (``method`` is a ``ktui.protocol.METHODS`` name, ``params`` its request) and wait for its
        result, its reply dict. ``on_progress`` gets each ``progress`` line (``protocol.Progress``) meanwhile.

        Raises:
            RemoteError: the request raised inside the worker (the worker lives on, unless it asked to restart).
            WorkerCrashed: the worker died; it is restarted before this raises.
            WorkerTimeout: no progress within ``timeout_s`` (each step the worker reports finished starts the limit
                again; ``IDLE_STEPS_CAP`` limits in all); the worker is killed and restarted before this raises.
            WorkerStartError: the worker could not start.
            RunCancelled: the pool's ``CancelToken`` was set before or during the call (the worker was killed and
                restarted when the call was under way).
        """
        with self._lock:
            self._check_cancel(method)
            self._busy = True
            try:
                return self._call(method, params, timeout_s, on_progress)
            except WorkerError as exc:
                if self._cancelled() and not isinstance(exc, RunCancelled):
                    raise RunCancelled(self._cancel_message(method)) from None
                raise
            finally:
                self._busy = False

    def _cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def _check_cancel(self, method: str) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise RunCancelled(f"{self.cancel.reason}: {method} was not sent")

    def _cancel_message(self, doing: str) -> str:
        reason = self.cancel.reason if self.cancel is not None else "cancelled"
        return f"{reason}: the {self.role} worker was stopped during {doing} and restarted"

    def _call(
        self, method: str, params: Mapping[str, Any] | None, timeout_s: float, on_progress: OnProgress | None
    ) -> dict[str, Any]:
        self.ensure_ready()
        self._check_cancel(method)
        t0 = time.monotonic()
        self._next_id += 1
        rid = self._next_id
        proc = self._proc
        if proc is None:  # killed from another thread since it was ready
            raise WorkerCrashed(f"the {self.role} worker was killed")
        self._doing = method
        try:
            _stdin(proc).write(encode({"id": rid, "method": method, "params": dict(params or {})}))
            _stdin(proc).flush()
        except (BrokenPipeError, OSError):
            died = self._died(proc.poll(), proc)
            self.restart(f"died before {method}")
            raise died from None
        # The limit is on time without progress: each step the worker reports finished (a case, a spec) starts it
        # again, so a slow machine that keeps finishing cases is not taken for a hang; a call never runs past
        # IDLE_STEPS_CAP limits in all (a kernel slow in every case still ends).
        started = time.monotonic()
        deadline = started + timeout_s
        in_all = max(IDLE_STEPS_CAP * timeout_s, getattr(timeout_s, "total", 0.0))  # a Limit may say its own
        backstop = started + in_all
        beating = False  # heartbeats came since the last finished step (``ktui.worker.heartbeat``)
        last_step = None  # when the worker last reported a finished step in this call (monotonic s)
        while True:
            try:
                msg = self._read_message(min(deadline, backstop))
            except WorkerTimeout:
                now = time.monotonic()  # before the stack is read and the worker restarted (both take time)
                doing = self._doing
                where = self._where_stuck(proc)
                self.restart(f"{method} timed out after {fmt_seconds(timeout_s)} s")
                why = getattr(timeout_s, "why", "")  # a ktui.core.timeouts.Limit says where it came from
                total = now - started
                what = (
                    f"timed out after {fmt_seconds(timeout_s)} s"
                    if deadline <= started + timeout_s  # nothing reported progress: the limit from the start
                    else f"timed out: nothing finished for {fmt_seconds(timeout_s)} s ({total:.0f} s in all)"
                )
                if now >= backstop:
                    limit = fmt_seconds(timeout_s)
                    what = (
                        f"timed out after {total:.0f} s in all ({IDLE_STEPS_CAP} times the limit of {limit} s)"
                        if in_all <= IDLE_STEPS_CAP * timeout_s
                        else f"timed out after {total:.0f} s in all (the most this call may take: "
                        f"{fmt_seconds(in_all)} s; the limit without progress: {limit} s)"
                    )
                at = f"; it was at {where}" if where else ""
                # the compiler imports the version, makes its dry call and compiles: any may hang (or crawl under
                # load); the judge runs the reference, never the kernel
                suspect = {
                    "compiler": "the version or its compile may hang, or be slow",
                    "judge": "the reference may hang, or be slow: the kernel is not the cause",
                }.get(self.role, "the kernel may hang")
                laid = re.search(r"\blayout=(\w+)", doing or "")
                if self.role == "candidate" and laid and laid.group(1) != "contiguous":
                    # new-user trial 24 F1: a segment sum that read its offsets as contiguous, given them with
                    # strides (2,), took a padding decoy for a segment's end and looped ~10**6 rows, in bounds
                    suspect += (
                        f"; the case's inputs are laid out {laid.group(1)}: a kernel that ignores an input's strides "
                        "reads other elements, or the layout's padding (decoy values), and a loop bound read there "
                        "can run for millions of trips"
                    )
                if now >= backstop and now < deadline:  # still finishing steps: slow, not hung (trial 22 F1)
                    # steps finished in this call: slow, not hung, even if the case under way sent heartbeats
                    # since (under load a case of many programs does); only heartbeats: one case that never ended
                    stepped = last_step is not None
                    since = now - (last_step if last_step is not None else deadline - timeout_s)
                    beat = (
                        f", and its kernels were running programs of the next case "
                        f"{now - (deadline - timeout_s):.0f} s ago"
                        if beating
                        else ""
                    )
                    suspect = (
                        f"slow, not hung: it was still finishing steps, the last {since:.0f} s ago{beat}; "
                        "fewer or smaller specs (fuzz, tests), bigger blocks, or a larger limit finish it"
                    )
                    if beating and not stepped:  # programs of one case, no case: a long case, or endless launches
                        suspect = (
                            "its kernels were still running programs in the interpreter, the last "
                            f"{now - (deadline - timeout_s):.0f} s ago, in a case that did not finish: a case too "
                            "large for the interpreter (bound the sizes with fuzz or tests) or launches in a loop "
                            "that does not end"
                        )
                raise WorkerTimeout(
                    f"{what} while running {doing} ({suspect}{at}); the "
                    f"{self.role} worker was restarted" + (f"\nthe limit: {why}" if why else "")
                ) from None
            except WorkerCrashed as exc:
                doing = self._doing
                self.restart(f"crashed during {method}" if not self._cancelled() else CANCELLED)
                if self._cancelled():  # killed by WorkerPool.cancel_run: not the kernel's doing
                    raise RunCancelled(self._cancel_message(doing or method)) from None
                raise type(exc)(f"{exc}\nthe {self.role} worker was restarted") from None
            if msg.get("id") != rid:
                continue  # a stale line from an earlier, abandoned request
            if "heartbeat" in msg:  # the interpreter finished a program of a long case: not hung
                deadline = time.monotonic() + timeout_s
                beating = True
                continue
            if "progress" in msg:
                case = msg["progress"].get("case") if isinstance(msg["progress"], dict) else None
                if case:
                    self._doing = f"{case} ({method})"
                else:  # a step finished: the limit starts again
                    deadline = last_step = time.monotonic()
                    deadline += timeout_s
                    beating = False
                if on_progress:
                    on_progress(msg["progress"])
                continue
            if "error" in msg:
                err = msg["error"]
                info = ErrorInfo(err.get("type", "Error"), err.get("message", ""), err.get("traceback", ""))
                if msg.get("restart"):
                    self.restart(msg.get("restart_reason", "the CUDA context is unusable"))
                raise RemoteError(info.one_line(), info, needs_gpu=str(err.get("needs_gpu") or ""))
            if msg.get("restart"):
                self.restart(msg.get("restart_reason", "asked to restart"))
            result: dict[str, Any] = msg.get("result", {})
            self.calls += 1
            self.timings = [*self.timings[-(TIMINGS_KEPT - 1) :], (self.calls, method, time.monotonic() - t0)]
            return result

    # -- plumbing ----------------------------------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None
        stdout = _stdout(proc)
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line, self._buf = self._buf[:nl], self._buf[nl + 1 :]
                if not line.strip():
                    continue
                try:
                    return decode(line)
                except ValueError:
                    continue  # not ours: cannot happen unless the channel was written by other code
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerTimeout("timed out")
            try:
                with selectors.DefaultSelector() as sel:
                    sel.register(stdout, selectors.EVENT_READ)
                    ready = sel.select(min(remaining, 0.5))
            except (ValueError, OSError):  # closed under us by kill() from another thread
                raise WorkerCrashed(f"the {self.role} worker was killed") from None
            if ready:
                try:
                    chunk = stdout.read(1 << 16)
                except BlockingIOError:
                    chunk = None
                except (ValueError, OSError):
                    raise WorkerCrashed(f"the {self.role} worker was killed") from None
                if chunk:
                    self._buf += chunk
                    continue
                if chunk == b"":  # EOF: the process is gone or going
                    try:
                        code = proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        code = None
                    raise self._died(code, proc)
            elif proc.poll() is not None:
                raise self._died(proc.returncode, proc)

    def _where_stuck(self, proc: WorkerHandle) -> str:
        """Where the kernel's own code is in ``proc``, a local worker past its time limit: it is sent ``SIGUSR1``
        (its ``faulthandler`` dumps every thread's stack to its log) and the dump read within ``STUCK_WAIT_S``;
        ``File "...", line N in name`` (``crash.stuck_frame``), '' for a remote worker, one already gone, or no
        frame of the kernel's in the dump."""
        sink = self._sink
        if not isinstance(proc, subprocess.Popen) or sink is None or proc.poll() is not None:
            return ""
        before = sink.total
        try:
            os.kill(proc.pid, signal.SIGUSR1)
        except OSError:
            return ""
        deadline = time.monotonic() + STUCK_WAIT_S
        while time.monotonic() < deadline:
            time.sleep(0.05)
            new = sink.total - before
            where = stuck_frame(sink.tail_text()[-new:]) if new > 0 else ""
            if where:
                return where
        return ""

    def _died(self, code: int | None, proc: WorkerHandle) -> WorkerCrashed:
        """The error for ``proc`` having ended with ``code``: ``WorkerLost`` when its transport lost it (``lost``),
        else ``WorkerCrashed``; the text is ``_crash_message``'s."""
        cls = WorkerLost if getattr(proc, "lost", "") else WorkerCrashed
        return cls(self._crash_message(code, proc))

    def _crash_message(self, code: int | None, proc: WorkerHandle) -> str:
        """``crash.crash_message`` for this worker's process ``proc``, which ended with ``code``, once its last
        output is in; ``crash.lost_message`` when its transport says the worker was lost (``proc.lost``: an SSH
        connection that dropped), not ended."""
        if self._sink is not None:
            self._sink.settle()
        lost = str(getattr(proc, "lost", "") or "")
        if lost:
            return lost_message(self.role, lost, self._doing, self.log_tail())
        foreign = tuple(getattr(proc, "foreign_dirs", ()) or ())
        return crash_message(self.role, self.device, code, self._doing, self.log_tail(), foreign)

    def log_tail(self) -> str:
        """The end of what the running (or last) process of this worker wrote to stderr and stdout, '' if nothing:
        its own output only, kept in memory (``logs.TAIL_BYTES``), whatever other processes wrote to the file."""
        return self._sink.tail_text() if self._sink is not None else ""

    @property
    def printed_bytes(self) -> int:
        """Bytes every process of this worker wrote to stderr and stdout so far (a kernel's ``print`` among
        them); the log file keeps only the last ``logs.LOG_CAP_BYTES`` or so of them."""
        return self._printed_before + (self._sink.total if self._sink is not None else 0)
