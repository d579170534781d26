"""The IR tab (``ktui.tui.ir``): every stage the dumps rung kept (TTIR, TTGIR, LLIR, PTX, SASS) beside the source,
on a workspace whose dumps the real dumps rung made on the CPU (compiled for sm_90a); and the line info of each
stage (``ktui.core.inspect.irlines``) on real dumps and on hand-written ones."""

from __future__ import annotations

import dataclasses
import shutil
import time

import pytest
from textual.widgets import DataTable, Select, Tabs

from ktui.core.inspect import irlines
from ktui.core.ladder import Ladder, LadderOptions
from ktui.core.store import ResultStore, Snapshots
from ktui.core.workspace import Workspace
from ktui.tui import ir as ir_module
from ktui.tui.app import KtuiApp
from ktui.tui.ir import IRView
from ktui.tui.keys import TABS

from .conftest import ROOT


def _line_of(path, text: str) -> int:
    """The 1-based number of the first line of ``path`` containing ``text`` (the tests follow the example's edits)."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


LOAD_A = _line_of(ROOT / "kernels/vector_add/v1.py", "a = tl.load(a_ptr")
STORE = _line_of(ROOT / "kernels/vector_add/v1.py", "tl.store(out_ptr + offs, a + b")
JIT = _line_of(ROOT / "kernels/vector_add/v1.py", "@triton.jit")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def dumped_ws(tmp_path_factory, cpu_pool) -> Workspace:
    """vector_add/v1 and v2 with stored results of the compile and dumps rungs (cross-compiled for sm_90a)."""
    root = tmp_path_factory.mktemp("irws")
    (root / "references").mkdir()
    (root / "kernels/vector_add").mkdir(parents=True)
    shutil.copy(ROOT / "references/vector_add.py", root / "references")
    for version in ("v1", "v2"):
        shutil.copy(ROOT / f"kernels/vector_add/{version}.py", root / "kernels/vector_add")
    ws = Workspace(root)
    ladder = Ladder(ws, cpu_pool, options=LadderOptions(rungs=("dumps",)), store=ResultStore(ws))
    for version in ("v1", "v2"):
        res = ladder.run(ws.kernel(root / f"kernels/vector_add/{version}.py"))
        files = res.rung("dumps").figures["kernels"][0]["files"]
        assert set(files) >= set(irlines.STAGES), files
    ladder.close()
    return ws


def stage_files(ws: Workspace) -> tuple[dict[str, str], str]:
    """The stored result's files by stage (relative to the workspace) and the source snapshot's path."""
    res = ResultStore(ws).load("vector_add", "v1")
    snap = Snapshots(ws).path_for("vector_add", "v1", res.source_sha256)
    return res.rung("dumps").figures["kernels"][0]["files"], str(snap)


async def wait_for(pilot, predicate, timeout: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


def loaded(view: IRView, stage: str):
    return lambda: view.stage == stage and view._loaded is not None and view._loaded.stage == stage


def ir_rows(view: IRView) -> list[str]:
    table = view.query_one("#ir-text", DataTable)
    return [str(table.get_row_at(i)[1]) for i in range(table.row_count)]


def test_the_ir_tab_has_the_next_number_key_and_the_others_keep_theirs():
    assert TABS[:7] == ("Accuracy", "Timings", "SASS", "Diff", "Profile", "Details", "IR")
    assert TABS[7:] == ("Context",)  # (issue 13: key 8)


@pytest.mark.anyio
async def test_ir_tab_lists_the_stages_and_shows_each_beside_the_source(dumped_ws):
    app = KtuiApp(dumped_ws, start_session=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        view = app.query_one(IRView)
        assert app.selected.key == "vector_add/v1"
        assert view._loaded is None and view.query_one("#ir-text", DataTable).row_count == 0  # hidden: nothing read
        await pilot.press("7")
        await wait_for(pilot, loaded(view, "ptx"), what="the PTX (the stage shown first)")
        tabs = view.query_one("#ir-stages", Tabs)
        shown = [t.id for t in tabs.query("Tab") if t.display]
        assert shown == ["ir-ttir", "ir-ttgir", "ir-llir", "ir-ptx", "ir-sass"] and tabs.active == "ir-ptx"
        assert view.stages() == ["ttir", "ttgir", "llir", "ptx", "sass"]
        assert not view.query_one("#ir-launch", Select).display  # one launch: no launch chooser
        rows = ir_rows(view)
        assert ".version" in "\n".join(rows) and ".target sm_90a" in rows
        assert "add_kernel · " in str(view.query_one("#ir-info").render())
        src = view.query_one("#ir-src", DataTable)
        assert "tl.load(a_ptr" in str(src.get_row(str(LOAD_A))[1])
        for stage, needle in (("ttgir", "ttg."), ("llir", "define"), ("ttir", "tt.load"), ("sass", "LDG")):
            view.choose(stage)
            await wait_for(pilot, loaded(view, stage), what=stage)
            assert needle in view.text_of_stage(), stage
            assert tabs.active == f"ir-{stage}"
        # LLIR is highlighted by rich's llvm lexer: its cells carry styles
        view.choose("llir")
        await wait_for(pilot, loaded(view, "llir"))
        table = view.query_one("#ir-text", DataTable)
        define = next(i for i, r in enumerate(ir_rows(view)) if r.startswith("define"))
        assert table.get_row_at(define)[1].spans
        # , and . step through the stages while the tab has the focus
        table.focus()
        await pilot.press("full_stop")
        await wait_for(pilot, loaded(view, "ptx"), what="the next stage")
        await pilot.press("comma")
        await pilot.press("comma")
        await wait_for(pilot, loaded(view, "ttgir"), what="two stages back")
        # clicking a stage's tab chooses it
        await pilot.click("#ir-sass")
        await wait_for(pilot, loaded(view, "sass"), what="the clicked stage")


@pytest.mark.anyio
async def test_moving_in_the_source_or_the_stage_moves_the_other(dumped_ws):
    app = KtuiApp(dumped_ws, start_session=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("7")
        view = app.query_one(IRView)
        await wait_for(pilot, loaded(view, "ptx"), what="the PTX")
        src, table = view.query_one("#ir-src", DataTable), view.query_one("#ir-text", DataTable)
        hits = view.rows_for_line(LOAD_A)
        assert hits and any("ld.global" in ir_rows(view)[r] for r in hits)
        src.move_cursor(row=src.get_row_index(str(LOAD_A)))
        await pilot.pause(0.2)
        assert table.cursor_row == table.get_row_index(str(hits[0]))  # source -> its first PTX line
        store_row = next(r for r, line in enumerate(ir_rows(view)) if "st.global" in line)
        assert view.line_of(store_row) == STORE
        table.move_cursor(row=table.get_row_index(str(store_row)))
        await pilot.pause(0.2)
        assert src.cursor_row == src.get_row_index(str(STORE))  # PTX -> the line it comes from


@pytest.mark.anyio
async def test_a_big_stage_draws_a_cap_then_every_line_on_e(dumped_ws, monkeypatch):
    monkeypatch.setattr(ir_module, "CAP", 10)
    monkeypatch.setattr(ir_module, "CHUNK", 7)
    app = KtuiApp(dumped_ws, start_session=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("7")
        view = app.query_one(IRView)
        await wait_for(pilot, loaded(view, "ptx"), what="the PTX")
        view.choose("llir")
        await wait_for(pilot, loaded(view, "llir"), what="the LLIR")
        total = len(view._loaded.lines)
        table = view.query_one("#ir-text", DataTable)
        assert total > 30 and table.row_count == 11 and view.more_lines() == total - 10
        assert ir_rows(view)[-1].startswith(f"… {total - 10} more lines")
        table.focus()
        await pilot.press("e")
        await wait_for(pilot, lambda: table.row_count == total, what="every line")
        assert view.more_lines() == 0 and "more lines" not in ir_rows(view)[-1]
        assert ir_rows(view)[-1] == view._loaded.lines[-1]


@pytest.mark.anyio
async def test_each_launch_has_its_own_stages(dumped_ws, tmp_path):
    """A second launch with only PTX and SASS (what CuTeDSL keeps): the launch chooser appears, and choosing it
    hides the Triton stages."""
    ws_root = tmp_path / "two"
    shutil.copytree(dumped_ws.root, ws_root)
    ws = Workspace(ws_root)
    store = ResultStore(ws)
    res = store.load("vector_add", "v1")
    dumps = res.rung("dumps")
    first = dumps.figures["kernels"][0]
    second = {**first, "kernel": "second_kernel", "files": {s: first["files"][s] for s in ("ptx", "sass")}}
    figures = {**dumps.figures, "kernels": [first, second]}
    res.rungs = [dataclasses.replace(r, figures=figures) if r.name == "dumps" else r for r in res.rungs]
    store.save(res)
    app = KtuiApp(ws, start_session=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("7")
        view = app.query_one(IRView)
        await wait_for(pilot, loaded(view, "ptx"), what="the PTX")
        launch = view.query_one("#ir-launch", Select)
        assert launch.display and launch.value == 0
        view.choose("ttgir")
        await wait_for(pilot, loaded(view, "ttgir"))
        launch.value = 1
        await wait_for(pilot, loaded(view, "ptx"), what="the second launch's PTX (it has no TTGIR)")
        assert view.stages() == ["ptx", "sass"]
        tabs = view.query_one("#ir-stages", Tabs)
        assert [t.id for t in tabs.query("Tab") if t.display] == ["ir-ptx", "ir-sass"]
        assert "second_kernel · " in str(view.query_one("#ir-info").render())


@pytest.mark.anyio
async def test_a_version_without_dumps_says_so(tmp_path):
    from .test_widgets import build_demo_ws

    app = KtuiApp(build_demo_ws(tmp_path / "demo"), start_session=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("7")
        await pilot.pause(0.3)
        view = app.query_one(IRView)
        src = view.query_one("#ir-src", DataTable)
        assert view.stage is None and str(src.get_row_at(0)[1]).startswith("no dumps yet")


# -- the line info of each stage ---------------------------------------------------------------------------------
def test_every_stage_of_a_real_dump_links_the_loads_line_to_its_loads(dumped_ws):
    files, source = stage_files(dumped_ws)
    load = {"ttir": "tt.load", "ttgir": "tt.load", "llir": "ld.global", "ptx": "ld.global", "sass": "LDG"}
    for stage in irlines.STAGES:
        text = (dumped_ws.root / files[stage]).read_text()
        per_line = irlines.source_lines(stage, text, source)
        lines = text.splitlines()
        assert len(per_line) == len(lines)
        linked = [lines[r] for r, line in enumerate(per_line) if line == LOAD_A]
        assert any(load[stage] in ln for ln in linked), (stage, linked)
        assert not any(load[stage] in ln for r, ln in enumerate(lines) if per_line[r] == STORE), stage
        assert set(filter(None, per_line)) <= set(range(JIT, STORE + 1)), stage  # add_kernel's lines


def test_mlir_locations_resolve_through_names_and_callsites():
    text = "\n".join(
        [
            '#loc = loc("/ws/.ktui/snapshots/p/v2-0123456789ab.py":9:1)',
            '#loc1 = loc("/lib/triton/language/standard.py":290:11)',
            '#loc2 = loc("/ws/.ktui/snapshots/p/v2-0123456789ab.py":20:15)',
            '#loc3 = loc("m"(#loc2))',
            "#loc4 = loc(callsite(#loc1 at #loc3))",
            "module {",
            "    %m = tt.reduce %x : f32 loc(#loc4)",
            '    %y = arith.addf %a, %b : f32 loc("/other/file.py":3:1)',
            '    %z = arith.mulf %a, %b : f32 loc("/ws/.ktui/snapshots/p/v2-0123456789ab.py":21:2)',
            "    tt.return loc(#loc)",
            "} loc(#loc)",
        ]
    )
    # another snapshot of the same content (Triton's cache) names the same lines
    got = irlines.mlir_lines(text, "/elsewhere/.ktui/snapshots/p/v7-0123456789ab.py")
    assert got == [None, None, None, None, None, None, 20, None, 21, 9, 9]
    assert irlines.mlir_lines(text, "/ws/kernels/p/other.py") == [None] * 11


def test_llvm_locations_follow_the_inlining_chain_to_the_source():
    text = "\n".join(
        [
            "define void @k(ptr %0) !dbg !4 {",
            "  %a = load float, ptr %0, !dbg !10",
            "  %b = fadd float %a, %a, !dbg !12",
            "  ret void",
            "}",
            '!1 = !DIFile(filename: "v1-0123456789ab.py", directory: "/ws/.ktui/snapshots/p")',
            '!2 = !DIFile(filename: "standard.py", directory: "/lib/triton/language")',
            '!4 = distinct !DISubprogram(name: "k", scope: !1, file: !1, line: 9, unit: !0)',
            '!5 = distinct !DISubprogram(name: "sum", scope: !2, file: !2, line: 280, unit: !0)',
            "!10 = !DILocation(line: 12, column: 5, scope: !4)",
            "!11 = !DILocation(line: 20, column: 15, scope: !4)",
            "!12 = !DILocation(line: 290, column: 11, scope: !5, inlinedAt: !11)",
        ]
    )
    got = irlines.llvm_lines(text, "/ws/.ktui/snapshots/p/v1-0123456789ab.py")
    assert got == [9, 12, 20, None, None] + [None] * 7


def test_ptx_locations_hold_until_the_next_and_resolve_inlined_ones():
    text = "\n".join(
        [
            ".visible .entry k(",
            ")",
            "{",
            "\t.loc\t1 12 5",
            "\tld.global.b32 %r1, [%rd1];",
            "\t.loc\t2 290 11, function_name $L__info_string0, inlined_at 1 20 15",
            "\tadd.f32 %r2, %r1, %r1;",
            "\t.loc\t2 196 12, function_name $L__info_string0, inlined_at 2 290 11",
            "\tshfl.sync.bfly.b32 %r3, %r2, 16, 31, -1;",
            "\t.loc\t1 0 0",
            "\tret;",
            "}",
            '\t.file\t1 "/ws/.ktui/snapshots/p" "v1-0123456789ab.py"',
            '\t.file\t2 "/lib/triton/language/standard.py"',
        ]
    )
    got = irlines.ptx_lines(text, "/ws/.ktui/snapshots/p/v1-0123456789ab.py")
    assert got == [None, None, None, 12, 12, 20, 20, 20, 20, None, None, None, None, None]


def test_sass_file_comments_hold_until_the_next_or_the_next_function():
    text = "\n".join(
        [
            "//--------------------- .text.k --------------------------",
            '\t//## File "/ws/.ktui/snapshots/p/v1-0123456789ab.py", line 12',
            "        /*0000*/                   LDG.E R2, desc[UR4][R2.64] ;",
            '\t//## File "/lib/triton/language/standard.py", line 290 inlined at '
            '"/ws/.ktui/snapshots/p/v1-0123456789ab.py", line 20',
            "        /*0010*/                   FADD R3, R2, R2 ;",
            '\t//## File "/lib/triton/language/standard.py", line 43',
            "        /*0020*/                   SHFL.BFLY PT, R4, R3, 0x10, 0x1f ;",
            "//--------------------- .text.k2 --------------------------",
            "        /*0000*/                   EXIT ;",
        ]
    )
    got = irlines.sass_lines(text, "/ws/.ktui/snapshots/p/v1-0123456789ab.py")
    assert got == [None, 12, 12, 20, 20, None, None, None, None]


def test_line_map_has_the_sass_tabs_shape():
    assert irlines.line_map([None, 3, 3, 5, None]) == {
        "lines": {"3": [1, 2], "5": [3]},
        "instrs": [None, 3, 3, 5, None],
    }
    assert irlines.source_lines("cubin", "a\nb", "x.py") == [None, None]
    assert irlines.same_source("/a/v1-0123456789ab.py", "/b/v9-0123456789ab.py")
    assert not irlines.same_source("/a/v1-0123456789ab.py", "/b/v1-ba9876543210x.py")
    assert not irlines.same_source("", "/b/v1.py")


# -- ktui diff --stage ---------------------------------------------------------------------------------------------
def test_diff_by_stage_compares_the_normalized_ptx_and_ttgir(dumped_ws):
    from ktui.core.inspect.diff import DiffError, compare_results, render

    store = ResultStore(dumped_ws)
    items = [
        (dumped_ws, dumped_ws.kernel(dumped_ws.root / f"kernels/vector_add/{v}.py"), store.load("vector_add", v))
        for v in ("v1", "v2")
    ]
    ptx = compare_results(items, stage="ptx")
    removed = [ln for ln in ptx.diff if ln.startswith("-") and not ln.startswith("---")]
    added = [ln for ln in ptx.diff if ln.startswith("+") and not ln.startswith("+++")]
    assert any("ld.global.b32" in ln for ln in removed) and any("ld.global.v4.b32" in ln for ln in added)
    assert not any(".loc" in ln or "%r1," in ln for ln in ptx.diff)  # line info and register numbers are gone
    assert ptx.to_json()["stage"] == "ptx" and "normalized PTX: " in render(ptx)
    ttgir = compare_results(items, stage="ttgir")
    assert any("sizePerThread = [4]" in ln for ln in ttgir.diff if ln.startswith("+"))
    assert not any("loc(" in ln for ln in ttgir.diff)  # the snapshot paths would differ on every line
    same = compare_results([items[0], items[0]], stage="llir")
    assert same.changed == 0 and len(same.a.normalized) > 10
    assert compare_results(items).to_json()["stage"] == "sass"  # the default is unchanged
    with pytest.raises(DiffError, match="vector_add/v1 has no cubin"):
        compare_results(items, stage="cubin")


def test_ktui_diff_stage_on_the_command_line(dumped_ws):
    import subprocess
    import sys
    from pathlib import Path

    exe = str(Path(sys.executable).with_name("ktui"))
    a, b = (str(dumped_ws.root / f"kernels/vector_add/{v}.py") for v in ("v1", "v2"))
    p = subprocess.run([exe, "diff", a, b, "--stage", "ptx"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "normalized PTX: " in p.stdout
    assert any(ln.startswith("+") and "ld.global.v4.b32" in ln for ln in p.stdout.splitlines())
    bad = subprocess.run([exe, "diff", a, b, "--stage", "cubin"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "invalid choice: 'cubin'" in bad.stderr
