"""What to say when a worker process died: how it ended, what it was running, where in the kernel, its last lines,
and the usual cause of that kind of death.

``crash_message`` builds the text of ``WorkerCrashed``: its first line stands alone (it is what a rung's one-line
summary shows), the rest is the kernel's frame and the worker's last lines, for the details pane and ``--json``.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import sysconfig
from pathlib import Path

TAIL_LINES = 12  # the worker's last lines quoted in a crash message
# What glibc's allocator prints when it finds its heap corrupted (then it aborts): the usual trace of a write past
# the end of a buffer, which under the Triton interpreter is a tl.store without (or with a wrong) mask.
HEAP_CORRUPTION = (
    "free(): invalid",
    "double free",
    "corrupted size",
    "corrupted double-linked list",
    "malloc(): ",
    "munmap_chunk(): invalid pointer",
)

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')
_KTUI_DIR = str(Path(__file__).resolve().parents[2]) + os.sep  # the ktui package: its frames are not the kernel's


def _library_dirs() -> tuple[str, ...]:
    """Folders of Python itself and of installed packages (torch, triton): frames there are not the kernel's."""
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(path)
    return tuple(sorted(os.path.join(d, "") for d in dirs))


_LIBRARY_DIRS = _library_dirs()


def describe_exit(code: int | None) -> str:
    """``exit code 3`` / ``signal SIGSEGV (segmentation fault)``."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        extra = {
            "SIGSEGV": " (segmentation fault)",
            "SIGKILL": " (killed)",
            "SIGABRT": " (aborted)",
            "SIGBUS": " (bus error)",
        }.get(name, "")
        return f"signal {name}{extra}"
    return f"exit code {code}"


def _top_frame(log_tail: str) -> str:
    """The file of the innermost Python frame of the crashing thread in a faulthandler dump (``Fatal Python error:
    Segmentation fault`` ... ``Current thread 0x... (most recent call first):`` then ``File "...", line N``), ''
    when the tail holds none."""
    start = log_tail.rfind("Fatal Python error")
    m = re.search(
        r'(?:Current thread|Thread) 0x[0-9a-f]+[^\n]*\(most recent call first\):\n\s+File "([^"]+)"',
        log_tail[start:] if start >= 0 else log_tail,
    )
    return m.group(1) if m else ""


def crash_hint(code: int | None, role: str, device: str, log_tail: str = "") -> str:
    """The usual cause of a worker dying with ``code`` (a negative signal number or an exit status), or ''.
    ``log_tail`` (the worker's last output) refines it: glibc's heap-corruption messages (``HEAP_CORRUPTION``)
    before a SIGABRT name an out-of-bounds store."""
    interpreter = device == "cpu" and role == "candidate"  # the only worker that runs launches in the interpreter
    if code is None:
        return ""
    if code == -signal.SIGABRT and any(s in log_tail for s in HEAP_CORRUPTION):
        where = "a tl.store without a mask (or with a wrong one)" if interpreter else "an out-of-bounds store"
        return (
            f"the allocator found its heap corrupted: a write past the end of a buffer, usually {where}; "
            "check the masks of the kernel's stores"
        )
    if code in (-signal.SIGSEGV, -signal.SIGBUS):
        top = _top_frame(log_tail)
        if interpreter and top and "triton" not in Path(top).parts:  # (new-user trial 25, F17: ctypes.string_at(0))
            return (
                f"a bad pointer in host code: the crash is in {Path(top).name}, not in a Triton launch (ctypes, a C "
                "extension, a driver call)"
            )
        if interpreter:
            return (
                "under the Triton interpreter this is usually an out-of-bounds tl.load or tl.store (a missing or "
                "wrong mask: the interpreter reads and writes host memory directly)"
            )
        return "a bad pointer: an out-of-bounds access in host code, a C extension or a driver call"
    if code == -signal.SIGABRT:
        return (
            "the process aborted: os.abort(), a failed check in C or C++ code (torch, Triton, the driver), or memory "
            "corruption detected by the allocator (an out-of-bounds store, often a missing mask)"
        )
    if code == -signal.SIGKILL:
        return "killed from outside the worker: the out-of-memory killer (an output or a buffer too large?)"
    if code == -signal.SIGFPE:
        return "an arithmetic fault in native code: an integer division by zero"
    if code == -signal.SIGILL:
        return "an illegal instruction in native code"
    if code > 0:
        return "the kernel (or code it called) ended the process: os._exit() (from any thread), exit() in C code"
    return ""


def kernel_frame(log_tail: str, foreign_dirs: tuple[str, ...] = ()) -> str:
    """The innermost frame of the kernel's own code in a Python fault dump (``faulthandler``'s ``File "...", line
    N in name`` lines of the crashing thread, most recent first), as ``File "...", line N in name``; '' when the
    log has none. Frames of ktui, of Python and of installed packages are not the kernel's, nor those under
    ``foreign_dirs`` (the remote host's ktui and Python, for a worker there)."""
    lines = log_tail.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("Current thread")), None)
    block = lines[start + 1 :] if start is not None else lines
    for ln in block:
        frame = _own_frame(ln, foreign_dirs)
        if frame is None:
            if start is not None and not ln.strip():
                break  # the end of the crashing thread's frames
            continue
        if frame:
            return frame
    return ""


def _own_frame(line: str, foreign_dirs: tuple[str, ...]) -> str | None:
    """A ``faulthandler`` dump's line as ``File "...", line N in name`` when it is a frame of the kernel's own code;
    '' for a frame of ktui, Python, installed packages or ``foreign_dirs``; None for a line that is no frame."""
    m = _FRAME.match(line)
    if m is None:
        return None
    if m["file"].startswith(("<", _KTUI_DIR, *_LIBRARY_DIRS, *foreign_dirs)):
        return ""
    return f'File "{m["file"]}", line {m["line"]} in {m["func"]}'


def stuck_frame(dump: str, foreign_dirs: tuple[str, ...] = ()) -> str:
    """Where the kernel's own code was in a ``faulthandler`` dump of every thread taken while it hung (the worker
    dumps on ``SIGUSR1``: ``ktui.worker.__main__``), as ``File "...", line N in name``; '' when no thread was in
    it. Unlike a crash, the kernel's thread need not be the "current" one (the signal lands on any thread), so every
    thread's frames are read, innermost first, skipping ktui's, Python's and installed packages' frames."""
    return next((frame for ln in dump.splitlines() if (frame := _own_frame(ln, foreign_dirs))), "")


def tail_lines(text: str, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` non-blank lines of ``text``, each cut to 300 characters (faulthandler's list of loaded
    extension modules left out: it names no cause)."""
    kept = [ln[:300] for ln in text.splitlines() if ln.strip() and not ln.startswith("Extension modules:")]
    # faulthandler dumps every thread; the kernel runs on its own thread (ktui.worker.invoke), so the idle main
    # thread's block would push the crashing thread's frames out of the tail: keep only the crashing thread's.
    out: list[str] = []
    skip = False
    for ln in kept:
        if ln.startswith("Thread 0x"):
            skip = True
            continue
        if ln.startswith("Current thread"):
            skip = False
        elif skip and ln.startswith("  File "):
            continue
        else:
            skip = False
        out.append(ln)
    return out[-lines:]


def crash_message(
    role: str, device: str, code: int | None, doing: str, log_tail: str, foreign_dirs: tuple[str, ...] = ()
) -> str:
    """The text of ``WorkerCrashed``: ``the candidate worker died (signal SIGSEGV (segmentation fault)) while
    running spec=(129,) seed=7: <hint>`` on its first line, then the kernel's frame and the worker's last lines.

    Args:
        role, device: the worker's (the hint depends on whether launches ran in the Triton interpreter).
        code: its exit status (``Popen.returncode``: negative for a signal), None when unknown.
        doing: what it was running (the method, and the case its last progress line named), '' when idle.
        log_tail: the end of what the process wrote to stderr and stdout.
        foreign_dirs: folders whose frames are not the kernel's besides this process's own (``kernel_frame``).
    """
    first = f"the {role} worker died ({describe_exit(code)})"
    if doing:
        first += f" while running {doing}"
    hint = crash_hint(code, role, device, log_tail)
    if hint:
        first += f": {hint}"
    parts = [first]
    frame = kernel_frame(log_tail, foreign_dirs)
    if frame:
        parts.append(f"in the kernel: {frame}")
    tail = tail_lines(log_tail)
    if tail:
        parts.append("the worker's last lines:\n" + "\n".join(tail))
    else:
        parts.append("the worker wrote nothing to stderr or stdout before it died")
    return "\n".join(parts)


def lost_message(role: str, lost: str, doing: str, log_tail: str) -> str:
    """The text of ``WorkerCrashed`` for a worker that was lost rather than ended (its transport's words in
    ``lost``: ``the SSH connection to gpu1 was lost: Connection reset by peer``): says nothing about the kernel.
    ``the candidate worker was lost while running execute: <lost>; ktui starts it again...``, then
    the worker's last lines."""
    first = f"the {role} worker was lost"
    if doing:
        first += f" while running {doing}"
    parts = [f"{first}: {lost}; ktui starts it again, reconnecting, for the next call (the kernel is not the cause)"]
    tail = tail_lines(log_tail)
    if tail:
        parts.append("the worker's last lines:\n" + "\n".join(tail))
    return "\n".join(parts)
