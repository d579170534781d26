"""Issue 9.3, the checking context is detectable: three ways through found by the red team of round 10, each with
its honest twin, and the mechanisms that close them.

- W2: a kernel right only while its ``torch.empty`` output sat inside a guard band (the view's ``storage_offset()``
  was 4096 bytes in, its storage 8 KiB larger). A guarded tensor now has a storage of its own that starts and ends
  at the payload (``guards.alias_of``: a DLPack round trip), the canaries around it in the larger allocation.
- W3: a kernel right only off the main thread, where checked calls ran. Every call of the kernel's code (its
  import, the dry call, checked, burst, timed, host-loop calls and the verified stretch) now runs on the worker's
  main thread (``invoke.serve``), the requests on a second thread.
- W4: a tuner that goes wrong after 64 calls on one shape: no case called a shape that often on the CPU. The
  benchmark rung without a GPU now runs the verified stretch: 200 to 300 calls in a row on one small test spec
  through the timed calls' path (main thread, plain inputs, unguarded), 16 kept at random and verified in full.

The GPU halves (the guard alias on CUDA, the three kernels against the timed calls) are marked ``gpu``
(``bash benchmarks/h200.sh context``).
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import pytest
import torch

from ktui.core.ladder.rungs.benchmark import (
    STRETCH_BUDGET_S,
    STRETCH_CALLS,
    STRETCH_FLOOR,
    stretch_calls,
    stretch_result,
    stretch_spec,
)
from ktui.core.results import Status
from ktui.worker import allocation
from ktui.worker.guards import GUARD_BYTES, Guards, alias_of, payload_of
from ktui.worker.screen import SCREEN_FULL
from ktui.worker.timed import KEEP_STRETCH

from .test_cases import CASES, K, corr, good, run

SCALE = CASES / "references" / "scale_alpha.py"
FAST = dict(distributions=False, layouts=False, fuzz=False, near_duplicates=False)
RUNGS = ("compile", "run", "correctness", "benchmark")  # dumps left out: nothing here is about the SASS
STRETCH_WRONG = re.compile(r"^spec=\(\d+, (fp32|bf16)\): the output of call (\d+) of (\d+) is wrong \(output out: ")


def scale(make_ws, ladder_for, kernel: Path, seed: int, rungs: tuple[str, ...] = RUNGS):
    return run(make_ws, ladder_for, "scale", kernel, reference=SCALE, seed=seed, rungs=rungs, **FAST)


# the stretch alone: after a failed correctness rung the CPU runs no stretch (the version is wrong already), so a
# kernel that fails both is shown failing the stretch by a ladder without the correctness rung
STRETCH_ONLY = ("compile", "run", "benchmark")


def stretch_passed(res) -> dict:
    """The benchmark rung of a CPU ladder that passed: skipped (no times), its verified stretch right."""
    b = res.rung("benchmark")
    assert b.status is Status.SKIPPED and b.figures["reason"] == "interpreter", b.line()
    s = b.figures["stretch"]
    # the kept calls and the screen's worst (red team round 30, #3), every one verified in full
    assert s["ok"] and s["checked"] == KEEP_STRETCH + SCREEN_FULL and STRETCH_FLOOR <= s["calls"] <= STRETCH_CALLS[1], s
    assert f"Verified instead: {s['calls']} calls in a row" in b.summary
    assert f"on spec={s['label']} as a script makes them" in b.summary
    return s


def stretch_failed(res) -> re.Match:
    b = res.rung("benchmark")
    assert b.status is Status.FAILED and b.error.type == "StretchError", b.line()
    m = STRETCH_WRONG.match(b.summary)
    assert m, b.summary
    assert (
        "calls in a row on the main thread, on plain inputs and unguarded memory, as a script makes them" in b.summary
    )
    assert STRETCH_FLOOR <= int(m.group(3)) <= STRETCH_CALLS[1] and not b.figures["stretch"]["ok"]
    return m


# -- W2: the guard band ------------------------------------------------------------------------------------------
def test_a_kernel_right_only_inside_a_guard_band_fails_and_its_twin_reading_its_storage_passes(make_ws, ladder_for):
    bad = scale(make_ws, ladder_for, K / "rt10_guard_detect_bad.py", seed=31)
    c = corr(bad)
    assert c.status is Status.FAILED and "elements outside atol=1e-06 rtol=1e-06" in c.summary, c.summary
    assert all(not s["ok"] for s in c.figures["specs"])  # it never sees a band: wrong on every spec
    assert bad.rung("benchmark").line().endswith("the verified stretch is not run: correctness failed")
    stretch_failed(scale(make_ws, ladder_for, K / "rt10_guard_detect_bad.py", seed=31, rungs=STRETCH_ONLY))
    twin = good(scale(make_ws, ladder_for, K / "rt10_storage_flat_good.py", seed=31))
    stretch_passed(twin)


def test_a_guarded_tensor_reads_as_a_plain_allocation_and_its_canaries_still_catch():
    base = torch.randn(6, 8)
    inputs = {
        "contiguous": torch.randn(129),
        "bf16": torch.randn(129).to(torch.bfloat16),
        "int8": torch.randint(-5, 5, (33,), dtype=torch.int8),
        "padded": base[:, :5],
        "offset": base.reshape(-1)[3:40],
        "transposed": base.t(),
    }
    g = Guards()
    with allocation.poisoned_allocations(None, g):
        fresh = torch.empty(129)
        like = torch.empty_like(inputs["bf16"])
    wrapped = {k: g.wrap_input(t, k) for k, t in inputs.items()}
    for name, t, plain in [("empty", fresh, torch.zeros(129)), ("empty_like", like, inputs["bf16"])] + [
        (k, wrapped[k], inputs[k]) for k in inputs
    ]:
        s = t.untyped_storage()
        assert payload_of(s) is not None, name  # guarded all the same
        assert (t.storage_offset(), s.nbytes(), t.shape, t.stride()) == (
            plain.storage_offset(),
            plain.untyped_storage().nbytes(),
            plain.shape,
            plain.stride(),
        ), name
        assert t.data_ptr() == s.data_ptr() + t.storage_offset() * t.element_size(), name
        assert payload_of(s) == (s.data_ptr(), s.data_ptr() + s.nbytes()), name
    assert all(torch.equal(wrapped[k], inputs[k]) for k in inputs)
    assert g.violations() == []
    # a write one element past the payload lands in the canary of the allocation around it
    band = next(b for b in g.bands if b.name == "contiguous")
    band.buf[GUARD_BYTES + band.nbytes] ^= 0xFF
    assert g.violations() == ["wrote 1 element past the end of contiguous (element 129 of 129, float32)"]
    g.close()


def test_the_alias_keeps_the_allocation_alive_exactly_as_long_as_a_view_of_it_lives():
    buf = torch.zeros(2 * GUARD_BYTES + 64, dtype=torch.uint8)
    alive = weakref.ref(buf)
    payload = alias_of(buf, GUARD_BYTES, 64)
    assert payload.untyped_storage().data_ptr() == buf.data_ptr() + GUARD_BYTES
    view = torch.empty(0).set_(payload.untyped_storage(), 0, (16,), (1,))
    view.fill_(1.0)
    assert torch.equal(buf[GUARD_BYTES : GUARD_BYTES + 64].view(torch.float32), torch.ones(16))
    assert not bool(buf[:GUARD_BYTES].any()) and not bool(buf[GUARD_BYTES + 64 :].any())
    del buf, payload
    assert alive() is not None  # the view holds the allocation
    del view
    assert alive() is None


# -- W3: the thread ----------------------------------------------------------------------------------------------
def test_a_kernel_right_only_off_the_main_thread_fails_and_its_twin_passes(make_ws, ladder_for):
    bad = scale(make_ws, ladder_for, K / "rt10_thread_detect_bad.py", seed=32)
    c = corr(bad)
    assert c.status is Status.FAILED and "elements outside atol=1e-06 rtol=1e-06" in c.summary, c.summary
    assert all(not s["ok"] for s in c.figures["specs"])
    stretch_failed(scale(make_ws, ladder_for, K / "rt10_thread_detect_bad.py", seed=32, rungs=STRETCH_ONLY))
    stretch_passed(good(scale(make_ws, ladder_for, K / "rt10_thread_detect_good.py", seed=32)))


PROBE = """
import json
import sys
import threading

import torch
import triton
import triton.language as tl

LOG = {log!r}


def _note(kind, out=None):
    frames = []
    f = sys._getframe(1)
    while f is not None:
        frames.append((f.f_code.co_filename, f.f_code.co_name))
        f = f.f_back
    rec = {{"kind": kind, "main": threading.current_thread() is threading.main_thread(), "stack": frames[1:]}}
    if out is not None:
        s = out.untyped_storage()
        rec["plain"] = out.storage_offset() == 0 and s.nbytes() == out.numel() * out.element_size()
    with open(LOG, "a") as fh:
        fh.write(json.dumps(rec) + "\\n")


_note("import")


@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, xs, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * xs, mask=m).to(tl.float32)
    tl.store(out_ptr + offs, (x * alpha).to(out_ptr.dtype.element_ty), mask=m)


def custom_kernel(data):
    x, alpha = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _note("call", out)
    scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, alpha, x.numel(), x.stride(0), BLOCK=1024)
    return out
"""


def test_in_the_worker_every_call_and_the_import_run_on_the_main_thread_on_one_stack(make_ws, ladder_for, tmp_path):
    """A probe kernel notes, at import and in every call (the dry call, the checked cases, the burst, the verified
    stretch), its thread, the frames under it and whether its output reads as a plain allocation: all on the main
    thread, one stack for every call, with no frame of the checking or timing code, and plain storage always."""
    log = tmp_path / "probe.jsonl"
    kernel = tmp_path / "probe.py"
    kernel.write_text(PROBE.format(log=str(log)))
    res = good(scale(make_ws, ladder_for, kernel, seed=33))
    stretch = stretch_passed(res)
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    calls = [r for r in recs if r["kind"] == "call"]
    imports = [r for r in recs if r["kind"] == "import"]
    assert len(imports) >= 2 and all(r["main"] for r in imports)  # the compiler's (the dry call), the candidate's
    assert len(calls) >= res.rung("run").figures["calls"] + stretch["calls"], len(calls)
    assert all(r["main"] and r["plain"] for r in calls)
    stacks = {tuple(tuple(f) for f in r["stack"]) for r in calls}
    assert len(stacks) == 1, stacks
    (stack,) = stacks
    names = [name for _, name in stack]
    assert names[0] == "serve" and names[1] == "main", names  # invoke.serve under ktui.worker's main, nothing else
    assert not {"do_execute", "_call", "_burst", "do_benchmark", "bench", "stretch", "do_compile"} & set(names)


# -- W4: the number of calls -------------------------------------------------------------------------------------
def test_a_tuner_wrong_after_64_calls_fails_the_verified_stretch_and_its_twin_passes(make_ws, ladder_for):
    bad = scale(make_ws, ladder_for, K / "rt10_count64_bad.py", seed=34)
    assert corr(bad).status is Status.OK, corr(bad).line()  # no shape is checked 64 times by one module
    stretch_failed(bad)
    assert re.search(r"(elements outside atol=|psnr_db [\d.]+ < 40)", bad.rung("benchmark").summary)  # alpha dropped
    stretch_passed(good(scale(make_ws, ladder_for, K / "rt10_count64_good.py", seed=34)))


# -- the stretch's draws and its verdict, in ktui's process -------------------------------------------------------
def _desc(n: int) -> dict:
    return {"tests": [{"n": 10**i} for i in range(n)], "benchmarks": [], "fuzzed": [n - 1]}


def test_the_stretch_spec_is_drawn_among_the_cheap_fixed_specs_or_is_the_smallest():
    desc = _desc(5)  # spec 4 is fuzzed: never drawn
    times = [(0, 0.010), (1, 0.012), (2, 0.019), (3, 0.5), (4, 0.001)]
    executed = [{"spec_index": i, "seed": 1, "seconds": s} for i, s in times]
    executed.append({"spec_index": 0, "seed": 301, "calls": 30, "seconds": 0.3})  # the burst: 30 calls, summed
    drawn = {stretch_spec(desc, executed, random.Random(s)) for s in range(200)}
    # within 2x the cheapest median (0.010 s), each with its median seconds; the burst's summed seconds do not count
    assert drawn == {(2, 0.019)}  # (and of those, the specs of 64 elements or more: n = 1 and 10 are not)
    assert stretch_spec(desc, None, random.Random(0)) == (0, None)  # no calls timed (--rungs benchmark): the smallest
    roomy = {"tests": [{"n": 64 * 10**i} for i in range(5)], "benchmarks": [], "fuzzed": [4]}
    drawn = {stretch_spec(roomy, executed, random.Random(s)) for s in range(200)}
    assert drawn == {(0, 0.010), (1, 0.012), (2, 0.019)}  # every cheap one, when each is of 64 elements or more
    tiny = {"tests": [{"n": 1}, {"n": 10}, {"n": 10**6}], "benchmarks": [], "fuzzed": []}
    few = [{"spec_index": i, "seed": 1, "seconds": s} for i, s in ((0, 0.010), (1, 0.011), (2, 0.5))]
    assert {stretch_spec(tiny, few, random.Random(s)) for s in range(50)} == {(0, 0.010), (1, 0.011)}  # none roomy
    # of the roomy ones, those with no size of 1 (new-user trial 33, F7: 229 calls on a router's one token, (1, 64))
    rows = {"tests": [{"t": 1, "e": 64}, {"t": 2, "e": 64}, {"t": 63, "e": 64}], "benchmarks": [], "fuzzed": []}
    cheap3 = [{"spec_index": i, "seed": 1, "seconds": s} for i, s in ((0, 0.010), (1, 0.011), (2, 0.012))]
    assert {stretch_spec(rows, cheap3, random.Random(s)) for s in range(50)} == {(1, 0.011), (2, 0.012)}


def test_the_stretch_is_cut_to_its_time_budget_but_not_below_its_floor():
    draws = [stretch_calls(random.Random(s), None) for s in range(50)]
    assert all(c == d and STRETCH_CALLS[0] <= c <= STRETCH_CALLS[1] for c, d in draws)  # no time known: uncut
    assert all(c == d for c, d in (stretch_calls(random.Random(s), 0.01) for s in range(50)))  # 0.01 s: all fit
    c, d = stretch_calls(random.Random(3), STRETCH_BUDGET_S / 100)  # 100 calls fit
    assert c == 100 and STRETCH_CALLS[0] <= d <= STRETCH_CALLS[1]
    c, d = stretch_calls(random.Random(3), 1.4)  # a row sum with a chunk of one under the interpreter
    assert c == STRETCH_FLOOR and d >= STRETCH_CALLS[0]
    ok = {"spec_index": 0, "source": "stretch", "label": "(2, 512)", "ok": True, "reason": "", "checked": 16}
    r = stretch_result({**ok, "calls": c}, c, drawn=d, per_call_s=1.4)
    assert r.status is Status.SKIPPED and r.figures["stretch"]["drawn_calls"] == d, r.figures
    assert r.figures["stretch"]["seconds_per_call"] == 1.4 and r.figures["stretch"]["calls"] == STRETCH_FLOOR
    assert (
        f"Verified instead: {STRETCH_FLOOR} calls in a row ({d} drawn, cut to fit {STRETCH_BUDGET_S:g} s at 1.4 s a "
        "call) on spec=(2, 512)" in r.summary
    ), r.summary


def test_the_stretch_verdict_skips_the_rung_when_right_and_fails_it_naming_the_call():
    ok = {"spec_index": 2, "source": "stretch", "label": "(129, fp32)", "ok": True, "reason": "", "checked": 16}
    r = stretch_result({**ok, "calls": 250, "call": 7}, 250)
    assert r.status is Status.SKIPPED and r.figures["stretch"]["checked"] == 16 and r.figures["reason"] == "interpreter"
    assert r.summary.startswith(  # what was checked first (new-user trial 21 F16), then why there are no times
        "Verified instead: 250 calls in a row on spec=(129, fp32) as a script makes them, 16 checked in full; no "
        "times on cpu (interpreter)"
    ), r.summary
    bad = {**ok, "ok": False, "reason": "output out: 1 element unwritten at [128]", "checked": 3, "calls": 250}
    r = stretch_result({**bad, "call": 180}, 250)
    assert r.status is Status.FAILED and r.summary.startswith(
        "spec=(129, fp32): the output of call 180 of 250 is wrong (output out: 1 element unwritten at [128]): a "
        "kernel must compute every element on every call (calls in a row on the main thread"
    ), r.summary
    r = stretch_result({**ok, "calls": 250}, 250, tampered=["torch.empty"])
    assert r.status is Status.FAILED and "this version patched torch.empty in its worker" in r.summary


# -- the main thread, in a process that serves as a worker does ----------------------------------------------------
HARNESS = """
import json, sys, threading
from ktui.worker import invoke
{code}
_out = {{}}
def _requests():
    try:
        _out.update(requests())
    except BaseException as exc:
        _out["error"] = repr(exc)
    finally:
        invoke.stop()
invoke.serve(then=threading.Thread(target=_requests, daemon=True).start)
print(json.dumps(_out))
"""


def run_serving(code: str, timeout: float = 300) -> dict:
    """Run ``code`` (which defines ``requests() -> dict``) as a worker runs requests: on a second thread, with the
    main thread in ``invoke.serve``; returns what ``requests`` returned."""
    src = HARNESS.format(code=textwrap.dedent(code))
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "error" not in out, out["error"]
    return out


def test_checked_timed_and_looped_calls_see_one_thread_and_one_stack():
    out = run_serving(
        """
        import inspect
        import torch
        from ktui.worker import allocation
        from ktui.worker.guards import Guards
        from ktui.worker.timing import Reservoir, host_loop, stretch

        def probe(data):
            main = threading.current_thread() is threading.main_thread()
            return [f.function for f in inspect.stack(context=0)], main, torch.empty is allocation.ORIGINALS["empty"]

        def requests():
            seen = {"plain": [invoke.call(probe, None, "cpu")[0]]}
            with allocation.poisoned_allocations(None, Guards()):
                seen["checked"] = [invoke.call(probe, None, "cpu")[0]]
            with allocation.poisoned_allocations(7, None):
                seen["decoyed"] = [invoke.call(probe, None, "cpu")[0]]
            keep = Reservoir(2, lambda o: o)
            seen["stretch"] = [k.out for k in stretch(lambda *a, **k: invoke.calls(probe, None, "cpu", *a, **k), 5,
                                                      before=lambda i: None, keep=keep)]
            looped = []
            host_loop(lambda *a, **k: invoke.calls(probe, None, "cpu", *a, **k), lambda i: None, 3, True, lambda: None,
                      keep=Reservoir(3, lambda o: looped.append(o) or o))
            seen["host loop"] = looped
            seen["import"] = [invoke.run(lambda: probe(None))]
            return seen
        """
    )
    stacks = {mode: [tuple(s[0]) for s in got] for mode, got in out.items()}
    first = stacks["plain"][0]
    assert first == ("probe", "serve", "<module>"), first  # the kernel, invoke's loop, the entry point
    for mode, got in stacks.items():
        want = first if mode != "import" else ("probe", "<lambda>", "<lambda>", "serve", "<module>")
        assert all(s == want for s in got), (mode, got)
    assert all(s[1] for got in out.values() for s in got)  # every call on the main thread
    assert not any(s[2] for got in out.values() for s in got)  # one allocator object in every mode: ktui's


def test_a_kernel_exception_and_sys_exit_come_back_at_once_and_the_loop_goes_on():
    out = run_serving(
        """
        import time, traceback

        def bad(data):
            raise ValueError(f"boom {data}")

        def swallow_and_exit(data):
            threading.excepthook = lambda args: None  # on the main thread it swallows nothing of the kernel's
            sys.exit(3)

        def requests():
            got = {}
            try:
                invoke.call(bad, 3, "cpu")
            except ValueError as exc:
                got["frames"] = [f.name for f in traceback.extract_tb(exc.__traceback__)]
            t0 = time.monotonic()
            try:
                invoke.call(swallow_and_exit, None, "cpu")
            except SystemExit as exc:
                got["exit"] = [exc.code, time.monotonic() - t0]
            got["next"] = invoke.call(lambda d: d + 1, 1, "cpu")[0]
            got["threads"] = threading.active_count()
            return got
        """
    )
    frames = out["frames"]
    assert frames[frames.index("_reraise") + 1 :] == ["bad"] and "serve" not in frames, frames
    assert out["exit"][0] == 3 and out["exit"][1] < 1.0
    assert out["next"] == 2 and out["threads"] == 2  # the main thread and the requests thread: none started


# -- on the GPU ----------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_on_cuda_a_guarded_tensor_reads_as_a_plain_allocation_and_the_canaries_catch():
    g = Guards()
    with allocation.poisoned_allocations(None, g):
        out = torch.empty(4099, device="cuda")
    x = g.wrap_input(torch.randn(64, 65, device="cuda")[:, :63], "in")
    for t, plain_nbytes in ((out, 4099 * 4), (x, 64 * 65 * 4)):
        s = t.untyped_storage()
        assert t.storage_offset() == 0 and s.nbytes() == plain_nbytes and t.is_cuda
        assert payload_of(s) == (s.data_ptr(), s.data_ptr() + plain_nbytes)
    torch.as_strided(out, (4100,), (1,)).fill_(1.0)  # one element past the end, as a store masked with <= n
    torch.cuda.synchronize()
    assert g.violations() == [
        "wrote 1 element past the end of a torch.empty buffer of (4099,) the kernel allocated (element 4099 of 4099, "
        "float32)"
    ]
    g.close()


@pytest.fixture(scope="module")
def gpu_pool(tmp_path_factory):
    from ktui.core.ladder import WorkerPool
    from ktui.core.workspace import Workspace

    root = tmp_path_factory.mktemp("round10")
    (root / "references").mkdir()
    (root / "kernels").mkdir()
    pool = WorkerPool(Workspace(root), "cuda")
    pool.start()
    yield pool
    pool.stop()


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["guard_detect", "thread_detect", "count64"])
def test_on_the_gpu_the_three_kernels_fail_and_their_twins_pass(tmp_path, gpu_pool, kind):
    from .test_gpu_cases import run as gpu_run

    twin = {"guard_detect": "storage_flat"}.get(kind, kind)
    bad = gpu_run(tmp_path, gpu_pool, "scale", K / f"rt10_{kind}_bad.py", reference=SCALE)
    failed = bad.failed_rung
    assert failed is not None and failed.name in ("correctness", "benchmark"), [r.line() for r in bad.rungs]
    if kind == "count64":  # on a GPU too only the timed calls call a shape more than 64 times
        assert failed.name == "benchmark" and "the output of timed call" in failed.error.message, failed.line()
    ok = gpu_run(tmp_path, gpu_pool, "scale", K / f"rt10_{twin}_good.py", reference=SCALE)
    assert ok.ok, [r.line() for r in ok.rungs]
    assert all(r["ok"] for r in ok.rung("benchmark").figures["recheck"])
