"""Results of the rung ladder: plain data, JSON in and out, and the one-line text form.

A rung reports ``ok`` with its figures, ``FAILED`` with the error, or ``skipped`` with the reason (a benchmark on the
CPU, say). Figures are JSON values: the TUI, ``ktui run --json`` and session logs all read the same dicts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, NotRequired, TypedDict, cast

from ktui.protocol import REFERENCE_ERROR, json_float, json_safe  # noqa: F401 - results are read with them


@dataclass(frozen=True)
class RungSpec:
    """One rung of the ladder, as every front end sees it.

    Attributes:
        name: the rung's name (``--rungs`` takes these).
        needs: the rungs that must have run first in the same ladder.
        stops_ladder: a failure of this rung stops the ladder (nothing after it can mean anything).
        default: climbed by a plain run; the others run only when asked for (``--rungs profile``, ``p``).
        what: one line for ``--help``, the README table and the TUI.
    """

    name: str
    needs: tuple[str, ...]
    stops_ladder: bool
    default: bool
    what: str


# Every rung, in ladder order: the runner, the CLI, the TUI and ``--rungs`` read this table and nothing else.
RUNGS: tuple[RungSpec, ...] = (
    RungSpec(
        "compile",
        (),
        True,
        True,
        "import the version and compile every launch of one dry call (for sm_90a without a GPU)",
    ),
    RungSpec("run", ("compile",), True, True, "call custom_kernel on every case: times, or how it raised or died"),
    RungSpec(
        "correctness",
        ("compile", "run"),
        False,
        True,
        "compare every output with the float64 reference, over seeds, distributions and layouts",
    ),
    RungSpec(
        "benchmark",
        ("compile",),
        False,
        True,
        "CUDA-event timing with integrity checks, against the reference and the roofline (GPU only)",
    ),
    RungSpec(
        "dumps",
        ("compile",),
        False,
        True,
        "keep the IRs, PTX, cubin and SASS of the timed launch: registers, spills, instruction mix",
    ),
    RungSpec("profile", ("compile",), False, False, "Nsight Compute on one call after warm-up (GPU only)"),
    RungSpec(
        "trace",
        ("compile",),
        False,
        False,
        "time the ktui.trace regions of one call per warp and CTA: imbalance, critical path, timeline (GPU only)",
    ),
)
RUNG_SPECS: dict[str, RungSpec] = {r.name: r for r in RUNGS}
RUNG_ORDER: tuple[str, ...] = tuple(r.name for r in RUNGS)
DEFAULT_RUNGS: tuple[str, ...] = tuple(r.name for r in RUNGS if r.default)
STOPPING_RUNGS: frozenset[str] = frozenset(r.name for r in RUNGS if r.stops_ladder)


def expand_rungs(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The named rungs plus what they need, in ladder order.

    Raises:
        ValueError: an unknown rung name.
    """
    unknown = [n for n in names if n not in RUNG_SPECS]
    if unknown:
        raise ValueError(f"unknown rung(s) {', '.join(unknown)}; rungs: {', '.join(RUNG_ORDER)}")
    wanted = set(names)
    for n in names:
        wanted |= set(RUNG_SPECS[n].needs)
    return tuple(r for r in RUNG_ORDER if r in wanted)


class Status(str, Enum):
    OK = "ok"
    FAILED = "FAILED"
    SKIPPED = "skipped"


class ErrorJson(TypedDict):
    """A failed rung's exception.

    Attributes:
        type: the exception's class name (``CompilationError``, ``RunCancelled``, ``WorkerCrashed``...).
        message: its message; for a crash, how the worker died and the usual cause.
        traceback: the traceback, trimmed to the kernel's own frames ('' when there is none to show).
    """

    type: str
    message: str
    traceback: str


class RungJson(TypedDict):
    """One rung of a run. Beside these keys sit the rung's own figures (``ktui.core.figures``: ``specs``,
    ``launches``, ``kernels``...; a skipped rung's ``reason``).

    Attributes:
        name: the rung: compile, run, correctness, benchmark, dumps or profile.
        ok: not failed (a skipped rung is ok).
        status: ``ok``, ``FAILED`` or ``skipped``.
        seconds: how long the rung took, wall clock in ktui's process, s.
        summary: its figures in one line; for a skipped rung, why; for a rung failed by an exception, the error's
            first line (``Type: message``).
        error: the exception of a failed rung.
        warnings: what is worth a look without failing the rung (spills, a slow host path...).
    """

    name: str
    ok: bool
    status: str
    seconds: float
    summary: str
    error: NotRequired[ErrorJson]
    warnings: NotRequired[list[str]]


class LadderJson(TypedDict):
    """One version's ladder: what identifies the run and every rung that ran (a stored result has this form too,
    in ``.ktui/results/``).

    Attributes:
        problem: the problem (``references/<problem>.py``).
        version: the version (``v3``).
        kernel: the version's file, relative to the workspace.
        device: where the candidate ran: ``type`` (``cpu``/``cuda``), ``interpreter`` (true under the Triton
            interpreter: no GPU verdict), on a GPU ``name``, ``capability``, and the versions of torch and Triton.
        ok: every rung that ran is ok or skipped.
        source_sha256: the hash of the version's source as it ran.
        reference_sha256: the hash of the reference as it ran.
        started_at: when the run began, seconds since the epoch.
        seconds: the whole ladder, s.
        rungs: the rungs that ran, in ladder order (a failed compile or run is the last).
        last_verdict: only on a result without a correctness verdict (only compiled: ``ktui diff``, ``--rungs
            dumps``) that followed one with a verdict: that earlier verdict, kept (absent otherwise).
        carried_from: only on a verdict no run of this version made: a save gave it the source another version
            (named here) had already run to a verdict with the same reference (``n`` copies a version), so that run's
            result stands for it (absent otherwise).
        helpers_sha256: only for a version that imports helper modules of its folder (``common.py``): each one's
            sha256 as it ran, by module name; its verdict is stale once one changes.
    """

    problem: str
    version: str
    kernel: str
    device: dict[str, Any]
    ok: bool
    source_sha256: str
    reference_sha256: str
    started_at: float
    seconds: float
    rungs: list[RungJson]
    last_verdict: NotRequired[LastVerdictJson]
    carried_from: NotRequired[str]
    helpers_sha256: NotRequired[dict[str, str]]


class LastVerdictJson(TypedDict):
    """The verdict of an earlier run, kept on a result that has none of its own.

    Attributes:
        verdict: as it was shown (``✗ run``, ``✓ ok``, ``◌ needs a GPU``, ``! reference``).
        ok: no rung of that run failed.
        failed_rung: the first rung that failed, null when none did.
        summary: the failed rung's summary (its first line), '' when none failed.
        source_sha256: the hash of the version's source that run judged.
        reference_sha256: the hash of the reference it ran with.
        started_at: when that run began, seconds since the epoch.
        device: where it ran (``LadderJson``'s ``device``).
    """

    verdict: str
    ok: bool
    failed_rung: str | None
    summary: str
    source_sha256: str
    reference_sha256: str
    started_at: float
    device: dict[str, Any]


@dataclass(frozen=True)
class LastVerdict:
    """The verdict of an earlier run of a version, kept on a later result that has no correctness verdict (the
    version was only compiled since, by ``ktui diff`` or ``--rungs dumps``), so that verdict does not vanish: shown
    as the last verdict, stale when its ``source_sha256`` or ``reference_sha256`` is not the files' on disk. Fields
    as ``LastVerdictJson``."""

    verdict: str
    ok: bool
    failed_rung: str | None
    summary: str
    source_sha256: str
    reference_sha256: str
    started_at: float
    device: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> LastVerdictJson:
        return {
            "verdict": self.verdict,
            "ok": self.ok,
            "failed_rung": self.failed_rung,
            "summary": self.summary,
            "source_sha256": self.source_sha256,
            "reference_sha256": self.reference_sha256,
            "started_at": self.started_at,
            "device": self.device,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> LastVerdict:
        return cls(
            verdict=str(d.get("verdict", "")),
            ok=bool(d.get("ok", False)),
            failed_rung=d.get("failed_rung"),
            summary=str(d.get("summary", "")),
            source_sha256=str(d.get("source_sha256", "")),
            reference_sha256=str(d.get("reference_sha256", "")),
            started_at=float(d.get("started_at", 0.0)),
            device=dict(d.get("device") or {}),
        )


@dataclass
class ErrorInfo:
    """An exception from a rung: its type, message and (trimmed) traceback."""

    type: str
    message: str
    traceback: str = ""

    def one_line(self) -> str:
        """The first line of the message, prefixed by the type unless the message already names it. A Triton
        ``CompilationError``'s first line is only where (``at 2:11:``; the source line and a caret follow, the
        cause last): its cause is added, ``CompilationError: at 2:11: arange's range must be a power of 2``."""
        msg = self.message.strip().splitlines()
        if not msg:
            return self.type
        first = msg[0] if f"{self.type}:" in msg[0] else f"{self.type}: {msg[0]}"
        if _WHERE_ONLY.search(msg[0]):
            caret = next((i for i, line in enumerate(msg) if _CARET.match(line)), None)
            rest = [ln.strip() for ln in msg[caret + 1 if caret is not None else 1 :] if ln.strip()]
            if rest:
                first += f" {rest[0]}"
        return first


_WHERE_ONLY = re.compile(r"\bat \d+:\d+:\s*$")  # Triton's CompilationError: "at LINE:COL:" and nothing else
_CARET = re.compile(r"^\s*\^+\s*$")  # the caret under the source line


@dataclass
class RungResult:
    """What one rung reported for one version.

    Attributes:
        name: the rung (a name of ``RUNGS``).
        status: ``ok``, ``FAILED`` or ``skipped``.
        seconds: how long the rung took, wall clock, in ktui's process.
        summary: the figures in one line, e.g. ``worst=(1, 129) max_abs_err=2.4e-07 ...``; for a skipped rung, why.
        figures: the rung's own figures as JSON values (``specs``, ``launches``, ``kernels``...); ``--json``
            writes them beside the fields above.
        error: the exception of a failed rung (type, message, trimmed traceback), else None.
        warnings: things worth a look that do not fail the rung (spills, a slow host path...).
    """

    name: str
    status: Status
    seconds: float = 0.0
    summary: str = ""
    figures: dict[str, Any] = field(default_factory=dict)
    error: ErrorInfo | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True unless the rung failed (a skipped rung is not a failure)."""
        return self.status is not Status.FAILED

    def line(self) -> str:
        """``[name] ok  summary`` / ``[name] FAILED message`` / ``[name] skipped reason``."""
        text = self.summary or (self.error.one_line() if self.error else "")
        sep = "  " if self.status is Status.OK else " "
        return f"[{self.name}] {self.status.value}{sep}{text}".rstrip()

    def to_json(self) -> RungJson:
        """The rung as ``ktui run --json`` and the result store write it: its fields, then its figures beside them."""
        head: RungJson = {
            "name": self.name,
            "ok": self.ok,
            "status": self.status.value,
            "seconds": round(self.seconds, 4),
            # a rung failed by an exception has no figures: its error's line (new-user trial 30, F18: ``jq '.data.
            # rungs[] | {name, status, summary}'`` showed nothing for the one rung that failed)
            "summary": self.summary or (self.error.one_line() if self.error else ""),
        }
        d: dict[str, Any] = {**head, **json_safe(self.figures)}
        if self.error:
            d["error"] = ErrorJson(type=self.error.type, message=self.error.message, traceback=self.error.traceback)
        if self.warnings:
            d["warnings"] = list(self.warnings)
        return cast(RungJson, d)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RungResult:
        reserved = {"name", "ok", "status", "seconds", "summary", "error", "warnings"}
        return cls(
            name=d["name"],
            status=Status(d["status"]),
            seconds=d.get("seconds", 0.0),
            summary=d.get("summary", ""),
            figures={k: v for k, v in d.items() if k not in reserved},
            error=ErrorInfo(**d["error"]) if d.get("error") else None,
            warnings=list(d.get("warnings", [])),
        )


@dataclass
class LadderResult:
    """Every rung that ran for one version, with what identifies the run (source hashes, device).

    Attributes:
        problem: the problem's name (``references/<problem>.py``).
        version: the version's name (``v3``).
        kernel: the version's file, relative to the workspace (``kernels/softmax/v3.py``).
        device: the candidate worker's device: ``type`` (``cpu``/``cuda``), and on a GPU ``name`` and
            ``capability``; ``interpreter`` True under the Triton interpreter.
        rungs: the rungs that ran, in ladder order (a stopping rung that failed is the last).
        source_sha256: the hash of the version's source as it ran (its snapshot).
        reference_sha256: the hash of the reference as it ran.
        started_at: when the run began (``time.time()``).
        seconds: how long the whole ladder took.
        last_verdict: on a result without a verdict (``has_verdict`` False: only compiled), the verdict of the
            version's last run that had one (``ktui.core.ladder.runner.merge`` keeps it), else None.
        carried_from: the version whose run this result is, when a save gave this version the very source (and
            reference) that version had run to a verdict (``carried``), else None: no run of this version made it.
        helpers_sha256: the helper modules of the version's folder it imports (``Workspace.helpers_of``), each one's
            sha256 as the run began, by module name; empty when it imports none.
    """

    problem: str
    version: str
    kernel: str
    device: dict[str, Any]
    rungs: list[RungResult] = field(default_factory=list)
    source_sha256: str = ""
    reference_sha256: str = ""
    started_at: float = 0.0
    seconds: float = 0.0
    last_verdict: LastVerdict | None = None
    carried_from: str | None = None
    helpers_sha256: dict[str, str] = field(default_factory=dict)

    def carried(self, version: str, kernel: str) -> LadderResult:
        """This result as ``version``'s (file ``kernel``, relative to the workspace), which holds the same source:
        the rungs, hashes, device and times are this run's, ``carried_from`` names the version that ran."""
        return replace(self, version=version, kernel=kernel, carried_from=self.carried_from or self.version)

    @property
    def ok(self) -> bool:
        """No rung failed (a skipped rung is not a failure: a version that needs a GPU, on the CPU, is ``ok``)."""
        return bool(self.rungs) and all(r.ok for r in self.rungs)

    @property
    def verified(self) -> bool:
        """Correct as checked: no rung failed and the correctness rung ran and passed (not skipped). A version that
        needs a GPU on a machine without one, or one only compiled (``ktui diff``), is ``ok`` but not verified."""
        corr = self.rung("correctness")
        return self.ok and corr is not None and corr.status is Status.OK

    @property
    def has_verdict(self) -> bool:
        """The run decided something about this source: a rung failed, or the correctness rung ran (passed, failed,
        or skipped because the version needs a GPU). A result of compile and dumps alone (``ktui diff``,
        ``--rungs dumps``) has none: the version still needs a run."""
        return self.failed_rung is not None or self.rung("correctness") is not None

    @property
    def needs_gpu(self) -> bool:
        """Its run was skipped because it needs a GPU this machine lacks (a CuTeDSL version on the CPU): compiled
        and dumped, not run, no correctness verdict."""
        run = self.rung("run")
        return run is not None and run.status is Status.SKIPPED

    @property
    def key(self) -> str:
        return f"{self.problem}/{self.version}"

    def rung(self, name: str) -> RungResult | None:
        return next((r for r in self.rungs if r.name == name), None)

    @property
    def failed_rung(self) -> RungResult | None:
        """The first rung that failed, else None."""
        return next((r for r in self.rungs if r.status is Status.FAILED), None)

    @property
    def worst_speedup(self) -> float | None:
        """The smallest speedup over the reference among the benchmark specs (the figure a version is ranked by
        and shown with, ``✓ 1.23x``); None when the benchmark did not pass or no spec has a speedup (on the CPU,
        or with no reference time)."""
        bench = self.rung("benchmark")
        if bench is None or bench.status is not Status.OK:
            return None
        speedups = [s["speedup"] for s in bench.figures.get("specs", []) if s.get("speedup")]
        return min(speedups) if speedups else None

    def to_json(self) -> LadderJson:
        """The result as ``ktui run --json`` (its ``data``) and the result store write it."""
        out: LadderJson = {
            "problem": self.problem,
            "version": self.version,
            "kernel": self.kernel,
            "device": self.device,
            "ok": self.ok,
            "source_sha256": self.source_sha256,
            "reference_sha256": self.reference_sha256,
            "started_at": self.started_at,
            "seconds": round(self.seconds, 4),
            "rungs": [r.to_json() for r in self.rungs],
        }
        if self.last_verdict is not None:
            out["last_verdict"] = self.last_verdict.to_json()
        if self.carried_from is not None:
            out["carried_from"] = self.carried_from
        if self.helpers_sha256:
            out["helpers_sha256"] = dict(self.helpers_sha256)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> LadderResult:
        last = d.get("last_verdict")
        return cls(
            problem=d["problem"],
            version=d["version"],
            kernel=d["kernel"],
            device=d.get("device", {}),
            rungs=[RungResult.from_json(r) for r in d.get("rungs", [])],
            source_sha256=d.get("source_sha256", ""),
            reference_sha256=d.get("reference_sha256", ""),
            started_at=d.get("started_at", 0.0),
            seconds=d.get("seconds", 0.0),
            last_verdict=LastVerdict.from_json(last) if isinstance(last, Mapping) else None,
            carried_from=d["carried_from"] if isinstance(d.get("carried_from"), str) else None,
            helpers_sha256={str(k): str(v) for k, v in (d.get("helpers_sha256") or {}).items()},
        )


def standing(result: LadderResult | None) -> int:
    """How far a result vouches for its version, for choosing or ranking versions: 2 verified (correctness ran and
    passed: ``LadderResult.verified``), 1 ok but not verified (it needs a GPU this machine lacks, or was only
    compiled), 0 failed or never run. A version that was never checked never outranks one that passed."""
    if result is None or not result.ok:
        return 0
    return 2 if result.verified else 1


def device_label(device: dict[str, Any]) -> str:
    """``cpu (interpreter)`` or ``cuda: NVIDIA H200 (sm_90)``: never lets an interpreter pass pass for a GPU pass."""
    if device.get("type") == "cuda":
        cap = device.get("capability")
        arch = f" (sm_{cap[0]}{cap[1]})" if cap else ""
        return f"cuda: {device.get('name', '?')}{arch}"
    return "cpu (interpreter)"


def placement_label(device: dict[str, Any]) -> str:
    """Where a result ran, when an engine placed it (``device["placement"]``, ``ktui.core.engines``): ``node3 GPU 5
    GPU-8f3c1a2b`` (the host, the GPU as that node numbers it, the GPU's UUID from NVML), ``node3 CPU actor 1``;
    '' for a result of the local pool."""
    where = device.get("placement")
    if not isinstance(where, dict):
        return ""
    host = str(where.get("host") or "?")
    gpus = ",".join(str(g) for g in where.get("gpu_ids") or [])
    if gpus:
        uuid = str(device.get("uuid") or "")
        return f"{host} GPU {gpus}" + (f" {uuid[:12]}" if uuid else "")
    return f"{host} CPU actor {where.get('actor', '?')}"


def fmt(x: Any, digits: int = 3) -> str:
    """A figure for a table cell or a summary line: ``2.38e-07``, ``48.1``, ``nan``, ``inf``, ``-``."""
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e5:
        return f"{x:.{digits}g}" if abs(x) < 1 else f"{x:.{max(digits - 2, 1)}f}".rstrip("0").rstrip(".")
    return f"{x:.{digits - 1}e}"


def fmt_fit(x: Any, digits: int, width: int) -> str:
    """``fmt(x, digits)`` with fewer digits until it fits ``width`` characters (a table column): a cosine of
    0.9999987 keeps its 7 digits, one of 1.95e-06 reads ``1.95e-06``, never a cut ``1.954714e`` (new-user trial 30,
    F3)."""
    text = fmt(x, digits)
    while len(text) > width and digits > 1:
        digits -= 1
        text = fmt(x, digits)
    return text


def fmt_seconds(seconds: float) -> str:
    """A time limit or a duration for a message, without false precision: whole seconds from 10 s up (``142``, not
    ``141.534``), one decimal below (``2.5``, ``3``)."""
    if seconds >= 10 or not math.isfinite(seconds):
        return f"{seconds:.0f}"
    return f"{seconds:.1f}".removesuffix(".0")


_REFERENCE_FIRST = re.compile(rf"^(?:[a-z_]+: )?{re.escape(REFERENCE_ERROR)}\b")


def is_reference_message(message: str) -> bool:
    """True when an error ``message`` blames the problem's reference, not the version: its first line starts with
    ``reference error`` (the worker's ``format_error`` writes those; a rung may put its name first)."""
    first = (message.strip().splitlines() or [""])[0]
    return bool(_REFERENCE_FIRST.match(first))
