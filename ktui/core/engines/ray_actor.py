"""The body of one actor of the Ray engine (``ktui.core.engines.ray_ladders``): a warm ktui ``WorkerPool`` and a
``Ladder`` that runs one version at a time.

A plain class: the driver wraps it with ``ray.remote`` and its resources (``num_gpus=1``: Ray gives the actor one GPU
and sets its ``CUDA_VISIBLE_DEVICES``, which the worker processes inherit; or ``num_cpus=1`` for the CPU). This module
imports Ray only to say where the actor runs (``placement``). The actor reads the workspace at the path the driver
gives (one machine, or storage that every node mounts at that path) and writes only ktui's own state there: source
snapshots, dumps, and its workers' logs under ``.ktui/logs/ray-<slot>/``. Results are stored by the driver, once.

The actor's calls are ``hello`` (waits for the candidate worker: its device, and where it runs), ``run`` (one ladder;
the actor serializes them), ``drain`` (the ladder events since the last drain, for the driver to publish) and
``cancel``; the actor runs with ``max_concurrency=2`` so that ``drain`` and ``cancel`` are served while a ladder runs.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import replace
from typing import Any

from ktui.core.events import (
    Event,
    EventBus,
    FirstVerdict,
    LadderStarted,
    Notice,
    RungFinished,
    RungProgress,
    RungStarted,
    WorkerState,
)
from ktui.core.ladder import Ladder, LadderOptions, WorkerPool
from ktui.core.results import LadderResult
from ktui.core.store import ResultStore
from ktui.core.workspace import KernelRef, Workspace

FORWARDED = (LadderStarted, RungStarted, RungProgress, FirstVerdict, RungFinished, Notice)
"""The events the driver publishes again on the session's bus. ``LadderFinished`` is the driver's own (after it
stored the merged result); worker states stay in the actor (every actor has a ``candidate``: the screen's worker line
would mix them): a crash is said by the driver's notice when it restarts the actor."""

NOT_A_CRASH = ("the run was cancelled", "timed out")
"""A worker restarted for these reasons (a cancel, a kernel past its time limit: its process was killed, with its CUDA
context) leaves the actor as it was. Any other restart (the worker crashed, or asked to restart because a CUDA error
left its context unusable) or a worker that could not start retires the actor: the driver has Ray restart it."""


class _ReadOnlyStore(ResultStore):
    """The result store as an actor sees it: read (the profile rung reads the pinned baseline's figures), never
    written (the driver merges and stores each result once, so two actors never write one file)."""

    def save(self, result: LadderResult) -> None:
        return None


class LadderActor:
    """One warm worker pool (candidate and judge; the compiler too on the CPU) on the actor's device.

    Args:
        root: the workspace's path, as this node sees it.
        device: ``cuda`` (the one GPU Ray gave the actor) or ``cpu``.
        options: how the ladders run; each run's time limits come with its request.
        slot: the actor's number in the engine (its logs: ``.ktui/logs/ray-<slot>/``).
        spares: keep warm spares of the candidate-side workers (``WorkerPool``).

    Raises:
        WorkspaceError: ``root`` is not a workspace on this node.
    """

    def __init__(self, root: str, device: str, options: LadderOptions, slot: int, spares: bool = True):
        self.ws = Workspace(root)
        self.slot = slot
        self.options = options
        self.bus = EventBus()
        self.pool = WorkerPool(
            self.ws, device, self.bus, spares=spares, log_dir=self.ws.state_dir / "logs" / f"ray-{slot}"
        )
        self.ladder = Ladder(self.ws, self.pool, self.bus, options, _ReadOnlyStore(self.ws))
        self._lock = threading.Lock()
        self._events: list[dict[str, Any]] = []
        self._crashes: list[str] = []
        self._run_id: int | None = None  # the driver's number of the run under way
        self._one_at_a_time = threading.Lock()
        self.bus.subscribe(self._collect)
        self.pool.start()

    def hello(self) -> dict[str, Any]:
        """``{"device": the candidate worker's device (its hello), "placement": placement()}``; waits for the hello.

        Raises:
            WorkerStartError: the worker could not start (no GPU visible, torch missing...).
        """
        return {"device": self.pool.device_info(), "placement": self.placement()}

    def placement(self) -> dict[str, Any]:
        """Where this actor runs: ``engine`` (``ray``), ``actor`` (its slot), ``host``, ``node_id`` (Ray's),
        ``gpu_ids`` (the GPUs Ray gave it, as the node numbers them; [] on the CPU), ``pid``."""
        import ray

        return {
            "engine": "ray",
            "actor": self.slot,
            "host": socket.gethostname(),
            "node_id": ray.get_runtime_context().get_node_id(),
            "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
            "pid": os.getpid(),
        }

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run one ladder. ``request``: ``problem``, ``version``, ``rungs`` (None: the options' rungs), ``limits``
        (seconds per limit key, ``ktui.core.timeouts``), ``run_id`` (the driver's number, for ``cancel``).

        Returns:
            ``result`` (``LadderResult.to_json``, its ``device`` with ``placement``), ``judge_timings`` ((method,
            seconds) of the judge's calls), ``crashed`` ('' or what crashed: the driver then restarts the actor).
        """
        with self._one_at_a_time:
            kernel = KernelRef(request["problem"], request["version"], self.ws.root)
            self.ladder.options = replace(self.options, timeouts=dict(request["limits"]))
            rungs = tuple(request["rungs"]) if request.get("rungs") else None
            judge = self.pool.judge
            mark = judge.calls
            with self._lock:
                self._crashes.clear()
                self._run_id = request["run_id"]
            try:
                result = self.ladder.run(kernel, rungs)
            finally:
                with self._lock:
                    self._run_id = None
                    self.pool.end_cancel()
            result.device = {**result.device, "placement": self.placement()}
            with self._lock:
                crashed = "; ".join(dict.fromkeys(self._crashes))
            return {"result": result.to_json(), "judge_timings": judge.timings_since(mark), "crashed": crashed}

    def drain(self) -> list[dict[str, Any]]:
        """The ladder events (``FORWARDED``, as ``Event.to_json``) since the last drain, oldest first; of a run of
        progress events in a row only the latest is kept."""
        with self._lock:
            out, self._events = self._events, []
        return out

    def cancel(self, run_id: int, reason: str) -> bool:
        """Cancel run ``run_id`` when it is the one under way (its worker calls fail at once, the busy workers are
        restarted; ``run`` returns its result, cancelled); False when another run, or none, is under way."""
        with self._lock:
            if self._run_id != run_id:
                return False
            self.pool.cancel_run(reason)
            return True

    def _collect(self, ev: Event) -> None:
        if isinstance(ev, WorkerState):
            crashed = ev.state == "failed" or (
                ev.state == "restarting" and not any(s in ev.detail for s in NOT_A_CRASH)
            )
            if crashed:
                what = "could not start" if ev.state == "failed" else "restarted"
                with self._lock:
                    self._crashes.append(f"the {ev.role} worker {what}: {ev.detail}")
            return
        if not isinstance(ev, FORWARDED):
            return
        d = ev.to_json()
        with self._lock:
            if isinstance(ev, RungProgress) and self._events and self._events[-1].get("event") == "RungProgress":
                self._events[-1] = d
            else:
                self._events.append(d)
