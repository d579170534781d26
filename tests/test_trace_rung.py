"""The trace rung on the CPU: why it skips, and its fold of what the traced program wrote (trace.json and the
buffers, built here byte by byte as in ``test_trace_figures``) into figures, the summary, the lines ``ktui run`` and
the agent read, and the Chrome trace file."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest

from ktui.core import inside, report
from ktui.core.figures import check
from ktui.core.ladder.context import LadderOptions, RungFailed
from ktui.core.ladder.rungs import trace as trace_rung
from ktui.core.results import Status
from ktui.core.workers.transport import LocalTransport
from ktui.core.workspace import KernelRef

from .test_trace_figures import PROTON, SLOTS, T0, buffer, header, two_region_marks

ROOT = Path(__file__).resolve().parents[1]


def ctx_for(tmp_path: Path, source: str, device: str = "cuda", toml: str = "", tracer: str | None = None):
    (tmp_path / "ktui.toml").write_text(toml)
    snap = tmp_path / "snap.py"
    snap.write_text(source)
    return SimpleNamespace(
        pool=SimpleNamespace(device=device, transport=LocalTransport()),
        ws=SimpleNamespace(root=tmp_path),
        options=LadderOptions(tracer=tracer),
        kernel_snap=snap,
        kernel=KernelRef("softmax", "v2", tmp_path),
    )


def test_skips_say_why(tmp_path):
    marked = (ROOT / "kernels/softmax/v2.py").read_text()
    r = trace_rung.run(ctx_for(tmp_path, marked, device="cpu"))
    assert r.status is Status.SKIPPED and r.summary == "tracing runs the kernel on a GPU: no trace on cpu (interpreter)"
    assert check("trace", r.figures, skipped=True) == []
    plain = marked.replace("import ktui.trace.triton as kt", "")
    r = trace_rung.run(ctx_for(tmp_path, plain))
    assert r.status is Status.SKIPPED and r.figures == {"reason": "no regions"}
    assert r.summary.startswith('softmax/v2 marks no region: wrap parts of the kernel in `with kt.region("name"):`')
    cute = (ROOT / "kernels/vector_add/v3.py").read_text()
    r = trace_rung.run(ctx_for(tmp_path, cute, tracer="proton"))
    assert r.status is Status.SKIPPED and "instruments Triton kernels" in r.summary
    with pytest.raises(RungFailed, match=r"unknown tracer 'nsys'"):
        trace_rung.run(ctx_for(tmp_path, marked, toml='[trace]\ntracer = "nsys"\n'))
    with pytest.raises(RungFailed, match="buffer_mib must be a whole number"):
        trace_rung.run(ctx_for(tmp_path, marked, toml="[trace]\nbuffer_mib = 0.5\n"))


def calibration_buffer() -> bytes:
    """One warp of 4 empty regions, each 90 cycles (the marker's cost), at 2 GHz."""
    marks = []
    t = 0.0
    for r in range(4):
        marks += [(0, 0, 0, 2 * r, t), (0, 0, 0, 2 * r + 1, t + 45.0)]
        t += 100.0
    return buffer(marks, grid=(1, 1, 1), block=(32, 1, 1))


def write_run(out: Path, kernels: list[dict], **extra) -> dict:
    doc = {
        "tracer": "ktui",
        "untraced": {"median_us": 200.0, "p25_us": 199.0, "p75_us": 201.0, "reps": 30},
        "traced": {"median_us": 210.0, "p25_us": 209.0, "p75_us": 211.0, "reps": 30},
        "kernels": kernels,
        "sm_count": 132,
        "sm_clock_mhz": 2000,
        "device_name": "NVIDIA H200",
        "warnings": [],
        **extra,
    }
    (out / "trace.json").write_text(json.dumps(doc))
    return doc


def test_fold_gives_figures_lines_and_a_perfetto_file(tmp_path):
    out = tmp_path / ".ktui" / "traces" / "k"
    out.mkdir(parents=True)
    (out / "0-k.ktrace").write_bytes(buffer(two_region_marks()))
    (out / "1-cal.ktrace").write_bytes(calibration_buffer())
    doc = write_run(
        out,
        [
            {
                "kernel": "k",
                "language": "triton",
                "regions": ["main", "epilogue"],
                "file": "0-k.ktrace",
                "buffer_bytes": 1 << 20,
                "launches": 1,
            },
            {
                "kernel": "ktui_marker_calibration",
                "language": "triton",
                "regions": ["e0", "e1", "e2", "e3"],
                "file": "1-cal.ktrace",
                "buffer_bytes": 1 << 20,
                "launches": 1,
                "calibration": True,
            },
        ],
    )
    r = trace_rung.fold(doc, out, Path(".ktui/traces/k"), {"n": 4}, benchmark_us=198.0)
    assert r.status is Status.OK and check("trace", r.figures) == []
    fig = r.figures
    assert fig["untraced_us"] == 200.0 and fig["traced_us"] == 210.0 and fig["overhead_pct"] == pytest.approx(5.0)
    assert fig["benchmark_us"] == 198.0
    assert fig["marker_cycles"] == pytest.approx(90.0) and fig["marker_ns"] == pytest.approx(45.0)
    assert [k["kernel"] for k in fig["kernels"]] == ["k"]  # the calibration kernel is not the version's
    assert r.summary == (
        "k: main 80% (79.5 us), epilogue 20% (20 us); CTAs 1.50x median, tail 5%; traced 210 us vs 200 us untraced "
        "(+5.0%), a marker ~90 cycles"
    )
    doc_json = json.loads((tmp_path / ".ktui/traces/k/trace.perfetto.json").read_text())
    assert fig["report"] == ".ktui/traces/k/trace.perfetto.json"
    assert len([e for e in doc_json["traceEvents"] if e["ph"] == "X"]) == 16
    lines = report.rung_lines(r)
    assert lines[0].startswith("[trace] ok  k: main 80%")
    text = "\n".join(lines)
    assert "critical path: SM 0, 2 CTA(s) back to back ending at 210 us: busy 200 us, waiting 10 us" in text
    assert "        SM 0 " in text and "timeline by SM (72 cells over 210 us; A main, B epilogue" in text
    assert "untraced 200 us, traced 210 us (+5.0%), benchmark 198 us; a marker costs a warp ~90 cycles" in text


def test_a_sampled_grid_is_labelled_as_a_sample(tmp_path):
    """vector_add v1 on the H200: every 64th CTA fits 64 MiB. The figures over the sample say so; what needs every
    CTA of an SM (waves, CTAs at once) is not given."""
    out = tmp_path / "t"
    out.mkdir()
    marks = [m for m in two_region_marks() if m[0] % 2 == 0]
    (out / "0-k.ktrace").write_bytes(buffer(marks, shift=1))
    kernel = {"kernel": "k", "language": "triton", "regions": ["main", "epilogue"], "file": "0-k.ktrace"}
    doc = write_run(out, [{**kernel, "buffer_bytes": 1 << 20, "launches": 1}])
    r = trace_rung.fold(doc, out, Path("t"), {}, None)
    assert r.status is Status.OK and check("trace", r.figures) == []
    assert "CTAs 1.00x median (every 2nd CTA); traced" in r.summary  # no tail: it needs every SM's last CTA
    text = "\n".join(inside.trace_lines(r.figures))
    assert "(grid 4x1x1, 4 warps traced, every 2nd CTA;" in text
    assert "CTAs (every 2nd, 2 of 4 traced): median 100 us" in text and "waves" not in text
    assert any(w.startswith("k: the buffer held every 2nd CTA (2 of 4 traced)") for w in r.warnings)


def test_fold_of_nothing_traced_fails_with_the_reason(tmp_path):
    out = tmp_path / "t"
    out.mkdir()
    (out / "0-k.ktrace").write_bytes(header()[:0] + bytes(64))  # the recorded call never reached a marker
    doc = write_run(
        out,
        [
            {
                "kernel": "k",
                "language": "triton",
                "regions": ["a"],
                "file": "0-k.ktrace",
                "buffer_bytes": 1 << 20,
                "launches": 1,
            }
        ],
    )
    with pytest.raises(RungFailed, match="nothing was traced: k: no marker ran"):
        trace_rung.fold(doc, out, Path("t"), {}, None)
    (out / "0-k.ktrace").write_bytes(header() + struct.pack("<QII", T0, 1, 0) * (SLOTS * 64 + 1))
    with pytest.raises(RungFailed, match="beyond the launch"):
        trace_rung.fold(doc, out, Path("t"), {}, None)


def test_fold_reads_protons_trace(tmp_path):
    out = tmp_path / "t"
    out.mkdir()
    (out / "proton.chrome_trace").write_text(json.dumps(PROTON))
    doc = write_run(out, [], tracer="proton", proton_trace="proton.chrome_trace")
    r = trace_rung.fold(doc, out, Path("t"), {}, None)
    assert r.status is Status.OK and r.figures["tracer"] == "proton"
    k = r.figures["kernels"][0]
    assert [g["name"] for g in k["regions"]] == ["load", "store"] and k["clock_source"] == "NVML's SM clock"
    assert "marker_cycles" not in r.figures


def test_model_lines_keep_the_timeline_short():
    fig = {
        "untraced_us": 1.0,
        "traced_us": 1.5,
        "overhead_pct": 50.0,
        "kernels": [
            {
                "kernel": "k",
                "grid": [4, 1, 1],
                "clock_source": "x",
                "regions": [{"name": "a", "warps": 0}],
                "timeline": {
                    "by": "sm",
                    "width": 4,
                    "end_ns": 1000.0,
                    "legend": {"A": "a"},
                    "rows": [{"label": f"SM {i}", "id": i, "cells": "AA.."} for i in range(10)],
                },
            }
        ],
    }
    lines = inside.trace_lines(fig, timeline_rows=6)
    assert sum(1 for ln in lines if "AA.." in ln) == 6 and lines[-2].strip() == "... 4 more rows"
    assert "a               never completed (no warp ran both its marks)" in "\n".join(lines)


def test_ktui_run_rungs_trace_on_the_cpu_skips_with_the_reason(make_ws):
    from .jsonout import data_of
    from .test_cli import ktui

    ws = make_ws(["softmax"])
    p = ktui(
        "run",
        str(ws.root / "kernels/softmax/v2.py"),
        "--rungs",
        "trace",
        "--device",
        "cpu",
        "--json",
        "--no-record",
        "--tracer",
        "proton",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    d = data_of(p.stdout, "run")  # the envelope, checked against the run schema
    assert [r["name"] for r in d["rungs"]] == ["compile", "trace"]
    tr = d["rungs"][1]
    assert tr["status"] == "skipped" and tr["reason"] == "no GPU"
    assert tr["summary"] == "tracing runs the kernel on a GPU: no trace on cpu (interpreter)"
    p = ktui(
        "run", str(ws.root / "kernels/softmax/v2.py"), "--rungs", "profile", "--ncu-args", '--set "full', "--no-record"
    )
    assert p.returncode == 2 and "--ncu-args: No closing quotation" in p.stderr
    p = ktui("run", str(ws.root / "kernels/softmax/v2.py"), "--tracer", "nsys", "--no-record")
    assert p.returncode == 2 and "invalid choice: 'nsys'" in p.stderr


def test_export_hands_the_harness_the_version_without_its_markers(make_ws):
    """``ktui export gpumode`` of a marked version: no ktui import left, every line where it was (the SASS of the
    stripped examples is the marked ones', tests/test_trace_device.py), and a mixed ``with`` refused by name."""
    from ktui.importers import gpumode
    from ktui.importers.common import ImporterError
    from ktui.importers.markers import strip_markers

    src = (ROOT / "kernels/softmax/v1.py").read_text()
    out = gpumode.export(src, "softmax/v1")
    assert "ktui" not in out and out.count("\n") == src.count("\n")
    assert out.splitlines()[src.splitlines().index('    with kt.region("sum"):')] == "    if True:"
    compile(out, "v1.py", "exec")
    assert strip_markers("import torch\nx = 1\n") == "import torch\nx = 1\n"
    one = 'from ktui.trace.triton import region as r, begin\ndef f():\n    with r("a"): y = 2\n    begin("b")\n'
    assert strip_markers(one) == "\ndef f():\n    if True: y = 2\n    pass\n"
    with pytest.raises(ImporterError, match=r"v9: line 3: a with statement mixes ktui.trace markers"):
        gpumode.export(
            'import ktui.trace.triton as kt\ndef custom_kernel(d):\n    with kt.region("a"), open("f"):\n'
            "        pass\n",
            "v9",
        )


def test_gpu_tests_child_imports_what_the_parent_imports(tmp_path, monkeypatch):
    """``test_gpu_trace``'s child processes keep the parent's PYTHONPATH behind this ktui: on the H200 CuTeDSL comes
    from a carried site folder on PYTHONPATH (2026-12-04: "No module named 'cutlass'" in the child)."""
    from . import test_gpu_trace

    site = tmp_path / "site"
    site.mkdir()
    (site / "carried_only_here.py").write_text("WHERE = __file__\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    out = test_gpu_trace._run(
        "import json, carried_only_here, ktui\n"
        "print(json.dumps({'site': carried_only_here.WHERE, 'ktui': ktui.__file__}))\n",
        tmp_path,
    )
    assert Path(out["site"]).parent == site and Path(out["ktui"]).parents[1] == ROOT
