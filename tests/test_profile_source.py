"""The profile you can steer, on the CPU: ``[profile]`` of ktui.toml and ``--ncu-args`` in ncu's command line, the
source page read and joined to the Python lines through the dumps' SASS, and the lines ktui prints of it.

``fixtures/ncu/constructed-add_kernel-source.csv`` follows the CSV that ``ncu --import R --csv --page source
--print-source sass`` prints (a ``"Kernel Name","<name>"`` line, then ``"Address","Source",`` and the source-level
metric columns, ``stall_<reason>`` and their ``(Not Issued)`` twins; one row per SASS instruction, its device
address and text; counts with thousands separators), as recorded from a real report of another program; its values
are made up for this 8-instruction kernel. ``benchmarks/h200.sh profile`` keeps a real H200 one
(``$OUT/profile_*.source.csv``).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ktui.core import inside, report
from ktui.core.inspect import ncu, ncusource
from ktui.core.ladder.config import ConfigError, load_profile, load_trace
from ktui.core.ladder.rungs import profile as profile_rung
from ktui.core.results import RungResult, Status
from ktui.core.workspace import KernelRef

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "ncu" / "constructed-add_kernel-source.csv"
SASS = """
.text.add_kernel:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_CTAID.X ;
        /*0020*/                   S2R R3, SR_TID.X ;
        /*0030*/              @!P0 LDG.E R4, desc[UR4][R2.64] ;
        /*0040*/              @!P0 LDG.E R5, desc[UR4][R6.64] ;
        /*0050*/                   FADD R7, R4, R5 ;
        /*0060*/              @!P0 STG.E desc[UR4][R8.64], R7 ;
        /*0070*/                   EXIT ;
"""
LINES = [None, 13, 13, 14, 15, 16, 16, 16]  # the dumps' line map of those instructions
SOURCE = "\n".join(f"# line {i}" for i in range(1, 13)) + (
    "\n    offs = pid * BLOCK + tl.arange(0, BLOCK)\n    a = tl.load(a_ptr + offs, mask=mask)\n"
    "    b = tl.load(b_ptr + offs, mask=mask)\n    tl.store(out_ptr + offs, a + b, mask=mask)\n"
)


def test_the_source_page_is_read_per_instruction():
    (page,) = ncusource.parse_source_page(FIXTURE.read_text())
    assert page.kernel == "add_kernel" and len(page.rows) == 8 and page.total_samples == 100
    ldg = page.rows[3]
    assert (ldg.offset, ldg.opcode, ldg.samples, ldg.not_issued, ldg.executed) == (0x30, "LDG.E", 40, 38, 1024)
    assert ldg.stalls == {"lg": 8, "long_sb": 30, "selected": 2} and ldg.threads_executed == 32768
    assert page.rows[-1].opcode == "EXIT"


def test_rows_join_the_python_lines_only_when_the_build_is_the_same():
    (page,) = ncusource.parse_source_page(FIXTURE.read_text())
    from ktui.core.inspect import sass

    (func,) = sass.parse(SASS)
    ops = [(i.addr, i.base) for i in func.instrs]
    assert ncusource.match(page, ops) and not ncusource.match(page, ops[:-1])
    hot = ncusource.by_line(page, {16 * i: line for i, line in enumerate(LINES)}, SOURCE.splitlines())
    assert [(h["line"], h["samples"], h["instructions"]) for h in hot] == [
        (14, 40, 1),
        (15, 35, 1),
        (16, 21, 3),
        (0, 2, 1),
        (13, 2, 2),
    ]
    assert hot[0]["text"] == "a = tl.load(a_ptr + offs, mask=mask)" and hot[0]["pct"] == 40.0
    assert hot[2]["stalls"] == [["lg", 9.0], ["drain", 7.0], ["long_sb", 5.0]]
    assert hot[0]["executed"] == 1024


def workspace(tmp_path: Path, sass_text: str = SASS) -> SimpleNamespace:
    sha = "ab" * 32
    dumps = tmp_path / ".ktui" / "dumps" / "vector_add" / f"v1-{sha[:12]}"
    dumps.mkdir(parents=True)
    (dumps / "0-add_kernel.sass").write_text(sass_text)
    (dumps / "0-add_kernel.linemap.json").write_text(json.dumps({"lines": {}, "instrs": LINES}))
    snap = tmp_path / "snap.py"
    snap.write_text(SOURCE)
    return SimpleNamespace(
        ws=SimpleNamespace(root=tmp_path),
        state_rel=Path(".ktui"),
        kernel=KernelRef("vector_add", "v1", tmp_path),
        sha=sha,
        kernel_snap=snap,
    )


def test_the_profile_rung_keeps_the_joined_page_and_its_hottest_lines(tmp_path):
    ctx = workspace(tmp_path)
    dest = tmp_path / "v1.source.json"
    src = profile_rung.source_page(ctx, FIXTURE.read_text(), dest)
    assert src["file"] == "v1.source.json"
    (k,) = src["kernels"]
    assert k["kernel"] == "add_kernel" and k["matched"] and k["total_samples"] == 100
    assert [h["line"] for h in k["hot_lines"]] == [14, 15, 16, 13]  # line 0 (no line info) is left out
    saved = json.loads(dest.read_text())["kernels"][0]
    assert saved["dumps_sass"].endswith("0-add_kernel.sass") and len(saved["rows"]) == 8
    assert saved["rows"][3]["stalls"] == {"long_sb": 30, "lg": 8, "selected": 2}
    r = RungResult("profile", Status.OK, summary="add_kernel: 12 us", figures={"source": src})
    lines = report.inside_lines(r)
    assert lines[0] == "    add_kernel: hottest lines by warp stall samples (100 in all):"
    assert lines[1] == (
        "      line   14  40.0%  a = tl.load(a_ptr + offs, mask=mask)  [long_sb 75%, lg 20%, selected 5%]  "
        "1,024 executed, 1 SASS"
    )


def test_another_build_keeps_its_samples_per_instruction_without_lines(tmp_path):
    ctx = workspace(tmp_path, SASS.replace("FADD R7, R4, R5", "FMUL R7, R4, R5"))
    src = profile_rung.source_page(ctx, FIXTURE.read_text(), tmp_path / "s.json")
    (k,) = src["kernels"]
    assert not k["matched"] and k["hot_lines"] == []
    assert inside.profile_source_lines({"source": src})[0] == (
        "    add_kernel: 100 stall samples, per SASS instruction only (not the dumps' build)"
    )


def test_profile_and_trace_settings_from_ktui_toml(tmp_path):
    assert load_profile(tmp_path) == profile_rung_config()
    (tmp_path / "ktui.toml").write_text(
        '[profile]\nset = "full"\nsections = ["MemoryWorkloadAnalysis_Chart"]\nmetrics = ["smsp__inst_executed.sum"]\n'
        'args = ["--cache-control", "none"]\n[trace]\ntracer = "proton"\nbuffer_mib = 64\n'
    )
    cfg = load_profile(tmp_path)
    assert (cfg.set, cfg.sections, cfg.metrics, cfg.args) == (
        "full",
        ("MemoryWorkloadAnalysis_Chart",),
        ("smsp__inst_executed.sum",),
        ("--cache-control", "none"),
    )
    t = load_trace(tmp_path)
    assert (t.tracer, t.buffer_mib, t.reps) == ("proton", 64, 30)
    assert load_trace(tmp_path, tracer="ktui").tracer == "ktui"
    (tmp_path / "ktui.toml").write_text('[profile]\nsection = ["x"]\n')
    with pytest.raises(ConfigError, match=r"ktui.toml \[profile\]: unknown key\(s\) section"):
        load_profile(tmp_path)
    (tmp_path / "ktui.toml").write_text('[profile]\nmetrics = "a,b"\n')
    with pytest.raises(ConfigError, match="metrics must be a list of strings"):
        load_profile(tmp_path)


def profile_rung_config():
    from ktui.core.ladder.config import ProfileConfig

    return ProfileConfig()


def test_ncu_is_asked_for_the_source_page_and_what_the_user_steers(tmp_path):
    cmd = ncu.profile_command(
        "ncu",
        tmp_path / "r",
        ["python", "-m", "t"],
        sections=("SourceCounters", "Nvlink"),
        metrics=("smsp__inst_executed.sum",),
        ncu_set="full",
        extra=("--launch-count", "1"),
    )
    assert cmd[cmd.index("--set") + 1] == "full" and cmd.count("--section") == len(ncu.SECTIONS) + 3
    assert cmd.count("SourceCounters") == 1 and "WarpStateStats" in cmd and "Nvlink" in cmd
    assert cmd[cmd.index("--metrics") + 1].endswith(",smsp__inst_executed.sum")
    assert cmd[cmd.index("--import-source") + 1] == "yes"
    assert cmd[-5:] == ["--launch-count", "1", "python", "-m", "t"]  # the user's arguments last before the target
    assert ncu.export_command("ncu", tmp_path / "r.ncu-rep", "source")[-4:] == [
        "--page",
        "source",
        "--print-source",
        "sass",
    ]
    assert profile_rung._asked("full", ("A",), ("m1", "m2"), ("-x",)) == [
        "--set",
        "full",
        "--section",
        "A",
        "--metrics",
        "m1,m2",
        "-x",
    ]
