"""The rung ladder: a runner that climbs one table of rungs, one module per rung (``rungs/``)."""

from ktui.core.ladder.cases import make_cases
from ktui.core.ladder.context import LadderOptions
from ktui.core.ladder.rungs.benchmark import benchmark_result
from ktui.core.ladder.rungs.correctness import correctness_result
from ktui.core.ladder.runner import Ladder, merge
from ktui.core.store import Baselines
from ktui.core.workers.pool import WorkerPool

__all__ = [
    "Baselines",
    "Ladder",
    "LadderOptions",
    "WorkerPool",
    "benchmark_result",
    "correctness_result",
    "make_cases",
    "merge",
]
