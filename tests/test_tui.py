"""The TUI driven as a user drives it: Textual's Pilot presses keys while real files are saved and real workers run
the ladder on the CPU; and a snapshot of the main screen. The panels on hand-built states, without workers, are
in test_widgets.py."""

from __future__ import annotations

import hashlib
import time

import pytest

from ktui.core.ladder import LadderOptions
from ktui.core.session import Session
from ktui.tui.app import KtuiApp
from ktui.tui.chat import ChatPane
from ktui.tui.messages import CoreEvent
from ktui.tui.widgets import AccuracyTable, KernelTree, LadderTable, TimingsTable

from .conftest import ROOT
from .test_widgets import build_demo_ws, hand_result

LADDER_KINDS = ("LadderStarted", "RungStarted", "RungProgress", "RungFinished", "LadderFinished")

FAST = LadderOptions(seeds=1, timeouts={"compile": 120.0, "run": 180.0, "correctness": 180.0, "benchmark": 60.0})


async def wait_for(pilot, predicate, timeout: float = 90.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def demo_ws(tmp_path):
    return build_demo_ws(tmp_path / "demo")


@pytest.fixture
def session_ws(make_ws):
    ws = make_ws(
        ["vector_add"],
        {"vector_add/v1": ROOT / "kernels/vector_add/v1.py", "vector_add/v2": ROOT / "kernels/vector_add/v2.py"},
    )
    session = Session(ws, "cpu", options=FAST, debounce_s=0.05)
    session.start()
    for w in session.pool.workers:
        w.ensure_ready()
    yield ws, session
    session.stop()


def cell_text(table, row: str, col: str) -> str:
    return str(table.get_cell(row, col))


@pytest.mark.anyio
async def test_saving_a_file_reruns_its_ladder_and_the_tables_update(session_ws):
    ws, session = session_ws
    seen: list[CoreEvent] = []
    app = KtuiApp(ws, session=session)
    async with app.run_test(
        size=(100, 30),
        message_hook=lambda m: seen.append(m) if isinstance(m, CoreEvent) and m.event.kind in LADDER_KINDS else None,
    ) as pilot:
        await pilot.pause(0.3)
        ladder = app.query_one(LadderTable)
        assert app.selected.key == "vector_add/v1"
        assert cell_text(ladder, "compile", "status") == "-"  # never run in this workspace
        path = ws.root / "kernels/vector_add/v1.py"
        text = path.read_text() + "\n# saved by the test\n"
        path.write_text(text)
        await wait_for(
            pilot,
            lambda: (r := app.states["vector_add/v1"].result) is not None and r.source_sha256 == sha(text),
            what="the ladder after the save",
        )
        await pilot.pause(0.2)
        for rung in ("compile", "run", "correctness"):
            assert cell_text(ladder, rung, "status") == "ok"
        assert cell_text(ladder, "benchmark", "status") == "skipped"
        assert cell_text(ladder, "dumps", "status") == "ok"
        acc = app.query_one(AccuracyTable)
        specs = app.states["vector_add/v1"].result.rung("correctness").figures["specs"]
        assert acc.row_count == len(specs) and sum(not s["fuzzed"] for s in specs) == 7  # + this run's fuzzed sizes
        assert cell_text(acc, "(65537,)", "ok") == "ok"
        tree = app.query_one(KernelTree)
        assert "✓" in tree.label_of("vector_add/v1")
        assert "not run" in tree.label_of("vector_add/v2")
        timings = app.query_one(TimingsTable)
        assert timings.row_count == 2  # one row per version; the CPU has no times
        kinds = [type(m.event).__name__ for m in seen]
        assert kinds[0] == "LadderStarted" and kinds[-1] == "LadderFinished"
        assert kinds.count("RungFinished") == 5


@pytest.mark.anyio
async def test_two_quick_saves_run_the_latest_content(session_ws):
    ws, session = session_ws
    app = KtuiApp(ws, session=session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.3)
        path = ws.root / "kernels/vector_add/v2.py"
        good = path.read_text()
        wrong = good.replace("a + b", "a - b")
        assert wrong != good
        latest = good + "\n# the second save\n"
        path.write_text(wrong)
        path.write_text(latest)
        await wait_for(
            pilot,
            lambda: (r := app.states["vector_add/v2"].result) is not None and r.source_sha256 == sha(latest),
            what="the latest save's result",
        )
        res = app.states["vector_add/v2"].result
        assert res.ok, [r.line() for r in res.rungs]
        assert session.scheduler.wait_idle(30)


@pytest.mark.anyio
async def test_keys_select_versions_queue_a_rerun_and_copy_a_version(session_ws):
    ws, session = session_ws
    app = KtuiApp(ws, session=session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.3)
        assert app.selected.key == "vector_add/v1"
        await pilot.press("right_square_bracket")
        assert app.selected.key == "vector_add/v2"
        await pilot.press("left_square_bracket")
        assert app.selected.key == "vector_add/v1"
        await pilot.press("r")
        await wait_for(pilot, lambda: app.states["vector_add/v1"].result is not None, what="rerun")
        await pilot.press("n")
        assert (ws.root / "kernels/vector_add/v3.py").read_text() == (ws.root / "kernels/vector_add/v1.py").read_text()
        assert app.selected.key == "vector_add/v3"
        # the watcher runs the new file
        await wait_for(pilot, lambda: app.states["vector_add/v3"].result is not None, what="the new version")
        assert app.states["vector_add/v3"].result.ok
        assert session.scheduler.wait_idle(30)


def test_main_screen_snapshot(demo_ws, snap_compare):
    """What you should see at 100x30: the tree with v1 passing (1.00x), v2 failing correctness and v3 never run;
    v1 selected with its four rungs ok, its accuracy table per spec, and the chat collapsed to one line (no model
    is configured) that says ctrl+g opens it; the footer names the maximize (m) and chat (ctrl+g) keys."""
    assert snap_compare(KtuiApp(demo_ws, start_session=False), terminal_size=(100, 30))


@pytest.mark.anyio
async def test_every_action_is_in_the_command_palette(demo_ws):
    app = KtuiApp(demo_ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Rerun", "Run all versions", "Next version", "Previous version", "New version", "Quit"} <= titles
        footer_keys = {b.key for b in app.BINDINGS}
        assert {"r", "a", "right_square_bracket", "left_square_bracket", "n", "q"} <= footer_keys
        await pilot.press("right_square_bracket")
        assert app.selected.key == "vector_add/v2"


@pytest.mark.anyio
async def test_chat_streams_a_reply_into_the_pane(session_ws):
    import os

    from textual.widgets import Input, Markdown

    from ktui.agent.config import AgentConfig

    from .scripted_llm import Reply, ScriptedLLM

    ws, session = session_ws
    reply = "Use **128-bit loads**:\n\n```python\nBLOCK = 1024\n```\n"
    os.environ.setdefault("OPENAI_API_KEY", "scripted")
    with ScriptedLLM([Reply(reply, chunk=3, delay_s=0.005)]) as llm:
        config = AgentConfig(model="openai/scripted", api_base=llm.api_base, context_tokens=32768)
        app = KtuiApp(ws, session=session, agent_config=config)
        async with app.run_test(size=(100, 30)) as pilot:
            chat = app.query_one(ChatPane)
            await wait_for(pilot, lambda: chat.agent is not None, what="the agent")
            box = app.query_one("#chat-input", Input)
            box.focus()
            box.value = "how do I make v1 faster?"
            await pilot.press("enter")
            await wait_for(pilot, lambda: "session" in str(chat.border_subtitle), what="the reply")
            await pilot.pause(0.2)
            assert chat.reply_text == reply
            md = chat.query(Markdown).last()
            assert "128-bit loads" in md.source and "BLOCK = 1024" in md.source
            lines = [str(w.render()) for w in chat.query(".chat-line")]
            assert any("100 in + 20 out tokens, cost n/a" in ln for ln in lines)
            assert any("how do I make v1 faster?" in str(w.render()) for w in chat.query(".chat-user"))
            assert llm.requests[0]["messages"][-1]["content"] == "how do I make v1 faster?"


@pytest.mark.anyio
async def test_chat_approval_prompt_takes_y_and_n(session_ws):
    import os

    from textual.widgets import Input

    from ktui.agent.config import AgentConfig
    from ktui.tui.chat import ApprovalBar

    from .scripted_llm import Call, Reply, ScriptedLLM

    ws, session = session_ws
    src = (ROOT / "kernels/vector_add/v2.py").read_text()
    os.environ.setdefault("OPENAI_API_KEY", "scripted")
    script = [
        Reply("First try.", tool_calls=[Call("write_kernel", {"problem": "vector_add", "source": src})]),
        Reply(
            "Second try.", tool_calls=[Call("write_kernel", {"problem": "vector_add", "source": src + "\n# second\n"})]
        ),
        Reply("Done."),
    ]
    with ScriptedLLM(script) as llm:
        config = AgentConfig(
            model="openai/scripted", api_base=llm.api_base, context_tokens=32768, approve="ask", max_rounds=0
        )
        app = KtuiApp(ws, session=session, agent_config=config)
        async with app.run_test(size=(100, 30)) as pilot:
            chat = app.query_one(ChatPane)
            await wait_for(pilot, lambda: chat.agent is not None, what="the agent")
            box = app.query_one("#chat-input", Input)
            box.focus()
            box.value = "write a faster version"
            await pilot.press("enter")
            bar = app.query_one(ApprovalBar)
            await wait_for(pilot, lambda: bar.display and bar.has_focus, what="the first approval prompt")
            await pilot.press("n")
            await wait_for(
                pilot,
                lambda: len(llm.requests) >= 2 and bar.display and bar.has_focus,
                what="the second approval prompt",
            )
            assert not (ws.root / "kernels/vector_add/v3.py").exists()
            await pilot.press("y")
            await wait_for(pilot, lambda: len(llm.requests) >= 3, what="the model's last turn")
            await wait_for(pilot, lambda: not chat.busy, what="the end of the exchange")
            assert (ws.root / "kernels/vector_add/v3.py").read_text().endswith("# second\n")
            refused = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
            assert refused[-1].startswith("the human refused this write to vector_add/v3")
            assert box.has_focus  # back to typing
        assert session.scheduler.wait_idle(60)


@pytest.mark.anyio
async def test_sass_tab_maps_source_lines_to_instructions_and_back_and_diff_tab_compares(session_ws):
    from textual.widgets import DataTable, Log

    from ktui.core.ladder import Baselines
    from ktui.tui.inside import SourceSass

    ws, session = session_ws
    app = KtuiApp(ws, session=session)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("a")  # run every version of the problem
        await wait_for(
            pilot,
            lambda: all(
                app.states[k].result is not None and app.states[k].result.rung("dumps") is not None
                for k in ("vector_add/v1", "vector_add/v2")
            ),
            timeout=180,
            what="both ladders with dumps",
        )
        await pilot.press("right_square_bracket")  # v2
        await pilot.press("3")
        await pilot.pause(0.3)
        view = app.query_one(SourceSass)
        src, asm = view.query_one("#src", DataTable), view.query_one("#asm", DataTable)
        assert src.row_count > 10 and asm.row_count > 10
        # the line of the first 128-bit global load, from the line info
        ldg = next(
            i for i in range(asm.row_count) if "LDG.E.128" in str(asm.get_row_at(i)[1]) and view.line_of(i) is not None
        )
        load_line = view.line_of(ldg)
        hits = view.sass_rows_for_line(load_line)
        assert ldg in hits
        src.move_cursor(row=src.get_row_index(str(load_line)))
        await pilot.pause(0.2)
        assert asm.cursor_row == asm.get_row_index(str(hits[0]))  # source -> its first instruction
        other = next(i for i in range(asm.row_count) if view.line_of(i) not in (None, load_line))
        asm.move_cursor(row=other)
        await pilot.pause(0.2)
        assert src.cursor_row == src.get_row_index(str(view.line_of(other)))
        await pilot.press("4")
        await pilot.pause(1.0)
        log = app.query_one("#diff", Log)
        await wait_for(pilot, lambda: any("LDG.128" in ln for ln in log.lines), what="the diff against v1")
        assert log.lines[0].startswith("A: kernels/vector_add/v1.py")
        await pilot.press("b")  # pin v2 as the baseline
        assert Baselines(ws).get("vector_add") == "v2"


@pytest.mark.anyio
async def test_escape_closes_the_command_palette_and_leaves_the_chat_line(demo_ws):
    from textual.command import CommandPalette
    from textual.widgets import Input

    app = KtuiApp(demo_ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, CommandPalette)
        await pilot.press("c")
        assert isinstance(app.focused, Input)
        await pilot.press("escape")
        assert isinstance(app.focused, KernelTree)


@pytest.mark.anyio
async def test_next_follows_the_tree_after_a_new_version_and_results_stored_elsewhere_appear(session_ws):
    ws, session = session_ws
    app = KtuiApp(ws, session=session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("n")  # v3 from v1
        assert app.selected.key == "vector_add/v3"
        tree = app.query_one(KernelTree)
        assert tree.version_keys() == ["vector_add/v1", "vector_add/v2", "vector_add/v3"]
        await pilot.press("left_square_bracket")
        assert app.selected.key == "vector_add/v2"
        await wait_for(
            pilot,
            lambda: session.scheduler.idle() and app.states["vector_add/v3"].result is not None,
            timeout=300,  # a whole ladder under the interpreter: ~40 s alone, over 90 s beside CI's other tests
            what="the new version's run",
        )
        # another ktui process (ktui run) stores a result for v2: the tree shows it
        stored = hand_result("v2", ok=False)
        stored.started_at = 4e9
        session.store.save(stored)
        await wait_for(
            pilot,
            lambda: "correctness" in tree.label_of("vector_add/v2"),
            timeout=10,
            what="the result stored by another process",
        )


@pytest.fixture
def hang_ws(make_ws):
    """v1 passes, v2 never returns from ``custom_kernel``; a session of its own (its workers get killed)."""
    from .conftest import BAD

    ws = make_ws(
        ["vector_add"], {"vector_add/v1": ROOT / "kernels/vector_add/v1.py", "vector_add/v2": BAD / "hangs.py"}
    )
    session = Session(ws, "cpu", options=FAST, debounce_s=0.05)
    session.start()
    for w in session.pool.workers:
        w.ensure_ready()
    yield ws, session
    session.stop()


@pytest.mark.anyio
async def test_the_cancel_key_and_palette_command_stop_a_hang_and_the_running_rung_shows_its_time(hang_ws):
    """v2 hangs in compile's dry call: the ladder pane's time cell counts the seconds and says the limit, the queue
    panel too, the footer offers the cancel key; x cancels the run within seconds (a notice, not a failure: the
    tree still says "not run"), and so does the palette's "Cancel run"."""
    from textual.command import CommandPalette
    from textual.widgets import Static

    from ktui.core.events import Notice
    from ktui.tui.widgets import QueuePanel

    ws, session = hang_ws
    notices: list[str] = []
    app = KtuiApp(ws, session=session)
    toasts: list[str] = []
    notify = app.notify
    app.notify = lambda message, *a, **kw: (toasts.append(str(message)), notify(message, *a, **kw))[1]  # type: ignore

    def hook(m) -> None:
        if isinstance(m, CoreEvent) and isinstance(m.event, Notice):
            notices.append(m.event.message)

    async def hang_for(seconds: int) -> None:
        await pilot.press("r")
        await wait_for(pilot, lambda: session.pool.compiler.busy, what="the hanging dry call")
        await wait_for(
            pilot,
            lambda: (
                cell_text(ladder, "compile", "time").rstrip("s").isdigit()
                and int(cell_text(ladder, "compile", "time").rstrip("s")) >= seconds
            ),
            timeout=30,
            what="the compile rung's elapsed time",
        )

    async with app.run_test(size=(100, 30), message_hook=hook) as pilot:
        await pilot.pause(0.3)
        ladder = app.query_one(LadderTable)
        assert app.check_action("cancel_run", ()) is False  # nothing runs: no cancel key in the footer
        await pilot.press("right_square_bracket")
        assert app.selected.key == "vector_add/v2"
        await hang_for(2)
        assert (
            cell_text(ladder, "compile", "figures") == "running, limit 120 s without progress"
        )  # FAST's compile limit
        assert "· limit 120s" in str(app.query_one(QueuePanel).render())  # named (new-user trial 20 L7)
        details = str(app.query_one("#details", Static).render())
        assert "Running now (x cancels): no rung finished yet." in details, details  # not "Not run yet"
        assert app.check_action("cancel_run", ()) is True
        assert "x" in {b.binding.key for b in app.screen.active_bindings.values() if b.enabled}
        t0 = time.monotonic()
        await pilot.press("x")
        await wait_for(pilot, lambda: not app.states["vector_add/v2"].running, timeout=10, what="the cancel")
        assert time.monotonic() - t0 < 5.0
        assert "not run" in app.query_one(KernelTree).label_of("vector_add/v2")  # no verdict on the kernel
        await wait_for(pilot, lambda: any("run cancelled" in n for n in notices), timeout=5, what="the notice")
        assert session.store.load("vector_add", "v2") is None
        # the same from the command palette
        await wait_for(pilot, lambda: session.scheduler.idle(), timeout=10, what="the queue to empty")
        await hang_for(1)
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"Cancel run")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.states["vector_add/v2"].running, timeout=10, what="the palette's cancel")
        await wait_for(pilot, lambda: sum("run cancelled" in n for n in notices) == 2, timeout=5, what="two notices")
        await pilot.pause(0.5)
        # one notice per cancel: the workers' restarts are named in it, not each in a toast (new-user trial 20 L6)
        # (the ``{role} worker restarted: ...`` toast; the cancel's own says "the compiler worker restarted")
        assert not any(t.startswith(("judge worker", "compiler worker", "candidate worker")) for t in toasts), toasts
        assert all("run cancelled" in t for t in toasts if "restarted" in t), toasts
        assert "not run" in app.query_one(KernelTree).label_of("vector_add/v2")
        assert session.store.load("vector_add", "v2") is None


@pytest.mark.anyio
async def test_the_accuracy_tab_fills_when_the_correctness_rung_ends_before_the_run_does(demo_ws):
    """New-user trial 19: the Accuracy tab stayed empty for the ~70 s of a CPU benchmark rung after correctness."""
    from ktui.core.events import LadderStarted, RungFinished
    from ktui.core.results import RungResult, Status

    app = KtuiApp(demo_ws, start_session=False)
    async with app.run_test(size=(120, 35)) as pilot:
        key = app.selected.key
        spec = {"label": "(7, 1e9)", "ok": False, "cases": 3, "reason": "the planted reason", "max_abs_err": 0.5}
        rung = RungResult("correctness", Status.FAILED, 1.0, "FAILED spec=(7, 1e9)", figures={"specs": [spec]})
        rungs = ("compile", "correctness", "benchmark")
        app._ladder_event(LadderStarted(key=key, run_id=99, source_sha256="0" * 64, rungs=rungs))
        await pilot.pause()
        # until this run's correctness ends, the table is the last finished run's: said (new-user trial 20 L8)
        assert "the figures below are the last finished run's" in str(app.query_one("#accuracy-notes").render())
        assert app.query_one(AccuracyTable).has_class("stale")  # dimmed as well (new-user trial 29, F2)
        app._ladder_event(RungFinished(key=key, run_id=99, result=rung))
        await pilot.pause()
        acc = app.query_one(AccuracyTable)
        assert not acc.has_class("stale")
        assert [str(r.value) for r in acc.rows] == ["(7, 1e9)"]
        notes = str(app.query_one("#accuracy-notes").render())
        assert "the planted reason" in notes and "last finished run" not in notes


@pytest.mark.anyio
async def test_a_cancelled_run_leaves_the_accuracy_tab_to_the_last_finished_run(demo_ws):
    """New-user trial 32, F14: a run whose correctness rung ended (its rows drawn) and which a newer save then
    cancelled left those rows in the Accuracy tab through the next run, under "the figures below are the last finished
    run's": the cancelled run gives no verdict, so the tab goes back to the last finished run's rows."""
    from ktui.core.events import LadderFinished, LadderStarted, RungFinished
    from ktui.core.results import ErrorInfo, LadderResult, RungResult, Status
    from ktui.core.scheduler import CANCELLED

    app = KtuiApp(demo_ws, start_session=False)
    async with app.run_test(size=(120, 35)) as pilot:
        key = app.selected.key
        before = [str(r.value) for r in app.query_one(AccuracyTable).rows]  # the last finished run's rows
        spec = {"label": "(7, 127)", "ok": False, "cases": 3, "reason": "the planted reason", "max_abs_err": 2.2}
        rung = RungResult("correctness", Status.FAILED, 1.0, "FAILED spec=(7, 127)", figures={"specs": [spec]})
        rungs = ("compile", "correctness", "benchmark")
        app._ladder_event(LadderStarted(key=key, run_id=7, source_sha256="0" * 64, rungs=rungs))
        app._ladder_event(RungFinished(key=key, run_id=7, result=rung))
        await pilot.pause()
        acc = app.query_one(AccuracyTable)
        assert [str(r.value) for r in acc.rows] == ["(7, 127)"]
        stop = RungResult("benchmark", Status.FAILED, 0.1, "cancelled", error=ErrorInfo(CANCELLED, "a newer save"))
        problem, version = key.split("/", 1)
        kernel = f"kernels/{problem}/{version}.py"
        cancelled = LadderResult(problem, version, kernel, {"type": "cpu"}, rungs=[rung, stop])
        app._ladder_finished(LadderFinished(key=key, run_id=7, result=cancelled))
        await pilot.pause()
        assert [str(r.value) for r in acc.rows] == before != ["(7, 127)"], [str(r.value) for r in acc.rows]
        app._ladder_event(LadderStarted(key=key, run_id=8, source_sha256="1" * 64, rungs=rungs))
        app._ladder_event(RungFinished(key=key, run_id=7, result=rung))  # the cancelled run's late event
        app._ladder_finished(LadderFinished(key=key, run_id=7, result=cancelled))  # ... and its end again
        await pilot.pause()
        assert [str(r.value) for r in acc.rows] == before and app.states[key].running
        assert "the planted reason" not in str(app.query_one("#accuracy-notes").render())


@pytest.mark.anyio
async def test_details_scrolls_to_its_top_when_a_run_starts(demo_ws):
    """New-user trial 19: scrolled down to an old traceback, Details kept showing it through the next run, its
    'Running now' header out of view."""
    from textual.containers import VerticalScroll
    from textual.widgets import Static

    from ktui.core.events import LadderStarted

    app = KtuiApp(demo_ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("6")  # the Details tab
        app.query_one("#details", Static).update("\n".join(f"traceback line {i}" for i in range(300)))
        await pilot.pause()
        scroll = app.query_one("#details-scroll", VerticalScroll)
        scroll.scroll_end(animate=False)
        await pilot.pause()
        assert scroll.scroll_y > 100
        start = LadderStarted(key=app.selected.key, run_id=7, source_sha256="0" * 64, rungs=("compile",))
        app._ladder_event(start)
        await pilot.pause()
        assert scroll.scroll_y == 0


@pytest.mark.anyio
async def test_profile_and_trace_keys_say_at_once_that_they_need_a_gpu(session_ws):
    """New-user trial 19: ``p`` on the CPU recompiled and marked four rungs stale for 10 s, then said no."""
    ws, session = session_ws
    app = KtuiApp(ws, session=session)
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.press("p")
        await pilot.press("t")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
        assert any("a profile: Nsight Compute needs a CUDA GPU" in m for m in said), said
        assert any("a trace: the GPU's clocks needs a CUDA GPU" in m for m in said), said
        assert session.scheduler.waiting == () and session.scheduler.running is None


@pytest.mark.anyio
async def test_a_core_event_posted_while_the_app_shuts_down_is_dropped(demo_ws):
    """CI of b7c2d9b: a session the app does not own posted a QueueChanged after the app's screens had been torn
    down; its handler did not find the tree and the app died with NoMatches. Once the app has stopped running, core
    events are dropped."""
    import asyncio

    from ktui.core.events import QueueChanged

    app = KtuiApp(demo_ws, start_session=False)
    close_all = app._close_all
    handled: list[bool] = []

    async def close_then_post() -> None:  # the screens are gone, the message loop still turns
        await close_all()
        app.post_message(CoreEvent(QueueChanged(None, None, ("vector_add/v1",))))
        await asyncio.sleep(0.2)
        handled.append(True)

    app._close_all = close_then_post  # type: ignore[method-assign]
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        assert "vector_add/v1" in app.states
    assert handled == [True]
