"""The Context tab (issue 13): search the context index as you type, open a hit at its line, and look the SASS
instruction under the cursor up in the PTX ISA (``ktui.context.isa``)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Input, OptionList, TabbedContent, TextArea

from ktui.context.isa import SASS_TO_PTX, isa_query
from ktui.tui.app import KtuiApp
from ktui.tui.context_panel import ContextPanel

PTX_PAGE = """<html><head><title>PTX ISA 8.7</title></head><body>
<p>Parallel Thread Execution ISA Version 8.7</p>
<h2 id="data-movement-and-conversion-instructions-ld">9.7.9.8. Data Movement and Conversion Instructions: ld</h2>
<p>ld: Load a register variable from an addressable state space variable.</p>
<p>Syntax</p><pre>ld{.weak}{.ss}{.cop}{.level::cache_hint}{.vec}.type d, [a];
.ss = { .const, .global, .local, .param, .shared{::cta, ::cluster} };</pre>
<p>Target ISA Notes: ld.global.nc requires sm_32 or higher.</p>
<h2 id="data-movement-and-conversion-instructions-cp-async-bulk">9.7.9.25.4. Data Movement and Conversion
Instructions: cp.async.bulk</h2>
<p>cp.async.bulk: Initiates an asynchronous copy operation from one state space to another; ld is not used.</p>
<pre>cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dstMem], [srcMem], size, [mbar];</pre>
<p>Target ISA Notes: requires sm_90 or higher.</p>
</body></html>
"""

GUIDE = "# Copies\n\nSome text.\n\n## make_tiled_copy\n\nBuild a tiled copy from an atom and layouts.\n"


@pytest.mark.parametrize(
    "line, want",
    [
        ("/*0080*/  @P0 LDG.E.128 R4, [R2.64] ;", "ld"),
        ("STG.E desc[UR4][R2.64], R5 ;", "st"),
        ("MUFU.EX2 R3, R2 ;", "ex2"),
        ("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;", "wgmma.mma_async"),
        ("UTMALDG.2D [UR8], [UR4] ;", "cp.async.bulk.tensor"),
        ("S2R R0, SR_TID.X ;", "S2R"),
        ("ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];", "ld"),
        ("@%p1 bra $L__BB0_2;", "bra"),
        (
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile [%r1], [%rd2, {%r3, %r4}], [%r5];",
            "cp.async.bulk.tensor",
        ),
        ("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {...};", "wgmma.mma_async"),
        ("$L__BB0_2:", ""),
        ("// a comment", ""),
        (".reg .b32 %r<10>;", ""),
    ],
)
def test_an_instruction_of_a_dump_names_its_ptx_isa_section(line, want):
    assert isa_query(line) == want


def test_every_sass_opcode_maps_to_a_lower_case_ptx_name():
    assert all(v == v.lower() and v for v in SASS_TO_PTX.values())


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def ctx_ws(make_ws, monkeypatch):
    monkeypatch.setenv("KTUI_CONTEXT_PACKAGES", "")  # the workspace's own sources only: a fast index
    ws = make_ws(["vector_add"])
    (ws.root / "context" / "notes").mkdir(parents=True)
    (ws.root / "context" / "notes" / "guide.md").write_text(GUIDE)
    (ws.root / "context" / "ptx").mkdir()
    (ws.root / "context" / "ptx" / "ptx-isa.html").write_text(PTX_PAGE)
    return ws


async def _wait_for(pilot, cond, what: str, tries: int = 200):
    for _ in range(tries):
        await pilot.pause(0.05)
        if cond():
            return
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.anyio
async def test_search_as_you_type_opens_the_hit_at_its_line(ctx_ws):
    app = KtuiApp(ctx_ws, start_session=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("8")
        assert app.query_one(TabbedContent).active == "tab-context"
        panel = app.query_one(ContextPanel)
        await _wait_for(pilot, lambda: panel._ready, "the index")
        assert app.focused is app.query_one("#context-query", Input)  # typing goes to the query, not to the app's keys
        await pilot.press(*"make_tiled_copy")
        hits = app.query_one("#context-hits", OptionList)
        await _wait_for(pilot, lambda: hits.option_count > 0, "hits")
        assert panel.hits[0].path == "context/notes/guide.md" and panel.hits[0].line == 5
        preview = app.query_one("#context-preview", TextArea)
        assert preview.border_title == "context/notes/guide.md:5#make_tiled_copy" or "guide.md:5" in str(
            preview.border_title
        )
        row = preview.cursor_location[0]
        assert preview.document.get_line(row) == "## make_tiled_copy"


@pytest.mark.anyio
async def test_i_on_a_sass_line_looks_its_instruction_up_in_the_ptx_isa(ctx_ws):
    app = KtuiApp(ctx_ws, start_session=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        asm = app.query_one("#asm", DataTable)
        asm.clear()
        asm.add_row("0000", "S2R R0, SR_TID.X ;", "", key="0")
        asm.add_row("0010", "@P0 LDG.E.128 R4, [R2.64] ;", "", key="1")
        asm.focus()
        asm.move_cursor(row=1)
        await pilot.press("i")
        assert app.query_one(TabbedContent).active == "tab-context"
        panel = app.query_one(ContextPanel)
        assert app.query_one("#context-query", Input).value == "ld" and panel.kind == "ptx"
        await _wait_for(pilot, lambda: bool(panel.hits), "ISA hits")
        first = panel.hits[0]
        assert first.path == "context/ptx/ptx-isa.html" and first.symbol == "ld", first
        assert first.anchor == "data-movement-and-conversion-instructions-ld"
        assert "Target ISA Notes" in app.query_one("#context-preview", TextArea).text


def test_citations_are_found_in_a_reply():
    from ktui.tui.chat import citations

    text = (
        "From `cutlass:cute/atom.py:1039` and context/ptx/ptx-isa.html:12#data-movement-ld, and again "
        "cutlass:cute/atom.py:1039; not a time 12:30 nor http://x.org:80."
    )
    assert citations(text) == ["cutlass:cute/atom.py:1039", "context/ptx/ptx-isa.html:12#data-movement-ld"]


@pytest.mark.anyio
async def test_a_citation_in_a_reply_opens_in_the_context_tab(ctx_ws):
    from textual.widgets import Static

    from ktui.tui.chat import ChatPane

    app = KtuiApp(ctx_ws, start_session=False)
    async with app.run_test(size=(120, 40)) as pilot:
        chat = app.query_one(ChatPane)
        await chat.delta("Use `make_tiled_copy` (context/notes/guide.md:5).")
        await chat.end_reply("usage")
        await pilot.pause()
        cites = [s for s in chat.query(".chat-cites").results(Static)]
        assert len(cites) == 1 and "app.open_citation('context/notes/guide.md:5')" in str(cites[0].content)
        app.action_open_citation("context/notes/guide.md:5")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "tab-context"
        preview = app.query_one("#context-preview", TextArea)
        assert preview.document.get_line(preview.cursor_location[0]) == "## make_tiled_copy"
        app.action_open_citation("nowhere/x.py:3")
        await pilot.pause()
        assert any("no such file" in n.message for n in app._notifications)


@pytest.mark.anyio
async def test_the_context_tab_answers_while_the_index_is_built_and_says_partial(ctx_ws, monkeypatch):
    """The update is held at the PTX page (``Gate``): the tab shows ``indexing N/M files``, keys still reach it (the
    event loop never waits for the build), a query answers from what is indexed and says partial; when the update
    ends the query is searched again and the answer is complete."""
    import re

    from textual.widgets import Static

    from ktui.context import index as I

    from .test_context_background import Gate

    gate = Gate("ptx-isa.html")
    monkeypatch.setattr(I, "chunk_file", gate.wrap(I.chunk_file))
    monkeypatch.setattr(I, "COMMIT_SECONDS", 0.0)
    app = KtuiApp(ctx_ws, start_session=False)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("8")
            panel = app.query_one(ContextPanel)
            status = app.query_one("#context-status", Static)
            await _wait_for(pilot, gate.reached.is_set, "the update to reach the PTX page")
            await _wait_for(pilot, lambda: "(context/ptx/)" in str(status.content), "the progress")
            assert re.fullmatch(r"indexing 1/\d+ files \(context/ptx/\)", str(status.content))
            await pilot.press(*"make_tiled_copy")
            await _wait_for(pilot, lambda: bool(panel.hits), "hits from what is indexed")
            assert panel.hits[0].path == "context/notes/guide.md" and panel.hits[0].line == 5
            assert panel.partial is not None and panel.partial.done == 1 and not panel._ready
            assert str(status.content).startswith("1 hits for 'make_tiled_copy' (partial: indexing 1/")
            gate.open()
            await _wait_for(pilot, lambda: panel._ready and panel.partial is None, "the complete answer")
            assert panel.hits[0].path == "context/notes/guide.md"
            text = str(status.content)
            assert text.startswith("1 hits for 'make_tiled_copy' · ") and "chunks indexed" in text
            assert "partial" not in text
    finally:
        gate.open()
