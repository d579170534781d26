"""One Markdown table row from a ``ktui run --json`` file: the label, then ``status: summary`` of each named rung.

    python benchmarks/rung_cells.py RUN.json LABEL RUNG...

Used by ``benchmarks/h200.sh``. A file that is no JSON, or an error envelope (docs/json.md), prints one cell saying
so; the summaries are cut to 160 characters and every rung's warnings are counted.
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
    for name in rungs:
        r = found.get(name)
        if r is None:
            cells.append(f"{name} -")
            continue
        warn = f" [{len(r.get('warnings') or [])} warnings]" if r.get("warnings") else ""
        cells.append(f"{name} {r.get('status')}: {(r.get('summary') or '')[:160]}{warn}")
    return f"| {label} | " + " | ".join(c.replace("|", "/") for c in cells) + " |"


if __name__ == "__main__":
    print(row(sys.argv[1], sys.argv[2], sys.argv[3:]))
