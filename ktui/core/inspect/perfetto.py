"""A placed trace as a Chrome trace-event JSON object, which Perfetto (ui.perfetto.dev) and chrome://tracing open.

Trace Event Format (Google, "Trace Event Format" document): a ``{"traceEvents": [...]}`` object; complete events
``"ph": "X"`` with ``ts`` and ``dur`` in microseconds, ``pid``/``tid`` naming the track; metadata events ``"ph": "M"``
(``process_name``, ``thread_name``, ``*_sort_index``) name and order the tracks. Here one process per (kernel, SM)
and one thread per traced warp, so a viewer shows each SM's CTAs and warps stacked, regions as coloured slices.
"""

from __future__ import annotations

from typing import Any

from ktui.core.inspect.tracestats import Placed

PID_STRIDE = 100_000  # pid = kernel index * PID_STRIDE + SM + 1 (SM ids stay well below it)


def chrome_trace(kernels: list[Placed], other: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Chrome trace of ``kernels`` (each already placed on its timeline by ``tracestats.place``).

    Every region interval becomes one complete event: ``name`` the region, ``cat`` the kernel, ``ts``/``dur`` in µs
    from the kernel's first mark, ``args`` with the CTA (linear index and coordinates), warp, SM and the duration in
    ns (and SM cycles when the clock is known). ``other`` goes to ``otherData`` (what traced it, the clock source).
    """
    events: list[dict[str, Any]] = []
    for k, placed in enumerate(kernels):
        trace = placed.trace
        nw = max(trace.warps_per_cta, 1) if trace.block != (0, 0, 0) else 64
        named_pids: set[int] = set()
        for (cta, warp), (sm, _, _) in sorted(placed.spans.items()):
            pid, tid = k * PID_STRIDE + sm + 1, cta * nw + warp + 1
            if pid not in named_pids:
                named_pids.add(pid)
                events.append(_meta("process_name", pid, 0, {"name": f"{trace.kernel} SM {sm}"}))
                events.append(_meta("process_sort_index", pid, 0, {"sort_index": pid}))
            x, y, z = trace.cta_coords(cta)
            events.append(_meta("thread_name", pid, tid, {"name": f"CTA {cta} ({x},{y},{z}) warp {warp}"}))
            events.append(_meta("thread_sort_index", pid, tid, {"sort_index": tid}))
        for iv in placed.intervals:
            args: dict[str, Any] = {
                "cta": iv.cta,
                "coords": list(trace.cta_coords(iv.cta)),
                "warp": iv.warp,
                "sm": iv.sm,
                "ns": round(iv.ns, 1),
            }
            if placed.clock_ghz:
                args["cycles"] = round(iv.ns * placed.clock_ghz)
            events.append(
                {
                    "name": trace.regions[iv.region],
                    "cat": trace.kernel,
                    "ph": "X",
                    "pid": k * PID_STRIDE + iv.sm + 1,
                    "tid": iv.cta * nw + iv.warp + 1,
                    "ts": iv.start_ns / 1000.0,
                    "dur": iv.ns / 1000.0,
                    "args": args,
                }
            )
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": dict(other or {})}


def _meta(name: str, pid: int, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": args}
