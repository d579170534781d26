"""Nsight Compute: the command that profiles one call of a version, and the parser of its CSV output.

``ncu --csv`` prints ``==PROF==``/``==WARNING==`` lines and the program's own output before the CSV; the ``raw``
page has a header row, a units row and one row per profiled kernel; the ``details`` page has one row per metric
(``Section Name``, ``Metric Name``, ``Metric Unit``, ``Metric Value``). Numbers carry thousands separators
(``"3,198,804,573.80"``). Real outputs from an H200 are in ``shared/fixtures/ncu`` and the tests read them.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

# Sections for the summary (SpeedOfLight, LaunchStats, Occupancy) and for bank conflicts and pipe utilization.
SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "MemoryWorkloadAnalysis_Tables", "ComputeWorkloadAnalysis")
# The source page's metrics: warp-state samples per instruction with their stall reasons, and instruction counts.
SOURCE_SECTIONS = ("SourceCounters", "WarpStateStats")
EXTRA_METRICS = (
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
)


SEARCH = ("$CUDA_HOME/bin/ncu", "/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu")
"""Where ncu is looked for after PATH (``ktui.core.workers.transport.ToolHost.find_tool``'s candidates)."""
MISSING = "ncu (Nsight Compute) not found on PATH, in $CUDA_HOME/bin or /opt/nvidia/nsight-compute"


def profile_command(
    ncu: str,
    report: Path,
    target: list[str],
    sections: tuple[str, ...] = (),
    metrics: tuple[str, ...] = (),
    ncu_set: str | None = None,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """Profile exactly the kernels launched between the target's ``cudaProfilerStart`` and ``cudaProfilerStop``
    (one call after warm-up), with the GPU clocks as they are (``--clock-control none``), into ``report``.

    ktui's own ``SECTIONS`` and ``SOURCE_SECTIONS`` (the source page's per-instruction samples and counts) and
    ``EXTRA_METRICS`` always; then ``sections``, ``metrics`` and ``--set ncu_set`` (``[profile]`` of ktui.toml);
    ``--import-source yes`` (the report carries the kernel's source, so another machine's ncu-ui shows it); and
    ``extra`` (``[profile] args``, ``--ncu-args``) last, before the target, so it can override the rest."""
    cmd = [
        ncu,
        "--clock-control",
        "none",
        "--profile-from-start",
        "off",
        "--target-processes",
        "all",
        "--replay-mode",
        "kernel",
        "--import-source",
        "yes",
        "--force-overwrite",
        "--export",
        str(report),
    ]
    if ncu_set:
        cmd += ["--set", ncu_set]
    for s in dict.fromkeys((*SECTIONS, *SOURCE_SECTIONS, *sections)):
        cmd += ["--section", s]
    cmd += ["--metrics", ",".join(dict.fromkeys((*EXTRA_METRICS, *metrics)))]
    return cmd + list(extra) + target


def export_command(ncu: str, report: Path, page: str) -> list[str]:
    """Print one page of ``report`` as CSV: ``raw``, ``details``, or ``source`` (its SASS, one row per instruction
    with the source-level metrics: ``ktui.core.inspect.ncusource``)."""
    cmd = [ncu, "--import", str(report), "--csv", "--page", page]
    return cmd + (["--print-source", "sass"] if page == "source" else [])


def number(text: str) -> float | None:
    """``"3,198,804,573.80"`` -> 3198804573.8; '' or ``n/a`` -> None."""
    t = (text or "").strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def _rows(text: str) -> list[list[str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    return list(csv.reader(lines))


def parse_raw(text: str) -> list[dict[str, tuple[str, str]]]:
    """The raw page: one dict per profiled kernel, metric name -> (value text, unit)."""
    rows = _rows(text)
    if len(rows) < 3:
        return []
    header, units = rows[0], rows[1]
    return [{h: (v, u) for h, u, v in zip(header, units, row)} for row in rows[2:]]


def parse_details(text: str) -> list[dict[str, Any]]:
    """The details page: one dict per profiled kernel with ``kernel``, ``block``, ``grid`` and ``metrics``:
    (section, metric name) -> (value text, unit)."""
    rows = _rows(text)
    if not rows:
        return []
    header = rows[0]
    idx = {h: i for i, h in enumerate(header)}
    out: dict[str, dict[str, Any]] = {}
    for row in rows[1:]:
        if len(row) < len(header) - 5:
            continue
        kid = row[idx["ID"]]
        k = out.setdefault(
            kid,
            {
                "kernel": row[idx["Kernel Name"]],
                "block": row[idx["Block Size"]],
                "grid": row[idx["Grid Size"]],
                "metrics": {},
            },
        )
        name = row[idx["Metric Name"]]
        if name:
            k["metrics"][(row[idx["Section Name"]], name)] = (row[idx["Metric Value"]], row[idx["Metric Unit"]])
    return list(out.values())


def _to_us(value: float | None, unit: str) -> float | None:
    if value is None:
        return None
    scale = {
        "ns": 1e-3,
        "nsecond": 1e-3,
        "us": 1.0,
        "usecond": 1.0,
        "ms": 1e3,
        "msecond": 1e3,
        "s": 1e6,
        "second": 1e6,
    }.get(unit.strip().lower(), 1e-3)
    return value * scale


def _to_bytes(value: float | None, unit: str) -> float | None:
    """ncu writes sizes in SI units: ``147.46 Kbyte/block`` is 147,460 bytes."""
    if value is None:
        return None
    u = unit.strip().lower()
    for prefix, scale in (("kbyte", 1e3), ("mbyte", 1e6), ("gbyte", 1e9), ("kib", 1024.0), ("mib", 1024.0**2)):
        if u.startswith(prefix):
            return value * scale
    return value


DETAILS = {  # summary field -> (section, metric name) in the details page
    "duration_us": ("GPU Speed Of Light Throughput", "Duration"),
    "sm_throughput_pct": ("GPU Speed Of Light Throughput", "Compute (SM) Throughput"),
    "memory_throughput_pct": ("GPU Speed Of Light Throughput", "Memory Throughput"),
    "dram_throughput_pct": ("GPU Speed Of Light Throughput", "DRAM Throughput"),
    "achieved_occupancy_pct": ("Occupancy", "Achieved Occupancy"),
    "theoretical_occupancy_pct": ("Occupancy", "Theoretical Occupancy"),
    "registers": ("Launch Statistics", "Registers Per Thread"),
    "static_shared_bytes": ("Launch Statistics", "Static Shared Memory Per Block"),
    "dynamic_shared_bytes": ("Launch Statistics", "Dynamic Shared Memory Per Block"),
    "waves": ("Launch Statistics", "Waves Per SM"),
    "block_size": ("Launch Statistics", "Block Size"),
    "grid_size": ("Launch Statistics", "Grid Size"),
}
RAW = {  # summary field -> raw metric names, first present wins
    "duration_us": ("gpu__time_duration.sum",),
    "sm_throughput_pct": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "memory_throughput_pct": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
    "dram_throughput_pct": (
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    "achieved_occupancy_pct": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "theoretical_occupancy_pct": ("sm__maximum_warps_per_active_cycle_pct",),
    "registers": ("launch__registers_per_thread",),
    "static_shared_bytes": ("launch__shared_mem_per_block_static",),
    "dynamic_shared_bytes": ("launch__shared_mem_per_block_dynamic",),
    "waves": ("launch__waves_per_multiprocessor",),
    "block_size": ("launch__block_size",),
    "grid_size": ("launch__grid_size",),
}


def summarize(raw: dict[str, tuple[str, str]] | None, details: dict[str, Any] | None) -> dict[str, Any]:
    """The figures ktui shows for one profiled kernel (details page first, raw page for the rest): duration (us),
    SM / memory / DRAM throughput (% of peak), achieved and theoretical occupancy (%), registers per thread,
    shared memory per block (bytes), local-memory (spill) traffic (bytes), shared-memory bank conflicts, tensor
    pipe utilization (% of peak, the busiest tensor pipe), grid and block sizes, waves per SM. Missing: None."""
    raw = raw or {}
    dm = (details or {}).get("metrics", {})
    out: dict[str, Any] = {"kernel": (details or {}).get("kernel") or raw.get("Kernel Name", ("", ""))[0]}
    for fld, key in DETAILS.items():
        v = dm.get(key)
        value = number(v[0]) if v else None
        unit = v[1] if v else ""
        if value is None:
            for name in RAW[fld]:
                if name in raw and number(raw[name][0]) is not None:
                    value, unit = number(raw[name][0]), raw[name][1]
                    break
        if fld == "duration_us":
            value = _to_us(value, unit or "ns")
        elif fld.endswith("_bytes"):
            value = _to_bytes(value, unit or "byte")
        out[fld] = value
    out["shared_bytes"] = (out.pop("static_shared_bytes") or 0) + (out.pop("dynamic_shared_bytes") or 0)
    conflicts = [number(v[0]) for k, v in raw.items() if "bank_conflicts" in k and "shared" in k and k.endswith(".sum")]
    out["bank_conflicts"] = sum(c for c in conflicts if c is not None) if conflicts else None
    local = [number(v[0]) for k, v in raw.items() if "mem_local" in k and k.endswith(".sum")]
    out["local_bytes"] = sum(x for x in local if x is not None) if local else None
    tensor = [
        x
        for k, v in raw.items()
        if k.startswith("sm__pipe_tensor") and "pct_of_peak" in k and (x := number(v[0])) is not None
    ]
    tensor += [
        x
        for (sec, name), v in dm.items()
        if "tensor" in name.lower() and "%" in (v[1] or "") and (x := number(v[0])) is not None
    ]
    out["tensor_pipe_pct"] = max(tensor) if tensor else None
    for fld in ("registers", "block_size", "grid_size"):
        if out.get(fld) is not None:
            out[fld] = int(out[fld])
    return out


def summaries(raw_text: str, details_text: str) -> list[dict[str, Any]]:
    """One summary per profiled kernel, pairing the raw and details pages by order."""
    raws, dets = parse_raw(raw_text), parse_details(details_text)
    n = max(len(raws), len(dets))
    return [summarize(raws[i] if i < len(raws) else None, dets[i] if i < len(dets) else None) for i in range(n)]


# Deltas against a pinned baseline: what counts as noise for each figure (run-to-run spread of ncu on one GPU).
NOISE = {
    "duration_us": ("rel", 0.03),
    "sm_throughput_pct": ("abs", 2.0),
    "memory_throughput_pct": ("abs", 2.0),
    "dram_throughput_pct": ("abs", 2.0),
    "achieved_occupancy_pct": ("abs", 2.0),
    "tensor_pipe_pct": ("abs", 2.0),
    "bank_conflicts": ("rel", 0.05),
    "local_bytes": ("rel", 0.05),
}


def deltas(base: dict[str, Any], new: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per figure: baseline value, this value, the difference, and whether it is within the noise band (3%
    for durations, 2 percentage points for utilizations, exact for counts)."""
    out = {}
    for k, v in new.items():
        b = base.get(k)
        if not isinstance(v, (int, float)) or not isinstance(b, (int, float)):
            continue
        d = v - b
        kind, band = NOISE.get(k, ("abs", 0.0))
        noise = abs(d) <= (band * abs(b) if kind == "rel" else band)
        out[k] = {"baseline": b, "value": v, "delta": d, "within_noise": noise}
    return out
