"""``ktui replay SESSION --rerun``: every version a recorded session ran, through today's ladder, beside what was
recorded.

A *version* here is one content of one ``problem/version``: the kernel's and the reference's exact sources, by
SHA-256, as a ``LadderStarted``/``LadderFinished`` record names them (``LadderResult.source_sha256`` and
``reference_sha256``; a run cut short before its ``LadderFinished`` takes the reference the log's ``source``
records last showed). Its sources come from the session's content-addressed store (``sessions/<id>/blobs/``,
checked against their hash). Each is written into one temporary workspace (``references/<problem>.py``,
``kernels/<problem>/<version>.py``) and climbs the rungs its recorded runs climbed, on a headless
``ktui.core.session.Session`` (as ``ktui run`` makes one); nothing is written to the recorded workspace or the
session's folder.

Divergence, per version (``Divergence.kind``):

- ``verdict``: the verdict changed (ok/failed, or the rung that failed), or a run recorded unfinished or cancelled
  now has one;
- ``rung``: a rung that ran both times changed status (a benchmark ``ok`` then ``skipped`` on another device);
- ``timing``: a benchmark spec's median moved outside ``band`` (relative, default ``BAND``) of the recorded one;
- ``device``: the device fingerprint differs (``FINGERPRINT`` keys: GPU name, capability, driver, CUDA, torch,
  Triton, CuTeDSL...);
- ``missing``: a source is not in the store (the version cannot be re-run).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

from ktui.core import report
from ktui.core.events import LadderFinished, LadderStarted
from ktui.core.results import DEFAULT_RUNGS, RUNG_ORDER, LadderResult, Status, device_label, fmt
from ktui.core.scheduler import is_cancelled
from ktui.sessions.fold import decode
from ktui.sessions.log import BLOBS, LogRead, Record

BAND = 0.10
"""The timing band: a benchmark median more than 10 % above or below the recorded one is flagged. ktui's own
benchmark medians of one version on one idle GPU repeat within a few percent (their IQR is ~1-3 % of the median on
the H200, ``benchmarks/loop_latency.py``); 10 % leaves room for clocks and a busy neighbour and still catches a
regression worth a look. ``--band`` changes it."""

FINGERPRINT = (
    "type",
    "name",
    "capability",
    "sm_count",
    "driver",
    "cuda",
    "torch",
    "triton",
    "cutedsl",
    "cutlass",
    "interpreter",
    "sm_clock_max_mhz",
    "mem_clock_max_mhz",
)
"""The device fields compared between the recorded run and today's (``ktui.worker.server.device_info`` reports
them in each worker's hello, and the session record keeps them); a field only one side has is not compared (a
field ktui reports since). Nested fields are compared by their last name (``versions.triton`` as ``triton``)."""

DivergenceKind = Literal["verdict", "rung", "timing", "device", "missing"]


class RungTimeJson(TypedDict):
    """A rung of one side: its status (``ok``, ``FAILED``, ``skipped``) and its seconds."""

    status: str
    seconds: float


class TimingJson(TypedDict):
    """A benchmark spec of one side: medians in µs and the speedup over the reference (null when not timed)."""

    median_us: float | None
    ref_median_us: float | None
    speedup: float | None


class SideJson(TypedDict):
    """One side of a version's row: as recorded, or as today's ladder says.

    Attributes:
        verdict: ``report.verdict``'s text (``✓ 1.23x``, ``✗ correctness``...), ``cancelled`` or ``not finished``.
        status: ``ok``, ``failed``, ``reference`` (the reference failed), ``cancelled`` or ``none``.
        failed_rung: the first rung that failed, else null.
        speedup: the worst benchmark speedup, null without one.
        device: where it ran (``cpu (interpreter)``, ``cuda: NVIDIA H200 (sm_90)``); null when it never finished.
        seconds: the whole ladder, s (absent when it never finished).
        rungs: rung name -> its status and seconds (absent when it never finished).
        timings: benchmark spec label -> its medians (absent when it never finished).
    """

    verdict: str
    status: str
    failed_rung: str | None
    speedup: float | None
    device: str | None
    seconds: NotRequired[float]
    rungs: NotRequired[dict[str, RungTimeJson]]
    timings: NotRequired[dict[str, TimingJson]]


class DivergenceJson(TypedDict):
    """How a re-run differs: ``kind`` and a one-line ``message``."""

    kind: DivergenceKind
    message: str


class VersionRerunJson(TypedDict):
    """One version (one content of one ``problem/version``): its recording and today's run.

    Attributes:
        key: ``problem/version``.
        kernel_sha256: the kernel source's hash ('' when the log never said).
        reference_sha256: the reference's hash ('').
        rungs: the rungs its recorded runs climbed (and the re-run climbs), in ladder order.
        runs: how many runs of it the log has (cancelled ones included).
        recorded: as recorded.
        new: as today's ladder says; null when it was not re-run (``error`` says why).
        diverged: it diverges in any way.
        divergence: every way it diverges.
        error: why it was not re-run (a source missing from ``blobs/``), else null.
    """

    key: str
    kernel_sha256: str
    reference_sha256: str
    rungs: list[str]
    runs: int
    recorded: SideJson
    new: SideJson | None
    diverged: bool
    divergence: list[DivergenceJson]
    error: str | None


class DevicesJson(TypedDict):
    """The device recorded and today's (as the workers report them), and the fingerprint lines that differ
    (``name: NVIDIA H100 → NVIDIA H200``)."""

    recorded: dict[str, Any]
    now: dict[str, Any]
    diverged: list[str]


class RerunJson(TypedDict):
    """A session's versions re-run through today's ladder (``ktui replay SESSION --rerun --json``'s data).

    Attributes:
        session: the session's id.
        log: its ``events.jsonl``.
        band: the timing band, relative (0.1: 10 %).
        device: the devices and how they differ.
        problems: the problems reading the log found (corrupt or truncated lines...).
        versions: one per version, in the order of its first run.
        diverged: anything diverged (the device, a verdict, a rung, a timing, a missing source).
        verdicts_changed: how many versions' verdicts changed or could not be re-run (exit code 1 when not 0).
    """

    session: str
    log: str
    band: float
    device: DevicesJson
    problems: list[str]
    versions: list[VersionRerunJson]
    diverged: bool
    verdicts_changed: int


@dataclass(frozen=True)
class Divergence:
    """One way a re-run differs from its recording: ``kind`` (see the module's docstring) and a one-line
    ``message``."""

    kind: DivergenceKind
    message: str

    def to_json(self) -> DivergenceJson:
        return {"kind": self.kind, "message": self.message}


@dataclass
class RecordedVersion:
    """One content of one version as the session ran it.

    Attributes:
        key: ``problem/version``.
        kernel_sha256, reference_sha256: the sources' hashes ("" when the log never said).
        rungs: the rungs its recorded runs climbed (every ``LadderStarted.rungs`` of it and the rungs of its
            results: a result merges the earlier rungs of the same source), in ladder order.
        result: its latest recorded finished, not cancelled, result; None when every run of it was cancelled or
            cut short.
        runs: how many runs of it the log has (cancelled ones included); ``cancelled``: how many were.
        line: the log line of the last record about it.
    """

    key: str
    kernel_sha256: str
    reference_sha256: str
    rungs: tuple[str, ...] = ()
    result: LadderResult | None = None
    runs: int = 0
    cancelled: int = 0
    line: int = 0

    @property
    def problem(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def version(self) -> str:
        return self.key.split("/", 1)[1] if "/" in self.key else self.key


def recorded_versions(records: Sequence[Record]) -> list[RecordedVersion]:
    """Every distinct (version, kernel source, reference source) the records ran, in the order of its first run.
    Never raises: records that do not decode are passed over (``ktui.sessions.fold`` reports them)."""
    latest: dict[str, str] = {}  # path -> its latest sha256 (source records)
    started: dict[int, tuple[str, str, str, tuple[str, ...]]] = {}  # run_id -> key, kernel sha, reference sha, rungs
    out: dict[tuple[str, str, str], RecordedVersion] = {}

    def version(key: str, ksha: str, rsha: str, line: int) -> RecordedVersion:
        v = out.get((key, ksha, rsha))
        if v is None:
            v = out[(key, ksha, rsha)] = RecordedVersion(key, ksha, rsha)
        v.line = max(v.line, line)
        return v

    for rec in records:
        if rec.type == "source":
            path, sha = rec.data.get("path"), rec.data.get("sha256")
            if isinstance(path, str) and isinstance(sha, str):
                latest[path] = sha
            continue
        if rec.type not in ("LadderStarted", "LadderFinished"):
            continue
        ev = decode(rec)
        if isinstance(ev, LadderStarted) and isinstance(ev.key, str) and "/" in ev.key:
            rsha = latest.get(f"references/{ev.key.split('/', 1)[0]}.py", "")
            ksha = str(ev.source_sha256 or latest.get(f"kernels/{ev.key}.py", ""))
            started[ev.run_id] = (ev.key, ksha, rsha, tuple(str(r) for r in ev.rungs or ()))
        elif isinstance(ev, LadderFinished) and isinstance(ev.result, LadderResult):
            res = ev.result
            key, ksha, rsha, rungs = started.pop(ev.run_id, (ev.key, "", "", ()))
            ksha = res.source_sha256 or ksha
            rsha = res.reference_sha256 or rsha
            v = version(res.key if "/" in res.key else key, ksha, rsha, rec.line)
            v.runs += 1
            v.rungs = _ordered(v.rungs, rungs, [r.name for r in res.rungs])
            if is_cancelled(res):
                v.cancelled += 1
            else:
                v.result = res
    for key, ksha, rsha, rungs in started.values():  # runs cut short: no LadderFinished
        v = version(key, ksha, rsha, 0)
        v.runs += 1
        v.rungs = _ordered(v.rungs, rungs)
    return list(out.values())


def _ordered(*names: Sequence[str]) -> tuple[str, ...]:
    """The rungs named in any of ``names``, in ladder order (names that are not rungs dropped)."""
    wanted = {n for group in names for n in group}
    return tuple(r for r in RUNG_ORDER if r in wanted)


def blob_path(session_dir: Path, sha: str) -> Path | None:
    """The stored content with hash ``sha`` under ``session_dir/blobs/`` (``<sha>``, or ``<sha[:2]>/<sha>`` /
    ``<sha[:2]>/<sha[2:]>``), or None when it is not there."""
    if not sha or any(c not in "0123456789abcdef" for c in sha):
        return None
    root = session_dir / BLOBS
    for p in (root / sha, root / sha[:2] / sha, root / sha[:2] / sha[2:]):
        if p.is_file():
            return p
    return None


def read_blob(session_dir: Path, sha: str) -> bytes:
    """The content with hash ``sha`` (SHA-256 hex) from the session's store.

    Raises:
        FileNotFoundError: the store has no such content.
        ValueError: the stored bytes do not hash to ``sha`` (the store was damaged).
    """
    p = blob_path(session_dir, sha)
    if p is None:
        raise FileNotFoundError(f"no blob {sha[:12] or '(no hash recorded)'} in {session_dir / BLOBS}")
    data = p.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha:
        raise ValueError(f"blob {sha[:12]} in {p.parent} does not hash to its name: the store is damaged")
    return data


# -- one side of a comparison ------------------------------------------------------------------------------------
def side(result: LadderResult | None, *, cancelled: bool = False) -> SideJson:
    """One side of a row (recorded or new) as JSON: ``verdict`` (``report.verdict``'s text, ``cancelled`` or
    ``not finished``), ``status`` (``ok``, ``failed``, ``reference``: the reference failed, ``cancelled``,
    ``none``), ``failed_rung``, ``speedup`` (the worst benchmark speedup, None without one), ``device`` (its
    label), ``seconds`` (the whole ladder), ``rungs`` (name -> ``{status, seconds}``) and ``timings`` (benchmark
    spec label -> ``{median_us, ref_median_us, speedup}``, microseconds)."""
    if result is None:
        verdict, status = ("cancelled", "cancelled") if cancelled else ("not finished", "none")
        return {"verdict": verdict, "status": status, "failed_rung": None, "speedup": None, "device": None}
    failed = result.failed_rung
    text = report.verdict(result)[0]
    status = "ok" if failed is None else "reference" if report.is_reference_error(failed.error) else "failed"
    timings: dict[str, TimingJson] = {}
    bench = result.rung("benchmark")
    if bench is not None and bench.status is Status.OK:
        for s in bench.figures.get("specs", []) or []:
            if isinstance(s, dict) and "label" in s:
                timings[str(s["label"])] = {
                    "median_us": _num(s.get("median_us")),
                    "ref_median_us": _num(s.get("ref_median_us")),
                    "speedup": _num(s.get("speedup")),
                }
    return {
        "verdict": text,
        "status": status,
        "failed_rung": failed.name if failed else None,
        "speedup": result.worst_speedup,
        "device": device_label(result.device),
        "seconds": round(result.seconds, 3),
        "rungs": {r.name: {"status": r.status.value, "seconds": round(r.seconds, 3)} for r in result.rungs},
        "timings": timings,
    }


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def fingerprint(device: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``FINGERPRINT`` fields of a device description (nested ones by their last name; lists as tuples)."""
    out: dict[str, Any] = {}
    for k, v in _flat(device or {}).items():
        name = k.rsplit(".", 1)[-1].lower()
        if name in FINGERPRINT and name not in out:
            out[name] = tuple(v) if isinstance(v, list) else v
    return out


def device_divergence(recorded: Mapping[str, Any] | None, now: Mapping[str, Any] | None) -> list[str]:
    """``name: cpu → NVIDIA H200``, one per ``FINGERPRINT`` field both descriptions have and that differs."""
    a, b = fingerprint(recorded), fingerprint(now)
    return [f"{k}: {_show(a[k])} → {_show(b[k])}" for k in FINGERPRINT if k in a and k in b and a[k] != b[k]]


def _show(v: Any) -> str:
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def compare(recorded: SideJson, new: SideJson, band: float = BAND) -> list[Divergence]:
    """How ``new`` differs from ``recorded`` (two ``side`` objects): verdict, rungs and timings (a median outside
    ``band``, relative, of the recorded one)."""
    out: list[Divergence] = []
    rv, nv = recorded["verdict"], new["verdict"]
    if (recorded["status"], recorded["failed_rung"]) != (new["status"], new["failed_rung"]):
        out.append(Divergence("verdict", f"verdict {rv} → {nv}"))
    r_rungs, n_rungs = recorded.get("rungs") or {}, new.get("rungs") or {}
    for name in RUNG_ORDER:
        if name in r_rungs and name in n_rungs and r_rungs[name]["status"] != n_rungs[name]["status"]:
            out.append(Divergence("rung", f"{name}: {r_rungs[name]['status']} → {n_rungs[name]['status']}"))
    r_t, n_t = recorded.get("timings") or {}, new.get("timings") or {}
    for label, rt in r_t.items():
        nt = n_t.get(label)
        old, now = rt.get("median_us"), nt.get("median_us") if nt else None
        if nt is None or not old or now is None:
            continue
        change = now / old - 1.0
        if abs(change) > band:
            out.append(
                Divergence(
                    "timing",
                    f"{label}: median {fmt(old, 4)} → {fmt(now, 4)} us ({change:+.1%}, band ±{band:.0%})",
                )
            )
    return out


# -- the re-run ----------------------------------------------------------------------------------------------------
@dataclass
class RerunRow:
    """One version: its recording, what today's ladder says, and how they differ (``error``: why it was not
    re-run)."""

    version: RecordedVersion
    recorded: SideJson
    new: SideJson | None = None
    divergence: list[Divergence] = field(default_factory=list)
    error: str = ""

    def to_json(self) -> VersionRerunJson:
        v = self.version
        return {
            "key": v.key,
            "kernel_sha256": v.kernel_sha256,
            "reference_sha256": v.reference_sha256,
            "rungs": list(v.rungs),
            "runs": v.runs,
            "recorded": self.recorded,
            "new": self.new,
            "diverged": bool(self.divergence),
            "divergence": [d.to_json() for d in self.divergence],
            "error": self.error or None,
        }


@dataclass
class RerunReport:
    """The whole re-run: the session, the devices (recorded and today's, with their ``device_divergence``), the
    timing band, the log's problems and one row per version."""

    session: str
    log: str
    band: float
    recorded_device: dict[str, Any]
    device: dict[str, Any]
    device_diverged: list[str]
    rows: list[RerunRow]
    problems: list[str]

    @property
    def verdicts_changed(self) -> int:
        """How many versions' verdicts changed or could not be re-run."""
        return sum(1 for r in self.rows if r.error or any(d.kind == "verdict" for d in r.divergence))

    def to_json(self) -> RerunJson:
        """``ktui replay --rerun --json``'s data (``RerunJson``)."""
        return {
            "session": self.session,
            "log": self.log,
            "band": self.band,
            "device": {
                "recorded": self.recorded_device,
                "now": self.device,
                "diverged": self.device_diverged,
            },
            "problems": self.problems,
            "versions": [r.to_json() for r in self.rows],
            "diverged": bool(self.device_diverged) or any(r.divergence or r.error for r in self.rows),
            "verdicts_changed": self.verdicts_changed,
        }


def recorded_device(read: LogRead, versions: Sequence[RecordedVersion]) -> dict[str, Any]:
    """The device the session ran on: the metadata's ``device`` (the fingerprint the recorder took), with the
    first recorded result's device (the candidate worker's hello) filling what it lacks."""
    meta = read.meta or {}
    dev: dict[str, Any] = {}
    for r in read.records:
        if r.type == "device" and isinstance(r.data, dict):
            dev = dict(r.data)
    if not dev and isinstance(meta.get("device"), dict):
        dev = dict(meta["device"])
    first = next((v.result.device for v in versions if v.result is not None and v.result.device), None)
    return {**(first or {}), **dev}


Runner = Callable[[Path, list[RecordedVersion]], tuple[dict[str, Any], list[LadderResult | str]]]


def run_versions(
    device: str,
    versions: list[RecordedVersion],
    session_dir: Path,
    note: Callable[[str], None] | None = None,
    timeouts: dict[str, float] | None = None,
) -> tuple[dict[str, Any], list[LadderResult | str]]:
    """Run each version's recorded sources through today's ladder, one after another, in one temporary workspace
    on one headless ``Session`` on ``device`` (``auto``, ``cpu``, ``cuda``). Returns today's device description
    and, per version, its new result or why it was not run (a source missing from the store). ``note`` gets a
    line as each version starts.

    Raises:
        ktui.core.workers.client.WorkerStartError: the workers could not start (no GPU for ``cuda``...).
    """
    from ktui.core.ladder import LadderOptions
    from ktui.core.session import Session
    from ktui.core.store import atomic_write
    from ktui.core.timeouts import load_policy
    from ktui.core.workspace import KernelRef, Workspace

    with tempfile.TemporaryDirectory(prefix="ktui-rerun-") as tmp:
        root = Path(tmp)
        (root / "references").mkdir()
        (root / "kernels").mkdir()
        ws = Workspace(root)
        policy = load_policy(root, timeouts) if timeouts else None  # ``--timeout`` over the defaults
        session = Session(ws, device, options=LadderOptions(), watch=False, timeouts=policy)
        session.start()
        out: list[LadderResult | str] = []
        try:
            info = session.device_info()
            for i, v in enumerate(versions, 1):
                try:
                    kernel = read_blob(session_dir, v.kernel_sha256)
                    reference = read_blob(session_dir, v.reference_sha256)
                except (OSError, ValueError) as exc:
                    out.append(f"cannot re-run: {exc}")
                    continue
                if note:
                    note(f"[{i}/{len(versions)}] {v.key} {v.kernel_sha256[:8]}: {', '.join(v.rungs)}")
                atomic_write(ws.reference_path(v.problem), reference)
                ref = KernelRef(v.problem, v.version, ws.root)
                atomic_write(ref.path, kernel)
                out.append(session.run(ref, v.rungs or DEFAULT_RUNGS))
        finally:
            session.stop()
    return info, out


def rerun(
    read: LogRead,
    device: str = "auto",
    band: float = BAND,
    runner: Runner | None = None,
    note: Callable[[str], None] | None = None,
    timeouts: dict[str, float] | None = None,
) -> RerunReport:
    """Re-run every version of the session whose log ``read`` is (``ktui.sessions.log.read_log``) and compare.

    Args:
        read: the session's log; its folder holds the ``blobs/`` store.
        device: where today's ladder runs: ``auto``, ``cpu`` or ``cuda``.
        band: the relative timing band (0.10: ±10 %).
        runner: what runs the versions (default ``run_versions`` on ``device``; tests pass their own).
        note: gets a progress line as each version starts.
        timeouts: ``--timeout``'s limits by rung (``timeouts.parse_timeout_arg``), over the workspace's policy.

    Raises:
        ktui.core.workers.client.WorkerStartError: the workers could not start.
    """
    session_dir = read.path.parent
    versions = recorded_versions(read.records)
    if runner is None:

        def runner(d: Path, vs: list[RecordedVersion]) -> tuple[dict[str, Any], list[LadderResult | str]]:
            return run_versions(device, vs, d, note, timeouts)

    info, results = runner(session_dir, versions) if versions else ({}, [])
    was = recorded_device(read, versions)
    rows: list[RerunRow] = []
    for v, new in zip(versions, results):
        row = RerunRow(v, side(v.result, cancelled=v.cancelled > 0 and v.result is None))
        if isinstance(new, str):
            row.error = new
            row.divergence.append(Divergence("missing", new))
        else:
            row.new = side(new)
            row.divergence = compare(row.recorded, row.new, band)
            rec_dev = v.result.device if v.result is not None else was
            row.divergence += [Divergence("device", d) for d in device_divergence(rec_dev, new.device)]
        rows.append(row)
    meta = read.meta or {}
    return RerunReport(
        session=str(meta.get("id") or read.path.parent.name),
        log=str(read.path),
        band=band,
        recorded_device=was,
        device=dict(info),
        device_diverged=device_divergence(was, info),
        rows=rows,
        problems=[str(p) for p in read.problems],
    )


# -- the text form ---------------------------------------------------------------------------------------------------
def _cell(d: SideJson | None, rung: str) -> str:
    r = (d.get("rungs") or {}).get(rung) if d else None
    return f"{r['status']} {r['seconds']:.2f}s" if r else "-"


def _timing(t: TimingJson | None) -> str:
    if not t or t.get("median_us") is None:
        return "-"
    sp = t.get("speedup")
    return f"{fmt(t['median_us'], 4)} us" + (f" {sp:.2f}x" if sp else "")


def lines(rep: RerunReport) -> list[str]:
    """The report as text: the devices, then per version its verdicts side by side, its rungs and benchmark
    specs, and what diverged (``!`` marks it); a summary last."""
    if not rep.rows:  # (nothing ran in it: no device was recorded or used; "recorded on ?" read as an error, F14)
        out = [f"session {rep.session}: no version was run in it, so nothing to re-run"]
        out += [f"! log: {p}" for p in rep.problems]
        return out
    label_was = device_label(rep.recorded_device) if rep.recorded_device else "not recorded"
    label_now = device_label(rep.device) if rep.device else "not recorded"
    out = [f"session {rep.session}: {len(rep.rows)} version(s); recorded on {label_was}, re-run on {label_now}"]
    out += [f"! log: {p}" for p in rep.problems]
    out += [f"! device {d}" for d in rep.device_diverged]
    w = max([24, *(len(r.version.key) + 10 for r in rep.rows)])
    out.append(f"{'':<{w}} {'recorded':<22} {'now':<22}")
    for row in rep.rows:
        v = row.version
        head = f"{v.key} {v.kernel_sha256[:8]}"
        now = row.new["verdict"] if row.new else "not re-run"
        flag = "! " + "; ".join(d.message for d in row.divergence if d.kind in ("verdict", "missing"))
        same = not any(d.kind in ("verdict", "missing") for d in row.divergence)
        out.append(f"{head:<{w}} {row.recorded['verdict']:<22} {now:<22} {'same verdict' if same else flag}")
        new_rungs = row.new.get("rungs") if row.new else None
        ran = {**(row.recorded.get("rungs") or {}), **(new_rungs or {})}
        for name in (r for r in RUNG_ORDER if r in ran):
            out.append(f"  {name:<{w - 2}} {_cell(row.recorded, name):<22} {_cell(row.new, name):<22}")
        r_t, n_t = row.recorded.get("timings") or {}, (row.new.get("timings") if row.new else None) or {}
        for label in dict.fromkeys([*r_t, *n_t]):
            out.append(f"  {'benchmark ' + label:<{w - 2}} {_timing(r_t.get(label)):<22} {_timing(n_t.get(label)):<22}")
        out += [f"  ! {d.kind}: {d.message}" for d in row.divergence if d.kind not in ("verdict", "missing")]
    diverged = sum(1 for r in rep.rows if r.divergence or r.error)
    changed = rep.verdicts_changed
    out.append(
        f"{diverged} of {len(rep.rows)} version(s) diverged"
        + (f", {changed} verdict(s) changed or not re-run" if changed else "; no verdict changed")
        + (f"; the device differs ({len(rep.device_diverged)} field(s))" if rep.device_diverged else "")
        + f"; timing band ±{rep.band:.0%}"
    )
    return [line.rstrip() for line in out]
