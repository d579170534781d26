"""What the screen knows about each version: its latest result, the run in progress, whether it waits."""

from __future__ import annotations

from dataclasses import dataclass, field

from ktui.core.results import DEFAULT_RUNGS, STOPPING_RUNGS, LadderResult, RungResult, Status


@dataclass
class VersionState:
    key: str  # problem/version
    result: LadderResult | None = None  # the latest finished run
    live: dict[str, RungResult] = field(default_factory=dict)  # rungs finished in the run under way
    live_rungs: tuple[str, ...] = ()
    running_rung: str | None = None
    running: bool = False
    queued: bool = False

    def start(self, rungs: tuple[str, ...]) -> None:
        self.running, self.queued, self.live, self.live_rungs, self.running_rung = True, False, {}, rungs, None

    def finish(self, result: LadderResult) -> None:
        self.result, self.running, self.running_rung, self.live = result, False, None, {}

    def rung(self, name: str) -> tuple[str, RungResult | None]:
        """(state, result) for a rung row: state is ``ok``, ``FAILED``, ``skipped``, ``running``, ``waiting``
        (later in the run under way), ``-`` (not run)."""
        if self.running:
            if name in self.live:
                r = self.live[name]
                return r.status.value, r
            if name == self.running_rung:
                return "running", None
            if name in self.live_rungs and not any(r.status is Status.FAILED and r.name in STOPPING_RUNGS
                                                   for r in self.live.values()):
                return "waiting", None
            prev = self.result.rung(name) if self.result else None
            return ("-", None) if prev is None else ("stale", prev)
        r = self.result.rung(name) if self.result else None
        return (r.status.value, r) if r else ("-", None)

    def badge(self) -> tuple[str, str]:
        """A short verdict for the tree and its style: ``✓ 1.23x``, ``✗ correctness``, ``▶ run``, ``… queued``."""
        if self.running:
            return f"▶ {self.running_rung or 'starting'}", "bold yellow"
        if self.queued:
            return "… queued", "yellow"
        if self.result is None:
            return "· not run", "dim"
        failed = self.result.failed_rung
        if failed:
            return f"✗ {failed.name}", "bold red"
        if self.result.rung("correctness") is None:  # only compiled (ktui diff, --rungs dumps): not verified
            return "◦ compiled", "dim"
        bench = self.result.rung("benchmark")
        specs = bench.figures.get("specs", []) if bench and bench.status is Status.OK else []
        speedups = [s["speedup"] for s in specs if s.get("speedup")]
        if speedups:
            return f"✓ {min(speedups):.2f}x", "bold green"
        return "✓ ok", "green"


def rung_names(state: VersionState | None) -> tuple[str, ...]:
    """The rows of the ladder panel: the standard rungs plus any a result carries beyond them."""
    names = list(DEFAULT_RUNGS)
    if state and state.result:
        names += [r.name for r in state.result.rungs if r.name not in names]
    return tuple(names)
