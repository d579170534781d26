"""One Markdown table row from a ``ktui run --json`` file: the label, then ``status: summary`` of each named rung.

    python benchmarks/rung_cells.py RUN.json LABEL RUNG...

Used by ``benchmarks/h200.sh``. A file that is no JSON, or an error envelope (docs/json.md), prints one cell saying
so; the summaries (a failed rung's error message where it has none) are cut to 160 characters, every rung's
warnings are counted, and a failed rung not named gets a cell too (a compile failure says why the rest is empty).
"""

from __future__ import annotations

import json
import sys


def row(path: str, label: str, rungs: list[str]) -> str:
    """The row for the run saved at ``path`` (stdout of ``ktui run --json``)."""
    try:
        text = open(path, encoding="utf-8").read()
        envelope = json.JSONDecoder().raw_decode(text[text.index("{") :])[0]
    except (OSError, ValueError) as exc:
        return f"| {label} | no result ({type(exc).__name__}) |"
    if "error" in envelope:
        return f"| {label} | {envelope['error'].get('kind')}: {envelope['error'].get('message', '')[:200]} |"
    found = {r["name"]: r for r in envelope["data"]["rungs"]}
    cells = []
    for name in [*rungs, *(n for n, r in found.items() if n not in rungs and r.get("status") == "FAILED")]:
        r = found.get(name)
        if r is None:
            cells.append(f"{name} -")
            continue
        warn = f" [{len(r.get('warnings') or [])} warnings]" if r.get("warnings") else ""
        text = r.get("summary") or (r.get("error") or {}).get("message") or ""  # a failed rung's error, when no summary
        cells.append(f"{name} {r.get('status')}: {text[:160]}{warn}")
    return f"| {label} | " + " | ".join(c.replace("|", "/") for c in cells) + " |"


if __name__ == "__main__":
    print(row(sys.argv[1], sys.argv[2], sys.argv[3:]))
