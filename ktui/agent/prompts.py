"""The agent's prompts: text in ``prompts/*.md`` next to this module, assembled with the problem's context."""

from __future__ import annotations

from pathlib import Path

from ktui.core import report
from ktui.core.results import LadderResult
from ktui.core.workspace import Workspace
from ktui.protocol.distributions import distributions_for_prompt

PROMPTS = Path(__file__).with_name("prompts")


def prompt(name: str) -> str:
    return (PROMPTS / f"{name}.md").read_text()


def best_version(ws: Workspace, problem: str, results: dict[str, LadderResult]) -> tuple[str, LadderResult] | None:
    """The fastest version whose ladder passed (highest worst-case speedup), else the latest that passed."""
    ok = [(k.key, results[k.key]) for k in ws.versions(problem) if k.key in results and results[k.key].ok]
    if not ok:
        return None
    return max(ok, key=lambda item: item[1].worst_speedup or 0.0)


def system_prompt(ws: Workspace, problem: str, results: dict[str, LadderResult]) -> str:
    """The system prompt: the rules (with the input distributions the worker draws, from
    ``ktui.protocol.distributions``), how to write Triton and CuTeDSL kernels here, the problem's reference source,
    the versions that exist, and the current best version with its source and its figures."""
    system = prompt("system").replace("{distributions}", distributions_for_prompt())  # the worker's own list
    parts = [system, prompt("triton"), prompt("cutedsl")]
    parts.append(
        f"The problem is `{problem}`. Its reference, references/{problem}.py:\n```python\n"
        f"{ws.reference_path(problem).read_text()}\n```"
    )
    versions = ws.versions(problem)
    if versions:
        listing = []
        for k in versions:
            r = results.get(k.key)
            failed = r.failed_rung if r is not None else None
            verdict = "not run" if r is None else ("ok" if r.ok else f"FAILED {failed.name if failed else ''}".rstrip())
            listing.append(f"- {k.version}: {verdict}")
        parts.append("Versions in kernels/" + problem + "/:\n" + "\n".join(listing))
    best = best_version(ws, problem, results)
    if best:
        key, res = best
        k = ws.kernel(ws.root / res.kernel)
        parts.append(
            f"The current best version is {key}:\n```python\n{k.path.read_text()}\n```\n{report.for_model(res)}"
        )
    return "\n\n".join(parts)
