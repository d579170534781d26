"""What the screen knows about each version: its latest result, the run in progress, whether it waits, and whether
its result is stale (about a kernel or reference that has changed on disk since)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ktui.core import report, status
from ktui.core.events import (
    Event,
    FirstVerdict,
    LadderFinished,
    LadderStarted,
    RungFinished,
    RungProgress,
    RungStarted,
)
from ktui.core.results import DEFAULT_RUNGS, STOPPING_RUNGS, LadderResult, RungResult, Status
from ktui.core.status import STALE_BOTH, STALE_REFERENCE, staleness
from ktui.core.workspace import KernelRef, Workspace


@dataclass
class VersionState:
    """One version as the screen shows it, built from the ladder's events (or by hand, in the widget tests).

    Attributes:
        key: ``problem/version``.
        result: the latest finished run (or the stored one).
        live: the rungs finished in the run under way, by name.
        live_rungs: the rungs the run under way will run.
        running_rung: the rung it is on.
        progress: the running rung's ``(done, total, detail, case)``, from its ``RungProgress`` events.
        run_id: the run under way (progress of another run is ignored).
        running: a run is under way.
        queued: a run waits in the queue.
        stale: why ``result`` is not about the files on disk (``core.status.staleness``), '' when it is; set by
            ``refresh_stale``.
        unverified: why ``result`` is no verdict on the files on disk (``core.status.unverified``: only compiled
            since, by ``ktui diff``), '' when it is one; set by ``refresh_stale``. Such a version needs a run, as a
            stale one does.
        first: the run under way's first verdict (``FirstVerdict``): its status, cases and summary, until the run
            ends.
    """

    key: str
    result: LadderResult | None = None
    live: dict[str, RungResult] = field(default_factory=dict)
    live_rungs: tuple[str, ...] = ()
    running_rung: str | None = None
    progress: tuple[int, int, str, str] | None = None
    run_id: int | None = None
    running: bool = False
    queued: bool = False
    stale: str = ""
    first: tuple[Status, int, str] | None = None
    unverified: str = ""

    def refresh_stale(self, ws: Workspace) -> bool:
        """Compare the result's hashes (and its last verdict's) with the files on disk again; True when ``stale``
        or ``unverified`` changed."""
        problem, version = self.key.split("/", 1)
        k = KernelRef(problem, version, ws.root)
        stale, unverified = staleness(ws, k, self.result), status.unverified(ws, k, self.result)
        changed = (stale, unverified) != (self.stale, self.unverified)
        self.stale, self.unverified = stale, unverified
        return changed

    def start(self, rungs: tuple[str, ...], run_id: int | None = None) -> None:
        """A run starts (``LadderStarted``)."""
        self.running, self.queued, self.live, self.live_rungs = True, False, {}, rungs
        self.running_rung, self.progress, self.run_id, self.first = None, None, run_id, None

    def first_verdict(self, ev: FirstVerdict) -> bool:
        """The run under way's first verdict; False (and ignored) for another run, or one that ended."""
        if not self.running or (self.run_id is not None and ev.run_id != self.run_id):
            return False
        self.first = (ev.result.status, ev.cases, ev.result.summary)
        return True

    def first_text(self) -> str:
        """``first ok (16 native)``: the first verdict on its cases (native inputs, one seed per spec), and why when
        it failed, while the run that gave it goes on; else ``""``."""
        if not self.running or self.first is None or "correctness" in self.live:
            return ""
        status, cases, summary = self.first
        text = f"first {status.value} ({cases} native)"
        return text + (f": {summary}" if status is Status.FAILED else "")

    def _other_run(self, run_id: int) -> bool:
        """Whether an event of run ``run_id`` belongs to a run other than the one under way (a cancelled run's last
        events arriving after the next run started: new-user trial 32, F14, its failing rows drawn in the Accuracy tab
        through the next run)."""
        return self.running and self.run_id is not None and run_id != self.run_id

    def begin_rung(self, rung: str, run_id: int) -> bool:
        """The run moves on to ``rung`` (``RungStarted``); False (and ignored) for another run."""
        if self._other_run(run_id):
            return False
        self.running_rung, self.progress = rung, None
        return True

    def end_rung(self, result: RungResult, run_id: int) -> bool:
        """A rung of the run under way ended (``RungFinished``); False (and ignored) for another run."""
        if self._other_run(run_id):
            return False
        self.live[result.name] = result
        return True

    def advance(self, run_id: int, rung: str, done: int, total: int, detail: str = "", case: str = "") -> bool:
        """The running rung's progress (``RungProgress``: with the step's ``detail`` and the ``case`` under way);
        False (and ignored) when it is not the rung under way."""
        if not self.running or (self.run_id is not None and run_id != self.run_id):
            return False
        if self.running_rung is None:
            self.running_rung = rung
        if rung != self.running_rung:
            return False
        self.progress = (done, total, detail, case)
        return True

    def finish(self, result: LadderResult, run_id: int) -> bool:
        """The run ended (``LadderFinished``); False (and ignored) when another run is under way."""
        if self._other_run(run_id):
            return False
        self.result, self.running, self.running_rung, self.live, self.progress = result, False, None, {}, None
        self.first = None
        return True

    def apply(self, ev: Event) -> bool:
        """Follow one ladder event of this version; False when it changed nothing (another kind, stale progress)."""
        step = _STEPS.get(type(ev))
        return bool(step and step(self, ev) is not False)

    def progress_text(self) -> str:
        """``37/106`` while the running rung has said how far it is, else ``""``."""
        return f"{self.progress[0]}/{self.progress[1]}" if self.running and self.progress else ""

    def rung(self, name: str) -> tuple[str, RungResult | None]:
        """(state, result) for a rung row: state is ``ok``, ``FAILED``, ``skipped``, ``running``, ``waiting``
        (later in the run under way), ``-`` (not run)."""
        if self.running:
            if name in self.live:
                done = self.live[name]
                return done.status.value, done
            if name == self.running_rung:
                return "running", None
            if name in self.live_rungs and not any(
                r.status is Status.FAILED and r.name in STOPPING_RUNGS for r in self.live.values()
            ):
                return "waiting", None
            prev = self.result.rung(name) if self.result else None
            return ("-", None) if prev is None else ("stale", prev)
        if self.stale and self.result is not None and self.result.carried_from:
            return "-", None  # another version's run on a source this one no longer has (new-user trial 25, F5)
        r = self.result.rung(name) if self.result else None
        return (r.status.value, r) if r else ("-", None)

    def badge(self) -> tuple[str, str]:
        """A short verdict for the tree and its style: ``✓ 1.23x``, ``✗ correctness``, ``▶ run``, ``▶ run · first ✓``
        (the first verdict in while the rest runs), ``… queued``."""
        if self.running:
            if self.first_text():  # the first verdict while the rest runs: edit on (new-user trial 21 F6)
                failed = self.first is not None and self.first[0] is Status.FAILED
                mark = "✗" if failed else "✓"
                return f"▶ {self.running_rung or 'starting'} · first {mark}", "bold red" if failed else "bold yellow"
            return f"▶ {self.running_rung or 'starting'}", "bold yellow"
        if self.queued:
            return "… queued", "yellow"
        text, style = report.verdict(self.result)  # ✓ 1.23x, ✗ correctness, ! reference, ◦ compiled, · not run
        last = self.result.last_verdict if self.result is not None and not self.result.has_verdict else None
        if last is not None and self.unverified:  # only compiled since its last verdict, on other code: that one
            return f"{last.verdict} (stale)", "dim italic"
        if last is not None:  # only compiled again, on the code its last verdict judged: that verdict stands
            return last.verdict, report.verdict_style(last.verdict)
        carried = self.result.carried_from if self.result is not None else None
        if self.stale and carried:  # another version's verdict on a source this one no longer has: never its own
            return "· not run", report.verdict_style("·")
        if self.stale and self.result is not None:  # a verdict on code that is no longer on disk
            return f"{text} (stale)", "dim italic"
        if carried and not self.unverified:  # a copy (``n``): the verdict of its source's run, said as such
            return f"{text} (as {carried})", style
        if self.unverified:
            return f"{text} (unverified)", "dim italic"
        return text, style

    @property
    def reference_error(self) -> str:
        """The first line of the error when the latest result failed because of the reference, '' otherwise."""
        failed = report.reference_failure(self.result)
        return failed.error.one_line() if failed is not None and failed.error else ""


_STEPS: dict[type[Event], Callable[[VersionState, Any], bool | None]] = {
    LadderStarted: lambda st, ev: st.start(ev.rungs, ev.run_id),
    RungStarted: lambda st, ev: st.begin_rung(ev.rung, ev.run_id),
    RungProgress: lambda st, ev: st.advance(ev.run_id, ev.rung, ev.done, ev.total, ev.detail, ev.case),
    RungFinished: lambda st, ev: st.end_rung(ev.result, ev.run_id),
    LadderFinished: lambda st, ev: st.finish(ev.result, ev.run_id),
    FirstVerdict: lambda st, ev: st.first_verdict(ev),
}


def problem_badge(states: list[VersionState]) -> tuple[str, str] | None:
    """The mark beside a problem in the tree: ``! reference error`` when a version's latest result failed because
    of the reference on disk (not one edited since), else None."""
    if any(st.reference_error and st.stale not in (STALE_REFERENCE, STALE_BOTH) for st in states):
        return "! reference error", "bold magenta"
    return None


def stale_keys(states: dict[str, VersionState]) -> list[str]:
    """The versions whose result is stale or unverified (only compiled since its last verdict) and that neither run
    nor wait: what start-up (or ``u``) queues. A version only ever compiled (``ktui diff`` on one never run: no
    last verdict) is marked unverified and not queued, as a version never run is not (new-user trial 21 F22: one
    ``ktui diff`` against matmul/v1 queued its minutes-long CPU ladder at every start)."""
    return [
        key
        for key, st in states.items()
        if (st.stale or (st.unverified and st.result is not None and st.result.last_verdict is not None))
        and not (st.running or st.queued)
    ]


def rung_names(state: VersionState | None) -> tuple[str, ...]:
    """The rows of the ladder panel: the standard rungs plus any a result carries beyond them."""
    names = list(DEFAULT_RUNGS)
    if state and state.result:
        names += [r.name for r in state.result.rungs if r.name not in names]
    return tuple(names)
