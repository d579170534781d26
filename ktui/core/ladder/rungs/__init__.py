"""One module per rung, each with ``run(ctx: RunContext) -> RungResult``, its pure fold (where it folds worker
replies) and its policy constants. Rungs import ``ktui.core.ladder.context``, never the runner."""

from ktui.core.ladder.rungs import benchmark, compile, correctness, dumps, profile, run, trace

__all__ = ["benchmark", "compile", "correctness", "dumps", "profile", "run", "trace"]
