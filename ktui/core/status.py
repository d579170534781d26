"""Where every version stands: its stored verdict, its speedup, and whether that verdict is still about the files on
disk (``ktui status``, the TUI's stale marks and the start-up queueing of stale versions).

A stored result names the sha256 of the version's source and of the reference it ran with (``LadderResult``'s
``source_sha256`` and ``reference_sha256``). When either differs from the file now on disk the verdict is *stale*:
it is about code that is no longer there (the file was edited while ktui was closed, say), and it must not read as
a verdict on the code that is.

A result with no correctness verdict (``LadderResult.has_verdict`` False: only compiled, by ``ktui diff`` or
``--rungs dumps``) is *unverified*: the version needs a run as a stale one does (``needs_run``; queued at start-up),
and the verdict it followed is kept as its ``last_verdict`` and shown, stale when it judged other files.

Nothing here runs a worker: it reads ``.ktui/results/`` and hashes the sources (a few kB each).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from ktui.core import report
from ktui.core.results import LadderResult, RungResult, Status, device_label
from ktui.core.store import ResultStore, sha256
from ktui.core.workspace import KernelRef, Workspace

STALE_KERNEL = "the kernel changed since this result"
STALE_REFERENCE = "the reference changed since this result"
STALE_BOTH = "the kernel and the reference changed since this result"

UNVERIFIED = "no correctness verdict for this source: only compiled since (ktui diff, --rungs dumps)"

STALE_POLICIES = ("run", "mark")  # ``[tui] stale`` in ktui.toml: queue stale versions at start-up, or only mark them


def file_sha(path: Path) -> str | None:
    """sha256 (hex) of the file at ``path``, None when it cannot be read."""
    try:
        return sha256(path.read_bytes())
    except OSError:
        return None


def helpers_changed(ws: Workspace, kernel: KernelRef, helpers_sha256: Mapping[str, str] | None) -> bool:
    """Whether the helper modules ``kernel`` imports now (``Workspace.helpers_of``) are not the ones a run had
    (``helpers_sha256``: by module name, each one's sha256; None or {} when it imported none)."""
    return ws.helpers_of(kernel) != dict(helpers_sha256 or {})


def staleness(ws: Workspace, kernel: KernelRef, result: LadderResult | None) -> str:
    """Why ``result`` (``kernel``'s stored or latest result) is no longer about the files on disk, '' when it is (or
    there is no result, or the result names no hashes: nothing to compare).

    Returns:
        ``STALE_KERNEL``, ``STALE_REFERENCE``, ``STALE_BOTH`` or ''.
    """
    if result is None:
        return ""
    return _changed(ws, kernel, result.source_sha256, result.reference_sha256, result.helpers_sha256)


def current_result(ws: Workspace, store: ResultStore, kernel: KernelRef) -> LadderResult | None:
    """``kernel``'s stored result, or, where that is stale, its judged result on exactly the files on disk now
    (``ResultStore.judged`` by content: one of the last it had) when there is one: a reference restored byte for
    byte while ktui was closed showed the failure against the edit, stale, in ``ktui status`` and queued the version
    at the TUI's start, where its verdict on that content stood (new-user trial 35, F9)."""
    r = store.load(kernel.problem, kernel.version)
    if r is None or not staleness(ws, kernel, r):
        return r
    source, reference = file_sha(kernel.path), file_sha(ws.reference_path(kernel.problem))
    if source is None or reference is None:
        return r
    kept = store.judged(kernel.problem, kernel.version, (source, reference))
    if kept is not None and kept.has_verdict and not staleness(ws, kernel, kept):
        return kept
    return r


def _changed(
    ws: Workspace,
    kernel: KernelRef,
    source_sha256: str,
    reference_sha256: str,
    helpers_sha256: Mapping[str, str] | None = None,
) -> str:
    """``STALE_KERNEL``, ``STALE_REFERENCE``, ``STALE_BOTH`` or '': which of the files on disk no longer has the
    hash given ('' for a hash not given). The helper modules the version imports count as its own source
    (``helpers_sha256``, the run's; ``Workspace.helpers_of``, now): one changed, gone or newly imported makes the
    kernel's side stale."""
    kernel_changed = bool(source_sha256) and (
        file_sha(kernel.path) != source_sha256 or helpers_changed(ws, kernel, helpers_sha256)
    )
    ref_changed = bool(reference_sha256) and file_sha(ws.reference_path(kernel.problem)) != reference_sha256
    if kernel_changed and ref_changed:
        return STALE_BOTH
    if kernel_changed:
        return STALE_KERNEL
    if ref_changed:
        return STALE_REFERENCE
    return ""


def last_verdict_staleness(ws: Workspace, kernel: KernelRef, result: LadderResult | None) -> str:
    """Why ``result``'s ``last_verdict`` (the verdict kept on a result that has none) is not about the files on
    disk (``STALE_KERNEL``...), '' when it is or there is none."""
    last = result.last_verdict if result is not None else None
    if last is None or result is None:
        return ""
    return _changed(ws, kernel, last.source_sha256, last.reference_sha256, result.helpers_sha256)


def unverified(ws: Workspace, kernel: KernelRef, result: LadderResult | None) -> str:
    """``UNVERIFIED`` when ``result`` has no correctness verdict on the files on disk (``LadderResult.has_verdict``
    False: it was only compiled, and the verdict it kept, if any, judged other files), else ''. A version never
    run is not unverified: it is not run."""
    if result is None or result.has_verdict:
        return ""
    if result.last_verdict is not None and not last_verdict_staleness(ws, kernel, result):
        return ""  # only compiled again, on the very files its last verdict judged: that verdict stands
    return UNVERIFIED


def needs_run(ws: Workspace, kernel: KernelRef, result: LadderResult | None) -> str:
    """Why ``kernel`` needs a run although it has a result: the result is stale (``staleness``) or unverified
    (``unverified``) after a verdict it had; '' when it stands, it never ran, or it was only ever compiled (no
    verdict to follow: it is not run, as a version never run is not). What the TUI queues at start-up and ``u``
    runs (``ktui.tui.state.stale_keys``)."""
    if result is not None and not result.has_verdict and result.last_verdict is None:
        return staleness(ws, kernel, result)
    return staleness(ws, kernel, result) or unverified(ws, kernel, result)


@dataclass(frozen=True)
class VersionStatus:
    """One version as ``ktui status`` reports it.

    Attributes:
        key: ``problem/version``.
        kernel: its file, relative to the workspace.
        verdict: ``report.verdict`` of its latest result (``✓ 1.23x``, ``✗ correctness``, ``! reference``,
            ``· not run``...).
        ok: every rung ok or skipped; None when it never ran.
        failed_rung: the first rung that failed, else None.
        reference_error: the first line of the error when the reference failed (no verdict on the version), else ''.
        speedup: the worst benchmark speedup over the reference (a GPU run), else None.
        stale: why the result is not about the files on disk (``STALE_KERNEL``...), '' when it is.
        ran_at: when that run started (seconds since the epoch), None when it never ran.
        device: ``cpu (interpreter)`` or ``cuda: NVIDIA H200 (sm_90)``, '' when it never ran.
        needs_gpu: why its run was skipped (``needs a GPU: CuTeDSL kernel add compiled for sm_90a, ...``: a CuTeDSL
            version on a machine without a GPU, compiled and dumped but not run; ``ok`` is True), else ''.
        unverified: why its latest result is no verdict on its files (``UNVERIFIED``: only compiled since, by
            ``ktui diff``), else ''; like a stale one, it needs a run (the TUI queues it at start-up).
        last_verdict: the verdict its latest result kept from the run before (``✗ run``), when that result has
            none of its own; else ''.
        last_verdict_stale: why that last verdict is not about the files on disk (``STALE_KERNEL``...), else ''.
        last_verdict_at: when the run of that verdict started (seconds since the epoch), else None.
        carried_from: the version whose run the latest result is (a copy made with ``n`` of a version that had
            run: ``LadderResult.carried_from``), else ''; with ``stale`` set, the copy has not run its own source.
        reason: why the first failed rung failed, in one short line (its error's type and the start of its message
            or summary: ``OutOfBoundsAccess: out-of-bounds load at offset 1 of a_ptr...``), '' when none failed.
    """

    key: str
    problem: str
    version: str
    kernel: str
    verdict: str
    ok: bool | None
    failed_rung: str | None
    reference_error: str
    speedup: float | None
    stale: str
    ran_at: float | None
    device: str
    needs_gpu: str = ""
    unverified: str = ""
    last_verdict: str = ""
    last_verdict_stale: str = ""
    last_verdict_at: float | None = None
    carried_from: str = ""
    reason: str = ""


@dataclass(frozen=True)
class ProblemStatus:
    """A problem and its versions.

    Attributes:
        reference: ``references/<problem>.py``.
        reference_error: the first line of the latest error that blames the current reference (a version's result
            whose reference hash is the file's), '' when none does.
    """

    problem: str
    reference: str
    reference_error: str
    versions: list[VersionStatus] = field(default_factory=list)


def version_status(ws: Workspace, kernel: KernelRef, result: LadderResult | None) -> VersionStatus:
    """``kernel``'s status from its latest ``result`` (None: never run) and the files on disk. A copy's carried
    verdict on a source it no longer has (another version's run: ``carried_from`` and the kernel stale) is shown as
    no result, ``· not run``, as the TUI's tree shows it (new-user trial 25, F6: ``v8 ✓ ok ... STALE`` counted among
    "1 ok" beside the tree's "· not run")."""
    stale = staleness(ws, kernel, result)
    carried_from = (result.carried_from or "") if result is not None else ""
    own = None if carried_from and stale in (STALE_KERNEL, STALE_BOTH) else result
    failed = own.failed_rung if own else None
    ref_fail = report.reference_failure(own)
    last = own.last_verdict if own is not None and not own.has_verdict else None
    why_unverified = unverified(ws, kernel, own)
    # only compiled again, on the very files its last verdict judged: that verdict stands (as the TUI's tree says)
    stands = last is not None and not why_unverified
    return VersionStatus(
        key=kernel.key,
        problem=kernel.problem,
        version=kernel.version,
        kernel=str(kernel.path.relative_to(ws.root)),
        verdict=last.verdict if stands and last is not None else report.verdict(own)[0],
        ok=(last.ok if stands and last is not None else own.ok) if own else None,
        failed_rung=failed.name if failed else None,
        reference_error=ref_fail.error.one_line() if ref_fail and ref_fail.error else "",
        speedup=own.worst_speedup if own else None,
        stale=stale,
        ran_at=own.started_at if own else None,
        device=device_label(own.device) if own else "",
        needs_gpu=needs_gpu_reason(own),
        unverified=why_unverified,
        last_verdict=last.verdict if last is not None else "",
        last_verdict_stale=last_verdict_staleness(ws, kernel, own),
        last_verdict_at=last.started_at if last is not None else None,
        carried_from=carried_from,
        reason="" if stands else failure_reason(failed),
    )


REASON_CHARS = 90  # ``failure_reason``: the line's length at most


def failure_reason(rung: RungResult | None) -> str:
    """One line for ``ktui status`` (new-user trial 24, F9: a 374 s timeout and an out-of-bounds load both read
    ``✗ run``): the rung's error type and its message, else its summary, on one line, whole ('' for None); the text
    view cuts it (``short_reason``), ``--json`` does not (new-user trial 25, F20)."""
    if rung is None:
        return ""
    text = rung.error.message if rung.error and rung.error.message else rung.summary
    case, text = _case_of(" ".join(text.split()))
    for said in _SAID_ELSEWHERE:
        text = text.replace(said, "")
    text = " ".join(text.split())
    if case:  # the case in short, first (new-user trial 26, F5: three bugs read alike, their specs cut off)
        text = f"{case}: {text}"
    if rung.error and rung.error.type not in ("", "CorrectnessError") and f"{rung.error.type}:" not in text:
        # (a correctness failure: the rung's name says it; a type the message gives after its case is not said twice:
        # new-user trial 35, F12, "OutOfBoundsAccess: (2, 32000): OutOfBoundsAccess: out-of-bounds load")
        text = f"{rung.error.type}: {text}"
    return text


# boilerplate the one line leaves out: the output named when there is one, and a rule the full result states
_SAID_ELSEWHERE = ("output out: ", " (NaN positions must match the reference's)")


def short_reason(text: str) -> str:
    """``failure_reason``'s line cut to ``REASON_CHARS`` (the status line's)."""
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3].rstrip() + "..."


def needs_gpu_reason(result: LadderResult | None) -> str:
    """The run rung's summary when it was skipped because the version needs a GPU this machine lacks, else ''."""
    run = result.rung("run") if result else None
    return run.summary if run is not None and run.status is Status.SKIPPED else ""


def problem_reference_error(versions: list[VersionStatus]) -> str:
    """The reference error of a problem's versions that is still about the reference on disk ('' when none)."""
    return next(
        (v.reference_error for v in versions if v.reference_error and v.stale not in (STALE_REFERENCE, STALE_BOTH)),
        "",
    )


def workspace_status(ws: Workspace, results: dict[str, LadderResult] | None = None) -> list[ProblemStatus]:
    """Every problem of ``ws`` with every version's status, in the tree's order.

    Args:
        results: the latest result by ``problem/version`` (a live session's); by default the stored ones
            (``.ktui/results/``).
    """
    store = ResultStore(ws)
    out = []
    for problem in ws.problems():
        versions = []
        for k in ws.versions(problem):
            result = results.get(k.key) if results is not None else current_result(ws, store, k)
            versions.append(version_status(ws, k, result))
        out.append(
            ProblemStatus(
                problem=problem,
                reference=str(ws.reference_path(problem).relative_to(ws.root)),
                reference_error=problem_reference_error(versions),
                versions=versions,
            )
        )
    return out


class StatusJson(TypedDict):
    """Every problem of the workspace and its versions, as they stand (``ktui status --json``'s data).

    Attributes:
        workspace: the workspace's folder (absolute).
        problems: every problem, in the tree's order, each with its versions.
    """

    workspace: str
    problems: list[ProblemStatus]


def status_json(ws: Workspace, problems: list[ProblemStatus]) -> StatusJson:
    """``ktui status --json``'s data (the dataclasses written as ``dataclasses.asdict`` does:
    ``ktui.core.envelope.jsonable``)."""
    return {"workspace": str(ws.root), "problems": problems}


def stale_policy(root: Path) -> tuple[str, str]:
    """What to do with stale versions when the TUI starts: ``stale`` in the ``[tui]`` table of the workspace's
    ``ktui.toml``: ``"run"`` (the default: queue them at start-up) or ``"mark"`` (mark them only; the ``u`` key
    runs them).

    Returns:
        (policy, a warning for the user: '' unless the file or the value is malformed, when the default applies).
    """
    path = root / "ktui.toml"
    try:
        table = tomllib.loads(path.read_text()).get("tui", {})
    except FileNotFoundError:
        return "run", ""
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return "run", f"{path.name}: cannot read it ({exc}); stale versions run at start-up"
    value = table.get("stale", "run") if isinstance(table, dict) else "run"
    if value not in STALE_POLICIES:
        return "run", f'{path.name}: [tui] stale must be "run" or "mark", not {value!r}; stale versions run at start-up'
    return str(value), ""


def _case_of(text: str) -> tuple[str, str]:
    """(the case in short, the rest) of ``text``: a leading case label (``spec=(7, 129, bf16) seed=3
    layout=transposed (in[0] ...): ...``) as its spec and what kind of case it is (``(7, 129, bf16) transposed``,
    ``fuzzed(1, 0)``, ``(127,) grad=no_grad``: no seed, fill, config or strides, which the full result keeps);
    ('', ``text``) without one."""
    if not text.startswith("spec="):
        return "", text
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ":" and depth == 0 and text[i + 1 : i + 2] == " ":
            return _short_case(text[:i]), text[i + 2 :]
    return "", text


def _short_case(label: str) -> str:
    """``spec=(7, 129, bf16) seed=3 dist=shifted layout=transposed (in[0] ...) fill=decoy`` as ``(7, 129, bf16)
    shifted transposed``: the spec, then the distribution, layout and grad mode by name."""
    words, depth, top = [], 0, ""
    for ch in label + " ":
        if ch == " " and depth == 0:
            if top:
                words.append(top)
            top = ""
            continue
        depth += ch in "([{"
        depth -= ch in ")]}"
        top += ch
    kept = [w.removeprefix("spec=") for w in words if w.startswith("spec=")]
    kept += [w.split("=", 1)[1] for w in words if w.split("=", 1)[0] in ("dist", "layout")]
    kept += [w for w in words if w.startswith("grad=") or w == "near-duplicate"]
    return " ".join(kept)
