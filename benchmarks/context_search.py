"""The context index on real sources: indexing time (cold, then an incremental pass with nothing changed), the index
file's size and the median and 95th-percentile latency of ``ContextIndex.search`` over a set of queries (symbols,
PTX names, short tokens, phrases). Target: queries well under 100 ms.

    python benchmarks/context_search.py [--packages triton,cutlass] [--clone /path/to/cutlass] [--repeat 5]
                                        [--background]

``--background`` also times a cold build the way the TUI and the agent run it (``BackgroundIndex``), searching every
0.25 s meanwhile: when the first (partial) hit comes, and the search latency while the writer thread runs.

Each run builds a fresh index in a temporary workspace (``--clone`` is linked as ``context/<name>``, never copied).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ktui.context.index import ContextIndex, workspace_sources

QUERIES = [
    "local_tile",
    "make_tiled_copy",
    "tiled_copy",
    "cp.async.bulk",
    "cp.async.bulk.tensor",
    "wgmma.mma_async",
    "ld",
    "mbarrier",
    "TMA multicast",
    "program_id",
    "tl.dot",
    "make_layout",
    "SM90_TMA_LOAD",
    "warpgroup",
    "swizzle",
    "tensor",
    "partition_S",
    "cute::gemm",
    "shared memory bank conflicts",
    "fence.proxy.async",
]


def measure(packages: list[str], clone: Path | None, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "references").mkdir()
        (root / "kernels").mkdir()
        if clone is not None:
            (root / "context").mkdir()
            (root / "context" / clone.name).symlink_to(clone.resolve())
        ix = ContextIndex(root / ".ktui" / "context.sqlite", workspace_sources(root, packages))
        c0 = time.process_time()
        st = ix.update()
        cold_cpu = time.process_time() - c0
        again = ix.update()
        ix.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = sum(p.stat().st_size for p in (root / ".ktui").glob("context.sqlite*"))
        times: list[float] = []
        cpu: list[float] = []  # the process's CPU time: steady on a shared machine where wall time is not
        for _ in range(repeat):
            for q in QUERIES:
                c0, t0 = time.process_time(), time.perf_counter()
                ix.search(q, n=10)
                times.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
        per_query = {}
        for q in QUERIES:
            t0 = time.perf_counter()
            hits = ix.search(q, n=10)
            per_query[q] = ((time.perf_counter() - t0) * 1000, hits[0].cite if hits else "(none)")
        times.sort()
        cpu.sort()
        print(
            f"sources {', '.join(ix.sources)}: {st.seen} files seen, {st.chunked} chunked into {st.chunks} chunks, "
            f"{len(st.skipped)} skipped, {len(st.failed)} failed; cold {st.seconds:.1f} s ({cold_cpu:.1f} s CPU), "
            f"incremental (no change) "
            f"{again.seconds:.2f} s; index {size / 2**20:.1f} MiB"
        )
        for path, why in st.failed[:10]:
            print(f"  failed: {path}: {why}")
        print(
            f"search over {len(QUERIES)} queries x {repeat}: median {statistics.median(times):.1f} ms, "
            f"p95 {times[int(0.95 * (len(times) - 1))]:.1f} ms, max {times[-1]:.1f} ms (CPU time: median "
            f"{statistics.median(cpu):.1f} ms, p95 {cpu[int(0.95 * (len(cpu) - 1))]:.1f} ms, max {cpu[-1]:.1f} ms; "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
        )
        for q, (ms, cite) in per_query.items():
            print(f"  {q!r:<34} {ms:6.1f} ms  first: {cite}")
        ix.close()
        return {"cold_s": st.seconds, "size_mib": size / 2**20, "median_ms": statistics.median(times)}


def measure_background(packages: list[str], clone: Path | None) -> None:
    """A cold build in the background (``BackgroundIndex``, as the TUI and the agent run it) while this thread searches
    every 0.25 s: how soon a search answers (partial), the search latency while the writer runs (both threads share
    the GIL), and how long the build takes that way."""
    from ktui.context.background import BackgroundIndex

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "references").mkdir()
        (root / "kernels").mkdir()
        if clone is not None:
            (root / "context").mkdir()
            (root / "context" / clone.name).symlink_to(clone.resolve())
        os.environ["KTUI_CONTEXT_DB"] = str(root / ".ktui" / "context.sqlite")
        bg = BackgroundIndex(root, packages)
        t0, c0 = time.perf_counter(), time.process_time()
        bg.start()
        lat: list[float] = []
        first_hit = None
        partial = 0
        i = 0
        while bg.running:
            q = QUERIES[i % len(QUERIES)]
            i += 1
            s0 = time.perf_counter()
            res = bg.search(q, n=10)
            lat.append((time.perf_counter() - s0) * 1000)
            partial += res.partial is not None
            if first_hit is None and res.hits:
                first_hit = (time.perf_counter() - t0, q, res.label())
            time.sleep(0.25)
        total, cpu = time.perf_counter() - t0, time.process_time() - c0
        lat.sort()
        print(
            f"background build: {total:.1f} s ({cpu:.1f} s CPU, both threads); {len(lat)} searches meanwhile "
            f"({partial} marked partial): median {statistics.median(lat) if lat else 0:.1f} ms, p95 "
            f"{lat[int(0.95 * (len(lat) - 1))] if lat else 0:.1f} ms, max {lat[-1] if lat else 0:.1f} ms; load "
            f"average {os.getloadavg()[0]:.1f}"
        )
        if first_hit:
            print(f"  first hit after {first_hit[0]:.1f} s ({first_hit[1]!r}: {first_hit[2]})")
        bg.close()
        del os.environ["KTUI_CONTEXT_DB"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packages", default="triton,cutlass")
    ap.add_argument("--clone", type=Path, help="a checkout of NVIDIA/cutlass (or another repository) to link")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--background", action="store_true", help="also a cold build in the background, searching")
    a = ap.parse_args()
    pkgs = [p for p in a.packages.split(",") if p]
    measure(pkgs, a.clone, a.repeat)
    if a.background:
        measure_background(pkgs, a.clone)


if __name__ == "__main__":
    main()
