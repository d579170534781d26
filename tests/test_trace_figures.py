"""The trace rung's readers on the CPU: recorded ktui trace buffers and Proton Chrome traces, the figures (regions,
CTA imbalance, tail, critical path), the timeline, and the Perfetto export.

The buffers here are built byte by byte from the layout ``ktui.protocol.trace`` documents (header fields, record
index ``((b >> s) * warps + warp) * SLOTS + slot``), with a known clock and known region times, so every figure has an
exact expected value worked out by hand below.
"""

from __future__ import annotations

import json
import struct

import pytest

from ktui.core.inspect import perfetto, trace, tracestats
from ktui.protocol.trace import HEADER_BYTES, MAGIC, RECORD_BYTES, SLOTS, VERSION

T0 = 1_000_000_000_000  # globaltimer at the kernel's start, ns
GHZ = 2.0  # SM cycles per ns
CLOCK0 = {0: 2**32 - 1000, 1: 77}  # each SM's cycle counter at T0: SM 0 wraps past 2**32 during the kernel


def header(grid=(4, 1, 1), block=(64, 1, 1), shift=0, magic=MAGIC, version=VERSION, slots=SLOTS) -> bytes:
    raw = struct.pack("<10I", magic, version, *grid, *block, shift, slots)
    return raw + bytes(HEADER_BYTES - len(raw))


def buffer(marks, grid=(4, 1, 1), block=(64, 1, 1), shift=0, quantum=1, t0=T0, clock0=None) -> bytes:
    """``marks``: (cta, warp, sm, slot, t_ns from ``t0``), or with a 6th item: the ns after t by which the
    globaltimer read lagged the clock read. The globaltimer is floored to ``quantum`` ns; ``clock0``: each SM's cycle
    counter at ``t0`` (``CLOCK0`` by default)."""
    clock0 = CLOCK0 if clock0 is None else clock0
    nw = (block[0] * block[1] * block[2] + 31) // 32
    n = max(((m[0] >> shift) * nw + m[1]) * SLOTS + m[3] for m in marks) + 1
    recs = bytearray(n * RECORD_BYTES)
    for cta, warp, sm, slot, t, *late in marks:
        i = ((cta >> shift) * nw + warp) * SLOTS + slot
        gt = t0 + (int(t + sum(late)) // quantum) * quantum
        clock = (clock0[sm] + round(GHZ * t)) % 2**32
        struct.pack_into("<QII", recs, i * RECORD_BYTES, gt, clock, sm)
    return header(grid, block, shift) + bytes(recs)


# CTA -> (SM, start µs, length µs): SM 0 runs CTA 0 then CTA 2, SM 1 runs CTA 1 then CTA 3.
CTAS = {0: (0, 0, 100), 1: (1, 0, 150), 2: (0, 110, 100), 3: (1, 160, 40)}


def two_region_marks():
    """Each CTA: 2 warps; "main" for the first 80% of the CTA, "epilogue" for the rest; warp 1 enters main 1 µs late."""
    out = []
    for cta, (sm, start, length) in CTAS.items():
        s, e = start * 1000, (start + length) * 1000
        split = s + 0.8 * length * 1000
        for warp in (0, 1):
            out += [
                (cta, warp, sm, 0, s + 1000 * warp),
                (cta, warp, sm, 1, split),
                (cta, warp, sm, 2, split),
                (cta, warp, sm, 3, e),
            ]
    return out


def parsed(quantum=1, **kw):
    return trace.parse_buffer(buffer(two_region_marks(), quantum=quantum, **kw), "k", "triton", ["main", "epilogue"])


def test_parse_buffer_places_every_record():
    t = parsed()
    assert (t.grid, t.block, t.sample_every, t.warps_per_cta, t.ctas) == ((4, 1, 1), (64, 1, 1), 1, 2, 4)
    assert [(w.cta, w.warp, w.sm) for w in t.warps] == [(c, w, CTAS[c][0]) for c in range(4) for w in (0, 1)]
    w = t.warps[2]  # CTA 1, warp 0
    assert w.marks[3].gt == T0 + 150_000 and w.marks[0].clock == CLOCK0[1]
    assert t.problems == []


def test_figures_are_the_hand_computed_ones():
    fig = tracestats.summarize(parsed())
    assert fig["clock_ghz"] == pytest.approx(GHZ) and fig["clock_source"] == "measured on 2 SMs"
    main, epi = fig["regions"]
    # main per warp: 0.8 L (warp 0) and 0.8 L - 1 µs (warp 1), L = 100, 150, 100, 40 µs
    assert main["warps"] == 8 and main["ctas"] == 4
    assert main["median_ns"] == pytest.approx(79_500)
    assert main["max_ns"] == pytest.approx(120_000)
    assert main["warp_spread_ns"] == pytest.approx(1_000)
    assert main["cycles_median"] == pytest.approx(79_500 * GHZ)
    # warp spans: L (warp 0) and L - 1 µs (warp 1): 776 µs in all; main 620 µs of it, epilogue 156 µs
    assert main["share_pct"] == pytest.approx(100 * 620 / 776)
    assert epi["share_pct"] == pytest.approx(100 * 156 / 776)
    assert epi["median_ns"] == pytest.approx(20_000) and epi["warp_spread_ns"] == 0
    assert main["cta_median_ns"] == pytest.approx((80_000 + 80_000) / 2)  # CTA times in main: 80, 120, 80, 32 µs
    assert fig["span_ns"] == pytest.approx(210_000)
    assert fig["cta_median_ns"] == pytest.approx(100_000) and fig["cta_max_ns"] == pytest.approx(150_000)
    assert fig["imbalance"] == pytest.approx(1.5)
    assert fig["tail_ns"] == pytest.approx(10_000)  # SM 1 runs out at 200 µs, SM 0 ends at 210 µs
    assert fig["tail_pct"] == pytest.approx(100 * 10 / 210)
    assert (fig["sms_used"], fig["concurrent_per_sm"], fig["waves"]) == (2, 1, 2.0)
    crit = fig["critical_path"]
    assert crit["sm"] == 0 and [c["cta"] for c in crit["ctas"]] == [0, 2]
    assert crit["busy_ns"] == pytest.approx(200_000) and crit["gap_ns"] == pytest.approx(10_000)
    assert crit["regions_ns"] == {"main": pytest.approx(160_000), "epilogue": pytest.approx(40_000)}
    assert fig["problems"] == []


def test_timeline_rows_are_the_regions_in_time():
    placed = tracestats.place(parsed())
    tl = tracestats.timeline(placed, "sm", width=21)  # 10 µs a cell over 210 µs
    assert tl["legend"] == {"A": "main", "B": "epilogue"}
    assert [r["label"] for r in tl["rows"]] == ["SM 0", "SM 1"]
    assert tl["rows"][0]["cells"] == "AAAAAAAABB.AAAAAAAABB"
    assert tl["rows"][1]["cells"] == "AAAAAAAAAAAABBB.AAAB."
    by_cta = tracestats.timeline(placed, "cta", width=21)
    assert by_cta["rows"][3]["label"] == "CTA 3" and by_cta["rows"][3]["cells"] == "................AAAB."


def test_coarse_globaltimer_still_gives_durations_from_the_clock():
    """With the globaltimer read in 1 µs steps, the clock measured from 100+ µs spans is within 1%, and durations
    (cycles) within it too; the timeline places marks to within a step."""
    fig = tracestats.summarize(parsed(quantum=1000))
    assert fig["clock_ghz"] == pytest.approx(GHZ, rel=0.01)
    assert fig["regions"][0]["median_ns"] == pytest.approx(79_500, rel=0.01)
    assert fig["span_ns"] == pytest.approx(210_000, abs=2_000)
    assert fig["critical_path"]["sm"] == 0


EPOCH_T0 = 1_796_413_977_547_409_321  # a globaltimer as the H200 reads it (ns since 1970): past 2**60


def test_a_globaltimer_since_1970_keeps_every_ns():
    """The H200's figures (2026-12-04) were all whole multiples of 256 ns: at ~1.8e18 ns a float's step is 256 ns,
    and the marks were placed at globaltimer + cycles / f in floats. Relative to the first mark they are exact."""
    marks = two_region_marks()
    marks[0] = (0, 0, 0, 0, 333)  # CTA 0 warp 0 enters main 333 ns in (not a multiple of 256)
    t = trace.parse_buffer(buffer(marks, t0=EPOCH_T0), "k", "triton", ["main", "epilogue"])
    placed = tracestats.place(t)
    first = next(i for i in placed.intervals if (i.cta, i.warp, i.region) == (0, 0, 0))
    assert first.start_ns == pytest.approx(333, abs=1e-6) and first.ns == pytest.approx(80_000 - 333, abs=1e-6)
    fig = tracestats.summarize(t, placed=placed)
    assert fig["regions"][0]["median_ns"] == pytest.approx((79_000 + 79_667) / 2, abs=1e-6)
    assert fig["span_ns"] == pytest.approx(210_000, abs=1e-6) and fig["problems"] == []


def late_clock_marks():
    """vector_add v2/v3 on the H200 (2026-12-04), in small: 8 CTAs of 2 warps, 10 µs each in "add", 4 back to back
    on each of 2 SMs, a 32 ns globaltimer. A marker reads the globaltimer (SASS: CS2R) and then the clock (S2UR, of
    variable latency: many warps start at once on an SM), so the two are not one instant: CTA 0's warp 0 read the
    globaltimer at 0 and its clock only at 300 ns; warp 1 read both at about 100 ns. The SM's earliest mark in
    globaltimer order (warp 0's) has a later clock than warp 1's begin."""
    out = []
    for cta in range(8):
        start = (cta // 2) * 12_000
        for warp in (0, 1):
            out += [(cta, warp, cta % 2, 0, start), (cta, warp, cta % 2, 1, start + 10_000)]
    out[0] = (0, 0, 0, 0, 300, -300)  # clock at 300 ns, globaltimer at 0
    out[2] = (0, 1, 0, 0, 120, -20)  # clock at 120 ns, globaltimer at 100 (96 in 32 ns steps)
    return out


def test_a_clock_read_after_another_warps_is_not_a_wrap():
    """Counting each clock from the SM's earliest mark modulo 2**32 put warp 1's begin 2**32 cycles (2.1 s) late:
    "a warp's marks span more than 2,147,483,648 cycles", its region "without their pair" (end before begin), CTA 0
    ~200,000x the median CTA and a 100% tail: the H200's symptoms. Unwrapped along the SM's marks they are sane."""
    data = buffer(late_clock_marks(), grid=(8, 1, 1), quantum=32, t0=EPOCH_T0)
    t = trace.parse_buffer(data, "k", "triton", ["add"])
    placed = tracestats.place(t)
    assert placed.problems == [] and placed.unmatched == 0 and len(placed.intervals) == 16
    fig = tracestats.summarize(t, placed=placed)
    assert fig["clock_ghz"] == pytest.approx(GHZ, rel=0.01)
    (add,) = fig["regions"]
    assert add["median_ns"] == pytest.approx(10_000, rel=0.01) and add["max_ns"] == pytest.approx(10_000, rel=0.01)
    assert add["share_pct"] == pytest.approx(100.0)
    assert fig["imbalance"] == pytest.approx(1.0, abs=0.01) and fig["tail_pct"] < 1
    assert fig["span_ns"] == pytest.approx(46_000, rel=0.01) and fig["problems"] == []


def test_a_long_kernel_unwraps_its_clock_along_the_marks():
    """A 3 s kernel is 6e9 cycles at 2 GHz, past 2**32: marks every 0.25 s unwrap exactly; an SM without a mark for
    longer than 2**31 cycles could take at the fastest clock believed (0.43 s at 5 GHz) is ambiguous and says so,
    and its clock is not measured from that SM."""
    marks = [(0, 0, 0, 0, 0), (0, 0, 0, 1, 3e9)]  # warp 0: one region of 3 s
    marks += [(0, w, 0, s, w * 2.5e8 + s * 1000) for w in range(1, 12) for s in (0, 1)]  # warps 1-11: 1 µs each
    t = trace.parse_buffer(buffer(marks, grid=(1, 1, 1), block=(384, 1, 1), t0=EPOCH_T0), "k", "triton", ["r"])
    placed = tracestats.place(t)
    assert placed.clock_ghz == pytest.approx(GHZ) and placed.problems == []
    assert sorted(i.ns for i in placed.intervals) == pytest.approx([1000] * 11 + [3e9])
    sparse = trace.parse_buffer(buffer(marks[:2], grid=(1, 1, 1), t0=EPOCH_T0), "k", "triton", ["r"])
    placed = tracestats.place(sparse)
    assert placed.problems == [
        "an SM went 3 s without a mark, possibly more than 2,147,483,648 cycles: its 32-bit clock may have wrapped "
        "unseen (durations across the gap are uncertain)"
    ]
    assert placed.clock_ghz is None and placed.intervals[0].ns == 3e9  # the globaltimer's


def test_a_warp_moved_to_another_sm_is_placed_by_each_sms_clock():
    """Each record carries its %smid: a CTA preempted on SM 0 and resumed on SM 1 has marks of two clocks, which
    are never subtracted from each other."""
    marks = [m for m in two_region_marks() if m[0] in (0, 1)]
    marks = [(c, w, 1, s, t) if (c, w, s) == (0, 0, 3) else (c, w, sm, s, t) for c, w, sm, s, t in marks]
    t = trace.parse_buffer(buffer(marks, t0=EPOCH_T0), "k", "triton", ["main", "epilogue"])
    w = t.warps[0]
    assert (w.sm, w.marks[2].sm, w.marks[3].sm) == (0, None, 1)
    assert t.problems == [
        "k: 1 warp(s) recorded marks on more than one SM (a CTA moved, e.g. preempted): their "
        "marks are placed by each SM's own clock, a region spanning the move by the globaltimer"
    ]
    placed = tracestats.place(t)
    epi = next(i for i in placed.intervals if (i.cta, i.warp, i.region) == (0, 0, 1))
    assert epi.ns == pytest.approx(20_000, abs=1) and placed.unmatched == 0


def test_without_a_measurable_clock_nvml_or_the_globaltimer_is_used():
    short = [(0, 0, 0, 0, 0), (0, 0, 0, 1, 5000)]  # one warp, 5 µs: too short to measure the clock
    t = trace.parse_buffer(buffer(short, grid=(1, 1, 1), block=(32, 1, 1)), "k", "triton", ["r"])
    fig = tracestats.summarize(t, clock_hint_ghz=GHZ)
    assert fig["clock_source"] == "NVML's SM clock" and fig["regions"][0]["median_ns"] == pytest.approx(5000)
    fig = tracestats.summarize(t)
    assert fig["clock_source"].startswith("globaltimer") and fig["regions"][0]["median_ns"] == 5000


def test_sampled_grid_has_no_critical_path_and_says_why():
    marks = [m for m in two_region_marks() if m[0] % 2 == 0]
    t = trace.parse_buffer(buffer(marks, shift=1), "k", "triton", ["main", "epilogue"])
    assert t.sample_every == 2 and sorted({w.cta for w in t.warps}) == [0, 2]
    fig = tracestats.summarize(t)
    assert fig["critical_path"] is None and fig["ctas"] == 4 and fig["ctas_traced"] == 2
    (note,) = fig["problems"]
    assert note == (
        "the buffer held every 2nd CTA (2 of 4 traced): the regions' and CTA times' figures are over that sample; "
        "per-SM counts, waves, the tail and the critical path need every CTA (a buffer of 1 MiB would hold them: "
        "[trace] buffer_mib)"
    )
    # what counts every CTA of an SM is not given from a sample; the CTA times are, over the sample
    assert not {"waves", "concurrent_per_sm", "ctas_per_sm_median", "ctas_per_sm_max"} & set(fig)
    assert fig["sample_every"] == 2 and fig["cta_median_ns"] == pytest.approx(100_000)


def test_a_full_buffer_is_sized_by_the_grid_and_the_ordinals_read_right():
    """vector_add v1 on the H200 (2026-12-04): 2**21 CTAs of 4 warps, every 64th in 64 MiB; all of them need 2**23
    warps of 256 bytes after the 64-byte header. v2: 2**18 CTAs of 4 warps, every 8th."""
    v1 = trace.KernelTrace("add_kernel", "triton", ["add"], (2_097_152, 1, 1), (128, 1, 1), 64, [])
    assert tracestats.full_buffer_mib(v1) == 2049
    assert "every 64th CTA (32768 of 2097152 traced)" in tracestats.sampled_note(v1, 32768)
    assert "a buffer of 2,049 MiB would hold them" in tracestats.sampled_note(v1, 32768)
    v2 = trace.KernelTrace("add_kernel", "triton", ["add"], (262_144, 1, 1), (128, 1, 1), 8, [])
    assert tracestats.full_buffer_mib(v2) == 257
    assert [tracestats.ordinal(n) for n in (1, 2, 3, 4, 8, 11, 12, 13, 21, 22, 64, 112)] == [
        "1st", "2nd", "3rd", "4th", "8th", "11th", "12th", "13th", "21st", "22nd", "64th", "112th",
    ]  # fmt: skip


def test_unmatched_marks_are_counted_not_paired():
    marks = [(0, 0, 0, 0, 0), (0, 0, 0, 1, 50_000), (0, 0, 0, 2, 60_000)]  # region 1 never ends
    t = trace.parse_buffer(buffer(marks, grid=(1, 1, 1), block=(32, 1, 1)), "k", "triton", ["a", "b"])
    placed = tracestats.place(t)
    assert placed.unmatched == 1 and [i.region for i in placed.intervals] == [0]
    assert "1 region marks without their pair" in placed.problems[0]


def test_bad_buffers_are_named():
    with pytest.raises(trace.TraceFormatError, match="header"):
        trace.parse_buffer(b"\0" * 10, "k", "triton", [])
    with pytest.raises(trace.TraceFormatError, match="not a ktui trace buffer"):
        trace.parse_buffer(header(magic=0x1234) + bytes(RECORD_BYTES), "k", "triton", [])
    far = header(grid=(1, 1, 1), block=(32, 1, 1)) + bytes(SLOTS * RECORD_BYTES) + struct.pack("<QII", T0, 1, 0)
    with pytest.raises(trace.TraceFormatError, match="beyond the launch"):
        trace.parse_buffer(far, "k", "triton", ["a"])
    orphan = bytes(HEADER_BYTES) + struct.pack("<QII", T0, 1, 0)
    assert "no header" in trace.parse_buffer(orphan, "k", "triton", ["a"]).problems[0]
    assert "no marker ran" in trace.parse_buffer(bytes(HEADER_BYTES), "k", "triton", ["a"]).problems[0]


def test_perfetto_export_has_one_slice_per_region_and_warp():
    placed = tracestats.place(parsed())
    doc = json.loads(json.dumps(perfetto.chrome_trace([placed], {"tracer": "ktui"})))
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == 16 and doc["displayTimeUnit"] == "ns" and doc["otherData"] == {"tracer": "ktui"}
    first = next(e for e in slices if e["args"]["cta"] == 1 and e["args"]["warp"] == 0 and e["name"] == "main")
    assert first["ts"] == pytest.approx(0.0) and first["dur"] == pytest.approx(120.0)  # µs
    assert first["args"]["cycles"] == 240_000 and first["pid"] == 2 and first["tid"] == 3
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "CTA 1 (1,0,0) warp 0" in names and len(names) == 8


# The Chrome trace Proton's instrumentation mode writes (Triton 3.6's StreamChromeTraceWriter): per scope and warp,
# ts = (init - min init) + (cycle - the CTA's first cycle), / 1000; dur = cycles / 1000.
PROTON = {
    "displayTimeUnit": "ns",
    "traceEvents": [
        {
            "name": "load",
            "cat": "k",
            "ph": "X",
            "pid": "k Core3 CTA0",
            "tid": "warp 0 (line 0)",
            "ts": 0.0,
            "dur": 2.0,
            "args": {"Init Time (ns)": 5000, "Frequency (MHz)": 1000.0, "call_stack": ["k"]},
        },
        {
            "name": "store",
            "cat": "k",
            "ph": "X",
            "pid": "k Core3 CTA0",
            "tid": "warp 0 (line 0)",
            "ts": 2.5,
            "dur": 1.0,
            "args": {"Init Time (ns)": 5000},
        },
        {
            "name": "load",
            "cat": "k",
            "ph": "X",
            "pid": "k Core7 CTA1",
            "tid": "warp 1 (line 0)",
            "ts": 1.2,
            "dur": 4.0,
            "args": {"Init Time (ns)": 6000},
        },
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "x"}},
    ],
}


def test_proton_trace_becomes_the_same_model():
    (t,) = trace.parse_proton(json.dumps(PROTON))
    assert t.kernel == "k" and t.regions == ["load", "store"]
    w0, w1 = t.warps
    assert (w0.cta, w0.warp, w0.sm, w0.base_ns) == (0, 0, 3, 5000)
    assert (w1.cta, w1.warp, w1.sm, w1.base_ns) == (1, 1, 7, 6000)
    assert w0.marks[2].clock == 2500 and w0.marks[3].clock == 3500
    assert w1.marks[0].clock == 200  # ts 1.2 = (6000 - 5000) ns + 200 cycles
    fig = tracestats.summarize(t, clock_hint_ghz=2.0)
    load = fig["regions"][0]
    assert load["median_ns"] == pytest.approx((1000 + 2000) / 2)  # 2000 and 4000 cycles at 2 GHz
    placed = tracestats.place(t, 2.0)
    starts = sorted(i.start_ns for i in placed.intervals if i.region == 0)
    assert starts == pytest.approx([0.0, 1100.0])  # CTA 1 starts 1 µs later, its load 200 cycles (100 ns) in


def test_proton_relaunch_keeps_the_last_launch():
    doc = json.loads(json.dumps(PROTON))
    again = dict(doc["traceEvents"][0], ts=100.0, args={"Init Time (ns)": 105_000})
    doc["traceEvents"].append(again)
    (t,) = trace.parse_proton(json.dumps(doc))
    w0 = next(w for w in t.warps if w.cta == 0)
    assert w0.base_ns == 105_000 and set(w0.marks) == {0, 1}
    assert "launched more than once" in t.problems[0]


def test_not_a_chrome_trace_is_named():
    with pytest.raises(trace.TraceFormatError, match="not a Chrome trace"):
        trace.parse_proton("{")
    with pytest.raises(trace.TraceFormatError, match="no traceEvents"):
        trace.parse_proton('{"x": 1}')
