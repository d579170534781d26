"""``ktui diff A B``: what the compiler made of two versions, side by side: resources, instruction mix, SASS.

Dumps come from each version's latest ladder result when it ran on the file's current content; otherwise the
``dumps`` rung runs first (compiling for this GPU, or for sm_90a without one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ktui.core.inspect import sass
from ktui.core.results import LadderResult, Status
from ktui.core.store import ResultStore, sha256
from ktui.core.workspace import KernelRef, Workspace


class DiffError(RuntimeError):
    """A version has no dumps and the dumps rung failed on it; the message says which and why."""


def _dumps(ws: Workspace, k: KernelRef, device: str) -> LadderResult:
    sha = sha256(k.path.read_bytes())
    res = ResultStore(ws).load(k.problem, k.version)
    rung = res.rung("dumps") if res else None
    if res and res.source_sha256 == sha and rung and rung.status is Status.OK and all(
            (ws.root / kk["files"]["sass"]).exists() for kk in rung.figures.get("kernels", []) if "sass" in
            kk.get("files", {})):
        return res
    from ktui.core.device import resolve_device
    from ktui.core.ladder import Ladder, LadderOptions, WorkerPool

    pool = WorkerPool(ws, resolve_device(device))
    pool.start()
    try:
        ladder = Ladder(ws, pool, options=LadderOptions(rungs=("dumps",)), store=ResultStore(ws))
        res = ladder.run(k)
        ladder.close()
    finally:
        pool.stop()
    failed = res.failed_rung
    if failed:
        raise DiffError(f"{k.key}: {failed.line()}")
    return res


def _side(ws: Workspace, k: KernelRef, res: LadderResult) -> dict[str, Any]:
    rung = res.rung("dumps")
    kernels, lines = [], []
    for kk in rung.figures.get("kernels", []):
        kernels.append({"kernel": kk.get("kernel"), "language": kk.get("language"),
                        "resources": kk.get("resources", {}), "mix": kk.get("mix", {}),
                        "warnings": kk.get("warnings", []), "files": kk.get("files", {})})
        sass_file = kk.get("files", {}).get("sass")
        if sass_file:
            lines += sass.normalized_text_lines((ws.root / sass_file).read_text())
    prof = res.rung("profile")
    return {"kernel": k.key, "file": str(k.path.relative_to(ws.root)), "sha256": res.source_sha256,
            "arch": rung.figures.get("arch"), "kernels": kernels,
            "ncu": prof.figures.get("kernels") if prof and prof.status is Status.OK else None,
            "_lines": lines}


def _total_mix(side: dict[str, Any]) -> dict[str, int]:
    total: dict[str, int] = {}
    for kk in side["kernels"]:
        for fam, n in kk["mix"].items():
            total[fam] = total.get(fam, 0) + n
    return total


def compare(a: tuple[Workspace, KernelRef], b: tuple[Workspace, KernelRef], device: str = "auto") -> dict[str, Any]:
    """The comparison as JSON-able data: both sides (resources, mix, warnings, ncu figures when profiled), the
    instruction-mix delta, the resources before and after, and the unified diff of the normalized SASS.

    Raises:
        DiffError: dumps could not be made for a side.
    """
    return compare_results([(ws, k, _dumps(ws, k, device)) for ws, k in (a, b)])


def compare_results(items: list[tuple[Workspace, KernelRef, LadderResult]]) -> dict[str, Any]:
    """``compare`` for two results that already have dumps (the TUI's Diff tab).

    Raises:
        DiffError: a result has no dumps rung that passed.
    """
    for _, k, res in items:
        rung = res.rung("dumps")
        if rung is None or rung.status is not Status.OK:
            raise DiffError(f"{k.key} has no dumps yet: run its ladder (the dumps rung writes them)")
    sides = [_side(ws, k, res) for ws, k, res in items]
    la, lb = sides[0].pop("_lines"), sides[1].pop("_lines")
    diff = sass.unified_diff(la, lb, sides[0]["file"], sides[1]["file"])
    res_rows = []
    for fld in ("registers", "local", "stack", "shared", "dynamic_shared"):
        va = sum(kk["resources"].get(fld, 0) for kk in sides[0]["kernels"])
        vb = sum(kk["resources"].get(fld, 0) for kk in sides[1]["kernels"])
        res_rows.append({"resource": fld, "a": va, "b": vb, "delta": vb - va})
    return {"a": sides[0], "b": sides[1], "resources": res_rows,
            "mix_delta": sass.mix_delta(_total_mix(sides[0]), _total_mix(sides[1])),
            "diff": diff, "lines": {"a": len(la), "b": len(lb)},
            "changed": sum(1 for ln in diff if ln[:1] in "+-" and not ln.startswith(("+++", "---"))),
            "_normalized": (la, lb)}


def render(result: dict[str, Any], side_by_side: bool = False, width: int = 60) -> str:
    """The comparison as text for a terminal."""
    a, b = result["a"], result["b"]
    out = [f"A: {a['file']} ({a['sha256'][:12]})  B: {b['file']} ({b['sha256'][:12]})  [{a.get('arch')}]", ""]
    out.append(f"{'resource':<16}{'A':>10}{'B':>10}{'delta':>10}")
    for r in result["resources"]:
        out.append(f"{r['resource']:<16}{r['a']:>10}{r['b']:>10}{r['delta']:>+10}")
    out.append("")
    out.append(f"{'instructions':<16}{'A':>10}{'B':>10}{'delta':>10}")
    for r in result["mix_delta"]:
        out.append(f"{r['family']:<16}{r['a']:>10}{r['b']:>10}{r['delta']:>+10}")
    for side, name in ((a, "A"), (b, "B")):
        for kk in side["kernels"]:
            for w in kk["warnings"]:
                out.append(f"warning {name} {kk['kernel']}: {w}")
    out.append("")
    out.append(f"normalized SASS: {result['lines']['a']} lines in A, {result['lines']['b']} in B, "
               f"{result['changed']} changed")
    if side_by_side:
        out += sass.side_by_side(result["diff"], width)
    else:
        out += result["diff"]
    return "\n".join(out)
