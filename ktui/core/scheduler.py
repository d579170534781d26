"""The run queue: one ladder at a time, saves during a run wait their turn, the latest save of a file wins.

A version is queued at most once: a second save while it waits changes nothing (the run snapshots the file when it
starts, so it sees the latest content); a save while it runs queues it again, so the newest content always gets its
own run and no save is dropped.

Every ``submit`` returns a ``Ticket``: a future of the ``LadderResult`` of the run that serves it (``result()``
blocks). A save whose content already ran (the kernel's and the reference's sha256 equal those of this scheduler's
last result for the version) is skipped when its turn comes, and its ticket gets that result: the agent's own
submit and the watcher's save of the same write run once. A save that gives a version the source another version of
its problem already ran to a verdict with the same reference (``n`` copies a version; a revert to an earlier
version's text) is skipped the same way when ``carry`` finds that verdict: the ticket gets it as this version's
(``LadderResult.carried``), no second run of the same bytes. A rerun (``why="rerun"``) always runs.

``cancel`` ends the run under way (the cancel key, ctrl+c): its worker calls fail at once (``on_cancel``, the
pool's ``cancel_run``), the busy workers are restarted, and its ticket is cancelled. A save of the running version
whose content differs from what the run snapshotted cancels it the same way: the old content's verdict is moot,
and its ticket is served by the run of the new content. A cancelled run is a ``Notice``, never a verdict: it is
not kept as the version's last result (``is_cancelled``).

``release`` is one submitter giving its ticket up (an MCP client cancelled its request): the last one to give it up
takes a run still waiting out of the queue (it never runs) or cancels the run under way; while other submits share
the ticket, it runs for them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Literal

from ktui.core.events import Event, EventBus, Notice, QueueChanged, RungStarted
from ktui.core.results import LadderResult, Status
from ktui.core.store import sha256
from ktui.core.workspace import REFERENCES, KernelRef, Workspace

Released = Literal["withdrawn", "cancelled", "kept", "done"]
"""What ``Scheduler.release`` did: took the waiting run out of the queue, cancelled the running one, left it for
the other submits that share the ticket, or nothing (it had finished)."""

Why = Literal["save", "rerun", "request"]  # request: a user's run of one version (r, p, t)
"""Why a run is queued: ``save`` (the watcher saw the file change; skipped when that content already ran) or
``rerun`` (asked for: ``r``, ``ktui run``, the agent; always runs)."""


class Ticket(Future[LadderResult | None]):
    """A queued run's future: ``result(timeout)`` is the ``LadderResult`` of the run that served the submit (None
    when the kernel file was gone by then); it raises what the ladder raised, ``CancelledError`` when the scheduler
    stopped first, ``TimeoutError`` past ``timeout``.

    Attributes:
        key: the version, ``problem/version``.
        skipped: set when the save's content had already run (the result is that earlier run's).
        cancelled_because: why the run serving it was cancelled ('' when it was not).
        holders: how many submits it serves and did not ``release`` it.
    """

    def __init__(self, key: str):
        super().__init__()
        self.key = key
        self.skipped = False
        self.cancelled_because = ""
        self.holders = 0

    def cancel(self) -> bool:
        """Cancel the ticket and wake whoever waits on it with ``concurrent.futures.wait`` or ``as_completed``
        (``Future.cancel`` alone wakes them only once an executor calls ``set_running_or_notify_cancel``, which
        no executor does here: a batch waiting on a cancelled ticket would wait until its timeout)."""
        return cancel_notifying(self, super().cancel)


def cancel_notifying(fut: Future[Any], cancel: Callable[[], bool] | None = None) -> bool:
    """Cancel ``fut`` (by ``cancel``, default ``fut.cancel``) and notify its waiters (``wait``, ``as_completed``),
    which a future made outside an executor does not do by itself. Returns what ``cancel`` returned (False when
    ``fut`` had finished)."""
    was_pending = not fut.done() and not fut.running()
    if not (cancel or fut.cancel)():
        return False
    if was_pending:
        try:
            fut.set_running_or_notify_cancel()  # CANCELLED -> CANCELLED_AND_NOTIFIED: the waiters are told
        except RuntimeError:
            pass  # another thread's cancel notified them first
    return True


CANCELLED = "RunCancelled"
"""The error type of a rung that a cancel ended (``ktui.core.workers.client.RunCancelled``)."""


def is_cancelled(result: LadderResult | None) -> bool:
    """The run was cancelled before it finished: a rung failed with ``RunCancelled`` (not the kernel's fault)."""
    return result is not None and any(
        r.status is Status.FAILED and r.error is not None and r.error.type == CANCELLED for r in result.rungs
    )


def _serve_from(newer: Future[LadderResult | None], older: Ticket) -> None:
    """``older`` (the ticket of a superseded run) gets what ``newer`` gets."""

    def copy(f: Future[LadderResult | None]) -> None:
        if older.done():
            return
        if f.cancelled():
            older.cancel()
        elif (exc := f.exception()) is not None:
            older.set_exception(exc)
        else:
            older.set_result(f.result())

    newer.add_done_callback(copy)


def content_of(kernel: KernelRef) -> tuple[str, str] | None:
    """The sha256 of the kernel's and of its reference's current source; None when either cannot be read."""
    try:
        return (
            sha256(kernel.path.read_bytes()),
            sha256((kernel.root / REFERENCES / f"{kernel.problem}.py").read_bytes()),
        )
    except OSError:
        return None


class Scheduler:
    """Runs ``run_ladder(kernel)`` for queued versions on a background thread, in submission order.

    Args:
        run_ladder: runs one version's ladder (``Ladder.run`` or the session's wrapper of it).
        bus: where queue changes and notices go.
        on_cancel: ends the run under way now (``WorkerPool.cancel_run``: its calls fail, its busy workers are
            restarted); called with the reason, returns the roles of the workers it stopped.
        after_cancel: the cancelled run has returned; the next one runs normally (``WorkerPool.end_cancel``).
        carry: for a save with no run of its content: another version's result for the same (kernel, reference)
            sha256 pair, already stored and published as this version's (``Session._carry``), else None.
    """

    def __init__(
        self,
        run_ladder: Callable[..., LadderResult],
        bus: EventBus,
        on_cancel: Callable[[str], list[str]] | None = None,
        after_cancel: Callable[[], None] | None = None,
        carry: Callable[[KernelRef, tuple[str, str]], LadderResult | None] | None = None,
    ):
        self._run_ladder = run_ladder
        self._carry = carry
        self._on_cancel = on_cancel
        self._after_cancel = after_cancel
        self.bus = bus
        self._queue: OrderedDict[str, KernelRef] = OrderedDict()
        self._rungs: dict[str, tuple[str, ...] | None] = {}  # None: the default ladder
        self._tickets: dict[str, Ticket] = {}  # the ticket of each waiting version, shared by its submits
        self._why: dict[str, set[str]] = {}  # why each waiting version was queued
        self._last: dict[str, LadderResult] = {}  # the last result of each version this scheduler ran
        self._running: KernelRef | None = None
        self._running_ticket: Ticket | None = None
        self._running_content: tuple[str, str] | None = None  # sha256 of the kernel and reference it runs
        self._cancel: tuple[str, bool, list[str]] | None = None  # (why, superseded by a save, workers stopped)
        self._rung: str | None = None
        self._cv = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="ktui-scheduler", daemon=True)
        self._unsub = bus.subscribe(self._on_event)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        with self._cv:
            self._stopped = True
            self._queue.clear()
            self._rungs.clear()
            self._why.clear()
            tickets, self._tickets = list(self._tickets.values()), {}
            self._cv.notify_all()
        for t in tickets:
            t.cancel()
        self._unsub()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def submit(self, kernel: KernelRef, rungs: tuple[str, ...] | None = None, why: Why = "rerun") -> Ticket:
        """Queue ``kernel`` unless it already waits (then its waiting run serves this submit too); ``rungs``
        (default: the default ladder) merge with those of a run already waiting. A ``save`` or a ``request`` (the
        user's run of one version) waits ahead of runs queued for other reasons (start-up's stale versions, a rerun
        of all) and behind the saves and requests queued before it.

        Returns:
            the ticket of the run that will serve this submit (cancelled at once when the scheduler stopped).
        """
        with self._cv:
            if self._stopped:
                t = Ticket(kernel.key)
                t.cancel()
                return t
            if kernel.key in self._queue:
                old = self._rungs.get(kernel.key)
                self._rungs[kernel.key] = None if old is None or rungs is None else tuple(dict.fromkeys(old + rungs))
            else:
                self._queue[kernel.key] = kernel
                self._rungs[kernel.key] = rungs
                self._tickets[kernel.key] = Ticket(kernel.key)
                self._why[kernel.key] = set()
            self._why[kernel.key].add(why)
            if why in ("save", "request"):  # ahead of what waits for other reasons (start-up's stale versions, a
                # rerun of all), behind earlier saves and requests: the version being edited runs next (new-user trial
                # 19 M2), and a user's `r` is not overtaken by files saved after it (new-user trial 30, F5)
                for key in reversed([k for k in self._queue if self._why[k] & {"save", "request"}]):
                    self._queue.move_to_end(key, last=False)
            ticket = self._tickets[kernel.key]
            ticket.holders += 1
            supersedes = (
                why == "save"
                and self._running is not None
                and self._running.key == kernel.key
                and self._cancel is None
                and self._running_content is not None
            )
            self._cv.notify_all()
        now = content_of(kernel) if supersedes else None
        if supersedes and now != self._running_content:
            # name the file whose save it was (new-user trial 24, F6: a save of the reference read "a newer save of
            # v2.py"): the content is (kernel, reference)
            was = self._running_content
            changed = (
                f"references/{kernel.problem}.py"
                if now is not None and was is not None and now[0] == was[0]
                else kernel.path.name
            )
            self._cancel_running(kernel.key, f"cancelled: a newer save of {changed}", superseded=True)
        self._publish()
        return ticket

    def cancel(self, key: str | None = None, reason: str = "cancelled") -> str | None:
        """Cancel the run under way (only when it is ``key``'s, when given): its worker calls fail at once, the
        workers busy with it are restarted, its ticket is cancelled and a ``Notice`` says so. What waits still
        runs. Returns the cancelled version's key, None when nothing (or another version) runs."""
        return self._cancel_running(key, reason, superseded=False)

    def withdraw_queued(self, reason: str = "withdrawn", only: tuple[str, ...] | None = None) -> list[str]:
        """Take every waiting run (of the keys ``only`` names, when given) out of the queue: none of them runs, each
        ticket is cancelled with ``reason`` and one ``Notice`` names how many; the run under way goes on. Returns the
        keys withdrawn, in queue order."""
        with self._cv:
            keys = [k for k in self._queue if only is None or k in only]
            tickets = [self._tickets.pop(k) for k in keys]
            for k in keys:
                del self._queue[k]
                self._rungs.pop(k, None)
                self._why.pop(k, None)
            self._cv.notify_all()
        for t in tickets:
            t.cancelled_because = reason
            t.cancel()
        if keys:
            shown = ", ".join(keys[:4]) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")
            self.bus.publish(Notice(level="info", message=f"{len(keys)} queued run(s) withdrawn ({shown}): {reason}"))
            self._publish()
        return keys

    def release(self, ticket: Ticket, reason: str = "cancelled") -> Released:
        """One submit of ``ticket`` no longer wants its result (an MCP client cancelled its request).

        While other submits still hold the ticket, nothing changes (``kept``). The last holder's release takes a run
        still waiting out of the queue: it never runs, its ticket is cancelled with ``reason`` and a ``Notice`` says
        so (``withdrawn``); a run under way is cancelled as ``cancel`` cancels it (``cancelled``). ``done``: the run
        had finished (or another run serves the ticket now)."""
        with self._cv:
            if ticket.done():
                return "done"
            ticket.holders = max(0, ticket.holders - 1)
            if ticket.holders > 0:
                return "kept"
            waiting = self._tickets.get(ticket.key) is ticket
            if waiting:
                del self._queue[ticket.key], self._tickets[ticket.key]
                self._rungs.pop(ticket.key, None)
                self._why.pop(ticket.key, None)
                self._cv.notify_all()
            running = self._running_ticket is ticket
        if waiting:
            ticket.cancelled_because = reason
            ticket.cancel()
            self.bus.publish(
                Notice(level="info", message=f"{ticket.key}: queued run withdrawn, {reason} (it never ran)")
            )
            self._publish()
            return "withdrawn"
        if running and self._cancel_running(ticket.key, reason, superseded=False, ticket=ticket) is not None:
            return "cancelled"
        return "done"

    def _cancel_running(
        self, key: str | None, reason: str, superseded: bool, ticket: Ticket | None = None
    ) -> str | None:
        with self._cv:
            running = self._running
            if running is None or (key is not None and running.key != key) or self._cancel is not None:
                return None
            if ticket is not None and self._running_ticket is not ticket:
                return None
            self._cancel = (reason, superseded, [])
        stopped = self._on_cancel(reason) if self._on_cancel else []
        with self._cv:
            if self._cancel is not None:
                self._cancel[2].extend(stopped)
        return running.key

    def remember(self, key: str, result: LadderResult) -> None:
        """Keep ``result`` as ``key``'s last run, as if this scheduler had run it (a ladder that ran elsewhere: the
        session's engine), so that a save of the content it ran is skipped; a broken run is not kept."""
        if not is_broken(result):
            with self._cv:
                self._last[key] = result

    def last(self, key: str) -> LadderResult | None:
        """The result of the last run of ``key`` this scheduler made (skipped saves make none)."""
        with self._cv:
            return self._last.get(key)

    def _already_ran(self, kernel: KernelRef, whys: set[str], content: tuple[str, str] | None) -> LadderResult | None:
        """The last result when only saves asked for this run and the content it would run already ran to a verdict
        (a run of compile and dumps alone, ``LadderResult.has_verdict`` False, does not count); else, for saves, the
        verdict ``carry`` finds for that content in another version (kept as this version's last result)."""
        if whys != {"save"} or content is None:
            return None
        with self._cv:
            last = self._last.get(kernel.key)
        if (
            last is not None
            and last.has_verdict
            and content == (last.source_sha256, last.reference_sha256)
            and Workspace(kernel.root).helpers_of(kernel) == last.helpers_sha256  # its helper modules too
        ):
            return last
        carried = self._carry(kernel, content) if self._carry is not None else None
        if carried is not None:
            with self._cv:
                self._last[kernel.key] = carried
        return carried

    @property
    def waiting(self) -> tuple[str, ...]:
        with self._cv:
            return tuple(self._queue)

    @property
    def running(self) -> str | None:
        return self._running.key if self._running else None

    def idle(self) -> bool:
        with self._cv:
            return self._running is None and not self._queue

    def wait_idle(self, timeout_s: float) -> bool:
        """Block until nothing runs or waits (for tests and scripts); False on timeout."""
        with self._cv:
            return self._cv.wait_for(lambda: self._running is None and not self._queue, timeout_s)

    def _publish(self) -> None:
        with self._cv:
            ev = QueueChanged(
                running=self._running.key if self._running else None, rung=self._rung, waiting=tuple(self._queue)
            )
        self.bus.publish(ev)

    def _on_event(self, ev: Event) -> None:
        if isinstance(ev, RungStarted) and self._running and ev.key == self._running.key:
            with self._cv:
                self._rung = ev.rung
            self._publish()

    def _loop(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._stopped or bool(self._queue))
                if self._stopped:
                    return
                _, kernel = self._queue.popitem(last=False)
                rungs = self._rungs.pop(kernel.key, None)
                ticket = self._tickets.pop(kernel.key)
                whys = self._why.pop(kernel.key, set())
                self._running, self._rung, self._running_ticket = kernel, None, ticket
            content = content_of(kernel)
            with self._cv:
                self._running_content = content
            done = self._already_ran(kernel, whys, content)
            if done is not None:
                ticket.skipped = True
                ticket.set_result(done)
                with self._cv:
                    self._running, self._running_ticket = None, None
                    self._cv.notify_all()
                self._publish()
                continue
            self._publish()
            try:
                if kernel.path.exists():
                    result = self._run_ladder(kernel, rungs) if rungs else self._run_ladder(kernel)
                    if self._end_cancel(kernel, ticket):
                        continue
                    if isinstance(result, LadderResult) and not is_broken(result):
                        with self._cv:
                            self._last[kernel.key] = result
                    ticket.set_result(result)
                else:
                    self.bus.publish(Notice(level="warning", message=f"{kernel.key} was deleted before it ran"))
                    ticket.set_result(None)
            except Exception as exc:  # the queue must survive anything
                if self._end_cancel(kernel, ticket):
                    continue
                self.bus.publish(
                    Notice(
                        level="error",
                        message=f"{kernel.key}: ktui failed to run the ladder: {type(exc).__name__}: {exc}",
                    )
                )
                ticket.set_exception(exc)
            finally:
                with self._cv:
                    self._running, self._rung, self._running_content = None, None, None
                    self._running_ticket = None
                    self._cv.notify_all()
                self._publish()

    def _end_cancel(self, kernel: KernelRef, ticket: Ticket) -> bool:
        """After a run returned: when it was cancelled, tell the pool it ended, serve or cancel its ticket and say
        so in a ``Notice``; True then."""
        with self._cv:
            cancel, self._cancel = self._cancel, None
            newer = self._tickets.get(kernel.key) if cancel and cancel[1] else None
        if cancel is None:
            return False
        if self._after_cancel:
            self._after_cancel()
        reason, _, stopped = cancel
        ticket.cancelled_because = reason
        if newer is not None:
            _serve_from(newer, ticket)
        else:
            ticket.cancel()
        workers = f"; the {' and '.join(dict.fromkeys(stopped))} worker{'s' if len(stopped) > 1 else ''} restarted"
        self.bus.publish(
            Notice(
                level="warning",
                message=f"{kernel.key}: run {reason} (no verdict: not a failure of the kernel)"
                + (workers if stopped else ""),
            )
        )
        return True


BROKEN_TYPES = ("WorkerStartError", "ActorDied", "KtuiError")
"""Error types of a rung that say nothing about the kernel: a worker that could not start; the Ray engine's actor
that died twice under the version, or ktui's own code that raised there (``ktui.core.engines.ray_ladders``)."""


def is_broken(result: LadderResult) -> bool:
    """A run that says nothing about the kernel (a worker could not start, a cancel): a save of the same content
    reruns."""
    return is_cancelled(result) or any(r.error is not None and r.error.type in BROKEN_TYPES for r in result.rungs)
