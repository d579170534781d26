"""A live ktui session: workers, ladder, run queue, file watcher and result store, wired to one event bus.

This is the one assembly of workspace, worker pool, ladder, scheduler and store: the TUI, ``ktui run``,
``ktui diff``, ``ktui agent`` and the tests all go through it (headless: ``Session(ws, device, watch=False)``).
The TUI draws what it publishes; the headless front ends wait on its tickets. Nothing here imports torch or Textual.

Each run's time limits come from the session's ``TimeoutPolicy`` (``ktui.core.timeouts``: ``--timeout``,
``ktui.toml`` ``[ladder]``, else derived from what the rungs took before); ``limits`` holds those of the run under
way. ``cancel`` ends that run (the cancel key, ctrl+c); a newer save of its file does too (``Scheduler``).

With an ``engine`` (``ktui.core.engines``: Ray actors, one per GPU) every ladder runs there instead of in the
session's own worker pool, which then never starts: the scheduler's runs (saves, reruns) one at a time as before, and
``results_for``'s batches (the agent's variants, ``ktui eval``) all at once, each on its own actor. The session
stores and publishes each result as the local ladder does, and a run of content already under way on the engine is
not sent twice (the watcher's save of what the agent just wrote waits for the agent's run).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import CancelledError, Future, as_completed
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ktui.core.device import resolve_device
from ktui.core.events import Event, EventBus, FileChanged, LadderFinished, Notice, ResultStored
from ktui.core.ladder import Ladder, LadderOptions, WorkerPool, merge
from ktui.core.log import close_log, open_log
from ktui.core.results import LadderResult, expand_rungs
from ktui.core.scheduler import Scheduler, Ticket, Why, cancel_notifying, content_of, is_broken, is_cancelled
from ktui.core.status import current_result
from ktui.core.store import ResultStore, sha256
from ktui.core.timeouts import DefaultLimits, ReferenceTimes, TimeoutConfigError, TimeoutPolicy, load_policy
from ktui.core.watcher import DEFAULT_DEBOUNCE_S, Watcher, release_watch_lock, take_watch_lock
from ktui.core.workspace import KernelRef, Workspace, is_helper

if TYPE_CHECKING:
    from ktui.core.engines import Engine, Outcome
    from ktui.core.remote.config import RemoteConfig

FROM_WORKSPACE: Literal["workspace"] = "workspace"  # ``Session(remote=...)``: ``[remote]`` of the workspace's ktui.toml


class Session:
    """Everything a ``ktui`` process runs besides the screen.

    Args:
        workspace: the folder being worked on.
        device: ``auto``, ``cpu`` or ``cuda``.
        bus: the event bus to publish on (default: a new one).
        options: how the ladder runs (seeds, rungs; time limits set here are fixed for every run).
        watch: start the file watcher (saving a kernel reruns its ladder; a reference reruns all its versions).
        debounce_s: the watcher's quiet time after a burst of writes.
        pool: a worker pool already started to use instead of a new one (tests share one); the session then
            neither starts nor stops it.
        timeouts: how each run's time limits are set; default: ``load_policy`` of the workspace (a malformed
            ``[ladder]`` section is a warning at start, and the defaults apply).
        remote: where the workers run: a ``RemoteConfig`` (over SSH, ``ktui.core.remote``), None (here), or
            ``FROM_WORKSPACE`` (the default: ``[remote]`` of the workspace's ``ktui.toml`` when it names a host,
            else here; a malformed ``[remote]`` is a warning at start, and the workers run here). ``device`` is
            then resolved on that host.
        engine: where the ladders run instead of the session's own pool (``ktui.core.engines.make_engine``), already
            started; like a given ``pool``, the session neither starts nor stops it. Its device is the session's
            (``device`` and ``remote`` are then not used).

    Raises:
        ktui.core.remote.link.LinkError: the remote cannot be reached or used (to resolve ``device="auto"``).
    """

    def __init__(
        self,
        workspace: Workspace,
        device: str = "auto",
        bus: EventBus | None = None,
        options: LadderOptions | None = None,
        watch: bool = True,
        debounce_s: float = DEFAULT_DEBOUNCE_S,
        pool: WorkerPool | None = None,
        timeouts: TimeoutPolicy | None = None,
        remote: RemoteConfig | None | Literal["workspace"] = FROM_WORKSPACE,
        engine: Engine | None = None,
    ):
        self.ws = workspace
        self.bus = bus or (pool.bus if pool else EventBus())
        self.store = ResultStore(workspace)
        self.engine = engine
        self._own_pool = pool is None
        self.remote = ""  # where the workers run when not here: ``gpu1 over SSH (me@gpu1:22)``
        self._remote_error = ""  # a malformed [remote] read by default (FROM_WORKSPACE): a warning at start
        if engine is not None:  # the engine's actors hold the workers; the session's own pool stays local
            self.pool = pool or WorkerPool(workspace, engine.device, self.bus)
        else:
            self.pool = pool or self._make_pool(workspace, device, remote)
        self.device = engine.device if engine else self.pool.device
        self.options = options or LadderOptions()
        self._explicit_limits = None if isinstance(self.options.timeouts, DefaultLimits) else self.options.timeouts
        self._config_error = ""
        if timeouts is None:
            try:
                timeouts = load_policy(workspace.root)
            except TimeoutConfigError as exc:
                self._config_error = f"{exc}; ktui's default time limits apply"
                timeouts = TimeoutPolicy()
        self.timeouts = timeouts
        self.limits: dict[str, float] = {}  # the time limits of the run under way (or the last), per limit key
        self.reference_times = ReferenceTimes(workspace)
        self.ladder = Ladder(workspace, self.pool, self.bus, self.options, self.store)
        self.scheduler = Scheduler(
            self._run_ladder,
            self.bus,
            on_cancel=self._cancel_running,
            after_cancel=self._after_cancel,
            carry=self._carry,
        )
        self.watcher = Watcher(workspace, self._on_file, debounce_s, bus=self.bus) if watch else None
        self._watch_lock: int | None = None
        self.runs_saves = True  # False while another session holds the workspace's save lock
        self._log: logging.Handler | None = None
        self._started = False
        self._latest: dict[str, LadderResult] = {}
        self._lock = threading.Lock()
        # the engine's runs under way: version -> (the content it runs, its rungs, its future)
        self._inflight: dict[str, tuple[tuple[str, str] | None, frozenset[str], Future[LadderResult]]] = {}
        self._stopping = False
        self._unsub = self.bus.subscribe(self._remember)

    def _make_pool(
        self, workspace: Workspace, device: str, remote: RemoteConfig | None | Literal["workspace"]
    ) -> WorkerPool:
        """The pool of workers: here, or on the remote host (``ktui.core.remote``, imported only then)."""
        if remote == FROM_WORKSPACE:
            from ktui.core.remote.config import RemoteConfigError, load_remote

            try:
                remote = load_remote(workspace.root)
            except RemoteConfigError as exc:  # the command line reads it itself and stops; here: a warning
                self._remote_error = f"{exc}; the workers run here"
                remote = None
        if remote is None:
            return WorkerPool(workspace, resolve_device(device), self.bus)
        from ktui.core.remote.transport import SSHTransport

        transport = SSHTransport(remote, workspace)
        try:
            resolved = transport.resolve_device(device)
        except BaseException:
            transport.close()
            raise
        self.remote = transport.describe()
        return WorkerPool(workspace, resolved, self.bus, transport=transport)

    def start(self) -> None:
        """Spawn the workers (torch imports in the background), start the queue and the watcher. Returns at once."""
        if self._started:
            return
        self._started = True
        self._log = open_log(self.ws.state_dir)  # bus and watcher failures land in .ktui/logs/ktui.log
        if self._own_pool and self.engine is None:
            self.pool.start()
        self.scheduler.start()
        if self.watcher:
            self._watch_lock, holder = take_watch_lock(self.ws.state_dir)
            self.runs_saves = self._watch_lock is not None
            if not self.runs_saves:
                self.bus.publish(
                    Notice(
                        level="warning",
                        message=f"another ktui{f' (pid {holder})' if holder else ''} runs this workspace's saves: "
                        "this one shows their results and runs what you ask (r, a), not saves",
                    )
                )
            self.watcher.start()
        for warning in (self._config_error, self._remote_error):
            if warning:
                self.bus.publish(Notice(level="warning", message=warning))
        if self.engine is not None:
            self.bus.publish(Notice(level="info", message=self.engine.describe()))

    def stop(self) -> None:
        """Stop the watcher, the queue and the workers; a ladder under way ends at once (its result is not stored).
        A session never started still closes its remote connection (made to resolve the device, or by a call)."""
        if not self._started:
            close = getattr(self.pool.transport, "close", None)
            if self._own_pool and callable(close):  # the remote connection: the workers on it end with it
                close()
            return
        self._started = False
        self._stopping = True
        if self.watcher:
            self.watcher.stop()
            release_watch_lock(self._watch_lock)
            self._watch_lock = None
        if self._own_pool:
            for w in self.pool.workers:  # a ladder under way fails its current call now instead of finishing
                w.close()
        self.scheduler.stop(timeout_s=0.0)
        if self._own_pool:
            self.pool.stop()
        self.ladder.close()
        self.scheduler.stop()
        if self._log is not None:
            close_log(self._log)
            self._log = None
        self._unsub()

    def device_info(self) -> dict[str, Any]:
        """The candidate worker's device description (waits for its hello).

        Raises:
            WorkerStartError: the worker could not start (no GPU for ``cuda``, torch missing...); with an engine,
                ``EngineError`` (no actor could start).
        """
        if self.engine is not None:
            return self.engine.device_info()
        return self.pool.device_info()

    # -- the ladder ----------------------------------------------------------------------------------------------
    def limits_for(self, kernel: KernelRef) -> dict[str, float]:
        """The time limit of each key (``ktui.core.timeouts.LIMIT_KEYS``) the next run of ``kernel`` gets, seconds
        (each a ``Limit`` that says where it came from). ``ktui.toml`` edited since it was read is read again."""
        self.timeouts, level, notice = self.timeouts.reloaded()
        if notice:
            self.bus.publish(Notice(level=level, message=notice))
        return self.timeouts.limits(self.ws, kernel, self.device, self.store, explicit=self._explicit_limits)

    def _run_ladder(self, kernel: KernelRef, rungs: tuple[str, ...] | None = None) -> LadderResult:
        """The scheduler's runner: ``Ladder.run`` with this run's time limits, then the judge's seconds for the
        reference's share of each rung kept for the next runs' limits. With an engine, the run goes there."""
        if self.engine is not None:
            return self._on_engine(kernel, rungs).result()
        self.limits = self.limits_for(kernel)
        self.ladder.options = replace(self.options, timeouts=self.limits)
        judge = self.pool.judge
        mark = judge.calls
        result = self.ladder.run(kernel, rungs)
        if not is_cancelled(result) and not self.pool.stopping:
            self.reference_times.record(self.device, kernel.problem, judge.timings_since(mark))
        return result

    def _carry(self, kernel: KernelRef, content: tuple[str, str]) -> LadderResult | None:
        """The scheduler's ``carry``: when another version of ``kernel``'s problem has a verdict (not a broken or
        cancelled run) on this device for exactly ``content`` (the sha256 of ``kernel``'s source and of the reference
        now), that result as ``kernel``'s (``LadderResult.carried``: ``carried_from`` names the version that ran),
        stored, published (``LadderFinished`` with run id 0: no run) and said in a ``Notice``; else None.

        ``n`` copies a version to the next ``vN.py``: the copy's first save is the same bytes, already judged, and
        its run would only repeat that run with fresh draws. The version's own last judged result counts too
        (``ResultStore.judged``): a reference restored byte for byte after a typo, whose reference error replaced
        the version's verdict on that very content (new-user trial 23, F8). ``r`` (a rerun) always runs it."""
        # (its own judged result on this content first, as it was; another version's becomes this one's:
        # ``carried_from``)
        own = (self.store.judged(kernel.problem, kernel.version, content), True)
        others = ((self.latest(o), False) for o in self.ws.versions(kernel.problem) if o.version != kernel.version)
        helpers = self.ws.helpers_of(kernel)
        for r, is_own in (own, *others):
            if (
                r is None
                or not r.has_verdict
                or is_broken(r)
                or (r.source_sha256, r.reference_sha256) != content
                or r.device.get("type") != self.device
                or r.helpers_sha256 != helpers  # the helper modules it imports, as they are now
            ):
                continue
            carried = r if is_own else r.carried(kernel.version, str(kernel.path.relative_to(self.ws.root)))
            try:
                self.store.save(carried)
            except OSError:
                pass  # published all the same; a full disk must not stop the session
            with self._lock:
                self._latest[kernel.key] = carried
            self.bus.publish(LadderFinished(key=kernel.key, run_id=0, result=carried))
            said = (
                f"{kernel.key}: its source and reference are again those of its verdict of "
                f"{time.strftime('%H:%M', time.localtime(carried.started_at))}, which stands (r runs it again)"
                if is_own
                else f"{kernel.key} is {carried.carried_from}'s source, already run: its verdict stands for "
                f"{kernel.version} (r runs it again)"
            )
            self.bus.publish(Notice(level="info", message=said))
            return carried
        return None

    def _cancel_running(self, reason: str) -> list[str]:
        """The scheduler's cancel: the local pool's (``WorkerPool.cancel_run``), or the engine's run of the version
        the scheduler runs."""
        if self.engine is None:
            return self.pool.cancel_run(reason)
        key = self.scheduler.running
        return self.engine.cancel(key, reason) if key else []

    def _after_cancel(self) -> None:
        if self.engine is None:
            self.pool.end_cancel()  # (an engine's actor ends its own cancel with the run)

    # -- the engine ----------------------------------------------------------------------------------------------
    def _on_engine(self, kernel: KernelRef, rungs: tuple[str, ...] | None = None) -> Future[LadderResult]:
        """A future of ``kernel``'s result (this run's own) on the engine: the run of the same content under way
        when there is one with these rungs, else a new run (its limits from the session's policy). The result is
        stored (merged), published (``LadderFinished``) and remembered by the scheduler before the future is set."""
        assert self.engine is not None
        content = content_of(kernel)
        want = frozenset(expand_rungs(rungs or self.options.rungs))
        done: Future[LadderResult] = Future()
        with self._lock:  # (checked and taken at once: two callers of one content never both send it)
            held = self._inflight.get(kernel.key)
            if held is not None and not held[2].done() and held[0] == content and want <= held[1]:
                return held[2]
            self._inflight[kernel.key] = (content, want, done)
        limits = self.limits = self.limits_for(kernel)
        sent = self.engine.submit(kernel, rungs, limits, self.bus.publish)
        sent.add_done_callback(lambda f: self._engine_done(kernel, f, done))
        return done

    def _engine_done(self, kernel: KernelRef, sent: Future[Outcome], done: Future[LadderResult]) -> None:
        """An engine run ended: store it merged with the stored result (unless it says nothing about the kernel:
        cancelled, broken, or the session stopping), keep the judge's seconds for the next limits, publish
        ``LadderFinished``, then set ``done``."""
        with self._lock:
            if self._inflight.get(kernel.key, (None, None, None))[2] is done:
                del self._inflight[kernel.key]
        try:
            outcome = sent.result()
        except CancelledError:
            cancel_notifying(done)  # (a plain cancel would leave results_for waiting until its timeout)
            return
        except Exception as exc:  # the engine failed (every actor gone): the caller gets why
            done.set_exception(exc)
            return
        result = outcome.result
        broken = bool(outcome.broken) or is_broken(result) or self._stopping
        merged = result
        if not broken:
            merged = merge(self.store.load(result.problem, result.version), result)
            try:
                self.store.save(merged)
            except OSError:
                pass  # the result is still published; a full disk must not stop the session
            self.reference_times.record(self.device, kernel.problem, outcome.judge_timings)
            self.scheduler.remember(kernel.key, result)
        self.bus.publish(LadderFinished(key=kernel.key, run_id=outcome.run_id, result=merged))
        done.set_result(result)

    def cancel(self, reason: str = "cancelled") -> str | None:
        """Cancel the run under way (its worker calls end now, the busy workers restart; it is a ``Notice``, not a
        verdict). Returns the version cancelled, None when nothing runs."""
        return self.scheduler.cancel(reason=reason)

    def withdraw_queued(self, reason: str = "withdrawn") -> list[str]:
        """Take every run that waits out of the queue (its ticket cancelled with ``reason``, one ``Notice``); the run
        under way goes on (``cancel`` ends it). Returns the versions withdrawn, in queue order."""
        return self.scheduler.withdraw_queued(reason)

    # -- actions -----------------------------------------------------------------------------------------------
    def submit(self, kernel: KernelRef, rungs: tuple[str, ...] | None = None, why: Why = "rerun") -> Ticket:
        """Queue a run of ``kernel``'s ladder (``rungs``: only those, with what they need); it always runs. ``why``
        ``request`` (a user's run of this one version) queues it with the saves (``Scheduler.submit``)."""
        return self.scheduler.submit(kernel, rungs, why)

    def submit_problem(self, problem: str) -> list[Ticket]:
        """Queue a run of every version of ``problem``."""
        return [self.scheduler.submit(k) for k in self.ws.versions(problem)]

    def latest(self, kernel: KernelRef) -> LadderResult | None:
        """The latest result of ``kernel``: this session's last run of it, else the stored one (its verdict on the
        files now where the stored one is stale and that was kept: ``status.current_result``)."""
        with self._lock:
            r = self._latest.get(kernel.key)
        return r or current_result(self.ws, self.store, kernel)

    def results(self) -> dict[str, LadderResult]:
        """The latest result of every version (this session's runs first, then the stored ones)."""
        out = {}
        for k in self.ws.all_versions():
            r = self.latest(k)
            if r is not None:
                out[k.key] = r
        return out

    def _remember(self, ev: Event) -> None:
        if isinstance(ev, LadderFinished) and not is_cancelled(ev.result):
            with self._lock:
                self._latest[ev.key] = ev.result

    def run(
        self, kernel: KernelRef, rungs: tuple[str, ...] | None = None, timeout_s: float | None = None
    ) -> LadderResult:
        """Run ``kernel``'s ladder now (after what is queued before it) and return this run's own result (only the
        rungs that ran; the stored result merges it with the other rungs of the same source).

        Raises:
            TimeoutError: no result within ``timeout_s``.
            concurrent.futures.CancelledError: the session stopped first.
            RuntimeError: the kernel file was deleted before its turn.
        """
        result = self.submit(kernel, rungs).result(timeout_s)
        if result is None:
            raise RuntimeError(f"{kernel.key} was deleted before it ran")
        return result

    def result_for(
        self, kernel: KernelRef, timeout_s: float = 1800.0, rungs: tuple[str, ...] | None = None
    ) -> LadderResult:
        """The ladder result of ``kernel``'s current content: this session's latest one when it ran on that
        content already (and has ``rungs``, when given), else the result of a run queued now (the watcher's save
        of the same content is then skipped). Blocks until it finishes.

        Raises:
            TimeoutError: no result within ``timeout_s``.
            concurrent.futures.CancelledError: the session stopped first.
        """
        sha = sha256(kernel.path.read_bytes())
        with self._lock:
            r = self._latest.get(kernel.key)
        if (
            r is not None
            and r.source_sha256 == sha
            and r.helpers_sha256 == self.ws.helpers_of(kernel)
            and all(r.rung(n) is not None for n in rungs or ())
        ):
            return r
        own = self.run(kernel, rungs, timeout_s)
        with self._lock:
            merged = self._latest.get(kernel.key)
        return merged if merged is not None and merged.source_sha256 == own.source_sha256 else own

    def results_for(
        self, kernels: Sequence[KernelRef], rungs: tuple[str, ...] | None = None, timeout_s: float = 1800.0
    ) -> Iterator[tuple[KernelRef, LadderResult]]:
        """``result_for`` of several versions at once, each ``(kernel, result)`` as it finishes: every version
        whose current content this session has not run yet is sent before the first is awaited, so with an engine
        they run in parallel, each on its own actor (on the local pool, one after another). A version deleted
        before its turn, or whose run was cancelled, gives nothing.

        Raises:
            TimeoutError: not every result came within ``timeout_s``.
            concurrent.futures.CancelledError: never (a cancelled run is left out).
        """
        ready: list[tuple[KernelRef, LadderResult]] = []
        waiting: dict[Future[Any], KernelRef] = {}
        for k in dict.fromkeys(kernels):
            sha = content_of(k)
            with self._lock:
                r = self._latest.get(k.key)
            if (
                r is not None
                and sha is not None
                and r.source_sha256 == sha[0]
                and r.helpers_sha256 == self.ws.helpers_of(k)
                and all(r.rung(n) is not None for n in rungs or ())
            ):
                ready.append((k, r))
            elif self.engine is not None:
                waiting[self._on_engine(k, rungs)] = k
            else:
                waiting[self.submit(k, rungs)] = k
        yield from ready
        for fut in as_completed(waiting, timeout=timeout_s):
            k = waiting[fut]
            try:
                own = fut.result()
            except CancelledError:
                continue
            if own is None:
                continue
            with self._lock:
                merged = self._latest.get(k.key)
            yield k, merged if merged is not None and merged.source_sha256 == own.source_sha256 else own

    def new_version(self, source: KernelRef) -> KernelRef:
        """Copy ``source`` to the next free ``vN.py`` (the watcher then runs it)."""
        return self.ws.new_version(source)

    # -- file events -------------------------------------------------------------------------------------------
    def _on_file(self, path: Path, deleted: bool) -> None:
        if path.suffix == ".json":
            try:
                rel = path.resolve().relative_to(self.store.root.resolve())
            except ValueError:
                return
            if len(rel.parts) == 2 and not deleted:
                self.bus.publish(ResultStored(problem=rel.parts[0], version=Path(rel.parts[1]).stem))
            return
        what = self.ws.classify(path)
        if what is None:
            return
        self.bus.publish(FileChanged(path=str(path)))
        if not self.runs_saves:  # another session runs this workspace's saves (``take_watch_lock``)
            return
        if deleted:
            problem, version = what
            if version is not None and not path.exists():  # (an editor's replace-by-rename writes it back at once)
                # its run ends, and its queued run goes (new-user trial 25, F31: a deleted version ran to the end
                # and was stored)
                key = f"{problem}/{version}"
                self.scheduler.withdraw_queued(f"{path.name} was deleted", only=(key,))
                self.scheduler.cancel(key, reason=f"cancelled: {path.name} was deleted")
            return
        problem, version = what
        if not self.ws.reference_path(problem).is_file():
            self.bus.publish(Notice(level="warning", message=f"{path.name}: no references/{problem}.py, not run"))
            return
        if version is not None and is_helper(path):  # a helper module: the versions that import it run again
            for k in self.ws.versions(problem):
                if version in self.ws.helpers_of(k):
                    self.scheduler.submit(k, why="save")
            return
        if version is None:
            for k in self.ws.versions(problem):
                self.scheduler.submit(k, why="save")
        else:
            self.scheduler.submit(KernelRef(problem, version, self.ws.root), why="save")
