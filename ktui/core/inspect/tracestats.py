"""The figures of a kernel trace: regions per warp and CTA, the CTAs' imbalance, the critical path, the timeline.

Time base. Durations come from the SM's cycle counter (``%clock64``), exact within a warp; where things sit across
SMs comes from ``%globaltimer``, one clock for the GPU whose reads may be coarse (NVIDIA documents no resolution; it
can be ~1 µs). ``%clock64`` is per SM and not synchronized across SMs, so cycles are only ever compared on one SM:
each mark's cycles are counted from its SM's earliest mark (in globaltimer order), the records' 32 bits unwrapped
step by step along the SM's marks in globaltimer order (each step taken as the signed 32-bit difference), so neither
the counter wrapping past 2**32 nor a mark whose clock read came a little before the SM's earliest globaltimer read
(the two reads of a marker are not one instant) turns into a jump of 2**32 cycles. Every mark is placed at
``offset(SM) + cycles / f``: ``f`` (cycles per ns) is measured per SM from its first and last marks where they are
at least ``MIN_CLOCK_SPAN_NS`` apart in globaltimer (median over SMs), else NVML's SM clock (``clock_hint_ghz``), else
durations fall back to globaltimer differences; ``offset(SM)`` is the median over the SM's marks of ``globaltimer -
cycles / f``, which averages the globaltimer's steps away. Proton's traces carry each CTA's start in ns and cycles
from it: those marks are placed at ``start + cycles / f``. The globaltimer counts ns since 1970 (~1.8e18, past
2**53): it is made relative to the trace's first mark in integers before any float, else every time would be
rounded to 256 ns.

Definitions (all times in ns from the first mark of the kernel):

- a region's duration in a warp: its end mark minus its begin mark; a begin without its end (or the other way, or an
  end before its begin) is *unmatched*;
- a warp's span: its first mark to its last; a region's ``share_pct``: the sum of its durations over all warps / the
  sum of the warps' spans (regions that nest or overlap can sum past 100%);
- a CTA's time: its warps' first mark to their last; in a region: the region's first begin to its last end over the
  CTA's warps; ``warp_spread_ns``: the median over CTAs of (slowest - fastest warp) in the region;
- imbalance: the slowest CTA's time over the median CTA's; ``tail_ns``: from the moment the first SM ran out of CTAs
  (the earliest last-CTA end over SMs) to the kernel's end; waves: CTAs / (SMs x the most CTAs seen at once on one
  SM);
- the critical path (only when every CTA was traced): the CTA that ends last, the CTA on its SM that ended last
  before it started (whose slot it most likely took), and so on back to the kernel's start.

A sampled grid (the buffer held every ``2**s``-th CTA) gives the regions' and CTA times' figures over the sample,
marked by ``sample_every``; per-SM counts, CTAs at once, waves and the critical path need every CTA and are left out.

Quantiles interpolate linearly (numpy's default). References: PTX ISA, special registers %clock64, %globaltimer.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ktui.core.inspect.trace import CLOCK_MOD, KernelTrace, Mark, WarpTrace
from ktui.protocol.trace import CLOCK_BITS, HEADER_BYTES, WARP_BYTES

MIN_CLOCK_SPAN_NS = 20_000  # an SM's marks must span this much globaltimer to measure its clock (1 µs steps: 5%)
CLOCK_GHZ_RANGE = (0.2, 5.0)  # a measured clock outside this is a misread, not a GPU
# two marks of one SM further apart than this may be 2**31 cycles or more apart (at the fastest clock above): the
# 32-bit clock can have wrapped between them unseen
MAX_UNWRAP_NS = (1 << (CLOCK_BITS - 1)) / CLOCK_GHZ_RANGE[1]
TIMELINE_WIDTH = 72
TIMELINE_ROWS = 24
IDLE, OUTSIDE = ".", "-"  # timeline cells: no warp alive; warps alive but in no region


@dataclass(frozen=True)
class Interval:
    """One region as one warp ran it, on the kernel's timeline (ns)."""

    cta: int
    warp: int
    sm: int
    region: int
    start_ns: float
    end_ns: float

    @property
    def ns(self) -> float:
        return self.end_ns - self.start_ns


@dataclass
class Placed:
    """A kernel trace on one timeline: its region intervals and warp spans, and how time was measured."""

    trace: KernelTrace
    clock_ghz: float | None
    clock_source: str
    intervals: list[Interval] = field(default_factory=list)
    # (cta, warp) -> (sm, first mark, last mark)
    spans: dict[tuple[int, int], tuple[int, float, float]] = field(default_factory=dict)
    unmatched: int = 0
    problems: list[str] = field(default_factory=list)


@dataclass
class Cta:
    cta: int
    sm: int
    start_ns: float
    end_ns: float

    @property
    def ns(self) -> float:
        return self.end_ns - self.start_ns


def quantile(xs: list[float], q: float) -> float:
    """Linear-interpolation quantile of ``xs`` (sorted here); nan for an empty list."""
    s = sorted(xs)
    if not s:
        return float("nan")
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _signed(d: int) -> int:
    """``d`` modulo ``2**CLOCK_BITS`` as the nearest signed difference (-2**31 <= result < 2**31)."""
    return (d + CLOCK_MOD // 2) % CLOCK_MOD - CLOCK_MOD // 2


def _mark_sm(w: WarpTrace, m: Mark) -> int:
    return w.sm if m.sm is None else m.sm


@dataclass
class _SmClocks:
    """ktui marks' SM cycles unwrapped (see the module's docstring): ``cycles[(cta, warp, slot)]`` counts from the
    mark's SM's earliest mark; ``by_sm[sm]`` is the SM's (globaltimer, cycles) in globaltimer order."""

    cycles: dict[tuple[int, int, int], int] = field(default_factory=dict)
    by_sm: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def gap_ns(self, sm: int) -> int:
        """The longest globaltimer stretch between two successive marks of ``sm``."""
        seq = self.by_sm[sm]
        return max((b[0] - a[0] for a, b in zip(seq, seq[1:])), default=0)


def _sm_clocks(trace: KernelTrace) -> _SmClocks:
    raw: dict[int, list[tuple[int, int, tuple[int, int, int]]]] = defaultdict(list)
    for w in trace.warps:
        if w.base_ns is None:
            for slot, m in w.marks.items():
                raw[_mark_sm(w, m)].append((m.gt, m.clock, (w.cta, w.warp, slot)))
    out = _SmClocks()
    for sm, marks in raw.items():
        marks.sort()
        seq, prev, acc = [], marks[0][1], 0
        for gt, clock, key in marks:
            acc += _signed(clock - prev)
            prev = clock
            out.cycles[key] = acc
            seq.append((gt, acc))
        out.by_sm[sm] = seq
    return out


def measure_clock(trace: KernelTrace, clocks: _SmClocks | None = None) -> tuple[float | None, int]:
    """Cycles per ns measured from the marks, and on how many SMs: per SM, (cycles between its first and last mark in
    globaltimer order, unwrapped) / (their globaltimer distance), where that distance is at least
    ``MIN_CLOCK_SPAN_NS`` and no two successive marks are ``MAX_UNWRAP_NS`` apart; the median over those SMs. (None,
    0) when no SM spans enough, or the marks carry no globaltimer."""
    if any(w.base_ns is not None for w in trace.warps):
        return None, 0
    clocks = clocks if clocks is not None else _sm_clocks(trace)
    rates = []
    for sm, seq in clocks.by_sm.items():
        (g0, c0), (g1, c1) = seq[0], seq[-1]
        if g1 - g0 >= MIN_CLOCK_SPAN_NS and clocks.gap_ns(sm) < MAX_UNWRAP_NS:
            rate = (c1 - c0) / (g1 - g0)
            if CLOCK_GHZ_RANGE[0] <= rate <= CLOCK_GHZ_RANGE[1]:
                rates.append(rate)
    return (statistics.median(rates), len(rates)) if rates else (None, 0)


def place(trace: KernelTrace, clock_hint_ghz: float | None = None) -> Placed:
    """Put every mark of ``trace`` on one timeline (see the module's docstring) and pair each region's marks.

    Args:
        trace: the parsed trace.
        clock_hint_ghz: the SM clock from NVML during the run, GHz (None: unknown).
    """
    clocks = _sm_clocks(trace)
    f, n = measure_clock(trace, clocks)
    if f is not None:
        source = f"measured on {n} SM{'s' if n != 1 else ''}"
    elif clock_hint_ghz:
        f, source = clock_hint_ghz, "NVML's SM clock"
    elif any(w.base_ns is not None for w in trace.warps):
        f, source = 1.0, "assumed 1 GHz (Proton's trace, no clock known)"
    else:
        source = "globaltimer (no clock measured or known: durations have its resolution)"
    placed = Placed(trace, f, source)
    times = _mark_times(trace, f, clocks)
    t0 = min((t for ws in times.values() for t in ws.values()), default=0.0)
    for w in trace.warps:
        ts = {slot: t - t0 for slot, t in times[(w.cta, w.warp)].items()}
        if not ts:
            continue
        placed.spans[(w.cta, w.warp)] = (w.sm, min(ts.values()), max(ts.values()))
        for r in range(len(trace.regions)):
            b, e = ts.get(2 * r), ts.get(2 * r + 1)
            if b is None and e is None:
                continue
            if b is None or e is None or e < b:
                placed.unmatched += 1
                continue
            placed.intervals.append(Interval(w.cta, w.warp, w.sm, r, b, e))
    # the 32 bits are unwrapped step by step: a step of 2**31 cycles or more between two marks of one SM is ambiguous
    gap = max((clocks.gap_ns(sm) for sm in clocks.by_sm), default=0)
    if gap >= MAX_UNWRAP_NS:
        placed.problems.append(
            f"an SM went {gap / 1e9:.2g} s without a mark, possibly more than {CLOCK_MOD // 2:,} cycles: its "
            f"{CLOCK_BITS}-bit clock may have wrapped unseen (durations across the gap are uncertain)"
        )
    if placed.unmatched:
        placed.problems.append(
            f"{placed.unmatched} region marks without their pair (a begin whose end never ran, or the other way)"
        )
    return placed


def _mark_times(trace: KernelTrace, f: float | None, clocks: _SmClocks) -> dict[tuple[int, int], dict[int, float]]:
    """Each warp's marks in ns on a common timeline, from the trace's first globaltimer reading (or Proton CTA
    start): integers until then, so a float never holds a globaltimer (ns since 1970: 256 ns steps at ~1.8e18)."""
    out: dict[tuple[int, int], dict[int, float]] = {}
    starts = [m.gt for w in trace.warps if w.base_ns is None for m in w.marks.values()]
    starts += [w.base_ns for w in trace.warps if w.base_ns is not None]
    g0 = min(starts, default=0)
    if f is None:
        for w in trace.warps:
            out[(w.cta, w.warp)] = {s: float(m.gt - g0) for s, m in w.marks.items()}
        return out
    offsets: dict[int, list[float]] = defaultdict(list)
    for w in trace.warps:
        if w.base_ns is None:
            for s, m in w.marks.items():
                offsets[_mark_sm(w, m)].append((m.gt - g0) - clocks.cycles[(w.cta, w.warp, s)] / f)
    offset = {sm: statistics.median(v) for sm, v in offsets.items()}
    for w in trace.warps:
        if w.base_ns is not None:
            out[(w.cta, w.warp)] = {s: (w.base_ns - g0) + m.clock / f for s, m in w.marks.items()}
        else:
            out[(w.cta, w.warp)] = {
                s: offset[_mark_sm(w, m)] + clocks.cycles[(w.cta, w.warp, s)] / f for s, m in w.marks.items()
            }
    return out


def ctas(placed: Placed) -> list[Cta]:
    """Each traced CTA's first and last mark over its warps, and its SM (of its first warp)."""
    by: dict[int, Cta] = {}
    for (cta, _), (sm, first, last) in placed.spans.items():
        c = by.get(cta)
        if c is None:
            by[cta] = Cta(cta, sm, first, last)
        else:
            c.start_ns, c.end_ns = min(c.start_ns, first), max(c.end_ns, last)
    return [by[k] for k in sorted(by)]


def region_stats(placed: Placed) -> list[dict[str, Any]]:
    """Per region (in id order): warps, median / p10 / p90 / max duration over warps (ns), ``share_pct``, the same
    over CTAs (``cta_*``), ``warp_spread_ns``; ``cycles_median`` when the clock is known."""
    total_span = sum(last - first for _, first, last in placed.spans.values())
    out = []
    for r, name in enumerate(placed.trace.regions):
        iv = [i for i in placed.intervals if i.region == r]
        durs = [i.ns for i in iv]
        per_cta: dict[int, list[Interval]] = defaultdict(list)
        for i in iv:
            per_cta[i.cta].append(i)
        cta_ns = [max(i.end_ns for i in g) - min(i.start_ns for i in g) for g in per_cta.values()]
        spread = [max(i.ns for i in g) - min(i.ns for i in g) for g in per_cta.values() if len(g) > 1]
        row: dict[str, Any] = {"name": name, "warps": len(iv), "ctas": len(per_cta)}
        if durs:
            row.update(
                median_ns=statistics.median(durs),
                p10_ns=quantile(durs, 0.1),
                p90_ns=quantile(durs, 0.9),
                max_ns=max(durs),
                share_pct=100.0 * sum(durs) / total_span if total_span > 0 else None,
                cta_median_ns=statistics.median(cta_ns),
                cta_p90_ns=quantile(cta_ns, 0.9),
                cta_max_ns=max(cta_ns),
                warp_spread_ns=statistics.median(spread) if spread else 0.0,
            )
            if placed.clock_ghz:
                row["cycles_median"] = statistics.median(durs) * placed.clock_ghz
        out.append(row)
    return out


def grid_stats(placed: Placed, cs: list[Cta], sm_count: int | None) -> dict[str, Any]:
    """The CTAs as a whole: the kernel's traced span, CTA time median / p90 / max and imbalance, SMs used, CTAs per SM,
    the most CTAs at once on one SM, waves, and the tail (see the module's docstring). Empty without CTAs. A sampled
    grid (``sample_every`` > 1) gives no CTAs per SM, CTAs at once or waves (they count every CTA of an SM), and its
    tail is None (it needs each SM's last CTA)."""
    if not cs:
        return {}
    end = max(c.end_ns for c in cs)
    span = end - min(c.start_ns for c in cs)
    by_sm: dict[int, list[Cta]] = defaultdict(list)
    for c in cs:
        by_sm[c.sm].append(c)
    concurrent = max(_most_at_once(v) for v in by_sm.values())
    first_idle = min(max(c.end_ns for c in v) for v in by_sm.values())
    per_sm = [len(v) for v in by_sm.values()]
    times = [c.ns for c in cs]
    med = statistics.median(times)
    trace = placed.trace
    total = trace.ctas or len(cs)
    sms = sm_count or len(by_sm)
    out: dict[str, Any] = {
        "span_ns": span,
        "ctas": total,
        "ctas_traced": len(cs),
        "sample_every": trace.sample_every,
        "sms_used": len(by_sm),
        "cta_median_ns": med,
        "cta_p90_ns": quantile(times, 0.9),
        "cta_max_ns": max(times),
        "imbalance": max(times) / med if med > 0 else None,
        # the tail needs each SM's last CTA: a sampled grid's would end early (None: not given)
        "tail_ns": end - first_idle if trace.sample_every == 1 else None,
        "tail_pct": 100.0 * (end - first_idle) / span if span > 0 and trace.sample_every == 1 else None,
    }
    if trace.sample_every == 1:
        out.update(
            ctas_per_sm_median=statistics.median(per_sm),
            ctas_per_sm_max=max(per_sm),
            concurrent_per_sm=concurrent,
            waves=total / (sms * concurrent),
        )
    if sm_count:
        out["sm_count"] = sm_count
    return out


def _most_at_once(cs: list[Cta]) -> int:
    events = sorted([(c.start_ns, 1) for c in cs] + [(c.end_ns, -1) for c in cs], key=lambda e: (e[0], e[1]))
    most = now = 0
    for _, d in events:
        now += d
        most = max(most, now)
    return most


def critical_path(placed: Placed, cs: list[Cta]) -> dict[str, Any] | None:
    """The chain of CTAs that ends last (see the module's docstring): its SM, the CTAs in order with their times,
    its busy and gap time, and per region its time along the chain (each CTA's time in the region). None when CTAs
    were sampled (the chain needs every CTA of the SM) or there are none."""
    if not cs or placed.trace.sample_every > 1:
        return None
    last = max(cs, key=lambda c: c.end_ns)
    on_sm = [c for c in cs if c.sm == last.sm]
    chain = [last]
    while True:
        cur = chain[-1]
        prev = max((c for c in on_sm if c.end_ns <= cur.start_ns), key=lambda c: c.end_ns, default=None)
        if prev is None:
            break
        chain.append(prev)
    chain.reverse()
    busy = sum(c.ns for c in chain)
    regions: dict[str, float] = {}
    members = {c.cta for c in chain}
    per: dict[tuple[int, int], list[Interval]] = defaultdict(list)
    for i in placed.intervals:
        if i.cta in members:
            per[(i.cta, i.region)].append(i)
    for (_, r), g in per.items():
        name = placed.trace.regions[r]
        regions[name] = regions.get(name, 0.0) + max(i.end_ns for i in g) - min(i.start_ns for i in g)
    return {
        "sm": last.sm,
        "ctas": [
            {"cta": c.cta, "coords": list(placed.trace.cta_coords(c.cta)), "start_ns": c.start_ns, "end_ns": c.end_ns}
            for c in chain
        ],
        "end_ns": last.end_ns,
        "busy_ns": busy,
        "gap_ns": last.end_ns - busy,
        "regions_ns": regions,
    }


def timeline(
    placed: Placed, by: str = "sm", width: int = TIMELINE_WIDTH, rows: int = TIMELINE_ROWS, keep: Iterable[int] = ()
) -> dict[str, Any]:
    """The trace as text rows of ``width`` cells over the kernel's span: one row per SM (``by="sm"``) or per CTA
    (``by="cta"``), at most ``rows`` of them (evenly spaced when there are more, always with the ids in ``keep``).
    Each cell is the letter of the region that the row's warps spent the most time in during that stretch
    (``legend``: letter -> region), ``-`` where warps were alive but in no region, ``.`` where none was.

    Returns:
        ``{"by", "width", "start_ns", "end_ns", "legend", "rows": [{"label", "id", "cells"}]}``.

    Raises:
        ValueError: ``by`` not ``sm`` or ``cta``, or ``width`` < 1.
    """
    if by not in ("sm", "cta") or width < 1:
        raise ValueError(f"timeline by {by!r} with width {width}: by is 'sm' or 'cta', width at least 1")
    legend = {chr(ord("A") + r): name for r, name in enumerate(placed.trace.regions)}

    def key(sm: int, cta: int) -> int:
        return sm if by == "sm" else cta

    ids = sorted({key(sm, cta) for (cta, _), (sm, _, _) in placed.spans.items()})
    chosen = _evenly(ids, rows, set(keep))
    end = max((last for _, _, last in placed.spans.values()), default=0.0)
    step = end / width if end > 0 else 1.0
    weights: dict[int, list[list[float]]] = {i: [[0.0] * (len(legend) + 1) for _ in range(width)] for i in chosen}
    for (cta, _), (sm, first, last) in placed.spans.items():
        row = weights.get(key(sm, cta))
        if row is not None:
            _spread(row, len(legend), first, last, step)
    for iv in placed.intervals:
        row = weights.get(key(iv.sm, iv.cta))
        if row is not None:
            _spread(row, iv.region, iv.start_ns, iv.end_ns, step)
    out_rows = []
    for i in chosen:
        cells = []
        for w in weights[i]:
            best = max(range(len(legend)), key=lambda r: w[r], default=None)
            if best is not None and w[best] > 0:
                cells.append(chr(ord("A") + best))
            else:
                cells.append(OUTSIDE if w[len(legend)] > 0 else IDLE)
        out_rows.append(
            {"label": f"SM {i}" if by == "sm" else _cta_label(placed.trace, i), "id": i, "cells": "".join(cells)}
        )
    return {"by": by, "width": width, "start_ns": 0.0, "end_ns": end, "legend": legend, "rows": out_rows}


def _cta_label(trace: KernelTrace, cta: int) -> str:
    x, y, z = trace.cta_coords(cta)
    return f"CTA {cta}" if trace.grid[1] * trace.grid[2] <= 1 else f"CTA ({x},{y},{z})"


def _evenly(ids: list[int], n: int, keep: set[int]) -> list[int]:
    if len(ids) <= n:
        return ids
    picked = {ids[round(k * (len(ids) - 1) / max(n - 1, 1))] for k in range(n)}
    for k in sorted(keep & set(ids)):
        if k not in picked:
            picked.discard(max(picked - keep))
            picked.add(k)
    return sorted(picked)


def _spread(row: list[list[float]], col: int, start: float, end: float, step: float) -> None:
    """Add the overlap of ``[start, end)`` with each cell to ``row[cell][col]``; a zero-length interval counts in
    its cell with a tiny weight (it was there)."""
    width = len(row)
    first = min(int(start / step), width - 1)
    last = min(int(end / step), width - 1)
    if end <= start:
        row[first][col] += 1e-9
        return
    for c in range(first, last + 1):
        lo, hi = max(start, c * step), min(end, (c + 1) * step)
        if hi > lo:
            row[c][col] += hi - lo
        elif c == first:
            row[c][col] += 1e-9


def summarize(
    trace: KernelTrace, clock_hint_ghz: float | None = None, sm_count: int | None = None, placed: Placed | None = None
) -> dict[str, Any]:
    """Every figure of one kernel's trace, as the trace rung reports it (``ktui.core.figures.TraceKernel``);
    ``placed``: ``place(trace, clock_hint_ghz)`` when the caller has it already."""
    placed = placed if placed is not None else place(trace, clock_hint_ghz)
    cs = ctas(placed)
    crit = critical_path(placed, cs)
    keep = [crit["sm"]] if crit else []
    out: dict[str, Any] = {
        "kernel": trace.kernel,
        "language": trace.language,
        "launches": trace.launches,
        "grid": list(trace.grid),
        "block": list(trace.block),
        "warps_traced": len(placed.spans),
        "clock_ghz": placed.clock_ghz,
        "clock_source": placed.clock_source,
        "regions": region_stats(placed),
        **grid_stats(placed, cs, sm_count),
        "critical_path": crit,
        "timeline": timeline(placed, "sm", keep=keep),
        "problems": trace.problems + placed.problems,
    }
    if trace.sample_every > 1:
        out["problems"].append(sampled_note(trace, len(cs)))
    return out


def sampled_note(trace: KernelTrace, traced: int) -> str:
    """What a sampled grid gives and what it does not, and the buffer that would hold every CTA."""
    return (
        f"the buffer held every {ordinal(trace.sample_every)} CTA ({traced} of {trace.ctas} traced): the regions' and "
        "CTA times' figures are over that sample; per-SM counts, waves, the tail and the critical path need every CTA "
        f"(a buffer of {full_buffer_mib(trace):,} MiB would hold them: [trace] buffer_mib)"
    )


def full_buffer_mib(trace: KernelTrace) -> int:
    """The ``[trace] buffer_mib`` that records every CTA of ``trace``'s launch: room for ``2**(ceil_log2(CTAs) +
    ceil_log2(warps per CTA))`` warps (``ktui.trace.ptx``'s sampling)."""
    warps_log2 = (max(trace.ctas, 1) - 1).bit_length() + (max(trace.warps_per_cta, 1) - 1).bit_length()
    return -(-(HEADER_BYTES + (WARP_BYTES << warps_log2)) // (1 << 20))


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``64th``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
