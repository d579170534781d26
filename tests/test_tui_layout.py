"""The main screen at the sizes terminals have: 80x24, 120x35 and 200x60. On a workspace with a stored softmax result
(20 specs: 14 of the reference and 6 fuzzed; built by hand, no kernel runs), Pilot tests count the Accuracy rows and
columns each size shows, the collapsed chat's one line, the chat key and the maximize key; snapshot tests draw the
screen at each size.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rich.cells import cell_len
from textual.geometry import Region
from textual.widgets import Input, TabbedContent

from ktui.agent.config import AgentConfig
from ktui.core.results import ErrorInfo, LadderResult, RungResult, Status
from ktui.core.store import ResultStore
from ktui.core.workspace import Workspace
from ktui.tui.app import KtuiApp
from ktui.tui.chat import ChatPane
from ktui.tui.widgets import AccuracyTable, KernelTree, LadderTable, accuracy_columns, accuracy_notes

from .conftest import ROOT
from .test_widgets import about_files

pytestmark = pytest.mark.anyio

SIZES = ((80, 24), (120, 35), (200, 60))
SIZE_IDS = [f"{w}x{h}" for w, h in SIZES]

# The figures of a real CPU run of kernels/softmax/v1.py (rounded): (rows, cols, dtype), max_abs_err, max_rel_err,
# psnr_db, worst index; fuzzed sizes last.
SOFTMAX_SPECS = (
    ((1, 1, "fp32"), 0.0, 0.0, float("inf"), [0, 0]),
    ((1, 129, "fp32"), 1.46e-07, 1.16e-06, 157.8, [0, 36]),
    ((7, 127, "fp32"), 2.16e-07, 1.19e-06, 158.3, [5, 50]),
    ((5, 257, "fp32"), 2.17e-07, 9.38e-07, 162.4, [1, 148]),
    ((3, 1025, "fp32"), 1.21e-07, 0.2256, 172.9, [1, 251]),
    ((2, 4099, "fp32"), 4.48e-08, 1.18e-06, 177.0, [1, 2183]),
    ((33, 64, "fp32"), 2.39e-07, 8.90e-07, 163.2, [6, 21]),
    ((1, 1, "bf16"), 0.0, 0.0, float("inf"), [0, 0]),
    ((1, 129, "bf16"), 2.94e-05, 0.00341, 57.6, [0, 72]),
    ((7, 127, "bf16"), 3.05e-05, 0.00377, 56.4, [5, 29]),
    ((5, 257, "bf16"), 1.52e-05, 0.00364, 59.3, [2, 95]),
    ((3, 1025, "bf16"), 3.79e-06, 0.00369, 57.9, [1, 2]),
    ((2, 4099, "bf16"), 9.53e-07, 0.00389, 56.5, [1, 4]),
    ((33, 64, "bf16"), 6.10e-05, 0.00388, 59.8, [2, 36]),
    ((128, 32, "bf16"), 0.00194, 0.00376, 74.5, [67, 8]),
    ((128, 64, "fp32"), 2.39e-07, 1.06e-06, 165.7, [6, 21]),
    ((1, 8195, "bf16"), 8.14e-05, 0.00195, 79.5, [0, 229]),
    ((128, 8, "fp32"), 8.94e-08, 6.29e-07, 157.3, [53, 7]),
    ((128, 7, "bf16"), 0.00193, 0.00380, 67.2, [92, 4]),
    ((4, 8195, "bf16"), 0.000485, 0.00385, 92.3, [1, 3706]),
)
REFERENCE_SPECS = 14


def softmax_specs(fail: str | None = None) -> list[dict]:
    """The 20 correctness specs of softmax v1; with ``fail`` a label, that spec failed on 3 unwritten elements."""
    out = []
    for i, ((rows, cols, dtype), max_abs, max_rel, psnr, worst) in enumerate(SOFTMAX_SPECS):
        fuzzed = i >= REFERENCE_SPECS
        label = f"{'fuzzed' if fuzzed else ''}({rows}, {cols}, {dtype})"
        bad = label == fail
        out.append(
            {
                "label": label,
                "spec": {"rows": rows, "cols": cols, "dtype": "float32" if dtype == "fp32" else "bfloat16"},
                "fuzzed": fuzzed,
                "ok": not bad,
                "seeds": [7, 8],
                "cases": 8,
                "worst_seed": 7,
                "worst_case": f"spec={label} seed=7",
                "reason": "3 elements unwritten (the output's last 3 columns of row 0)" if bad else "",
                "failed_cases": [f"spec={label} seed=7", f"spec={label} seed=8"] if bad else [],
                "max_abs_err": float("nan") if bad else max_abs,
                "max_rel_err": max_rel,
                "mse": max_abs**2 / 4,
                "rmse": max_abs / 2,
                "psnr_db": psnr,
                "cosine": 1.0 if dtype == "fp32" else 0.9999985,
                "nan_count": 0,
                "inf_count": 0,
                "unwritten": 3 if bad else 0,
                "worst_index": worst,
            }
        )
    return out


def softmax_result(version: str = "v1", fail: str | None = None) -> LadderResult:
    """softmax ``version`` as run on the CPU (the interpreter): compile, run, correctness ok (or failed on ``fail``),
    benchmark skipped, dumps ok. Fixed times, hashes and start time: the snapshots do not change between runs."""
    specs = softmax_specs(fail)
    if fail is None:
        corr = RungResult(
            "correctness",
            Status.OK,
            11.02,
            "worst=(7, 127, bf16) max_abs_err=3.05e-05 max_rel_err=0.00377 psnr_db=56.4 cosine=0.9999984 (159 cases)",
            {"specs": specs},
        )
    else:
        message = f"spec={fail} seed=7: 3 elements unwritten"
        corr = RungResult(
            "correctness",
            Status.FAILED,
            11.02,
            message,
            {"specs": specs},
            error=ErrorInfo("CorrectnessError", message),
        )
    rungs = [
        RungResult("compile", Status.OK, 2.26, "triton: softmax_kernel(w=4,s=3) [sm_90a]"),
        RungResult(
            "run",
            Status.OK,
            45.21,
            "159 cases ok on 20 specs, first 0.236 s, total 32.6 s; 19 distinct launches, 19 compiled for sm_90a",
        ),
        corr,
        RungResult("benchmark", Status.SKIPPED, 0.0, "timing under the Triton interpreter is not meaningful"),
        RungResult("dumps", Status.OK, 1.76, "softmax_kernel: 32 regs, 0 B local, 1040 B smem; LDG.128 18, STG.128 2"),
    ]
    return LadderResult(
        "softmax",
        version,
        f"kernels/softmax/{version}.py",
        {"type": "cpu", "name": "cpu", "interpreter": True},
        rungs,
        source_sha256="ab" * 32,
        reference_sha256="cd" * 32,
        started_at=0.0,
        seconds=60.3,
    )


def build_softmax_ws(root: Path, fail: str | None = None) -> Workspace:
    """At ``root``: the softmax reference and its versions v1 and v2; v1 with a stored result (ok, or failing on
    spec ``fail``), v2 never run."""
    (root / "references").mkdir(parents=True)
    shutil.copy(ROOT / "references/softmax.py", root / "references")
    shutil.copytree(ROOT / "kernels/softmax", root / "kernels/softmax")
    ws = Workspace(root)
    ResultStore(ws).save(about_files(ws, softmax_result("v1", fail)))
    return ws


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def softmax_ws(tmp_path) -> Workspace:
    return build_softmax_ws(tmp_path / "softmax-work")


def visible_rows(table: AccuracyTable) -> int:
    """How many of the table's rows its region shows (below its header), all of each."""
    return max(0, min(table.row_count, table.region.height - table.header_height))


def columns_fit(table: AccuracyTable) -> bool:
    """True when no column is cut: the columns' widths with their padding fit the table's content width (its
    vertical scrollbar, when the rows scroll, takes its cells)."""
    width = sum(c.get_render_width(table) for c in table.ordered_columns)
    return width <= table.scrollable_content_region.width and table.virtual_size.width <= table.size.width


@pytest.mark.parametrize(
    ("size", "rows", "columns"),
    [
        ((80, 24), 10, ["spec", "ok", "max_abs", "psnr_db"]),
        ((120, 35), 20, ["spec", "ok", "max_abs", "max_rel", "psnr_db", "cosine", "unwritten", "worst at"]),
        (
            (200, 60),
            20,
            [
                "spec",
                "ok",
                "max_abs",
                "max_rel",
                "psnr_db",
                "cosine",
                "mse",
                "rmse",
                "nan/inf",
                "unwritten",
                "worst at",
                "worst case",
            ],
        ),
    ],
    ids=SIZE_IDS,
)
async def test_the_accuracy_tab_shows_its_rows_and_uncut_columns_at_each_size(softmax_ws, size, rows, columns):
    """With no model the chat is one line: at 80x24 the Accuracy table shows 10 specs with the four columns that
    fit; at 120x35 all 20 (the 14 of the reference and the 6 fuzzed) with seven columns, none cut; at 200x60 every
    column."""
    app = KtuiApp(softmax_ws, start_session=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        table = app.query_one(AccuracyTable)
        assert table.row_count == 20
        assert visible_rows(table) == rows
        assert table.shown_columns() == columns
        assert columns_fit(table)
        assert app.chat_collapsed
        assert app.query_one("#chat-bar").region.height == 1
        assert app.query_one(ChatPane).region.height == 0  # not displayed


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_the_layout_classes_follow_the_terminal(softmax_ws, size):
    """The screen's breakpoint classes (app.tcss keys its rules to them) and the tree's width at each size."""
    app = KtuiApp(softmax_ws, start_session=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        w, h = size
        want = {
            (80, 24): ("-narrow", "-short", 22),
            (120, 35): ("-medium", "-tall", 26),
            (200, 60): ("-wide", "-tall", 30),
        }
        width_class, height_class, left = want[size]
        assert app.screen.has_class(width_class) and app.screen.has_class(height_class)
        assert app.query_one("#left").region.width == left
        assert app.query_one("#main").region.height == h - 2  # the header and the footer
        ladder = app.query_one(LadderTable)
        assert ladder.region.height == 8  # five rungs, their header, the border: nothing cut
        await pilot.resize_terminal(200, 60) if size != (200, 60) else await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert app.screen.has_class("-wide" if size != (200, 60) else "-narrow")


async def test_the_columns_come_back_when_the_terminal_widens(softmax_ws):
    app = KtuiApp(softmax_ws, start_session=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(AccuracyTable)
        table.move_cursor(row=5)
        assert "cosine" not in table.shown_columns()
        await pilot.resize_terminal(200, 60)
        await pilot.pause()
        assert len(table.shown_columns()) == 12 and columns_fit(table)
        assert str(table.get_cell("(2, 4099, fp32)", "rmse")) == "2.24e-08"
        assert table.cursor_row == 5  # the cursor stays on its spec
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert table.shown_columns() == ["spec", "ok", "max_abs", "psnr_db"] and columns_fit(table)


async def test_the_chat_key_collapses_and_opens_the_chat(softmax_ws):
    """ctrl+g opens the collapsed chat (no model) and collapses it again: the Accuracy table gets the rows back;
    c opens it and types there; the footer shows the key."""
    app = KtuiApp(softmax_ws, start_session=False)
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.pause()
        table, chat, bar = app.query_one(AccuracyTable), app.query_one(ChatPane), app.query_one("#chat-bar")
        assert "no model" in str(bar.render()) and "ctrl+g opens it" in str(bar.render())
        assert visible_rows(table) == 20
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert not app.chat_collapsed and chat.region.height == 13  # 40% of the 33 rows between header and footer
        # opened with its input focused: what is typed next goes to the agent (new-user trial 32, F5: a question's
        # "a" queued every version)
        assert isinstance(app.focused, Input) and app.focused.id == "chat-input", app.focused
        await pilot.press("a")
        assert app.focused.value == "a"  # typed, not the run-all key
        app.focused.value = ""
        assert bar.region.height == 0
        assert visible_rows(table) == 9  # 33 rows less the ladder (8), the chat, the tab strip (2), the header
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert app.chat_collapsed and chat.region.height == 0 and visible_rows(table) == 20
        await pilot.press("c")
        await pilot.pause()
        assert not app.chat_collapsed and isinstance(app.focused, Input)
        await pilot.press("ctrl+g")  # from inside the chat: it collapses and the tree takes the keys
        await pilot.pause()
        assert app.chat_collapsed and isinstance(app.focused, KernelTree)
        shown = {b.binding.key: b.binding.description for b in app.screen.active_bindings.values() if b.binding.show}
        assert shown.get("ctrl+g") == "Chat pane" and shown.get("m") == "Maximize"
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Show/hide chat", "Maximize panel"} <= titles


async def test_a_write_waiting_for_approval_opens_the_collapsed_chat(softmax_ws):
    """The agent asks before a write while the chat is a bar: the chat opens and its y/n bar takes the keys."""
    from ktui.agent.events import ApprovalRequest, ChatMessage
    from ktui.tui.chat import ApprovalBar
    from ktui.tui.messages import CoreEvent

    app = KtuiApp(softmax_ws, start_session=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.post_message(CoreEvent(ChatMessage(role="user", text="hello")))
        await pilot.pause()
        assert app.chat_collapsed  # a message alone leaves it closed
        request = ApprovalRequest(request_id=4, path="kernels/softmax/v3.py", diff="+x\n", new_file=True)
        app.post_message(CoreEvent(request))
        await pilot.pause(0.2)
        assert not app.chat_collapsed and app.query_one(ChatPane).region.height == 8
        assert isinstance(app.focused, ApprovalBar)


async def test_with_a_model_the_chat_starts_open(softmax_ws):
    config = AgentConfig(model="openai/scripted")
    app = KtuiApp(softmax_ws, start_session=False, agent_config=config)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not app.chat_collapsed
        assert app.query_one(ChatPane).region.height == 8  # short terminal: 8 rows, not 40%
        assert visible_rows(app.query_one(AccuracyTable)) == 3


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_the_maximize_key_gives_the_result_tabs_the_screen(softmax_ws, size):
    """m: the result tabs take the whole screen but the footer, their table takes the keys; m again (or esc)
    gives the layout back and the focus to the tree."""
    app = KtuiApp(softmax_ws, start_session=False)
    w, h = size
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        tabs, table = app.query_one(TabbedContent), app.query_one(AccuracyTable)
        assert isinstance(app.focused, KernelTree)
        await pilot.press("m")
        await pilot.pause()
        assert app.screen.maximized is tabs
        assert tabs.region.width == w and tabs.region.height == h - 1  # all but the footer
        assert app.focused is table
        assert visible_rows(table) == min(20, h - 1 - 2 - 1)  # below the tab strip and the table's header
        assert columns_fit(table)
        await pilot.press("m")
        await pilot.pause()
        assert app.screen.maximized is None and isinstance(app.focused, KernelTree)
        await pilot.press("m")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen.maximized is None and isinstance(app.focused, KernelTree)


async def test_the_maximize_key_in_the_chat_maximizes_the_chat(softmax_ws):
    app = KtuiApp(softmax_ws, start_session=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        app.action_toggle_maximize()  # (m itself types into the chat line)
        await pilot.pause()
        chat = app.query_one(ChatPane)
        assert app.screen.maximized is chat and chat.region.height == 23
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen.maximized is None and isinstance(app.focused, Input)


async def test_a_failing_spec_is_explained_in_wrapped_notes_under_the_table(tmp_path):
    """A spec that failed on unwritten elements: the unwritten column ranks above the figures (it says why), and
    the note under the table gives the reason, whole, wrapped to the pane's width."""
    ws = build_softmax_ws(tmp_path / "softmax-work", fail="(3, 1025, bf16)")
    app = KtuiApp(ws, start_session=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(AccuracyTable)
        assert "unwritten" in table.shown_columns() and columns_fit(table)
        assert str(table.get_cell("(3, 1025, bf16)", "unwritten")) == "3"
        notes = app.query_one("#accuracy-notes")
        assert notes.display and notes.region.height >= 2  # wrapped on two or more lines
        drawn = notes.render_lines(Region(0, 0, notes.region.width, notes.region.height))  # its border, its text
        lines = [strip.text for strip in drawn][1:]
        assert all(cell_len(line) <= notes.region.width for line in lines)
        flat = " ".join(" ".join(lines).split())
        want = "✗ (3, 1025, bf16): 3 elements unwritten (the output's last 3 columns of row 0) (2 of 8 cases failed)"
        assert want in flat
        assert visible_rows(table) >= 3


def test_accuracy_columns_drop_the_least_telling_first():
    specs = softmax_specs()
    every = [name for name, _ in accuracy_columns(specs, 500)]
    assert len(every) == 12
    assert [name for name, _ in accuracy_columns(specs, 0)] == every  # not laid out yet: all
    assert [name for name, _ in accuracy_columns(specs, 1)] == ["spec", "ok"]
    drops = [set(every) - {n for n, _ in accuracy_columns(specs, w)} for w in range(140, 30, -1)]
    order: list[str] = []
    for dropped in drops:
        order += sorted(dropped - set(order))
    assert order == [
        "worst case",
        "mse",
        "rmse",
        "nan/inf",
        "unwritten",
        "worst at",
        "cosine",
        "max_rel",
        "psnr_db",
        "max_abs",
    ]
    failing = softmax_specs(fail="(1, 1, bf16)")
    kept = [name for name, _ in accuracy_columns(failing, 70)]
    assert kept == ["spec", "ok", "max_abs", "max_rel", "psnr_db", "unwritten"]  # unwritten before cosine


def test_a_long_spec_label_is_cut_before_the_last_figures_go():
    """New-user trial 28, F4: at 80x24 a 35-cell fuzzed label (``fuzzed(1539, 1665, 64, fp16, False)``) kept its
    width and the Accuracy tab showed spec, ok and nan/inf only. The spec column is cut (to 16 cells, "…" last)
    before max_abs and psnr_db go."""
    from ktui.tui.widgets import SPEC_MIN, AccuracyTable

    specs = [dict(s, label=s["label"].replace(")", ", fp16, False, 1539)")) for s in softmax_specs()]
    assert max(len(s["label"]) for s in specs) >= 34
    cols = dict(accuracy_columns(specs, 60))
    assert "max_abs" in cols and "psnr_db" in cols, cols
    assert cols["spec"] is not None and SPEC_MIN <= cols["spec"] < 34, cols
    assert dict(accuracy_columns(specs, 500))["spec"] is None  # wide: every label whole
    cells = AccuracyTable._cells(specs[-1], ["spec", "ok"], 16)
    assert len(cells[0]) == 16 and cells[0].endswith("…"), cells


def test_a_small_cosine_keeps_its_exponent_in_the_accuracy_column():
    """New-user trial 30, F3: a cosine of 1.95e-06 was drawn ``1.954714e`` (its 7 digits cut by the 9-cell column),
    reading as 1.95. The cell keeps fewer digits and its exponent; a near-1 cosine keeps its 7."""
    from ktui.tui.widgets import ACC_WIDTH, AccuracyTable

    spec = dict(softmax_specs()[0], cosine=1.9547136902473052e-06)
    (cell,) = AccuracyTable._cells(spec, ["cosine"])
    assert cell == "1.955e-06" and len(cell) <= ACC_WIDTH["cosine"], cell
    (cell,) = AccuracyTable._cells(dict(spec, cosine=0.99999871), ["cosine"])
    assert cell == "0.9999987", cell


def test_accuracy_notes_are_empty_when_every_spec_passed():
    assert accuracy_notes(softmax_result()).plain == ""
    assert accuracy_notes(None).plain == ""
    text = accuracy_notes(softmax_result(fail="(1, 1, bf16)")).plain
    assert text.startswith("✗ (1, 1, bf16): 3 elements unwritten") and "worst: spec=(1, 1, bf16) seed=7" in text


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_main_screen_snapshot_at_each_size(tmp_path, snap_compare, size):
    """What you should see: the tree (softmax: v1 passing, v2 not run), the ladder's five rungs, and the Accuracy
    table of v1, whose columns are whole (at 80x24 spec, ok, max_abs, psnr_db; at 120x35 seven; at 200x60 all
    eleven) and whose 20 specs are all shown from 120x35 up; the chat is one line saying no model is configured and
    that ctrl+g opens it; the footer names the maximize and chat keys."""
    ws = build_softmax_ws(tmp_path / "softmax-work")
    assert snap_compare(KtuiApp(ws, start_session=False), terminal_size=size)


async def test_question_mark_shows_the_keys_and_an_80_column_footer_shows_the_everyday_keys(softmax_ws):
    """A new user pressed ? for help and got nothing, and at 80 x 24 the footer never showed e, x or q."""
    from textual.widgets import Footer, Static

    from ktui.tui.keys import KeysPanel, keys_table

    app = KtuiApp(softmax_ws, start_session=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert len(app.screen.query(KeysPanel)) == 1
        # ktui's own keys first, in view at 80 x 24 (Textual's panel listed the tree's: none of ktui's fitted)
        panel = app.screen.query_one(KeysPanel)
        table = keys_table(app.get_key_display)  # what the panel's Static draws
        assert panel.query_one(Static).region.height >= len(table.rows)
        keys = [str(c) for c in table.columns[0]._cells]
        helps = [str(c) for c in table.columns[1]._cells]
        assert keys[:2] == ["?", "r"] and helps[keys.index("x")].startswith("Cancel the running ladder")
        assert max(keys.index(k) for k in ("x", "e", "p", "t", "b", "s", "1-8")) < panel.region.height - 1
        assert panel.region.width >= 30 and panel.region.right == 80
        await pilot.press("question_mark")
        await pilot.pause()
        assert len(app.screen.query(KeysPanel)) == 0
        footer = app.query_one(Footer)
        shown = [
            str(k.render()) for k in footer.query("FooterKey") if k.region.right <= app.size.width and k.region.width
        ]
        text = " ".join(shown)
        for label in ("Keys", "Rerun", "Edit", "New version", "Quit"):
            assert label in text, text


def test_every_key_has_a_short_line_in_the_keys_panel():
    from ktui.tui.keys import KEYS, SHORT_HELP

    assert {action for _, action, *_ in KEYS} == set(SHORT_HELP)
    assert max(len(text) for text in SHORT_HELP.values()) <= 28
