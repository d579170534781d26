"""The structured outputs of ``ktui mcp``'s tools: what a client reads in ``structuredContent``.

The SDK publishes each tool's ``outputSchema`` from these TypedDicts and validates every reply against it. They are
``typing_extensions`` TypedDicts: pydantic (which the SDK validates with) refuses nested ``typing.TypedDict`` below
Python 3.12. Figures stay JSON objects (``figures``): their keys differ by rung (``specs``, ``launches``,
``kernels``...; ``ktui run --json`` writes the same ones beside each rung's fields). ``diff_versions`` returns
``ktui diff --json``'s data itself (``ktui.core.inspect.diff.DiffJson``).
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict


class VersionOut(TypedDict):
    """One version of a problem and its last stored verdict (``ktui status``'s fields).

    Attributes:
        version: ``v3``.
        kernel: its file, relative to the workspace (``kernels/softmax/v3.py``).
        verdict: ``✓ 1.23x``, ``✓ ok`` (passed on the CPU: no speedup), ``✗ correctness``, ``! reference``,
            ``· not run``...
        ok: every rung ok or skipped; None when it never ran.
        failed_rung: the first rung that failed, else None.
        speedup: the worst benchmark speedup over the reference (a GPU run), else None.
        stale: why the stored result is not about the files on disk ('' when it is).
        device: where it ran (``cpu (interpreter)``, ``cuda: NVIDIA H200 (sm_90)``), '' when it never ran.
    """

    version: str
    kernel: str
    verdict: str
    ok: bool | None
    failed_rung: str | None
    speedup: float | None
    stale: str
    device: str


class ProblemOut(TypedDict):
    """A problem: its reference file and its versions, in version order."""

    problem: str
    reference: str
    reference_error: str
    versions: list[VersionOut]


class ProblemsOut(TypedDict):
    """Every problem of the workspace."""

    workspace: str
    problems: list[ProblemOut]


class SourceOut(TypedDict):
    """A file read: ``path`` relative to the workspace, its text (cut at ``MAX_READ_CHARS``), its sha256."""

    path: str
    text: str
    sha256: str
    truncated: bool


class WriteOut(TypedDict):
    """A version written: its name and file, whether it is new, the unified diff against what it replaced (or the
    version it was derived from) and the lines it adds and removes."""

    problem: str
    version: str
    path: str
    new_file: bool
    diff: str
    added: int
    removed: int


class ErrorOut(TypedDict):
    """A failed rung's exception: type, message, and the end of its traceback (``TRACEBACK_CHARS`` at most)."""

    type: str
    message: str
    traceback: str


class RungOut(TypedDict):
    """One rung of a run.

    Attributes:
        name: compile, run, correctness, benchmark, dumps or profile.
        status: ``ok``, ``FAILED`` or ``skipped``.
        ok: not failed (a skipped rung is ok).
        seconds: the rung's wall time in ktui's process, s.
        summary: its figures in one line (for a skipped rung, why; for a rung failed by an exception, the error's
            first line).
        figures: the rung's own figures (JSON values).
        error: the exception of a failed rung, else None.
        warnings: what is worth a look without failing it.
    """

    name: str
    status: str
    ok: bool
    seconds: float
    summary: str
    figures: dict[str, Any]
    error: ErrorOut | None
    warnings: list[str]


class RunOut(TypedDict):
    """A ladder run on one version (``run_ladder``, ``profile``).

    Attributes:
        key: ``problem/version``.
        ok: every rung that ran is ok or skipped.
        verdict: as ``ktui status`` shows it (``✓ ok``, ``✗ correctness``...).
        failed_rung: the first failed rung, else None.
        device: where it ran (``cpu (interpreter)``: not a GPU verdict).
        seconds: the whole ladder, s.
        source_sha256: the hash of the version's source as it ran.
        rungs: every rung that ran, in ladder order.
        report: the result as ktui's own agent reads it (a line per rung, trimmed tracebacks, failed specs).
    """

    key: str
    problem: str
    version: str
    kernel: str
    ok: bool
    verdict: str
    failed_rung: str | None
    device: str
    seconds: float
    source_sha256: str
    rungs: list[RungOut]
    report: str


class SearchOut(TypedDict):
    """The context index's ranked hits as text (``N. path:line [kind symbol]`` and a snippet): cite path:line."""

    query: str
    text: str
