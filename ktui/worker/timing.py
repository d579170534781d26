"""GPU timing: CUDA events around each call, the L2 cache flushed between calls, medians and spread.

The method follows what ``triton.testing.do_bench`` does (warm-up, cache flush by writing a buffer larger than L2,
one event pair per repetition, repetitions sized to a time budget) and adds what ktui reports: median, quartiles,
min and max over all repetitions, a hook that gives every timed call fresh inputs outside the timed region, and a
``Reservoir`` that keeps a few timed calls' outputs, chosen at random after each call returned, for the judge to
verify in full (a kernel that computes only while it is checked, or on some calls, cannot know which are kept).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from ktui.protocol import HostLoopReply, TimingStats

_FLUSH: dict[str, torch.Tensor] = {}


def flush_buffer(device: str = "cuda") -> torch.Tensor:
    """A byte buffer twice the device's L2 cache (256 MiB when the size is unknown), allocated once per process."""
    if device not in _FLUSH:
        l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or (128 << 20)
        _FLUSH[device] = torch.empty(2 * l2, dtype=torch.uint8, device=device)
    return _FLUSH[device]


def quantile(sorted_xs: list[float], q: float) -> float:
    """Linear-interpolation quantile of an already sorted list (numpy's default method)."""
    if not sorted_xs:
        return float("nan")
    pos = (len(sorted_xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def summarize(times_us: list[float]) -> TimingStats:
    """median, p25, p75, iqr (p75 - p25), min, max and mean of per-call times in microseconds."""
    xs = sorted(times_us)
    p25, p75 = quantile(xs, 0.25), quantile(xs, 0.75)
    return {
        "median_us": statistics.median(xs),
        "p25_us": p25,
        "p75_us": p75,
        "iqr_us": p75 - p25,
        "min_us": xs[0],
        "max_us": xs[-1],
        "mean_us": statistics.fmean(xs),
        "reps": len(xs),
    }


@dataclass
class Kept:
    """One timed call whose output is kept for the judge: ``index`` (0-based) among the timed calls, ``rep`` (the
    index ``before`` got for it: its inputs' seed follows from it), ``out`` (the output object the call returned,
    kept alive) and ``copy`` (``snapshot(out)``, taken right after the call returned and the device synchronized)."""

    index: int
    rep: int
    out: Any
    copy: Any


class Reservoir:
    """Keeps ``k`` of a stream of calls, each with the same probability ``k / n`` once ``n`` calls were offered
    (reservoir sampling, Vitter's algorithm R), decided after each call returned, from ``random.SystemRandom``: a
    kernel cannot know, while it runs, whether its output will be kept. ``snapshot(out)`` copies a kept output at
    once (the caller synchronizes the device in it); ``discard(out)`` is given every output not kept, or no longer
    kept, before it is dropped; ``watch(out)`` every output offered, first (``timed.Retained``); ``screen(kept)``,
    when given, every call not kept in the end, with its copy taken as a kept one's is (the verified stretch screens
    every call: ``timed.KEEP_STRETCH`` random ones alone let a wrong call in 64 pass)."""

    def __init__(
        self,
        k: int,
        snapshot: Callable[[Any], Any],
        discard: Callable[[Any], None] | None = None,
        rnd: random.Random | None = None,
        watch: Callable[[Any], None] | None = None,
        screen: Callable[[Kept], None] | None = None,
    ):
        self.k = k
        self.snapshot = snapshot
        self.discard = discard
        self.watch = watch
        self.screen = screen
        self.rnd = rnd or random.SystemRandom()
        self.kept: list[Kept] = []
        self.offered = 0

    def offer(self, index: int, rep: int, out: Any) -> None:
        """Keep call ``index`` (``rep``, ``out``) with probability ``k / (calls offered so far)``."""
        self.offered += 1
        if self.watch is not None:
            self.watch(out)
        slot = len(self.kept) if len(self.kept) < self.k else self.rnd.randrange(self.offered)
        if slot >= self.k:
            if self.screen is not None:  # every call's copy, right after it returned (kept or not)
                self.screen(Kept(index, rep, out, self.snapshot(out)))
            if self.discard is not None:
                self.discard(out)
            return
        entry = Kept(index, rep, out, self.snapshot(out))
        if slot == len(self.kept):
            self.kept.append(entry)
            return
        old = self.kept[slot]
        self.kept[slot] = entry
        if self.screen is not None:
            self.screen(old)
        if self.discard is not None:
            self.discard(old.out)


class Calls(Protocol):
    """``n`` calls in a row, each between the events ``events(i)`` on CUDA, ``before(i)`` ahead of call ``i`` and
    ``after(i, output, host_seconds)`` behind it: ``ktui.worker.invoke.calls`` with its kernel bound (the candidate's
    calls, on the thread that runs the kernel's code), or ``direct`` (the judge's reference, the measurements)."""

    def __call__(
        self,
        n: int,
        *,
        before: Callable[[int], Any] | None = None,
        after: Callable[[int, Any, float], Any] | None = None,
        events: Callable[[int], tuple[Any, Any]] | None = None,
    ) -> Any: ...


def direct(fn: Callable[[], Any]) -> Calls:
    """``Calls`` of ``fn()`` on this thread, with the steps ``invoke.calls`` makes (events recorded around each call
    when ``events`` is given): for code that is not the kernel's (the reference in the judge, ktui's own
    measurements)."""

    def calls(
        n: int,
        *,
        before: Callable[[int], Any] | None = None,
        after: Callable[[int, Any, float], Any] | None = None,
        events: Callable[[int], tuple[Any, Any]] | None = None,
    ) -> None:
        for i in range(n):
            if before is not None:
                before(i)
            start, end = events(i) if events is not None else (None, None)
            if start is not None:
                start.record()
            t0 = time.perf_counter()
            out = fn()
            t1 = time.perf_counter()
            if end is not None:
                end.record()
            if after is not None:
                after(i, out, t1 - t0)
            del out

    return calls


def bench(
    fn: Callable[[], Any] | None,
    device: str = "cuda",
    *,
    before: Callable[[int], None] | None = None,
    calls: Calls | None = None,
    keep: Reservoir | None = None,
    target_ms: float = 300.0,
    warmup_ms: float = 30.0,
    min_reps: int = 10,
    max_reps: int = 2000,
    flush_l2: bool = True,
) -> tuple[TimingStats, list[Kept]]:
    """Time ``fn()`` on ``device`` (CUDA only). Returns (statistics, the timed calls ``keep`` kept).

    One untimed call first (compilation, allocator warm-up); three calls estimate the time per call; then
    ``warmup_ms`` of untimed calls and ``clamp(target_ms / estimate, min_reps, max_reps)`` timed ones, each between
    its own pair of CUDA events recorded on the current stream, each preceded by ``before(rep)`` (fresh inputs,
    untimed) and a write of ``flush_buffer`` so that inputs come from HBM, not L2. With ``calls`` (the candidate's:
    ``invoke.calls`` with its kernel bound, on the thread that runs the kernel's code, the path of its checked calls)
    each phase is one stretch of ``calls`` and ``fn`` is unused; without, ``direct(fn)``. Each timed call's output
    is offered to ``keep`` (outside the events) once the call returned. Statistics are ``summarize``'s of the
    per-call times in microseconds.
    """
    if not device.startswith("cuda"):
        raise ValueError("bench() times CUDA work; timing under the Triton interpreter is not meaningful")
    if calls is None:
        assert fn is not None, "bench() needs fn or calls"
        calls = direct(fn)
    buf = flush_buffer(device) if flush_l2 else None
    counter = {"rep": 0}
    # torch.cuda.Event.__new__ has no annotations in torch's sources (a stub gap, not an untyped call of ours).
    spare = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))  # type: ignore[no-untyped-call]

    def untimed(n: int) -> None:
        calls(n, events=lambda i: spare)

    def one(n: int, offer: Reservoir | None) -> list[float]:
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]  # type: ignore[no-untyped-call]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]  # type: ignore[no-untyped-call]
        reps: list[int] = []

        def prepare(i: int) -> None:
            reps.append(counter["rep"])
            if before is not None:
                before(counter["rep"])
                counter["rep"] += 1
            if buf is not None:
                buf.zero_()

        def done(i: int, out: Any, seconds: float) -> None:
            if offer is not None:
                offer.offer(i, reps[i], out)

        calls(n, before=prepare, after=done, events=lambda i: (starts[i], ends[i]))
        torch.cuda.synchronize(device)
        return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]

    untimed(1)
    torch.cuda.synchronize(device)
    est_us = max(statistics.median(one(3, None)), 1.0)
    untimed(max(1, min(200, int(warmup_ms * 1e3 / est_us))))
    reps = max(min_reps, min(max_reps, int(target_ms * 1e3 / est_us)))
    torch.cuda.synchronize(device)
    times = one(reps, keep)
    return summarize(times), keep.kept if keep is not None else []


def stretch(calls: Calls, n: int, *, before: Callable[[int], None], keep: Reservoir) -> list[Kept]:
    """``n`` calls in a row with nothing timed (the CPU, where the Triton interpreter's times mean nothing): the
    loop of ``bench``'s timed phase without its events and L2 flush, each call after ``before(i)`` (fresh inputs)
    and offered to ``keep`` once it returned. Returns the calls ``keep`` kept."""
    calls(n, before=before, after=lambda i, out, seconds: keep.offer(i, i, out))
    return keep.kept


# The clock probe: a spin of a fixed number of GPU clock cycles (``torch.cuda._sleep``, a one-thread kernel that
# loops on ``clock64``): its event time is inversely proportional to the SM clock it ran at. 40,000 cycles are
# ~20 us at the H100's and H200's 1,980 MHz boost clock (shared/device/README.md).
PROBE_CYCLES = 40_000


def clock_probe(device: str = "cuda", n: int = 5) -> float:
    """Microseconds of a ``PROBE_CYCLES`` spin (``torch.cuda._sleep``) on ``device``: the median of ``n`` back to
    back, each between its own CUDA events. Called right after a timed phase, it reads the SM clock the timed calls
    ran at; ``host_loop``'s probe reads the clock of the loop's calls, and their ratio is how much slower the loop's
    clocks run the same cycles (``ktui.core.ladder.rungs.benchmark.host_escape``)."""
    pairs = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))  # type: ignore[no-untyped-call]
        for _ in range(n)
    ]
    for start, end in pairs:
        start.record()
        torch.cuda._sleep(PROBE_CYCLES)  # type: ignore[no-untyped-call]
        end.record()
    torch.cuda.synchronize(device)
    return float(statistics.median(s.elapsed_time(e) * 1e3 for s, e in pairs))


def host_loop(
    calls: Calls,
    refresh: Callable[[int], None],
    n: int,
    run_kernel: bool,
    sync: Callable[[], None],
    *,
    keep: Reservoir | None = None,
    events: tuple[Any, Any] | None = None,
    probe: tuple[Any, Any] | None = None,
) -> tuple[HostLoopReply, Any]:
    """``n`` iterations of ``refresh(i)`` (fresh inputs), a call through ``calls`` (the kernel's, or when not
    ``run_kernel`` the baseline's: the same stretch with a call of nothing, the same hand-over) and ``sync()`` (a
    device synchronize: work on every stream, a side stream's too, ends inside the iteration that launched it, and
    none overlaps the next refresh); each call's output is then offered to ``keep``. ``events`` (a CUDA start and
    end event) are the ones ``calls`` records around every call, read after each synchronize. With ``probe`` (a
    pair of CUDA events), every iteration, the baseline's too (the difference of the two loops cancels it), spins
    ``PROBE_CYCLES`` between them after its fresh inputs, just before the call: the clock the call starts at.

    Returns the reply (``inner_s``: the loop's wall seconds; ``enqueue_s``: the host seconds inside the kernel's
    calls, summed as ``calls`` measured them: the host's own cost of issuing the calls; ``events_s``: the calls'
    CUDA-event seconds, summed: their time on the current stream at the clocks this loop runs at; both 0 for the
    baseline; ``probe_s``: the probes' event seconds, summed) and the last call's output (None without calls). The
    caller times the request from outside; the difference of a loop with calls and one without is the calls' own
    time.
    """
    last: list[Any] = [None]
    spent = [0.0, 0.0, 0.0]
    before = refresh
    if probe is not None:

        def before(i: int) -> None:
            refresh(i)
            probe[0].record()
            torch.cuda._sleep(PROBE_CYCLES)  # type: ignore[no-untyped-call]
            probe[1].record()

    def done(i: int, out: Any, seconds: float) -> None:
        sync()
        if probe is not None:
            spent[2] += probe[0].elapsed_time(probe[1]) * 1e-3
        if run_kernel:
            spent[0] += seconds
            if events is not None:
                spent[1] += events[0].elapsed_time(events[1]) * 1e-3
            last[0] = out
            if keep is not None:
                keep.offer(i, i, out)

    t_ready = time.perf_counter()
    calls(n, before=before, after=done, events=None if events is None else lambda i: events)
    reply: HostLoopReply = {
        "calls": n,
        "inner_s": time.perf_counter() - t_ready,
        "enqueue_s": spent[0],
        "events_s": spent[1],
        "probe_s": spent[2],
    }
    return reply, last[0]


def measure_bandwidth(device: str = "cuda", nbytes: int = 1 << 30) -> float:
    """Device memory bandwidth in GB/s (1e9 B/s): a device-to-device copy of ``nbytes``, counting bytes read plus
    bytes written, median over repetitions. On an H200 this reads about 4,250 GB/s (shared/device/README.md)."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    stats, _ = bench(lambda: dst.copy_(src), device, target_ms=100.0, flush_l2=False)  # noqa: F821 - freed below
    del src, dst
    return 2 * nbytes / (stats["median_us"] * 1e-6) / 1e9


def measure_peak_tflops(dtype: torch.dtype, device: str = "cuda", n: int = 8192) -> float:
    """Matrix-multiply throughput in TFLOP/s of ``torch.matmul`` on random ``n x n`` operands of ``dtype``
    (2 n^3 flops per product; float32 with TF32 off), median over repetitions: the measured compute ceiling."""
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        stats, _ = bench(lambda: torch.matmul(a, b), device, target_ms=150.0, flush_l2=False)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    return 2 * n**3 / (stats["median_us"] * 1e-6) / 1e12
