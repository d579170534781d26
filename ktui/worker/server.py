"""The worker's request loop: read a request, run its handler, write its result or its error.

Requests are dispatched through a table built once from ``ktui.protocol.METHODS``: a role serves exactly the methods
listed for it there, each by its role class's ``do_<method>(params, progress)`` (``Candidate`` for the candidate and
the compiler, ``Judge`` for the judge). A name that is not in the table is answered with an error, never looked up
on the handler.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any, BinaryIO

import torch

from ktui.protocol import METHODS, REFERENCE_ERROR, DeviceInfo, ErrorReply, Progress, decode, encode, methods_of
from ktui.worker import capture, heartbeat
from ktui.worker.errors import CONTEXT_LOST, CaseFailed, KernelThreadEnded, KtuiCheckError, ProblemError

Handler = Callable[[Any, Callable[[Progress], None]], Any]  # do_<method>(params, progress) -> reply

# Messages of errors after which the CUDA context cannot be trusted: the worker must be replaced.
CUDA_FATAL = (
    *CONTEXT_LOST,
    "CUDA error",
    "CUDA_ERROR",
    "cudaError",
    "an illegal",
    "launch timed out",
    "uncorrectable ECC",
)


def device_info(device: str) -> DeviceInfo:
    """The device this worker serves, for its hello: name, versions, capability, SM count, memory."""
    import triton

    info: DeviceInfo = {
        "type": device,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "cutedsl": _dist_version("nvidia-cutlass-dsl"),
    }
    if device == "cuda":
        info.update(nvml_facts(torch.cuda.current_device()))
        p = torch.cuda.get_device_properties(0)
        info.update(
            {
                "name": p.name,
                "capability": [p.major, p.minor],
                "sm_count": p.multi_processor_count,
                "memory_gib": round(p.total_memory / 2**30, 1),
                "interpreter": False,
            }
        )
    else:
        info.update({"name": "cpu", "interpreter": True})
    return info


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def nvml_facts(index: int) -> DeviceInfo:
    """The driver version, the GPU's UUID (which of several identical GPUs it is: the Ray engine's results name it)
    and the SM and memory clocks (MHz) of GPU ``index`` from NVML (``libnvidia-ml.so.1``, which the driver installs),
    read through ctypes: ``{}`` where NVML is missing or a call fails (the fingerprint then lacks them; nothing else
    depends on them). NVML numbers devices as the driver does: with CUDA_VISIBLE_DEVICES set, the CUDA index is
    mapped through it. API: NVML reference, nvmlSystemGetDriverVersion, nvmlDeviceGetUUID, nvmlDeviceGetClockInfo
    and nvmlDeviceGetMaxClockInfo (nvmlClockType_t: 0 graphics, 1 SM, 2 memory)."""
    import ctypes

    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        if nvml.nvmlInit_v2() != 0:
            return {}
    except (OSError, AttributeError):
        return {}
    out: DeviceInfo = {}
    try:
        buf = ctypes.create_string_buffer(96)
        if nvml.nvmlSystemGetDriverVersion(buf, 96) == 0:
            out["driver"] = buf.value.decode(errors="replace")
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        physical = int(ids[index]) if index < len(ids) and ids[index].isdigit() else index
        handle = ctypes.c_void_p()
        if nvml.nvmlDeviceGetHandleByIndex_v2(physical, ctypes.byref(handle)) == 0:
            if nvml.nvmlDeviceGetUUID(handle, buf, 96) == 0:
                out["uuid"] = buf.value.decode(errors="replace")
            mhz = ctypes.c_uint()
            if nvml.nvmlDeviceGetClockInfo(handle, 1, ctypes.byref(mhz)) == 0:
                out["sm_clock_mhz"] = int(mhz.value)
            if nvml.nvmlDeviceGetMaxClockInfo(handle, 1, ctypes.byref(mhz)) == 0:
                out["sm_clock_max_mhz"] = int(mhz.value)
            if nvml.nvmlDeviceGetMaxClockInfo(handle, 2, ctypes.byref(mhz)) == 0:
                out["mem_clock_max_mhz"] = int(mhz.value)
    except (OSError, AttributeError, ValueError):
        pass
    finally:
        try:
            nvml.nvmlShutdown()
        except (OSError, AttributeError):
            pass
    return out


_WORKER_DIR = os.path.dirname(os.path.abspath(__file__))


def format_error(exc: BaseException) -> ErrorReply:
    """type, message and traceback; for ``CaseFailed`` the traceback is the kernel's own exception's, without the
    worker's own frames at its top (the user's code is what matters); for ktui's own checks (``KernelError``,
    ``ProblemError``) no traceback: the message says it all.

    The reference is blamed, never the version, when its own code raised (``problem.ReferenceRaised``: the type of
    the reference's exception, ``reference error (<file>:<line> in <function>): ...`` and the reference's frames) or
    it lacks what ktui needs (``ProblemError``: ``reference error: ...``); the core tells these apart by that prefix
    (``ktui.core.report.is_reference_error``), so a kernel's own message that starts the same way is prefixed with
    its type."""
    if isinstance(exc, ProblemError):
        cause = exc.__cause__
        if cause is not None and hasattr(exc, "traceback_text"):  # problem.ReferenceRaised
            return {"type": type(cause).__name__, "message": str(exc), "traceback": str(exc.traceback_text)}
        msg = str(exc)
        return {
            "type": "ProblemError",
            "message": msg if msg.startswith(REFERENCE_ERROR) else f"{REFERENCE_ERROR}: {msg}",
            "traceback": "",
        }
    if isinstance(exc, KtuiCheckError):
        return {"type": type(exc).__name__, "message": str(exc), "traceback": ""}
    shown = exc.__cause__ if isinstance(exc, CaseFailed) and exc.__cause__ else exc
    if isinstance(shown, KernelThreadEnded):  # no frame of the kernel's to show: the message says what happened
        return {"type": type(shown).__name__, "message": str(exc), "traceback": ""}
    tb_obj = shown.__traceback__
    while (
        tb_obj is not None
        and tb_obj.tb_next is not None
        and os.path.dirname(os.path.abspath(tb_obj.tb_frame.f_code.co_filename)) == _WORKER_DIR
    ):
        tb_obj = tb_obj.tb_next
    te = traceback.TracebackException(type(shown), shown, tb_obj)
    _without_worker_frames(te)
    tb = "".join(te.format())
    etype = type(shown).__name__ if isinstance(exc, CaseFailed) else type(exc).__name__
    message = str(exc)
    if message.lstrip().lower().startswith(REFERENCE_ERROR):  # only the reference's own errors read that way
        message = f"{etype}: {message}"
    return {"type": etype, "message": message, "traceback": tb[-12000:]}


def _without_worker_frames(te: traceback.TracebackException) -> None:
    """Drop the worker's own frames (``_WORKER_DIR``) from ``te`` and every exception it was raised from, in place,
    where any other frame is left: between a kernel's launch and its error the interpreter's hooks
    (``capture.interp_run``, ``interp_bounds.call``) read as noise to a user (new-user trial 26, F12)."""
    seen: set[int] = set()
    cur: traceback.TracebackException | None = te
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        kept = [f for f in cur.stack if os.path.dirname(os.path.abspath(f.filename)) != _WORKER_DIR]
        if kept and len(kept) < len(cur.stack):
            cur.stack = traceback.StackSummary.from_list(kept)
        cur = cur.__cause__ or cur.__context__


JUDGE_FAULT = "ktui's judge failed"


def judge_fault(message: str) -> str:
    """The message of an exception the judge raised in ktui's own code: the judge runs no kernel code, and the
    reference's own exceptions arrive as ``ReferenceRaised``, so neither the version nor the reference is to blame
    (red team round 20 F2: torch's missing float8 comparison on the CPU read as the version's compile error)."""
    return f"{JUDGE_FAULT} (ktui's own code, not the kernel's or the reference's; please report it): {message}"


def dispatch_table(role: str, handler: object) -> dict[str, Handler]:
    """method name -> bound ``do_<method>`` of ``handler`` for every method ``METHODS`` lists for ``role`` (except
    ``shutdown``, which the loop itself serves).

    Raises:
        TypeError: the handler lacks one of its role's methods (a protocol entry without an implementation).
    """
    table: dict[str, Handler] = {}
    for name in methods_of(role):
        if name == "shutdown":
            continue
        fn = getattr(handler, f"do_{name}", None)
        if not callable(fn):
            raise TypeError(f"{type(handler).__name__} has no do_{name} for the {role} role's {name!r}")
        table[name] = fn
    return table


def unknown_method(role: str, method: str) -> ErrorReply:
    """The error for a request the role does not serve."""
    if method in METHODS:
        return {"type": "ValueError", "message": f"unknown method {method!r} for the {role} worker"}
    return {"type": "ValueError", "message": f"unknown method {method!r}"}


class Server:
    """One worker's request loop over its protocol channel (``proto_in``/``proto_out``, private file descriptors)."""

    def __init__(self, role: str, device: str, proto_in: BinaryIO, proto_out: BinaryIO):
        self.role = role
        self.device = device
        self.proto_in = proto_in
        self.proto_out = proto_out
        self._send_lock = threading.Lock()
        import triton  # noqa: F401 - imported once here so that every request finds it warm

        self.handler: object
        if role in ("candidate", "compiler"):  # each role imports only its own handler module
            from ktui.worker.candidate import Candidate

            self.handler = Candidate(device, cross=role == "compiler")
        else:
            from ktui.worker.judge import Judge

            self.handler = Judge(device)
        self.table = dispatch_table(role, self.handler)
        self.info = device_info(device)

    def send(self, msg: dict[str, Any]) -> None:
        """Write one protocol line (whole: the kernel's thread sends heartbeats beside the handler's lines)."""
        line = encode(msg)
        with self._send_lock:
            self.proto_out.write(line)

    def hello(self, startup_s: float) -> None:
        """Say the worker is ready (``protocol.Hello``)."""
        self.send(
            {
                "hello": {
                    "role": self.role,
                    "device": self.info,
                    "startup_s": round(startup_s, 3),
                    "pid": os.getpid(),
                    "python": sys.version.split()[0],
                }
            }
        )

    def serve(self) -> None:
        """Serve requests until ``shutdown`` or the end of the input (ktui went away)."""
        buf = b""
        while True:
            chunk = self.proto_in.read(1 << 16)
            if not chunk:
                return  # ktui went away
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    if not self.handle(decode(line)):
                        return

    def handle(self, req: dict[str, Any]) -> bool:
        """Run one request and send its reply. Returns False for ``shutdown``. A CUDA error that leaves the context
        unusable is replied with ``restart`` and ends the process (exit code 3)."""
        rid, method, params = req.get("id"), req.get("method", ""), req.get("params", {})
        if method == "shutdown":
            return False
        fn = self.table.get(method)
        if fn is None:
            self.send({"id": rid, "error": unknown_method(self.role, method)})
            return True
        cwd = os.getcwd()
        capture.take_needs_gpu()  # nothing left over from an earlier request
        heartbeat.sending(lambda: self.send({"id": rid, "heartbeat": True}))  # the interpreter's programs
        try:
            try:
                result = fn(params, lambda p: self.send({"id": rid, "progress": p}))
            finally:
                heartbeat.sending(None)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            restore_cwd(cwd)
            err = format_error(exc)
            needs_gpu = capture.take_needs_gpu()
            if needs_gpu and self.device != "cuda":
                err["needs_gpu"] = needs_gpu
            fatal = self.device == "cuda" and _cuda_fatal(exc)
            msg: dict[str, Any] = {"id": rid, "error": err}
            if fatal:
                msg.update(restart=True, restart_reason="a CUDA error left the context unusable")
            elif isinstance(exc, SystemExit):
                msg["error"]["type"] = "SystemExit"
                msg["error"]["message"] = f"the kernel called sys.exit({exc.code!r})"
            elif self.role == "judge" and not isinstance(exc, (ProblemError, KtuiCheckError, CaseFailed)):
                msg["error"]["message"] = judge_fault(msg["error"]["message"])
            self.send(msg)
            if fatal:
                os._exit(3)
            return True
        moved = restore_cwd(cwd)
        if moved and isinstance(result, dict) and isinstance(result.get("warnings"), list):
            result["warnings"].append(moved)
        needs_gpu = capture.take_needs_gpu()
        if needs_gpu and self.device != "cuda" and isinstance(result, dict):
            result["needs_gpu"] = needs_gpu  # the kernel caught it: its outputs are not the CuTeDSL kernel's
        self.send({"id": rid, "result": result})
        return True


def restore_cwd(cwd: str) -> str:
    """Change back to ``cwd`` when the request's code (a kernel's ``os.chdir``) moved the process elsewhere; the
    warning to report, '' when nothing moved. Relative paths in the worker and in later calls keep meaning what
    they meant (every request's paths are absolute, so the checks themselves never depended on it)."""
    try:
        now = os.getcwd()
    except OSError:  # the directory it moved to was deleted
        now = "(a deleted directory)"
    if now == cwd:
        return ""
    os.chdir(cwd)
    return f"the kernel changed the working directory to {now} (os.chdir); ktui changed it back after the call"


def _cuda_fatal(exc: BaseException) -> bool:
    """The exception (or its causes) says the CUDA context is broken, or a synchronize now fails."""
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 5:
        chain.append(e)
        e = e.__cause__ or e.__context__
    text = " ".join(f"{type(x).__name__} {x}" for x in chain)
    if any(s in text for s in CUDA_FATAL):
        return True
    try:
        torch.cuda.synchronize()
    except Exception:
        return True
    return False
