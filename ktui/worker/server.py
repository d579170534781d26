"""The worker's request loop: read a request, run its handler, write its result or its error."""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, BinaryIO

import torch

from ktui.protocol import decode, encode

# Messages of errors after which the CUDA context cannot be trusted: the worker must be replaced.
CUDA_FATAL = (
    "illegal memory access", "illegal address", "unspecified launch failure", "device-side assert",
    "illegal instruction", "misaligned address", "CUDA error", "CUDA_ERROR", "cudaError", "an illegal",
    "launch timed out", "uncorrectable ECC",
)


class CaseFailed(Exception):
    """A candidate call failed; the message names the spec and seed, ``__cause__`` is the kernel's exception."""


def device_info(device: str) -> dict[str, Any]:
    import triton

    info: dict[str, Any] = {"type": device, "torch": torch.__version__, "triton": triton.__version__}
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        info.update(name=p.name, capability=[p.major, p.minor], sm_count=p.multi_processor_count,
                    memory_gib=round(p.total_memory / 2**30, 1), interpreter=False)
    else:
        info.update(name="cpu", interpreter=True)
    return info


_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__))


def format_error(exc: BaseException) -> dict[str, str]:
    """type, message and traceback; for ``CaseFailed`` the traceback is the kernel's own exception's, without the
    worker's own frames at its top (the user's code is what matters)."""
    if type(exc).__name__ in ("KernelError", "ProblemError"):  # ktui's own checks: the message says it all
        return {"type": type(exc).__name__, "message": str(exc), "traceback": ""}
    shown = exc.__cause__ if isinstance(exc, CaseFailed) and exc.__cause__ else exc
    tb_obj = shown.__traceback__
    while tb_obj is not None and tb_obj.tb_next is not None and \
            os.path.dirname(os.path.abspath(tb_obj.tb_frame.f_code.co_filename)) == _ENGINE_DIR:
        tb_obj = tb_obj.tb_next
    tb = "".join(traceback.format_exception(type(shown), shown, tb_obj))
    etype = type(shown).__name__ if isinstance(exc, CaseFailed) else type(exc).__name__
    return {"type": etype, "message": str(exc), "traceback": tb[-12000:]}


class Server:
    def __init__(self, role: str, device: str, proto_in: BinaryIO, proto_out: BinaryIO):
        self.role = role
        self.device = device
        self.proto_in = proto_in
        self.proto_out = proto_out
        import triton  # noqa: F401 - imported once here so that every request finds it warm

        if role in ("candidate", "compiler"):
            from ktui.worker.candidate import Candidate

            self.handler = Candidate(device, cross=role == "compiler")
        else:
            from ktui.worker.judge import Judge

            self.handler = Judge(device)
        self.info = device_info(device)

    def send(self, msg: dict[str, Any]) -> None:
        self.proto_out.write(encode(msg))

    def hello(self, startup_s: float) -> None:
        self.send({"hello": {"role": self.role, "device": self.info, "startup_s": round(startup_s, 3),
                             "pid": os.getpid(), "python": sys.version.split()[0]}})

    def serve(self) -> None:
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
        rid, method, params = req.get("id"), req.get("method", ""), req.get("params", {})
        if method == "shutdown":
            return False
        fn = getattr(self.handler, "do_" + method, None)
        if fn is None:
            self.send({"id": rid, "error": {"type": "ValueError", "message": f"unknown method {method!r}"}})
            return True
        try:
            result = fn(params, lambda p: self.send({"id": rid, "progress": p}))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back as a result
            if isinstance(exc, KeyboardInterrupt):
                raise
            err = format_error(exc)
            fatal = self.device == "cuda" and _cuda_fatal(exc)
            msg: dict[str, Any] = {"id": rid, "error": err}
            if fatal:
                msg.update(restart=True, restart_reason="a CUDA error left the context unusable")
            elif isinstance(exc, SystemExit):
                msg["error"]["type"] = "SystemExit"
                msg["error"]["message"] = f"the kernel called sys.exit({exc.code!r})"
            self.send(msg)
            if fatal:
                os._exit(3)
            return True
        self.send({"id": rid, "result": result})
        return True


def _cuda_fatal(exc: BaseException) -> bool:
    chain = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 5:
        chain.append(e)
        e = e.__cause__ or e.__context__
    text = " ".join(f"{type(x).__name__} {x}" for x in chain)
    if any(s in text for s in CUDA_FATAL):
        return True
    try:
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - a sticky error shows up here
        return True
    return False
