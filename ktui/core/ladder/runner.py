"""The rung ladder for one kernel version: snapshots → rungs (``RUNGS`` order) → merge → store → events.

This module runs in ktui's own process and never imports torch: it snapshots the sources, builds a ``RunContext``,
climbs the rungs (one module each in ``ktui.core.ladder.rungs``; they send requests to the two worker processes,
the *candidate*, which runs the kernel, and the *judge*, which runs only the reference and decides verdicts) and
publishes every step on the ``EventBus``: ``LadderStarted``, per rung ``RungStarted``, ``RungProgress`` (from the
workers) and ``RungFinished``, then ``LadderFinished``.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from ktui.core import report
from ktui.core.events import EventBus, LadderFinished, LadderStarted, RungFinished, RungStarted
from ktui.core.ladder import rungs as rung_modules
from ktui.core.ladder.context import (
    NEEDS_GPU_RUNGS,
    TAMPER_RUNGS,
    LadderOptions,
    RunContext,
    RungFailed,
    fail_tampered,
    needs_gpu_skipped,
    untimed_benchmark,
)
from ktui.core.ladder.judge_queue import JudgeQueue
from ktui.core.results import (
    RUNG_ORDER,
    RUNG_SPECS,
    ErrorInfo,
    LadderResult,
    LastVerdict,
    RungResult,
    Status,
    expand_rungs,
)
from ktui.core.store import ResultStore, Snapshots
from ktui.core.workers.client import WorkerError
from ktui.core.workers.logs import LOG_CAP_BYTES
from ktui.core.workers.pool import WorkerPool
from ktui.core.workspace import KernelRef, Workspace

# Each rung of ``ktui.core.results.RUNGS`` and the function that climbs it.
RUNG_IMPLS: dict[str, Callable[[RunContext], RungResult]] = {
    "compile": rung_modules.compile.run,
    "run": rung_modules.run.run,
    "correctness": rung_modules.correctness.run,
    "benchmark": rung_modules.benchmark.run,
    "dumps": rung_modules.dumps.run,
    "profile": rung_modules.profile.run,
    "trace": rung_modules.trace.run,
}
assert set(RUNG_IMPLS) == set(RUNG_SPECS), f"rung table mismatch: {sorted(set(RUNG_IMPLS) ^ set(RUNG_SPECS))}"


class Ladder:
    """Runs the ladder of one version at a time (callers serialize; the scheduler does)."""

    def __init__(
        self,
        workspace: Workspace,
        pool: WorkerPool,
        bus: EventBus | None = None,
        options: LadderOptions | None = None,
        store: ResultStore | None = None,
    ):
        self.ws = workspace
        self.pool = pool
        self.bus = bus or pool.bus
        self.options = options or LadderOptions()
        self.snapshots = Snapshots(workspace)
        self.store = store
        self._run_id = 0
        self._lock = threading.Lock()
        self._exec = JudgeQueue()  # the judge's background work: prepare chunks, the first verdict ahead of them

    # -- public ------------------------------------------------------------------------------------------------
    def run(self, kernel: KernelRef, rungs: tuple[str, ...] | None = None) -> LadderResult:
        """Run ``rungs`` (default: the options' rungs, in ladder order) on ``kernel`` and return the result; never
        raises for a kernel's fault.

        A failed ``compile`` or ``run`` (``RungSpec.stops_ladder``) stops the ladder. A version whose run needs a
        GPU this machine lacks (a CuTeDSL kernel on the CPU: ``RunContext.needs_gpu``) skips the rungs that call it
        (``NEEDS_GPU_RUNGS``) with that reason, and the ladder goes on to dumps. A version found patching its
        worker fails ``run``, ``correctness`` and ``benchmark`` (``TAMPER_RUNGS``, each naming what it patched; the
        benchmark is then not timed), but the ladder goes on, so the judge's verdict on its outputs is shown; the
        candidate-side workers are replaced after every ladder. The result is also published (``LadderFinished``)
        and saved in the result store when there is one.

        Raises:
            ValueError: an unknown rung name.
        """
        with self._lock:
            self._run_id += 1
            run_id = self._run_id
            return self._run(kernel, expand_rungs(rungs or self.options.rungs), run_id)

    def close(self) -> None:
        self._exec.shutdown(wait=False, cancel_futures=True)

    # -- the ladder --------------------------------------------------------------------------------------------
    def _run(self, kernel: KernelRef, rungs: tuple[str, ...], run_id: int) -> LadderResult:
        started = time.time()
        t0 = time.perf_counter()
        result = LadderResult(
            problem=kernel.problem,
            version=kernel.version,
            kernel=str(kernel.path.relative_to(self.ws.root)),
            device={"type": self.pool.device},
            started_at=started,
        )
        ctx = RunContext(
            ws=self.ws,
            pool=self.pool,
            options=self.options,
            bus=self.bus,
            kernel=kernel,
            run_id=run_id,
            seed=self._base_seed(),
            store=self.store,
            background=self._exec,
        )
        try:
            ctx.kernel_snap, result.source_sha256 = self.snapshots.take(kernel.problem, kernel.path)
            result.helpers_sha256 = self.ws.helpers_of(kernel)  # what else the verdict depends on (its staleness)
            ctx.ref_snap, result.reference_sha256 = self.snapshots.take(
                kernel.problem, self.ws.reference_path(kernel.problem)
            )
        except OSError as exc:
            self.bus.publish(LadderStarted(key=kernel.key, run_id=run_id, source_sha256="", rungs=rungs))
            rr = RungResult(
                rungs[0] if rungs else "compile",
                Status.FAILED,
                error=ErrorInfo(type(exc).__name__, f"cannot read the source: {exc}"),
            )
            result.rungs.append(rr)
            self.bus.publish(RungFinished(key=kernel.key, run_id=run_id, result=rr))
            return self._finish(result, t0, run_id)
        ctx.sha = result.source_sha256
        ctx.ref_sha = result.reference_sha256
        self.bus.publish(LadderStarted(key=kernel.key, run_id=run_id, source_sha256=result.source_sha256, rungs=rungs))
        ctx.out_dir = Path(tempfile.mkdtemp(prefix="ktui-out-", dir=_tmp_root()))
        own: list[RungResult] = []  # each rung's own result, before the integrity decision
        try:
            for name in rungs:
                self.bus.publish(RungStarted(key=kernel.key, run_id=run_id, rung=name))
                rr = self._rung(name, ctx)
                known = _known_failure(rr, ctx, self.pool.stopping)
                if known is not None:
                    # cancelled (x, or ktui quitting) after the first verdict had failed: that failure is the
                    # version's verdict, not "not run" (new-user trial 27, F5)
                    if name != "correctness":
                        result.rungs.append(replace(rr, status=Status.SKIPPED, error=None, summary=known.summary))
                        self.bus.publish(RungFinished(key=kernel.key, run_id=run_id, result=result.rungs[-1]))
                    rr = known.rung
                    name = "correctness"
                if rr.status is Status.FAILED:
                    ctx.failed_rungs.append(name)
                own.append(rr)
                result.rungs.append(rr)
                self._fail_tampered(ctx, result, own)
                self.bus.publish(RungFinished(key=kernel.key, run_id=run_id, result=result.rungs[-1]))
                # a tampered worker fails the rung but does not stop the ladder: the judge's verdict still follows
                if known is not None or (
                    rr.status is Status.FAILED
                    and (RUNG_SPECS[name].stops_ladder or (name == "correctness" and self.options.stop_when_wrong))
                ):
                    break
        finally:
            shutil.rmtree(ctx.out_dir, ignore_errors=True)
            for fut in (ctx.prepare, *ctx.prepare_rest, ctx.first_verdict):
                if fut is not None:
                    fut.cancel()
            ran_on = self.pool.candidate.last_hello  # the device of the worker that ran it (its spare may not be up)
            self.pool.recycle()  # candidate code ran there: no later check runs in that process
        hello = ran_on or self.pool.candidate.last_hello
        if hello:
            result.device = dict(hello.get("device", result.device))
        return self._finish(result, t0, run_id)

    def _printed_note(self, before: int, rung: str) -> list[str]:
        """A warning when the candidate's processes printed during ``rung`` (``before``: the pool's
        ``printed_lines`` as it began; new-user trial 25, F12: a version's ``print`` and ``tl.device_print`` went to
        the log, and nothing said so)."""
        n = self.pool.printed_lines("candidate") - before
        if n <= 0:
            return []
        where = self.pool.log_path("candidate")
        try:
            where = where.relative_to(self.ws.root)
        except ValueError:
            pass
        return [
            f"the candidate worker printed {n:,} line{'s' * (n != 1)} during {rung} (the version's print and "
            f"tl.device_print output, and any traceback): {where}"
        ]

    def _finish(self, result: LadderResult, t0: float, run_id: int) -> LadderResult:
        """Save and publish the result merged with the stored one (a partial run keeps the other rungs' figures);
        return this run's own result. A run that ktui's shutdown, an unusable device or a lost worker (a dropped
        SSH connection) broke says nothing about the kernel: it is published (the screen shows why) but never
        stored as the version's verdict."""
        result.seconds = time.perf_counter() - t0
        merged = result
        # a worker that could not start, or was lost (a dropped SSH connection), says nothing about the kernel; a
        # first verdict that had failed before ktui quit does (``_known_failure``)
        known = any(r.figures.get("first_verdict_only") for r in result.rungs)
        broken = not known and (
            self.pool.stopping
            or any(r.error and r.error.type in ("WorkerStartError", "WorkerLost") for r in result.rungs)
        )
        if self.store is not None and not broken:
            merged = merge(self.store.load(result.problem, result.version), result)
            try:
                self.store.save(merged)
            except OSError:
                pass  # the result is still published; a full disk must not stop the session
        self.bus.publish(LadderFinished(key=result.key, run_id=run_id, result=merged))
        return result

    def _base_seed(self) -> int:
        return self.options.seed if self.options.seed is not None else random.SystemRandom().randrange(1, 2**31 - 64)

    def _rung(self, name: str, ctx: RunContext) -> RungResult:
        """Climb one rung: its result, or a ``FAILED`` result for ``RungFailed`` and ``WorkerError`` (with the
        user's paths in the message and traceback); the seconds it took.

        ktui's own snapshots are checked first and taken again when something deleted them; a rung that failed
        because one vanished while it ran (``SnapshotMissing``) runs once more on the snapshot taken again. Either
        is a warning on the rung, never the user's file reported missing. So is a kernel that printed more than
        its worker's log keeps."""
        t0 = time.perf_counter()
        printed, lines = self._printed(), self.pool.printed_lines("candidate")
        notes = self._restore_snapshots(ctx)
        rr = self._climb(name, ctx)
        if rr.error is not None and rr.error.type == "SnapshotMissing":
            again = self._restore_snapshots(ctx)
            if again:
                notes += again
                rr = self._climb(name, ctx)
        rr.warnings.extend(notes)
        rr.warnings.extend(self._printed_warnings(printed, name))
        rr.warnings.extend(self._printed_note(lines, name))
        rr.seconds = time.perf_counter() - t0
        return rr

    def _fail_tampered(self, ctx: RunContext, result: LadderResult, own: list[RungResult]) -> None:
        """When the candidate's worker was found tampered with (``ctx.tampered``, from execute's reply or the
        benchmark's integrity call), fail every rung of ``TAMPER_RUNGS`` it served so far (``fail_tampered``, from
        each rung's own result), the last one included; an earlier one whose result changes (tampering the
        benchmark found after run and correctness passed) is published again."""
        if not ctx.tampered:
            return
        for i, rr in enumerate(own):
            if rr.name not in TAMPER_RUNGS:
                continue
            failed = fail_tampered(rr, ctx.tampered)
            if failed == result.rungs[i]:
                continue
            result.rungs[i] = failed
            if i < len(own) - 1:  # the last one is published by the caller
                self.bus.publish(RungFinished(key=ctx.kernel.key, run_id=ctx.run_id, result=failed))

    def _climb(self, name: str, ctx: RunContext) -> RungResult:
        if ctx.needs_gpu and name in NEEDS_GPU_RUNGS:
            return needs_gpu_skipped(name, ctx.needs_gpu)  # nothing here can call it
        if name == "benchmark" and ctx.tampered:
            return untimed_benchmark()  # failed by ``_fail_tampered``: a patched worker's times mean nothing
        try:
            return RUNG_IMPLS[name](ctx)
        except RungFailed as f:
            return RungResult(name, Status.FAILED, figures=f.figures, summary=f.summary, error=f.info)
        except WorkerError as exc:
            return RungResult(name, Status.FAILED, error=ctx.user_paths(exc.info))

    def _restore_snapshots(self, ctx: RunContext) -> list[str]:
        """Take again each of the run's snapshots that is missing or altered; a warning for each one taken."""
        notes = []
        for snap, what in ((ctx.kernel_snap, "the kernel version"), (ctx.ref_snap, "the reference")):
            if snap is None:
                continue
            try:
                restored = self.snapshots.restore(snap)
            except OSError as exc:
                notes.append(f"ktui's own snapshot of {what} is missing and cannot be written again: {exc}")
                continue
            if restored:
                notes.append(
                    f"ktui's own snapshot of {what} ({snap.relative_to(self.ws.root)}) was deleted or altered "
                    "during the run; ktui took it again (your file is not the problem)"
                )
        return notes

    def _printed(self) -> dict[str, int]:
        """Bytes each candidate-side worker (candidate, compiler) wrote to its log so far."""
        return {w.role: w.printed_bytes for w in (self.pool.candidate, self.pool.compiler)}

    def _printed_warnings(self, before: dict[str, int], rung: str) -> list[str]:
        """A warning per candidate-side worker whose kernel printed more during ``rung`` than its log keeps."""
        out = []
        for role, now in self._printed().items():
            n = now - before.get(role, now)
            if n > LOG_CAP_BYTES:
                out.append(
                    f"the kernel printed {n / 2**20:.0f} MB to stdout/stderr in {rung}; the {role} worker's log "
                    f"(.ktui/logs/{role}.log) keeps the last {LOG_CAP_BYTES >> 20} MB"
                )
        return out


def merge(old: LadderResult | None, new: LadderResult) -> LadderResult:
    """What the store keeps after ``new``: ``new`` itself, or, when ``new`` ran only some rungs on the same sources
    and device as ``old`` (``--rungs profile``, say), ``old``'s other rungs with ``new``'s in their place. A result
    that still has no verdict (``LadderResult.has_verdict``: only compiled, by ``ktui diff`` on an edited version)
    carries ``old``'s verdict as its ``last_verdict`` (or the one ``old`` carried), so the stored verdict does not
    vanish: it shows as the last verdict, stale, and the version counts as needing a run
    (``ktui.core.status.needs_run``)."""
    merged = _merge_rungs(old, new)
    if merged.has_verdict or old is None:
        return merged
    last = last_verdict_of(old) if old.has_verdict else old.last_verdict
    return replace(merged, last_verdict=last) if last is not None else merged


def last_verdict_of(result: LadderResult) -> LastVerdict:
    """``result``'s verdict in brief (``report.verdict``'s text, the failed rung and its summary, the hashes it
    judged), to keep on a later result that has none."""
    failed = result.failed_rung
    summary = (failed.summary or (failed.error.one_line() if failed.error else "")) if failed else ""
    return LastVerdict(
        verdict=report.verdict(result)[0],
        ok=result.ok,
        failed_rung=failed.name if failed else None,
        summary=(summary.splitlines() or [""])[0][:200],
        source_sha256=result.source_sha256,
        reference_sha256=result.reference_sha256,
        started_at=result.started_at,
        device=dict(result.device),
    )


def _merge_rungs(old: LadderResult | None, new: LadderResult) -> LadderResult:
    if old is None or (old.source_sha256, old.reference_sha256, old.device.get("type"), old.helpers_sha256) != (
        new.source_sha256,
        new.reference_sha256,
        new.device.get("type"),
        new.helpers_sha256,
    ):
        return new
    names = {r.name for r in new.rungs}
    if not names - {"compile"} or {r.name for r in old.rungs} <= names:
        return new
    rungs = {r.name: r for r in old.rungs} | {r.name: r for r in new.rungs}
    merged = LadderResult(
        new.problem,
        new.version,
        new.kernel,
        new.device,
        [rungs[n] for n in RUNG_ORDER if n in rungs],
        new.source_sha256,
        new.reference_sha256,
        new.started_at,
        new.seconds,
        carried_from=old.carried_from,  # (the rungs kept from ``old`` are that version's run)
        helpers_sha256=new.helpers_sha256,
    )
    return merged


def _tmp_root() -> str | None:
    """Where candidate outputs travel to the judge: memory (/dev/shm) when it has room for large outputs (16 GiB
    free), else the system's temporary folder."""
    try:
        if shutil.disk_usage("/dev/shm").free > 16 << 30:
            return "/dev/shm"
    except OSError:
        pass
    return None


class _Known(NamedTuple):
    """A failed first verdict standing for a run that was cut short: the correctness rung to keep, and what the
    interrupted rung says."""

    rung: RungResult
    summary: str


def _known_failure(rr: RungResult, ctx: RunContext, stopping: bool) -> _Known | None:
    """When ``rr`` was cut short (cancelled, ``RunCancelled``; or a worker stopped as ktui quits) after the first
    verdict (``ctx.first_verdict``) had come in FAILED: the correctness rung that verdict gives (its figures marked
    ``first_verdict_only``), and the interrupted rung's summary. None otherwise: a run cut short before any failure
    is known says nothing about the kernel (new-user trial 27, F5: a version whose first verdict had failed went back
    to "not run" on ``x``, and a quit mid-run was recorded as "WorkerStartError: the judge worker was stopped")."""
    if rr.status is not Status.FAILED or rr.error is None:
        return None
    cut = rr.error.type == "RunCancelled" or (stopping and rr.error.type in ("WorkerStartError", "WorkerLost"))
    fut = ctx.first_verdict
    if not cut or fut is None or not fut.done() or fut.cancelled() or fut.exception() is not None:
        return None
    first = fut.result()
    if first is None or first.result.status is not Status.FAILED:
        return None
    how = "cancelled" if rr.error.type == "RunCancelled" else "cut short as ktui quit"
    rung = replace(
        first.result,
        name="correctness",
        summary=f"first verdict ({first.cases} cases; the full run was {how}): {first.result.summary}",
        figures={**first.result.figures, "first_verdict_only": True},
    )
    return _Known(rung, f"{how} after the first verdict had failed")
