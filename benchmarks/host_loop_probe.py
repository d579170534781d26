"""Where a host loop's seconds go for one kernel (GPU only): the benchmark rung's device-synchronized loop
(``timing.host_loop`` with ``invoke.calls``, fresh inputs by ``Problem.generate`` and ``copy_into``, one call kept by
a ``Reservoir``) taken apart: loops of N and 2N iterations with and without the kernel's call, with and without the
kept call, and the caching allocator's counters (cudaMalloc/cudaFree, retries) over each loop.

Why: rt22_local_copy_good (2*x+1 on 8192x8192 bf16, one stream) failed "timing escapes the events" on the H200
(2026-12-06: events 68 us, enqueue 83 us, synchronized loop 240 us per call).

    python3 benchmarks/host_loop_probe.py REFERENCE.py KERNEL.py [--spec 0] [--n 300]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import statistics
import time
from pathlib import Path

import torch

from ktui.worker import invoke
from ktui.worker.problem import Problem
from ktui.worker.tensors import copy_into
from ktui.worker.timed import copy_tree
from ktui.worker.timing import Reservoir, host_loop


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("kernel")
    ap.add_argument("--spec", type=int, default=0)
    ap.add_argument("--n", type=int, default=300)
    a = ap.parse_args()
    ref = Path(a.reference)
    prob = Problem(ref, ref.stem, hashlib.sha256(ref.read_bytes()).hexdigest())
    spec = prob.benchmarks[a.spec]
    sp = importlib.util.spec_from_file_location("probe_kernel", a.kernel)
    mod = importlib.util.module_from_spec(sp)
    sp.loader.exec_module(mod)
    fn = mod.custom_kernel
    dev = "cuda"
    data = prob.generate(1, spec, dev)
    for _ in range(3):
        fn(data)
    torch.cuda.synchronize()

    def snap(out):
        torch.cuda.synchronize()
        return copy_tree(out)

    def loop(n: int, run_kernel: bool, keep: bool, refresh: bool) -> tuple[float, dict[str, int]]:
        def fresh(i: int) -> None:
            if refresh:
                copy_into(data, prob.generate(100 + i, spec, dev))

        s0 = torch.cuda.memory_stats()
        t0 = time.perf_counter()
        res = Reservoir(1, snap) if keep and run_kernel else None
        runner = functools.partial(invoke.calls, fn if run_kernel else id, data, dev)
        host_loop(runner, fresh, n, run_kernel, torch.cuda.synchronize, keep=res)
        t = time.perf_counter() - t0
        s1 = torch.cuda.memory_stats()
        d = {k: s1.get(k, 0) - s0.get(k, 0) for k in ("num_device_alloc", "num_device_free", "num_alloc_retries")}
        return t, d

    rows = []
    for refresh in (True, False):
        for keep in (True, False):
            slopes = {}
            stats = {}
            for rk in (False, True):
                n = a.n
                short = min(loop(n, rk, keep, refresh)[0] for _ in range(3))
                longs = [loop(2 * n, rk, keep, refresh) for _ in range(3)]
                slopes[rk] = (min(t for t, _ in longs) - short) / n * 1e6
                stats[rk] = longs[-1][1]
            rows.append((refresh, keep, slopes[False], slopes[True], slopes[True] - slopes[False], stats[True]))
    # the events' view: back-to-back calls on the same inputs
    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ev = []
    for _ in range(50):
        st.record()
        fn(data)
        en.record()
        en.synchronize()
        ev.append(st.elapsed_time(en) * 1e3)
    print(f"events per call (same inputs): median {statistics.median(ev):.1f} us")
    print("refresh keep  base_us  full_us  call_us  allocator(full 2N loop)")
    for r in rows:
        print(f"{r[0]!s:7} {r[1]!s:5} {r[2]:8.1f} {r[3]:8.1f} {r[4]:8.1f}  {r[5]}")


if __name__ == "__main__":
    main()
