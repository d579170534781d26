"""The Ray engine's driver side: a pool of Ray actors (``ktui.core.engines.ray_actor.LadderActor``), each a warm ktui
worker pool, and the versions handed to them.

Ray does the placing: each actor asks for one GPU (``num_gpus=1``; Ray picks the node and the GPU and sets the
actor's ``CUDA_VISIBLE_DEVICES``) or, with ``device="cpu"``, one CPU (``num_cpus=1``: the Triton interpreter, and
compiles and dumps for sm_90a), and runs its calls one ladder at a time, so a GPU never times two kernels at once.
Here a version goes to an actor that has no ladder under way, in the order submitted (what ``ray.util.ActorPool``
does; kept here so that each call's version is known when its actor dies), and the events of each run come back
while it runs (``drain``, every ``POLL_S``).

Faults (Ray's actor fault tolerance: ``max_restarts``):

- a ladder during which a worker of the actor crashed (a segfault, a CUDA error that left its context unusable) or
  could not start returns its result as usual (the rung failed, with the reason); then the actor is restarted
  (``ray.kill(actor, no_restart=False)``: Ray starts it again, a fresh worker pool) and takes work again once its
  new process says hello. A notice says so.
- an actor that dies while it runs a ladder (its process killed, its node lost) is restarted by Ray; the version
  runs once more on the next free actor; an actor that dies twice under the same version gives a result that says
  so, published but never stored (``Outcome.broken``: it says nothing about the kernel).

Every result's ``device`` is the candidate worker's hello (GPU name, capability, UUID, clocks...) plus
``placement``: the host, Ray node, GPU ids, actor and pid it ran on.
"""

from __future__ import annotations

import collections
import logging
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ktui.core.engines import RAY_MISSING, EngineError, Outcome
from ktui.core.events import Event, Notice
from ktui.core.ladder import LadderOptions
from ktui.core.log import get_logger
from ktui.core.results import ErrorInfo, LadderResult, RungResult, Status, expand_rungs
from ktui.core.workspace import KernelRef, Workspace

POLL_S = 0.25
"""How often the driver collects the events of the runs under way (and notices a finished one), seconds."""

START_TIMEOUT_S = 600.0
"""How long an actor may take to be placed and say hello (its workers import torch; a cluster may add a node)."""

RETRIES = 1
"""How many times a version whose actor died under it runs again (on whichever actor is free next)."""

ACTOR_DIED = "ActorDied"
"""The error type of a result whose actor died ``RETRIES + 1`` times under it (``Outcome.broken``)."""

LOCAL_OBJECT_STORE_BYTES = 100 << 20
"""The object store of a Ray instance that ktui starts itself: ladder requests and results are a few KB each."""

_log = get_logger("engines.ray")


@dataclass
class _Job:
    kernel: KernelRef
    rungs: tuple[str, ...] | None
    limits: dict[str, float]
    publish: Callable[[Event], None]
    future: Future[Outcome]
    run_id: int
    attempts: int = 0
    deaths: list[str] = field(default_factory=list)


@dataclass
class _Slot:
    """One actor and what it does: ``starting`` (placed or restarted, its hello awaited), ``idle``, ``busy``, or
    ``gone`` (it never came back)."""

    index: int
    actor: Any
    state: str = "starting"
    job: _Job | None = None
    hello: dict[str, Any] = field(default_factory=dict)
    pending: Any = None  # the ObjectRef awaited: the hello while starting, the run while busy
    since: float = field(default_factory=time.monotonic)
    old_pid: int | None = None  # the pid of the process being replaced: a hello from it is not the new one's
    restarts: int = 0


RAY_LOG = "ray.log"
"""Ray's own Python log lines in this process (its ``ray`` logger), under ``.ktui/logs/``."""


def route_ray_logs(ws: Workspace) -> Path:
    """Send the driver's Ray log lines (the ``ray`` logger, whose stderr handler prints ``WARNING
    authentication_token_setup.py:85 -- Token authentication is enabled ...`` on ``ray.init``) to
    ``.ktui/logs/ray.log`` instead of ktui's stdout and stderr; ktui's own notices and errors are untouched (Ray's
    failures reach ktui as exceptions, which it reports). The actors' output already stays in Ray's session logs
    (``log_to_driver=False``). Returns the log's path (a workspace where it cannot be written drops those lines
    rather than print them)."""
    logger = logging.getLogger("ray")
    for handler in list(logger.handlers):
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            logger.removeHandler(handler)  # Ray's PlainRayHandler on stderr
    logger.propagate = False
    path = ws.state_dir / "logs" / RAY_LOG
    if not any(isinstance(h, logging.FileHandler) and h.baseFilename == str(path) for h in logger.handlers):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(path, encoding="utf-8")
        except OSError:
            logger.addHandler(logging.NullHandler())
            return path
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(filename)s:%(lineno)d -- %(message)s"))
        logger.addHandler(handler)
    return path


class RayLadders:
    """The Ray engine (``ktui.core.engines.Engine``).

    Args:
        ws: the workspace; every actor reads it at this path.
        device: ``cuda`` (one actor per GPU), ``cpu`` (CPU actors) or ``auto`` (``cuda`` when the cluster has a GPU).
        options: how the ladders run (seeds, rungs); each run's time limits come with its ``submit``.
        address: a Ray cluster to join (``ray.init(address=...)``: ``auto``, ``HOST:6379``, ``ray://HOST:10001``);
            None starts a Ray instance of ktui's own on this machine (never one that ``ray start`` left running), or
            uses the one this process already joined.
        actors: how many actors; default one per GPU of the cluster (``cuda``) or half its CPUs (``cpu``, at least 1).
        spares: each actor keeps warm spares of its candidate-side workers (``WorkerPool``).
        init: more ``ray.init`` arguments when ktui starts Ray (tests: ``num_cpus``).

    Raises:
        EngineError: Ray is missing, the cluster has no GPU for ``cuda``, or fewer GPUs (CPUs) than ``actors``.
    """

    name = "ray"

    def __init__(
        self,
        ws: Workspace,
        device: str,
        options: LadderOptions,
        address: str | None = None,
        actors: int | None = None,
        spares: bool = True,
        init: dict[str, Any] | None = None,
    ):
        try:
            import ray
        except ImportError:
            raise EngineError(RAY_MISSING) from None
        self._ray = ray
        route_ray_logs(ws)
        self.ws = ws
        self.address = address
        self._own_ray = False
        if not ray.is_initialized():
            # the actors' output stays in Ray's logs: a --json on stdout is the table only
            kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
            if address is None:  # "local": never a cluster someone else started with `ray start` on this machine
                kwargs.update(include_dashboard=False, object_store_memory=LOCAL_OBJECT_STORE_BYTES)
            main = threading.current_thread() is threading.main_thread()
            sigterm = signal.getsignal(signal.SIGTERM) if main else None
            try:
                ray.init(address=address or "local", **{**kwargs, **(init or {})})
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise EngineError(f"ray: cannot join {address or 'a local instance'}: {exc}") from None
            finally:
                if sigterm is not None:  # ray.init sets its own (sys.exit): ktui's stops the workers, exits 143
                    signal.signal(signal.SIGTERM, sigterm)
            self._own_ray = True
        total = ray.cluster_resources()  # type: ignore[no-untyped-call]
        gpus, cpus = int(total.get("GPU", 0)), int(total.get("CPU", 0))
        if device == "auto":
            device = "cuda" if gpus else "cpu"
        if device not in ("cuda", "cpu"):
            raise EngineError(f"unknown device {device!r}: cuda or cpu")
        self.device = device
        have = gpus if device == "cuda" else cpus
        if device == "cuda" and gpus == 0:
            self._shutdown()
            raise EngineError(
                f"ray: the cluster at {address or 'this machine'} has no GPU; --device cpu runs CPU actors"
            )
        count = actors if actors is not None else (gpus if device == "cuda" else max(1, cpus // 2))
        if count < 1 or count > have:
            self._shutdown()
            unit = "GPU" if device == "cuda" else "CPU"
            raise EngineError(f"ray: {count} actors asked, the cluster has {have} {unit}s (one {unit} per actor)")
        from ktui.core.engines.ray_actor import LadderActor

        resources = {"num_gpus": 1, "num_cpus": 1} if device == "cuda" else {"num_cpus": 1}
        remote = ray.remote(LadderActor).options(**resources, max_restarts=-1, max_task_retries=0, max_concurrency=2)
        root = str(Path(ws.root).resolve())
        self._slots = [_Slot(i, remote.remote(root, device, replace(options), i, spares)) for i in range(count)]
        for s in self._slots:
            s.pending = s.actor.hello.remote()
        self._queue: collections.deque[_Job] = collections.deque()
        self._cv = threading.Condition()
        self._stopping = False
        self._run_ids = 0
        self._first_hello: Future[dict[str, Any]] = Future()
        self._thread = threading.Thread(target=self._loop, name="ktui-ray-ladders", daemon=True)
        self._thread.start()

    # -- the Engine --------------------------------------------------------------------------------------------
    def submit(
        self,
        kernel: KernelRef,
        rungs: tuple[str, ...] | None,
        limits: dict[str, float],
        publish: Callable[[Event], None],
    ) -> Future[Outcome]:
        """Queue ``kernel``'s ladder for the next free actor (see ``Engine.submit``)."""
        fut: Future[Outcome] = Future()
        with self._cv:
            if self._stopping:
                fut.cancel()
                return fut
            self._run_ids += 1
            self._queue.append(_Job(kernel, rungs, dict(limits), publish, fut, self._run_ids))
            self._cv.notify_all()
        return fut

    def cancel(self, key: str, reason: str) -> list[str]:
        """Cancel ``key``'s run under way (its actor's workers stop at once; the result comes back cancelled) and
        drop it from the queue (its future cancelled). Returns the actors told, as ``ray actor N``."""
        told = []
        with self._cv:
            for job in [j for j in self._queue if j.kernel.key == key]:
                self._queue.remove(job)
                job.future.cancel()
            busy = [s for s in self._slots if s.state == "busy" and s.job is not None and s.job.kernel.key == key]
        for s in busy:
            assert s.job is not None
            s.actor.cancel.remote(s.job.run_id, reason)
            told.append(f"ray actor {s.index}")
        return told

    def device_info(self, timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
        """The device of the first actor that said hello (its candidate worker's, with ``placement``).

        Raises:
            EngineError: no actor could start (the first one's reason).
        """
        try:
            return self._first_hello.result(timeout_s)
        except TimeoutError:
            raise EngineError(f"ray: no actor said hello within {timeout_s:.0f} s") from None

    def describe(self) -> str:
        """``ray: 8 actors on cuda (NVIDIA H200 x8 on 1 host), joined auto``."""
        with self._cv:
            ready = [s for s in self._slots if s.hello]
            names = collections.Counter(str(s.hello.get("device", {}).get("name", "?")) for s in ready)
            hosts = {s.hello.get("placement", {}).get("host") for s in ready}
            n = len(self._slots)
        where = ", ".join(f"{k} x{v}" for k, v in names.items()) or "starting"
        joined = f", joined {self.address}" if self.address else ", a local Ray instance"
        plural = "s" if n != 1 else ""
        hosts_word = f"{len(hosts)} host" + ("s" if len(hosts) != 1 else "")
        return f"ray: {n} actor{plural} on {self.device} ({where} on {hosts_word}){joined}"

    def placements(self) -> list[dict[str, Any]]:
        """Each actor's ``placement`` and ``restarts`` so far ({} for one that has not said hello yet)."""
        with self._cv:
            return [{**s.hello.get("placement", {}), "restarts": s.restarts} if s.hello else {} for s in self._slots]

    def stop(self) -> None:
        """Cancel what waits and what runs (their futures cancelled), kill the actors, leave the Ray instance that
        ktui started. Idempotent."""
        with self._cv:
            if self._stopping:
                return
            self._stopping = True
            waiting, self._queue = list(self._queue), collections.deque()
            running = [s.job for s in self._slots if s.job is not None]
            self._cv.notify_all()
        for job in waiting + running:
            job.future.cancel()
        self._thread.join(timeout=5)
        for s in self._slots:
            try:
                self._ray.kill(s.actor, no_restart=True)
            except Exception:  # an actor already gone
                pass
        if not self._first_hello.done():
            self._first_hello.set_exception(EngineError("ray: the engine stopped"))
        self._shutdown()

    def _shutdown(self) -> None:
        if self._own_ray:
            self._ray.shutdown()
            self._own_ray = False

    # -- the loop ----------------------------------------------------------------------------------------------
    def _loop(self) -> None:
        """The engine's one thread: it alone changes the slots (others only read them)."""
        while not self._stopping:
            try:
                self._step()
            except Exception:  # ktui's own bug, or Ray shut down under us (stop() is under way)
                if self._stopping:
                    return
                _log.exception("the ray engine's loop")
                time.sleep(POLL_S)

    def _step(self) -> None:
        """Hand out what waits, wait up to ``POLL_S`` for the calls awaited, publish the runs' events, handle what
        returned."""
        with self._cv:
            if self._stopping:
                return
            self._dispatch()
            waits = {s.pending: s for s in self._slots if s.pending is not None}
            if not waits:
                self._cv.wait(POLL_S)
                return
        ready, _ = self._ray.wait(list(waits), num_returns=len(waits), timeout=POLL_S)
        self._forward_events([s for s in waits.values() if s.state == "busy"])
        for ref in ready:
            self._done(waits[ref], ref)
        self._check_starts()

    def _dispatch(self) -> None:
        """Hand queued versions to idle actors (under ``_cv``)."""
        for s in self._slots:
            if not self._queue:
                return
            if s.state != "idle":
                continue
            job = self._queue.popleft()
            if job.future.cancelled():
                continue
            job.attempts += 1
            s.state, s.job, s.since = "busy", job, time.monotonic()
            s.pending = s.actor.run.remote(
                {
                    "problem": job.kernel.problem,
                    "version": job.kernel.version,
                    "rungs": list(job.rungs) if job.rungs else None,
                    "limits": job.limits,
                    "run_id": job.run_id,
                }
            )

    def _forward_events(self, busy: list[_Slot]) -> None:
        """Publish the events the busy actors collected, each with its run's driver-side ``run_id``."""
        if not busy:
            return
        refs = [s.actor.drain.remote() for s in busy]
        try:
            batches = self._ray.get(refs, timeout=30)
        except Exception:  # an actor that died: its run's error comes with the run's own reply
            return
        for s, batch in zip(busy, batches):
            if s.job is not None:
                self._publish(s.job, batch)

    def _publish(self, job: _Job, batch: list[dict[str, Any]]) -> None:
        for d in batch:
            try:
                ev = Event.from_json(d)
            except (KeyError, TypeError, ValueError):
                continue
            if hasattr(ev, "run_id"):
                ev = replace(ev, run_id=job.run_id)  # type: ignore[call-arg]
            job.publish(ev)

    def _done(self, s: _Slot, ref: Any) -> None:
        """``s``'s awaited call returned (or its actor died)."""
        ray = self._ray
        s.pending = None
        if s.state == "starting":
            try:
                hello = ray.get(ref)
            except ray.exceptions.ActorUnavailableError:
                time.sleep(0.1)
                s.pending = s.actor.hello.remote()  # restarting: ask again
                return
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as exc:  # for good (max_restarts=-1)
                self._gone(s, f"could not start: {_cause(exc)}")
                return
            if s.old_pid is not None and hello.get("placement", {}).get("pid") == s.old_pid:
                time.sleep(0.1)  # the old process answered before the kill reached it
                s.pending = s.actor.hello.remote()
                return
            s.hello, s.state, s.old_pid = hello, "idle", None
            if not self._first_hello.done():
                self._first_hello.set_result({**hello["device"], "placement": hello["placement"]})
            return
        job, s.job = s.job, None
        assert job is not None
        try:
            reply = ray.get(ref)
        except ray.exceptions.RayActorError as exc:
            self._died(s, job, exc)
            return
        except ray.exceptions.RayTaskError as exc:  # ktui's own code raised in the actor: not the kernel's doing
            s.state = "idle"
            self._finish(job, _broken(job, "KtuiError", f"the ray actor's ladder raised: {_cause(exc)}"))
            return
        self._forward_events_of(s, job)
        try:
            result = LadderResult.from_json(reply["result"])
            outcome = Outcome(result, job.run_id, [(str(m), float(t)) for m, t in reply.get("judge_timings", [])])
        except (KeyError, TypeError, ValueError) as exc:  # a reply this ktui cannot read (another version's actor)
            s.state = "idle"
            self._finish(job, _broken(job, "KtuiError", f"the ray actor's reply cannot be read: {exc!r}"))
            return
        if reply.get("crashed"):
            self._restart(s, f"after {job.kernel.key}: {reply['crashed']}", job)
        else:
            s.state = "idle"
        self._finish(job, outcome)

    def _forward_events_of(self, s: _Slot, job: _Job) -> None:
        """The last events of a finished run (published before the run's result)."""
        try:
            self._publish(job, self._ray.get(s.actor.drain.remote(), timeout=30))
        except Exception:
            pass

    def _died(self, s: _Slot, job: _Job, exc: Exception) -> None:
        """``s``'s actor died under ``job``: Ray restarts it; the job runs again, or, the second time, is broken."""
        why = f"ray actor {s.index} died while running {job.kernel.key}: {_cause(exc)}"
        job.deaths.append(why)
        if isinstance(exc, self._ray.exceptions.ActorUnavailableError):  # Ray restarts it (max_restarts=-1)
            s.restarts += 1
            s.state, s.old_pid, s.since = "starting", s.hello.get("placement", {}).get("pid"), time.monotonic()
            s.pending = s.actor.hello.remote()
        else:  # dead for good
            self._gone(s, f"died: {_cause(exc)}")
        if job.attempts <= RETRIES and not job.future.cancelled() and any(x.state != "gone" for x in self._slots):
            job.publish(Notice(level="warning", message=f"{why}; Ray restarts it, and {job.kernel.key} runs again"))
            with self._cv:
                self._queue.appendleft(job)
            return
        self._finish(job, _broken(job, ACTOR_DIED, "; ".join(job.deaths)))

    def _restart(self, s: _Slot, why: str, job: _Job) -> None:
        """Have Ray restart ``s``'s actor (a fresh worker pool): it takes work again once its new process said
        hello."""
        pid = s.hello.get("placement", {}).get("pid")
        job.publish(Notice(level="warning", message=f"ray actor {s.index} (pid {pid}) restarted {why}"))
        s.restarts += 1
        s.state, s.old_pid, s.since = "starting", pid, time.monotonic()
        try:
            self._ray.kill(s.actor, no_restart=False)
        except Exception as exc:
            self._gone(s, f"could not be restarted: {exc}")
            return
        s.pending = s.actor.hello.remote()

    def _check_starts(self) -> None:
        """An actor that has not said hello within ``START_TIMEOUT_S`` is given up (a notice when it was the last)."""
        now = time.monotonic()
        for s in self._slots:
            if s.state == "starting" and now - s.since > START_TIMEOUT_S:
                self._gone(s, f"did not start within {START_TIMEOUT_S:.0f} s (no free GPU or CPU in the cluster?)")

    def _gone(self, s: _Slot, why: str) -> None:
        """``s`` serves nothing more; when no actor is left, what waits fails with ``why``."""
        s.state, s.pending = "gone", None
        _log.warning("ray actor %d %s", s.index, why)
        if all(x.state == "gone" for x in self._slots):
            err = EngineError(f"ray: every actor is gone; actor {s.index} {why}")
            if not self._first_hello.done():
                self._first_hello.set_exception(err)
            with self._cv:
                waiting, self._queue = list(self._queue), collections.deque()
            for job in waiting:
                if not job.future.done():
                    job.future.set_exception(err)

    def _finish(self, job: _Job, outcome: Outcome) -> None:
        if not job.future.done():
            job.future.set_result(outcome)


def _broken(job: _Job, kind: str, why: str) -> Outcome:
    """A result that says nothing about the kernel: its first rung failed with ``kind`` and ``why``."""
    rungs = expand_rungs(job.rungs) if job.rungs else ("compile",)
    rr = RungResult(rungs[0], Status.FAILED, error=ErrorInfo(kind, why))
    result = LadderResult(
        problem=job.kernel.problem,
        version=job.kernel.version,
        kernel=str(job.kernel.path.relative_to(job.kernel.root)),
        device={},
        rungs=[rr],
        started_at=time.time(),
    )
    return Outcome(result, job.run_id, broken=why)


def _cause(exc: BaseException) -> str:
    """The first line of an exception from Ray, without Ray's own preamble."""
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("ray::", "Traceback", "File ")):
            return line[:300]
    return type(exc).__name__
