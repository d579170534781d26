"""The worker processes of one ktui session: who runs kernels, who judges them, and the warm spares that replace
the candidate side after every ladder.

This module runs in ktui's own process and never imports torch; the workers are ``WorkerProcess`` es
(``ktui.core.workers.client``), each a ``python -m ktui.worker`` process.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ktui.core.events import EventBus, WorkerState
from ktui.core.workers import orphans
from ktui.core.workers.client import CancelToken, WorkerError, WorkerProcess
from ktui.core.workers.transport import LocalTransport, Transport
from ktui.core.workspace import Workspace

if TYPE_CHECKING:
    from ktui.core.events import WorkerStateWord


class WorkerPool:
    """The workers of one ktui session, on one device.

    ``candidate`` runs kernel versions; ``judge`` runs only references and decides verdicts; on the CPU a third,
    ``compiler``, compiles versions for sm_90a (the candidate there runs the Triton interpreter, which compiles
    nothing). On a GPU the candidate compiles for its own device and ``compiler`` is the candidate itself.

    Candidate code can do anything to the process it runs in (patch torch, patch ktui, leave threads), so the
    candidate-side workers are replaced after every ladder (``recycle``): a warm spare, started while the last
    ladder ran, takes over at once, and the next spare starts. No check ever runs where another version ran.

    Only the workers in service report their states on the bus (``WorkerState``); a spare is silent until it takes
    over.

    ``cancel_run`` ends the ladder under way: every worker call fails at once with ``RunCancelled`` and the busy
    workers are killed and restarted, until ``end_cancel`` (the scheduler calls both).

    The workers write ``<role>.log`` under ``log_dir`` (default ``.ktui/logs``): several pools on one workspace (the
    Ray engine's actors, ``ktui.core.engine``) each take a folder of their own, or their logs would interleave.
    """

    def __init__(
        self,
        workspace: Workspace,
        device: str,
        bus: EventBus | None = None,
        spares: bool = True,
        transport: Transport | None = None,
        log_dir: Path | None = None,
    ):
        self.device = device
        self.transport: Transport = transport or LocalTransport()  # where every worker of the pool runs
        self.bus = bus or EventBus()
        self._log_dir = log_dir or workspace.state_dir / "logs"  # each pool of one workspace needs its own
        self.cancel_token = CancelToken()  # shared by every worker of the pool, spares included
        self._in_service: tuple[WorkerProcess, ...] = ()  # the workers whose states reach the bus
        self.candidate = self._make("candidate")
        self.judge = self._make("judge")
        self.compiler = self._make("compiler") if device == "cpu" else self.candidate
        self._put_in_service()
        self.use_spares = spares
        self._spares: dict[str, WorkerProcess] = {}
        self._lock = threading.Lock()
        orphans.become_subreaper()

    def _make(self, role: str) -> WorkerProcess:
        w = WorkerProcess(role, self.device, self._log_dir, cancel=self.cancel_token, transport=self.transport)
        w.on_state = lambda r, state, detail: self._report(w, state, detail)
        return w

    def _put_in_service(self) -> None:
        """Record ``candidate``, ``judge`` and ``compiler`` as the workers in service (after any of them changed)."""
        self._in_service = (self.candidate, self.judge, self.compiler)

    def _report(self, w: WorkerProcess, state: str, detail: str) -> None:
        """Worker states reach the bus only from the workers in service; a spare is silent until it takes over."""
        if any(w is x for x in self._in_service):
            self.bus.publish(WorkerState(role=w.role, state=cast("WorkerStateWord", state), detail=detail))

    @property
    def workers(self) -> list[WorkerProcess]:
        """The workers in service, each once (on a GPU ``compiler`` is ``candidate``)."""
        return list({id(w): w for w in (self.candidate, self.judge, self.compiler)}.values())

    def _candidate_roles(self) -> list[str]:
        return ["candidate"] + (["compiler"] if self.compiler is not self.candidate else [])

    def start(self) -> None:
        """Spawn every worker now; they import torch in the background, and a thread per worker waits for its
        hello so that its state turns ``ready`` (or ``failed``) without anyone calling it. Spares start once the
        workers are ready (the CPU is not shared by five torch imports at once)."""
        for w in self.workers:
            w.start()
        for w in self.workers:
            threading.Thread(target=self._await_ready, args=(w,), name=f"ktui-{w.role}-hello", daemon=True).start()
        if self.use_spares:
            threading.Thread(target=self._start_spares_when_ready, name="ktui-spares", daemon=True).start()

    def _start_spares_when_ready(self) -> None:
        for w in self.workers:
            self._await_ready(w)
        for role in self._candidate_roles():
            self._start_spare(role)

    def _start_spare(self, role: str) -> None:
        with self._lock:
            if self.shutting_down or not self.use_spares or role in self._spares:
                return
            spare = self._spares[role] = self._make(role)
        spare.start()
        threading.Thread(target=self._await_ready, args=(spare,), name=f"ktui-{role}-spare", daemon=True).start()

    @staticmethod
    def _await_ready(w: WorkerProcess) -> None:
        try:
            w.ensure_ready()
        except WorkerError:
            pass  # reported through on_state("failed"); the next call raises it again

    def printed_lines(self, role: str = "candidate") -> int:
        """How many lines the ``role``'s worker processes have written to ``<role>.log`` since this process began
        (the version's ``print`` and ``tl.device_print``, tracebacks): the ladder notes the ones of a run."""
        from ktui.core.workers.logs import RotatingLog

        return RotatingLog.for_path(self.log_path(role)).printed_lines

    def log_path(self, role: str = "candidate") -> Path:
        """``<role>.log`` of this pool's workers."""
        return self._log_dir / f"{role}.log"

    def recycle(self) -> None:
        """Replace the candidate-side workers: their spares (or fresh processes) take over, the used ones are
        killed with any process they left behind, and new spares start (after a cancelled run too)."""
        if self.shutting_down:
            return
        old = {role: getattr(self, role) for role in self._candidate_roles()}
        for role, used in old.items():
            with self._lock:
                spare = self._spares.pop(role, None)
            fresh = spare if spare is not None and spare.alive() else None
            if fresh is None:
                fresh = self._make(role)
                fresh.start()
            if self.compiler is used:
                self.compiler = fresh
            setattr(self, role, fresh)
            self._put_in_service()
            self._report(fresh, "ready" if fresh.hello is not None else "starting", "fresh after the last ladder")
        for used in {id(w): w for w in old.values()}.values():
            used.close()
            used.kill()
        orphans.kill_adopted(keep={w.pid for w in self._all() if w.pid})
        for role in old:
            self._start_spare(role)

    def _all(self) -> list[WorkerProcess]:
        with self._lock:
            spares = list(self._spares.values())
        return self.workers + spares

    def device_info(self) -> dict[str, Any]:
        """The candidate worker's device description (waits for its hello)."""
        return dict(self.candidate.ensure_ready().get("device", {"type": self.device}))

    @property
    def shutting_down(self) -> bool:
        """True once ``stop`` began (the judge is closed then): nothing is restarted or recycled after."""
        return self.judge.closed

    @property
    def stopping(self) -> bool:
        """True once ``stop`` began, or while a cancel is in effect (``cancel_run``): what the run under way
        reports says nothing about the kernel, and the ladder does not store it."""
        return self.shutting_down or self.cancel_token.is_set()

    def cancel_run(self, reason: str) -> list[str]:
        """Cancel the ladder under way: from now until ``end_cancel`` every worker call fails at once with
        ``RunCancelled`` (``reason`` in its message), and each worker busy with a call now (a hanging kernel, the
        judge preparing references) is killed; the call that waited on it restarts it. Returns the roles killed."""
        self.cancel_token.set(reason)
        killed = []
        for w in self._all():
            if w.busy:
                w.kill()
                killed.append(w.role)
        return killed

    def end_cancel(self) -> None:
        """The cancelled run has ended: calls run normally again."""
        self.cancel_token.clear()

    def stop(self, grace_s: float = 3.0) -> None:
        """Ask every worker to exit, then give them ``grace_s`` together before killing the rest (none is
        restarted once this began, so a ladder under way ends at once)."""
        everyone = self._all()
        for w in everyone:
            w.close()
        for w in everyone:
            w.request_shutdown()
        deadline = time.monotonic() + grace_s
        for w in everyone:
            w.stop(grace_s=max(0.0, deadline - time.monotonic()))
        orphans.kill_adopted(keep=set())
        close = getattr(self.transport, "close", None)
        if callable(close):  # a remote transport's connection
            close()
