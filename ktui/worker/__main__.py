"""Entry point of a worker process: ``python -m ktui.worker --role candidate|judge --device cpu|cuda``.

Order matters here: the protocol channel is taken off stdout before anything else can print, the Triton interpreter
is switched on before triton is imported, and torch is imported once, before the hello. In the candidate and the
compiler, the main thread then runs the kernel's code (``ktui.worker.invoke.serve``) and a second thread the
requests; the judge, which runs no kernel code, serves its requests on the main thread.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys
import tempfile
import threading
import time
from typing import BinaryIO


def _take_channel() -> tuple[BinaryIO, BinaryIO]:
    """Move the protocol to private file descriptors: stdout (fd 1) then points at stderr, stdin at /dev/null, so
    neither a ``print`` nor an ``input()`` in candidate code can touch the channel."""
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    return proto_in, proto_out


def main() -> None:
    """Take the channel, set up the device's environment, import torch, say hello, serve until told to stop."""
    t0 = time.perf_counter()
    parser = argparse.ArgumentParser(prog="python -m ktui.worker")
    parser.add_argument("--role", choices=("candidate", "judge", "compiler"), required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    args = parser.parse_args()
    proto_in, proto_out = _take_channel()

    from ktui.protocol import encode

    if args.device == "cpu":
        # The compiler compiles for sm_90a and must see real JITFunctions; the others run the Triton interpreter.
        if args.role == "compiler":
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = "1"
        os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    # CuTeDSL writes the PTX and cubin it is asked to keep (the dumps rung) into the working directory, which is
    # the user's workspace: send them to a private folder instead (ktui reads them from the compiled object).
    os.environ.setdefault("CUTE_DSL_DUMP_DIR", os.path.join(tempfile.gettempdir(), f"ktui-cute-dsl-{os.getuid()}"))
    # CuTeDSL keeps the PTX and cubin only when that folder exists (otherwise its artifacts hold the paths it meant
    # to write, and the dumps rung kept those paths instead of the code).
    os.makedirs(os.environ["CUTE_DSL_DUMP_DIR"], exist_ok=True)
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, stated so it does not warn
    try:
        import torch
    except ImportError as exc:
        proto_out.write(encode({"fatal": f"the worker cannot import torch: {exc}"}))
        sys.exit(2)
    if args.device == "cuda" and not torch.cuda.is_available():
        proto_out.write(encode({"fatal": "--device cuda, but torch.cuda.is_available() is False on this machine"}))
        sys.exit(2)

    # Where a hanging kernel is: ktui sends SIGUSR1 before it kills a worker past its time limit, and every
    # thread's Python stack goes to stderr (the worker's log), which names the kernel's line in the timeout.
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)

    from ktui.worker.server import Server

    server = Server(args.role, args.device, proto_in, proto_out)
    server.hello(startup_s=time.perf_counter() - t0)
    if args.role == "judge":  # runs no kernel code: its requests on this thread
        server.serve()
        _end(0)
    # The kernel's code runs on this, the main thread, as a user's script runs it (ktui.worker.invoke); requests are
    # read on a second thread, which hands each stretch of calls over and waits for it.
    from ktui.worker import invoke

    failed: list[BaseException] = []

    def requests() -> None:
        try:
            server.serve()
        except BaseException as exc:
            failed.append(exc)
            raise
        finally:
            invoke.stop()

    invoke.serve(then=threading.Thread(target=requests, name="ktui-requests", daemon=True).start)
    _end(1 if failed else 0)


def _end(code: int) -> None:
    """End the process at once once told to stop (or once ktui went away): the standard streams flushed, then
    ``os._exit``. The interpreter's own finalization with torch and triton loaded took 1.3 to 3.8 s per worker on
    2 busy cores (2026-12-06), past ``WorkerClient.stop``'s 3 s grace, so every quit waited for it and then killed
    them; nothing of a worker's needs it (no atexit hook, no temporary folder: the outputs are written and closed
    with each reply, the CUDA driver frees the context with the process)."""
    for stream in (sys.stdout, sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    try:  # and C's stdio buffers (an extension's printf), which os._exit does not flush
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass
    os._exit(code)


if __name__ == "__main__":
    main()
