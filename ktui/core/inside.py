"""What the trace and profile rungs found inside the kernel's time, as text lines: under the rung's line in
``ktui run``, and in the ladder results the agent reads (``ktui.core.report``). Pure functions of the figures."""

from __future__ import annotations

from typing import Any

from ktui.core.figures import profile_of, trace_of
from ktui.core.inspect.tracestats import ordinal


def us(ns: float | None) -> str:
    """``1.23 ms``, ``45.6 us``, ``820 ns``: a duration given in ns, for a human."""
    if ns is None:
        return "-"
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.3g} us"
    return f"{ns:.0f} ns"


def trace_lines(figures: dict[str, Any], timeline_rows: int = 8, indent: str = "    ") -> list[str]:
    """The trace rung's figures as lines: per kernel its regions (share, median, p10..p90 over warps, CTA median,
    warp spread), its CTAs (imbalance, SMs, waves, tail), the critical path and the first ``timeline_rows`` rows of
    the timeline; then the traced against the untraced time, the marker's cost and the Chrome trace's file."""
    fig = trace_of(figures)
    out: list[str] = []
    for k in fig.get("kernels", []):
        sampled = k.get("sample_every", 1)
        grid = "x".join(str(g) for g in k.get("grid", [])) or "?"
        out.append(
            f"{k['kernel']} (grid {grid}, {k.get('warps_traced', 0)} warps traced"
            + (f", every {ordinal(sampled)} CTA" if sampled > 1 else "")
            + f"; clock {k['clock_ghz']:.3g} GHz, {k['clock_source']})"
            if k.get("clock_ghz")
            else f"{k['kernel']} (grid {grid}; {k.get('clock_source', '')})"
        )
        out.append(f"  {'region':<14}{'share':>7}{'median':>11}{'p10..p90':>22}{'CTA median':>12}{'warp spread':>13}")
        for r in k.get("regions", []):
            if not r.get("warps"):
                out.append(f"  {r['name']:<14}  never completed (no warp ran both its marks)")
                continue
            share = f"{r['share_pct']:.0f}%" if r.get("share_pct") is not None else "-"
            spread = f"{us(r.get('p10_ns'))}..{us(r.get('p90_ns'))}"
            out.append(
                f"  {r['name']:<14}{share:>7}{us(r.get('median_ns')):>11}{spread:>22}"
                f"{us(r.get('cta_median_ns')):>12}{us(r.get('warp_spread_ns')):>13}"
            )
        if k.get("cta_median_ns") is not None:
            imb = k.get("imbalance")
            waves = (
                f", up to {k['concurrent_per_sm']} CTAs at once per SM, {k['waves']:.2g} waves"
                if k.get("waves") is not None
                else ""
            )
            out.append(
                "  CTAs"
                + (
                    f" (every {ordinal(sampled)}, {k.get('ctas_traced')} of {k.get('ctas')} traced)"
                    if sampled > 1
                    else ""
                )
                + f": median {us(k['cta_median_ns'])}, p90 {us(k.get('cta_p90_ns'))}, max {us(k.get('cta_max_ns'))}"
                + (f" ({imb:.2f}x the median)" if imb else "")
                + f"; {k.get('sms_used')} SMs used"
                + (f" of {k['sm_count']}" if k.get("sm_count") else "")
                + waves
                + (
                    f"; tail {us(k.get('tail_ns'))} ({k.get('tail_pct') or 0:.0f}% of {us(k.get('span_ns'))})"
                    if k.get("tail_ns") is not None
                    else f"; span {us(k.get('span_ns'))}"
                )
            )
        crit = k.get("critical_path")
        if crit:
            regions = ", ".join(f"{n} {us(v)}" for n, v in crit.get("regions_ns", {}).items())
            out.append(
                f"  critical path: SM {crit['sm']}, {len(crit['ctas'])} CTA(s) back to back ending at "
                f"{us(crit['end_ns'])}: busy {us(crit['busy_ns'])}, waiting {us(crit['gap_ns'])}"
                + (f"; {regions}" if regions else "")
            )
        tl = k.get("timeline") or {}
        if tl.get("rows") and timeline_rows > 0:
            legend = ", ".join(f"{a} {n}" for a, n in tl.get("legend", {}).items())
            out.append(
                f"  timeline by {tl['by'].upper()} ({tl['width']} cells over {us(tl['end_ns'])}; {legend}, "
                "- in no region, . idle):"
            )
            rows = tl["rows"]
            for row in rows[:timeline_rows]:
                out.append(f"    {row['label']:>8} {row['cells']}")
            if len(rows) > timeline_rows:
                out.append(f"    ... {len(rows) - timeline_rows} more rows")
    times = f"untraced {fig['untraced_us']:.4g} us, traced {fig['traced_us']:.4g} us ({fig['overhead_pct']:+.1f}%)"
    if fig.get("benchmark_us") is not None:
        times += f", benchmark {fig['benchmark_us']:.4g} us"
    if fig.get("marker_cycles") is not None:
        times += f"; a marker costs a warp ~{fig['marker_cycles']:.0f} cycles ({us(fig.get('marker_ns'))})"
    out.append(times + " (the traced time is never the benchmark's)")
    if fig.get("report"):
        out.append(f"Chrome trace (Perfetto, chrome://tracing): {fig['report']}")
    return [indent + ln for ln in out]


def profile_source_lines(figures: dict[str, Any], lines: int = 8, indent: str = "    ") -> list[str]:
    """The profile's source page as lines: per kernel, its hottest Python lines with their share of the warp stall
    samples, top stall reasons and instructions executed."""
    src = profile_of(figures).get("source") or {}
    out: list[str] = []
    for k in src.get("kernels", []):
        total = k.get("total_samples") or 0
        if not k.get("matched"):
            out.append(f"{k['kernel']}: {total:.0f} stall samples, per SASS instruction only (not the dumps' build)")
            continue
        if not total:
            out.append(f"{k['kernel']}: no stall samples (collect the SourceCounters section)")
            continue
        out.append(f"{k['kernel']}: hottest lines by warp stall samples ({total:,.0f} in all):")
        for h in k.get("hot_lines", [])[:lines]:
            reasons = ", ".join(f"{r} {100 * n / h['samples']:.0f}%" for r, n in h["stalls"][:3] if h["samples"])
            out.append(
                f"  line {h['line']:>4} {h['pct']:5.1f}%  {h['text'][:60]}"
                + (f"  [{reasons}]" if reasons else "")
                + f"  {h['executed']:,.0f} executed, {h['instructions']} SASS"
            )
    if src.get("file"):
        out.append(f"per instruction: {src['file']}")
    return [indent + ln for ln in out]
