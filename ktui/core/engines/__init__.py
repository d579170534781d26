"""Where ladders run: the seam between a ``Session`` and the machines that climb its ladders.

Two engines:

- ``local`` (the default, no extra): the session's own ``WorkerPool`` (``ktui.core.workers.pool``), one ladder at a
  time through its scheduler. Nothing here is used then.
- ``ray`` (``pip install -e '.[ray]'``): ``ktui.core.engines.ray_ladders.RayLadders``, a pool of Ray actors, one per
  GPU (``num_gpus=1``) or, for ``--device cpu``, one per CPU slot (``num_cpus=1``: the Triton interpreter, and the
  sm_90a compiles and dumps), each holding a warm ktui ``WorkerPool`` (``ktui.core.engines.ray_actor``). Ray places
  the actors and runs each actor's ladders one at a time, so one timed run per GPU at a time; several versions
  submitted together run in parallel, each on its own actor.

A ``Session`` given an engine (``Session(ws, engine=...)``) sends every ladder there (saves, reruns, the agent's
batches, ``ktui eval``) and stores and publishes the results itself, as the local ladder does.
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ktui.core.results import LadderResult
from ktui.core.workers.client import WorkerStartError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ktui.core.events import Event
    from ktui.core.ladder import LadderOptions
    from ktui.core.workspace import KernelRef, Workspace

ENGINES = ("local", "ray")
"""The ``--engine`` choices."""

RAY_MISSING = "the ray engine needs Ray: pip install -e '.[ray]' (or pip install 'ray>=2.60,<3')"


class EngineError(WorkerStartError):
    """An engine could not start or serve (Ray missing, no GPU in the cluster, no actor that could start): like a
    worker that could not start, an environment failure (exit code 3). The message is one line and names the
    problem."""


@dataclass
class Outcome:
    """What an engine returns for one ladder.

    Attributes:
        result: this run's own result (only the rungs that ran), its ``device`` the candidate worker's hello plus
            ``placement``: where it ran (``engine``, ``host``, ``node_id``, ``gpu_ids``, ``actor``, ``pid``).
        run_id: the number the engine gave the run; its forwarded events carry it.
        judge_timings: (method, seconds) of the judge's calls of this run (``ktui.core.timeouts.ReferenceTimes``).
        broken: '' or why the run says nothing about the kernel (the actor died twice while running it, the engine
            stopped): such a result is published, never stored.
    """

    result: LadderResult
    run_id: int
    judge_timings: list[tuple[str, float]] = field(default_factory=list)
    broken: str = ""


class Engine(Protocol):
    """What a ``Session`` needs of an engine that runs ladders somewhere else."""

    device: str  # ``cpu`` or ``cuda``: the kind of device every actor serves
    name: str  # ``ray``

    def submit(
        self,
        kernel: KernelRef,
        rungs: tuple[str, ...] | None,
        limits: dict[str, float],
        publish: Callable[[Event], None],
    ) -> Future[Outcome]:
        """Queue one ladder; ``publish`` gets its events (``LadderStarted``, rungs, progress) as they happen, with
        the outcome's ``run_id``; ``LadderFinished`` is the caller's to publish, after it stored the result."""
        ...

    def cancel(self, key: str, reason: str) -> list[str]:
        """End the run of ``key`` under way (its result comes back cancelled) or drop it from the queue; returns
        what was stopped, for the notice."""
        ...

    def device_info(self) -> dict[str, Any]:
        """The device of the first actor to start (its candidate worker's hello)."""
        ...

    def describe(self) -> str:
        """One line: the engine, its actors and where they run."""
        ...

    def stop(self) -> None:
        """Cancel what waits, stop the actors; the engine serves nothing after."""
        ...


def add_engine_args(p: argparse.ArgumentParser) -> None:
    """``--engine``, ``--address`` and ``--actors``, for the commands that run ladders in batches (``ktui``,
    ``ktui agent``, ``ktui eval``)."""
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="where ladders run: local (this machine's workers, one ladder at a time; default) or ray (a Ray actor "
        "per GPU, the versions of a batch in parallel; pip install -e '.[ray]')",
    )
    p.add_argument(
        "--address",
        default=None,
        help="with --engine ray: the Ray cluster to join (auto, HOST:6379, ray://HOST:10001; default: $RAY_ADDRESS, "
        "else a Ray instance of ktui's own on this machine). Its nodes need ktui installed and the workspace at the "
        "same path",
    )
    p.add_argument(
        "--actors",
        type=int,
        default=None,
        help="with --engine ray: how many actors (default: one per GPU of the cluster; --device cpu: half its CPUs)",
    )


def require(kind: str) -> None:
    """Check, before anything runs, that the engine ``kind`` can be made here: for ``ray``, that Ray imports (so
    ``ktui eval --engine ray`` without Ray fails at once, also when every result is stored and nothing would run).

    Raises:
        EngineError: ``RAY_MISSING``.
    """
    if kind == "ray":
        try:
            import ray  # noqa: F401  (the extra's one import)
        except ImportError:
            raise EngineError(RAY_MISSING) from None


def make_engine(
    kind: str,
    ws: Workspace,
    device: str,
    options: LadderOptions,
    address: str | None = None,
    actors: int | None = None,
) -> Engine | None:
    """The engine ``kind`` names, started: None for ``local`` (the session's own pool serves). For ``ray`` the
    address defaults to ``$RAY_ADDRESS`` (else a Ray instance of ktui's own).

    Raises:
        ValueError: a usage error: an unknown kind, ``address`` or ``actors`` without ``ray``, ``actors`` < 1.
        EngineError: Ray is not installed, or the Ray engine could not start (see ``RayLadders``).
    """
    if kind not in ENGINES:
        raise ValueError(f"unknown engine {kind!r}: one of {', '.join(ENGINES)}")
    if kind == "local":
        if address is not None or actors is not None:
            raise ValueError("--address and --actors go with --engine ray")
        return None
    if actors is not None and actors < 1:
        raise ValueError("--actors must be 1 or more")
    try:
        import ray  # noqa: F401  (the extra's one import; ray_ladders imports it too)
    except ImportError:
        raise EngineError(RAY_MISSING) from None
    from ktui.core.engines.ray_ladders import RayLadders

    return RayLadders(ws, device, options, address=address or os.environ.get("RAY_ADDRESS") or None, actors=actors)
