"""The rung ladder: a runner that climbs one table of rungs, one module per rung (``rungs/``)."""

from ktui.core.ladder.runner import Baselines, Ladder, LadderOptions, WorkerPool, merge

__all__ = ["Baselines", "Ladder", "LadderOptions", "WorkerPool", "merge"]
