"""What tells host latency from GPU work the CUDA events miss: four calls timed the benchmark rung's three ways (CUDA
events back to back, the host's enqueue time, a device-synchronized loop) and, beside them, the GPU's busy time per
call on every stream from the CUDA profiler (torch.profiler: the kernels' and copies' intervals, merged). Needs a
GPU (``bash benchmarks/h200.sh timing-escape``).

Why: on the H200 (2026-12-04) GPU MODE's honest grayscale solution (``torch.tensor([...], device=...)`` each call:
a synchronous pageable copy) failed "timing escapes the events" (events 46.6 us, enqueue 54.7 us, synchronized loop
172 us), the rule meant for work on a side stream. If the GPU's busy time across streams stays near the events'
median for the honest calls and not for the side stream, it is the discriminator the rung needs.
"""

from __future__ import annotations

import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

N = 1 << 24
side = torch.cuda.Stream()


def grayscale(x: torch.Tensor) -> torch.Tensor:  # GPU MODE pmpp grayscale, solutions/correct/ref.py
    w = torch.tensor([0.2989, 0.5870, 0.1140], device=x.device, dtype=x.dtype)
    return torch.sum(x * w, dim=-1)


def plain(x: torch.Tensor) -> torch.Tensor:
    return torch.sum(x * 0.5, dim=-1)


def side_stream(x: torch.Tensor) -> torch.Tensor:  # the cheat: half the work on another stream, unsynchronized
    out = torch.sum(x * 0.5, dim=-1)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(20):
            out.mul_(1.0)
    return out


def host_sync(x: torch.Tensor) -> torch.Tensor:  # honest but host-bound: a .item() each call
    y = torch.sum(x * 0.5, dim=-1)
    return y * (1.0 + 0.0 * float(y[0, 0]))


def measure(fn, x: torch.Tensor, reps: int = 50) -> dict[str, float]:
    for _ in range(5):
        fn(x)
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    enq = []
    for s, e in ev:
        s.record()
        t0 = time.perf_counter()
        fn(x)
        enq.append(time.perf_counter() - t0)
        e.record()
    torch.cuda.synchronize()
    events = statistics.median(s.elapsed_time(e) * 1e3 for s, e in ev)
    t0 = time.perf_counter()
    for _ in range(reps):
        fn(x)
        torch.cuda.synchronize()
    loop = (time.perf_counter() - t0) / reps * 1e6
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn(x)
        torch.cuda.synchronize()
    spans = sorted(
        (e.time_range.start, e.time_range.end)
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.end > e.time_range.start
    )
    busy, end = 0.0, -1.0
    for a, b in spans:  # the union of the intervals, microseconds
        if b > end:
            busy += b - max(a, end)
            end = b
    streams = {getattr(e, "device_index", 0) for e in prof.events()}
    return {
        "events_us": events,
        "enqueue_us": statistics.median(enq) * 1e6,
        "loop_us": loop,
        "gpu_busy_us": busy / reps,
        "streams": len(streams),
    }


def main() -> int:
    print("| call | events us | enqueue us | sync loop us | GPU busy us (every stream) | loop / (events + enqueue) |")
    print("|---|---|---|---|---|---|")
    for size in (1024, 4096):
        x = torch.rand(size, size, 3, device="cuda")
        for fn in (plain, grayscale, host_sync, side_stream):
            r = measure(fn, x)
            ratio = r["loop_us"] / (r["events_us"] + r["enqueue_us"])
            print(
                f"| {fn.__name__} {size}^2 | {r['events_us']:.1f} | {r['enqueue_us']:.1f} | {r['loop_us']:.1f} | "
                f"{r['gpu_busy_us']:.1f} | {ratio:.2f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
