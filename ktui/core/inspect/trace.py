"""Read recorded traces: a ktui trace buffer (``ktui.protocol.trace``), or a Proton Chrome trace, into one model.

Pure Python (no torch, no numpy): the trace rung's files are read in ktui's own process. The model is per warp: the
marks it recorded, each a (globaltimer ns, SM clock cycles) pair, with its CTA and SM. ``ktui.core.inspect.tracestats``
computes the figures; ``ktui.core.inspect.perfetto`` writes the trace for a trace viewer.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from ktui.protocol.trace import CLOCK_BITS, HEADER_BYTES, MAGIC, RECORD_BYTES, SLOTS, VERSION

CLOCK_MOD = 1 << CLOCK_BITS


class TraceFormatError(ValueError):
    """A buffer or trace file that is not what its reader expects (the message says what is wrong)."""


@dataclass(frozen=True)
class Mark:
    """One marker as one warp reached it: ``gt`` globaltimer (ns), ``clock`` SM cycles (the low ``CLOCK_BITS``);
    ``sm`` the SM whose clock it read when that is not its warp's (a CTA moved between SMs, e.g. preempted and
    resumed elsewhere), else None."""

    gt: int
    clock: int
    sm: int | None = None


@dataclass
class WarpTrace:
    """One traced warp: its linear CTA index, warp in the CTA, SM, and marks by slot (``2 * region + end``).

    ``base_ns`` is set when the marks' clocks count from the CTA's start and that start is known in globaltimer ns
    (Proton's traces: its ``gt`` are then 0); None when every mark has its own globaltimer (ktui's buffers)."""

    cta: int
    warp: int
    sm: int
    marks: dict[int, Mark] = field(default_factory=dict)
    base_ns: int | None = None


@dataclass
class KernelTrace:
    """One kernel's trace.

    Attributes:
        kernel, language: the kernel and ``triton`` / ``cutedsl``.
        regions: region names by id (region ``i``'s begin is slot ``2i``, its end ``2i + 1``).
        grid, block: the launch as the kernel saw it (``%nctaid``, ``%ntid``); ``(0, 0, 0)`` when unknown.
        sample_every: CTAs recorded: every ``sample_every``-th linear CTA index (1: all of them).
        warps: the traced warps.
        launches: launches of the kernel in the recorded call (the trace is the last one's).
        problems: what reading found wrong or incomplete, as sentences.
    """

    kernel: str
    language: str
    regions: list[str]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    sample_every: int
    warps: list[WarpTrace]
    launches: int = 1
    problems: list[str] = field(default_factory=list)

    @property
    def ctas(self) -> int:
        """CTAs in the launch (0 when the grid is unknown)."""
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def warps_per_cta(self) -> int:
        threads = self.block[0] * self.block[1] * self.block[2]
        return (threads + 31) // 32

    def cta_coords(self, cta: int) -> tuple[int, int, int]:
        """``(x, y, z)`` of linear CTA index ``cta`` (``x`` fastest)."""
        gx, gy = max(self.grid[0], 1), max(self.grid[1], 1)
        return cta % gx, (cta // gx) % gy, cta // (gx * gy)


def parse_buffer(data: bytes, kernel: str, language: str, regions: list[str], launches: int = 1) -> KernelTrace:
    """A ktui trace buffer (header and records, as the traced program wrote it) as a ``KernelTrace``.

    Records whose globaltimer is 0 were never written and are skipped. A buffer with records but no header (CTA 0
    reached no begin marker) cannot be decoded: it gives no warps and says so in ``problems``. A warp's SM is its
    first record's; a record of the same warp read on another SM keeps that SM in its ``Mark.sm`` (its clock is
    another SM's) and ``problems`` counts such warps.

    Raises:
        TraceFormatError: shorter than the header, a length that is not header + whole records, a header of another
            format (magic, version, slots), or a record beyond the launch (the buffer does not belong to it).
    """
    if len(data) < HEADER_BYTES or (len(data) - HEADER_BYTES) % RECORD_BYTES:
        raise TraceFormatError(
            f"trace buffer of {len(data)} bytes: expected a {HEADER_BYTES}-byte header and {RECORD_BYTES}-byte records"
        )
    magic, version, gx, gy, gz, bx, by, bz, shift, slots = struct.unpack_from("<10I", data, 0)
    trace = KernelTrace(kernel, language, list(regions), (0, 0, 0), (0, 0, 0), 1, [], launches)
    any_record = any(data[HEADER_BYTES:])
    if magic == 0 and version == 0:
        if any_record:
            trace.problems.append(
                f"{kernel}: records but no header (CTA 0 reached no begin marker): the records cannot be placed"
            )
        else:
            trace.problems.append(f"{kernel}: no marker ran (the recorded call launched it, and no warp reached one)")
        return trace
    if magic != MAGIC or version != VERSION or slots != SLOTS:
        raise TraceFormatError(
            f"{kernel}: not a ktui trace buffer of version {VERSION} (magic {magic:#x}, version {version}, "
            f"{slots} slots per warp)"
        )
    if min(gx, gy, gz, bx, by, bz) < 1 or shift > 63:
        raise TraceFormatError(
            f"{kernel}: impossible launch in the header: grid ({gx}, {gy}, {gz}), block "
            f"({bx}, {by}, {bz}), shift {shift}"
        )
    trace.grid, trace.block, trace.sample_every = (gx, gy, gz), (bx, by, bz), 1 << shift
    nw = trace.warps_per_cta
    warps: dict[int, WarpTrace] = {}
    for i, (gt, clock, sm) in enumerate(struct.iter_unpack("<QII", memoryview(data)[HEADER_BYTES:])):
        if gt == 0:
            continue
        widx, slot = divmod(i, SLOTS)
        cta = (widx // nw) << shift
        if cta >= trace.ctas:
            raise TraceFormatError(f"{kernel}: a record for CTA {cta}, beyond the launch's {trace.ctas} CTAs")
        w = warps.get(widx)
        if w is None:
            w = warps[widx] = WarpTrace(cta, widx % nw, sm)
        w.marks[slot] = Mark(gt, clock, None if sm == w.sm else sm)
    trace.warps = [warps[k] for k in sorted(warps)]
    if not trace.warps:
        trace.problems.append(f"{kernel}: the header is there but no record: no warp reached a marker")
    moved = sum(any(m.sm is not None for m in w.marks.values()) for w in trace.warps)
    if moved:
        trace.problems.append(
            f"{kernel}: {moved} warp(s) recorded marks on more than one SM (a CTA moved, e.g. preempted): their marks "
            "are placed by each SM's own clock, a region spanning the move by the globaltimer"
        )
    return trace


_PID = re.compile(r"^(?P<kernel>.*) Core(?P<sm>\d+) CTA(?P<cta>\d+)$")
_TID = re.compile(r"^warp (?P<warp>\d+)")


def parse_proton(text: str) -> list[KernelTrace]:
    """A Chrome trace written by Proton's instrumentation mode (``proton.start(..., backend="instrumentation",
    data="trace")``) as one ``KernelTrace`` per kernel.

    The format, as Triton 3.6's ``StreamChromeTraceWriter`` writes it: one ``"ph": "X"`` event per scope and warp,
    ``pid`` ``"<kernel> Core<sm> CTA<cta>"``, ``tid`` ``"warp <w> (line <l>)"``, ``args["Init Time (ns)"]`` the CTA's
    globaltimer at its start; ``dur`` is SM cycles / 1000 and ``ts`` is ``(init - min init) + (cycle - the CTA's
    first cycle)``, / 1000 (the writer assumes a 1 GHz clock and shows cycles as µs). So each mark's ``clock`` is its
    cycles since the CTA's first event and ``base_ns`` the CTA's init time; ``gt`` is 0. When a kernel was launched
    more than once, only each CTA's last launch is kept (the largest init time). Grid and block are unknown (Proton
    does not record them).

    Raises:
        TraceFormatError: not JSON, or no ``traceEvents`` list.
    """
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise TraceFormatError(f"not a Chrome trace: {exc}") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise TraceFormatError("not a Chrome trace: no traceEvents list")
    rows = []  # (kernel, cta, init, name, warp, sm, ts units, dur units)
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        pm, tm = _PID.match(str(ev.get("pid", ""))), _TID.match(str(ev.get("tid", "")))
        if pm is None or tm is None:
            continue
        args = ev["args"] if isinstance(ev.get("args"), dict) else {}
        init = int(_num(args.get("Init Time (ns)", 0)))
        rows.append(
            (
                pm["kernel"],
                int(pm["cta"]),
                init,
                str(ev.get("name", "")),
                int(tm["warp"]),
                int(pm["sm"]),
                round(_num(ev.get("ts", 0)) * 1000),
                round(_num(ev.get("dur", 0)) * 1000),
            )
        )
    min_init = min((r[2] for r in rows), default=0)
    last: dict[tuple[str, int], int] = {}  # (kernel, cta) -> its latest init time
    for kernel, cta, init, *_ in rows:
        last[(kernel, cta)] = max(init, last.get((kernel, cta), init))
    kernels: dict[str, tuple[list[str], dict[tuple[int, int], WarpTrace], set[tuple[int, int]]]] = {}
    for kernel, cta, init, name, warp, sm, ts, dur in rows:
        names, warps, inits = kernels.setdefault(kernel, ([], {}, set()))
        inits.add((cta, init))
        if init != last[(kernel, cta)]:
            continue
        if name not in names:
            names.append(name)
        r = names.index(name)
        w = warps.setdefault((cta, warp), WarpTrace(cta, warp, sm, base_ns=init))
        begin = ts - (init - min_init)
        w.marks[2 * r] = Mark(0, begin)
        w.marks[2 * r + 1] = Mark(0, begin + dur)
    out = []
    for kernel, (names, warps, inits) in kernels.items():
        t = KernelTrace(kernel, "triton", names, (0, 0, 0), (0, 0, 0), 1, [warps[k] for k in sorted(warps)])
        if len(inits) > len({c for c, _ in inits}):
            t.problems.append(f"{kernel}: launched more than once under Proton: each CTA's last launch is kept")
        out.append(t)
    return out


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0
