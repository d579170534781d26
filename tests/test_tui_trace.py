"""What the TUI draws of a trace and of a profile's source page: the Profile tab's timeline (one row per SM, a
block per cell in its region's colour) and the SASS tab's stall columns beside each instruction and line. Hand-made
results from the same fixtures as the rungs' own tests; no worker process starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import DataTable

from ktui.core.ladder.rungs import profile as profile_rung
from ktui.core.ladder.rungs import trace as trace_rung
from ktui.core.results import LadderResult, RungResult, Status
from ktui.tui.inside import REGION_COLOURS, SourceSass, TraceView, trace_text

from .test_profile_source import FIXTURE, SASS, SOURCE, workspace
from .test_trace_figures import buffer, two_region_marks
from .test_trace_rung import write_run
from .test_widgets import One

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def traced(tmp_path: Path) -> RungResult:
    out = tmp_path / "t"
    out.mkdir()
    (out / "0-k.ktrace").write_bytes(buffer(two_region_marks()))
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
            }
        ],
    )
    return trace_rung.fold(doc, out, Path("t"), {"n": 4}, None)


def test_the_timeline_is_drawn_in_the_regions_colours(tmp_path):
    r = traced(tmp_path)
    text = trace_text(r.figures)
    plain = text.plain
    assert "main" in plain and "critical path: SM 0" in plain and "untraced 200 us, traced 210 us" in plain
    rows = r.figures["kernels"][0]["timeline"]["rows"]
    sm0 = next(ln for ln in plain.splitlines() if ln.strip().startswith("SM 0 "))
    blocks = sm0.split("SM 0 ", 1)[1]
    assert len(blocks) == len(rows[0]["cells"]) and set(blocks) <= {"\u2588", "\u2591", " "}
    start = plain.index(sm0) + len(sm0) - len(blocks)
    styles = [
        str(span.style)
        for span in text.spans
        if start <= span.start < start + len(blocks) and plain[span.start] == "\u2588"
    ]
    a, b = rows[0]["cells"].count("A"), rows[0]["cells"].count("B")
    assert styles.count(REGION_COLOURS[0]) == a and styles.count(REGION_COLOURS[1]) == b and a + b > 0
    assert "\u2588 A main  \u2588 B epilogue  \u2591 in no region" in plain


async def test_trace_view_says_why_there_is_no_trace(tmp_path):
    view = TraceView()
    async with One(view).run_test(size=(120, 40)) as pilot:
        view.show(None)
        await pilot.pause()
        assert str(view.render()).startswith("not traced: press t")
        skipped = RungResult("trace", Status.SKIPPED, summary="tracing runs the kernel on a GPU: no trace on cpu")
        view.show(LadderResult("p", "v1", "kernels/p/v1.py", {"type": "cpu"}, rungs=[skipped]))
        await pilot.pause()
        assert str(view.render()) == "trace skipped: tracing runs the kernel on a GPU: no trace on cpu"
        view.show(LadderResult("p", "v1", "kernels/p/v1.py", {"type": "cuda"}, rungs=[traced(tmp_path)]))
        await pilot.pause()
        assert "timeline by SM" in str(view.render())


async def test_the_sass_tab_shows_stalls_beside_instructions_and_lines(tmp_path):
    ctx = workspace(tmp_path)
    (tmp_path / "kernels" / "vector_add").mkdir(parents=True)
    (tmp_path / "references").mkdir()
    (tmp_path / "kernels" / "vector_add" / "v1.py").write_text(SOURCE)
    src = profile_rung.source_page(ctx, FIXTURE.read_text(), tmp_path / ".ktui" / "v1.source.json")
    folder = f".ktui/dumps/vector_add/v1-{ctx.sha[:12]}"
    dumps = RungResult(
        "dumps",
        Status.OK,
        figures={
            "kernels": [
                {"files": {"sass": f"{folder}/0-add_kernel.sass", "linemap": f"{folder}/0-add_kernel.linemap.json"}}
            ]
        },
    )
    prof = RungResult("profile", Status.OK, figures={"source": src})
    result = LadderResult(
        "vector_add", "v1", "kernels/vector_add/v1.py", {"type": "cuda"}, rungs=[dumps, prof], source_sha256=ctx.sha
    )
    view = SourceSass()
    async with One(view).run_test(size=(160, 40)) as pilot:
        view.show(tmp_path, result)
        await pilot.pause()
        srct, asm = view.query_one("#src", DataTable), view.query_one("#asm", DataTable)
        assert asm.row_count == 8 and srct.row_count == len(SOURCE.splitlines())
        ldg = asm.get_row_at(3)
        assert str(ldg[1]).startswith("@!P0 LDG.E R4") and str(ldg[2]) == "14"
        assert (str(ldg[3]), str(ldg[4])) == ("40", "long_sb 75%")
        assert str(asm.get_row_at(1)[3]) == "1.0" and str(asm.get_row_at(1)[4]) == "selected 100%"
        assert str(srct.get_row_at(13)[2]) == "40" and str(srct.get_row_at(15)[2]) == "21"
        assert str(srct.get_row_at(0)[2]) == ""
        view.show(
            tmp_path,
            LadderResult(
                "vector_add", "v1", "kernels/vector_add/v1.py", {"type": "cuda"}, rungs=[dumps], source_sha256=ctx.sha
            ),
        )
        await pilot.pause()
        assert str(asm.get_row_at(3)[3]) == "" and str(asm.get_row_at(3)[4]) == ""  # no profile: no columns
    assert json.loads((tmp_path / ".ktui" / "v1.source.json").read_text())["kernels"][0]["dumps_sass"] == (
        f"{folder}/0-add_kernel.sass"
    )
    assert SASS  # the fixture's SASS is what the dumps hold
