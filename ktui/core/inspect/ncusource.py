"""Nsight Compute's source page, per SASS instruction, joined to the kernel's Python lines through ktui's dumps.

``ncu --import REPORT --csv --page source --print-source sass`` prints, for each profiled kernel, a line
``"Kernel Name","<name>"`` and then a table: a header row (``"Address","Source",`` then metric columns) and one row per
SASS instruction: its address in device memory, its text, and the source-level metrics the report holds (with the
``SourceCounters`` section: ``Warp Stall Sampling (All Samples)`` and ``(Not-issued Samples)`` (older releases say
``Cycles``), ``# Samples``, ``Instructions Executed``, ``Thread Instructions Executed``..., and one column per stall
reason, ``stall_long_sb``, ``stall_wait``..., with its ``(Not Issued)`` twin). Counts carry thousands separators;
``-`` or an empty cell is "not applicable".

ncu's SASS and ktui's dumps SASS of the same build are the same instructions at the same offsets from the function's
start; ``match`` checks that opcode by opcode, and only then are ncu's rows given the dumps' Python lines (a profile
of another build is kept per instruction, without lines). ``ktui.tui.inside`` shows both beside the source.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ktui.core.inspect.ncu import number

SAMPLES = ("Warp Stall Sampling (All Samples)", "Warp Stall Sampling (All Cycles)")
NOT_ISSUED = ("Warp Stall Sampling (Not-issued Samples)", "Warp Stall Sampling (Not-issued Cycles)")
EXECUTED = "Instructions Executed"
THREADS_EXECUTED = "Thread Instructions Executed"
STALL = re.compile(r"^stall_(?P<reason>\w+)$")
INSTRUCTION_BYTES = 16  # every SASS instruction since Volta
_PRED = re.compile(r"^@!?U?P[T0-9]+\s+")


@dataclass
class SourceRow:
    """One SASS instruction of ncu's source page."""

    offset: int  # bytes from the kernel's first instruction
    sass: str
    samples: float  # warp stall samples (all), 0 when the column is absent
    not_issued: float
    executed: float | None  # warp-level instructions executed (None: not collected)
    threads_executed: float | None
    stalls: dict[str, float] = field(default_factory=dict)  # reason -> samples, non-zero only

    @property
    def opcode(self) -> str:
        """The opcode with its modifiers, without a predicate: ``LDG.E.128``."""
        text = _PRED.sub("", self.sass.strip())
        return text.split()[0].rstrip(";") if text else ""


@dataclass
class SourcePage:
    """One kernel's source page."""

    kernel: str
    rows: list[SourceRow]
    columns: list[str]

    @property
    def total_samples(self) -> float:
        return sum(r.samples for r in self.rows)


def parse_source_page(text: str) -> list[SourcePage]:
    """The source page of every kernel in ``text`` (ncu's CSV output, with ``==PROF==`` lines and the program's own
    output around it). A table without an ``Address`` and a ``Source`` column is skipped.

    Raises:
        ValueError: an address that is not a number (not a source page of SASS).
    """
    pages: list[SourcePage] = []
    kernel = ""
    header: list[str] | None = None
    base: int | None = None
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    for row in csv.reader(lines):
        if not row:
            continue
        if row[0] == "Kernel Name":
            kernel, header, base = (row[1] if len(row) > 1 else ""), None, None
            continue
        if row[0] == "Address" and "Source" in row:
            header = row
            pages.append(SourcePage(kernel, [], list(row)))
            continue
        if header is None or not pages:
            continue
        cells = _cells(header, row)
        try:
            addr = int(cells.get("Address", ""), 16)
        except ValueError:
            bad = cells.get("Address")
            raise ValueError(f"source page of {kernel!r}: address {bad!r} is not a SASS address") from None
        base = addr if base is None else base
        stalls = {}
        for col, value in cells.items():
            m = STALL.match(col)
            v = number(value)
            if m and v:
                stalls[m["reason"]] = v
        pages[-1].rows.append(
            SourceRow(
                offset=addr - base,
                sass=cells.get("Source", "").strip(),
                samples=_first(cells, SAMPLES) or 0.0,
                not_issued=_first(cells, NOT_ISSUED) or 0.0,
                executed=number(cells.get(EXECUTED, "")),
                threads_executed=number(cells.get(THREADS_EXECUTED, "")),
                stalls=stalls,
            )
        )
    return pages


def _cells(header: list[str], row: list[str]) -> dict[str, str]:
    """Column -> cell; a column named twice keeps its first cell (ncu repeats ``Instructions Executed``)."""
    out: dict[str, str] = {}
    for h, v in zip(header, row):
        out.setdefault(h, v)
    return out


def _first(cells: dict[str, str], names: tuple[str, ...]) -> float | None:
    for n in names:
        if n in cells:
            return number(cells[n])
    return None


def match(page: SourcePage, opcodes: list[tuple[int, str]]) -> bool:
    """Whether ``page`` is the build whose SASS is ``opcodes`` (``(offset, opcode without modifiers)`` of ktui's
    dumps, in order): the same number of instructions at the same offsets with the same opcodes. Modifiers are left
    out: ncu and nvdisasm may spell them differently, and another build differs in far more than modifiers."""
    mine = [(r.offset, r.opcode.split(".")[0]) for r in page.rows]
    return bool(mine) and mine == opcodes


def by_line(page: SourcePage, line_of_offset: dict[int, int | None], source_lines: list[str]) -> list[dict[str, Any]]:
    """ncu's rows summed per Python line (``line_of_offset``: offset -> line from the dumps' line map), hottest
    first: ``line``, ``text``, ``samples``, ``pct`` (of the kernel's samples), ``not_issued``, ``executed`` (warp
    instructions), ``instructions`` (SASS instructions the line maps to) and ``stalls`` (``[reason, samples]``, most
    first). Instructions with no line are summed under line 0."""
    total = page.total_samples
    acc: dict[int, dict[str, Any]] = defaultdict(
        lambda: {"samples": 0.0, "not_issued": 0.0, "executed": 0.0, "instructions": 0, "stalls": defaultdict(float)}
    )
    for r in page.rows:
        a = acc[line_of_offset.get(r.offset) or 0]
        a["samples"] += r.samples
        a["not_issued"] += r.not_issued
        a["executed"] += r.executed or 0.0
        a["instructions"] += 1
        for reason, n in r.stalls.items():
            a["stalls"][reason] += n
    out = []
    for line, a in acc.items():
        stalls = sorted(a["stalls"].items(), key=lambda kv: -kv[1])
        out.append(
            {
                "line": line,
                "text": source_lines[line - 1].strip() if 0 < line <= len(source_lines) else "",
                "samples": a["samples"],
                "pct": 100.0 * a["samples"] / total if total else 0.0,
                "not_issued": a["not_issued"],
                "executed": a["executed"],
                "instructions": a["instructions"],
                "stalls": [[k, v] for k, v in stalls],
            }
        )
    return sorted(out, key=lambda d: (-d["samples"], d["line"]))


def rows_json(page: SourcePage) -> list[dict[str, Any]]:
    """``page``'s rows as JSON objects (the file the SASS tab reads)."""
    return [
        {
            "offset": r.offset,
            "sass": r.sass,
            "samples": r.samples,
            "not_issued": r.not_issued,
            "executed": r.executed,
            "stalls": dict(sorted(r.stalls.items(), key=lambda kv: -kv[1])),
        }
        for r in page.rows
    ]
