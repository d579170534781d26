"""The worker's own exception types, in one module that every handler can import (``server`` and ``candidate`` no
longer import each other for them). ``server.format_error`` turns each into the reply's ``error`` by its class."""

from __future__ import annotations

import os
from typing import NoReturn

# CUDA errors after which a process's CUDA context is lost, by their message (torch raises every CUDA error as
# AcceleratorError, also those a context survives: an invalid launch configuration, too many resources requested)
CONTEXT_LOST = (
    "illegal memory access",
    "illegal address",
    "unspecified launch failure",
    "device-side assert",
    "illegal instruction",
    "misaligned address",
)


# The CUDA errors of a memory fault: an access outside every allocation, or a misaligned one
MEMORY_FAULT = ("illegal memory access", "illegal address", "misaligned address")
MEMORY_FAULT_HINT = (
    "a memory fault on the GPU, which names no line: `ktui run <version> --device cpu` runs the same cases under "
    "the Triton interpreter, where ktui names the out-of-bounds load or store, its line and its tensor"
)


def _says(exc: BaseException, marks: tuple[str, ...]) -> bool:
    text = str(exc)
    return any(m in text for m in marks)


def loses_context(exc: BaseException) -> bool:
    """Whether ``exc``'s message is one of ``CONTEXT_LOST``'s: the CUDA context is gone, and any later CUDA call in
    this process (a synchronize) raises again."""
    return _says(exc, CONTEXT_LOST)


def is_memory_fault(exc: BaseException) -> bool:
    """Whether ``exc`` is a CUDA memory fault (``MEMORY_FAULT`` in its message): the kernel's, whatever the case's
    layout, and one that loses the CUDA context (nothing may touch the GPU after it in this process)."""
    return _says(exc, MEMORY_FAULT)


class KtuiCheckError(Exception):
    """One of ktui's own checks failed (not the kernel's or the reference's code raising): the message says it all,
    so the reply carries no traceback."""


class KernelError(KtuiCheckError):
    """The kernel module does not have what ktui needs (``custom_kernel``)."""


class ProblemError(KtuiCheckError):
    """The reference module is missing something or returned something unusable; the message says what."""


class SnapshotMissing(KtuiCheckError):
    """ktui's own copy of a source (``.ktui/snapshots/...``), which the worker imports, is gone: something deleted it
    during the run. Not the user's file: ktui takes the snapshot again (``Ladder``) and retries."""


def snapshot_missing(what: str) -> SnapshotMissing:
    """The error for a missing snapshot of ``what`` (``the reference``, ``the kernel version``); the message names
    no path (ktui shows snapshot paths as the user's own, which would read as the user's file missing)."""
    return SnapshotMissing(
        f"ktui's own snapshot of {what} (its copy under .ktui/snapshots/) is missing: something deleted it during "
        f"the run. Your file is not the problem; ktui takes the snapshot again"
    )


class CaseFailed(Exception):
    """A candidate call failed; the message names the spec and seed, ``__cause__`` is the kernel's exception."""


class KernelThreadEnded(RuntimeError):
    """The loop that runs ``custom_kernel`` (``ktui.worker.invoke.serve``, on the worker's main thread) ended without
    handing back a result or an exception: the kernel stopped it through ktui's own queue (``invoke.calls``)."""


def reraise_as_case(exc: BaseException, label: str) -> NoReturn:
    """Raise ``CaseFailed(label: Type: message)`` from a kernel's exception (KeyboardInterrupt passes through); a
    ``SystemExit`` reads ``label: the kernel called sys.exit(3)``."""
    if isinstance(exc, KeyboardInterrupt):
        raise exc
    if isinstance(exc, SystemExit):
        raise CaseFailed(f"{label}: the kernel called sys.exit({exc.code!r})") from exc
    if is_memory_fault(exc):  # torch's message is five lines of generic advice: the first says what happened
        first = str(exc).strip().splitlines()[0]
        raise CaseFailed(f"{label}: {type(exc).__name__}: {first} ({MEMORY_FAULT_HINT})") from exc
    raise CaseFailed(f"{label}: {type(exc).__name__}: {exc}{cause_text(exc)}") from exc


def cause_text(exc: BaseException) -> str:
    """What ``exc``'s message leaves out of its cause (``raise ... from``), as ``"\ncaused by Type: message"``
    (a bare ``assert``'s cause: the asserted source line and where it sits); '' when there is none or the message
    holds it already. Triton's ``CompilationError`` shows the kernel's source line only and hides why (on the H200,
    ``tl.dot(a, b, acc)`` of int8 tiles into an int32 accumulator: ``AssertionError`` at ``assert ...
    acc.type.element_ty == out_dtype`` in ``triton/language/semantic.py``; the message said nothing of it)."""
    import traceback

    cause = exc.__cause__
    if cause is None:
        return ""
    text = str(cause).strip()
    if not text:
        frames = traceback.extract_tb(cause.__traceback__)
        if frames:
            f = frames[-1]
            text = f"{(f.line or '').strip()} ({os.path.basename(f.filename)}:{f.lineno} in {f.name})"
    if text and text in str(exc):
        return ""
    return f"\ncaused by {type(cause).__name__}: {text}" if text else f"\ncaused by {type(cause).__name__}"
