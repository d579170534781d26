"""What the TUI shows of a write, a copy, the header, the editor, the baseline and the workers: the approval diff
against the version a new one derives from, the new-version toast, the title once, ``e`` opening ``$EDITOR``, the
baseline mark in the tree, the workers' line. Hand-made states and a scripted model; no worker process starts."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import time
from pathlib import Path

import pytest
from textual.widgets import Static
from textual.widgets._header import HeaderTitle

from ktui.agent.agent import Agent, best_version
from ktui.agent.config import AgentConfig
from ktui.agent.events import ApprovalRequest
from ktui.agent.tools import Workbench, diff_counts
from ktui.core.events import EventBus, LadderStarted, QueueChanged, RungStarted, WorkerState
from ktui.core.store import Baselines
from ktui.core.workspace import KernelRef
from ktui.tui.app import KtuiApp, header_subtitle
from ktui.tui.chat import ApprovalBar, ChatPane, approval_header
from ktui.tui.editor import NO_EDITOR, editor_command
from ktui.tui.messages import CoreEvent
from ktui.tui.widgets import BASE_MARK, KernelTree, QueuePanel, worker_line

from .conftest import ROOT
from .scripted_llm import Call, Reply, ScriptedLLM
from .test_widgets import One, StandInAgent, build_demo_ws, hand_result, wait_until

pytestmark = pytest.mark.anyio

V1 = (ROOT / "kernels/vector_add/v1.py").read_text()
V2 = (ROOT / "kernels/vector_add/v2.py").read_text()


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def demo_ws(tmp_path):
    return build_demo_ws(tmp_path / "demo")


def one_line_changed(text: str) -> str:
    """``text`` with its first ``BLOCK`` line (or its last line) changed: a one-line edit."""
    lines = text.splitlines(True)
    i = next((n for n, ln in enumerate(lines) if "BLOCK" in ln), len(lines) - 1)
    lines[i] = lines[i].rstrip("\n") + "  # tuned\n"
    return "".join(lines)


def notes_of(app: KtuiApp) -> list[tuple[str, str]]:
    """Record the app's notifications as (message, severity)."""
    notes: list[tuple[str, str]] = []
    app.notify = lambda message, severity="information", **kw: notes.append((message, severity))  # type: ignore
    return notes


# -- 1. the approval of a write: its diff against the version it derives from ----------------------------------------
def test_a_new_version_is_diffed_against_its_base_not_the_empty_file(make_ws):
    ws = make_ws(["vector_add"])
    bench = Workbench(ws)
    src = one_line_changed(V1)
    v1 = KernelRef("vector_add", "v1", ws.root)
    w = bench.prepare_write("vector_add", src, base=v1)
    assert w.new_file and w.kernel.version == "v4" and w.base == v1
    assert w.diff.startswith("--- a/kernels/vector_add/v1.py\n+++ b/kernels/vector_add/v4.py\n")
    assert (w.added, w.removed) == (1, 1)
    plus = [ln for ln in w.diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert plus == ["+" + next(ln for ln in src.splitlines() if ln.endswith("# tuned"))]
    # no base: against the empty file, every line added
    w0 = bench.prepare_write("vector_add", src)
    assert w0.base is None and w0.diff.startswith("--- /dev/null\n+++ b/kernels/vector_add/v4.py\n")
    assert (w0.added, w0.removed) == (len(src.splitlines()), 0)
    # a base of another problem is not a base; rewriting an existing version diffs against that version
    other = KernelRef("softmax", "v1", ws.root)
    assert bench.prepare_write("vector_add", src, base=other).base is None
    elsewhere = make_ws(["vector_add"], name="elsewhere")
    assert bench.prepare_write("vector_add", src, base=KernelRef("vector_add", "v1", elsewhere.root)).base is None
    w2 = bench.prepare_write("vector_add", one_line_changed(V2), version="v2", base=v1)
    assert not w2.new_file and w2.base == KernelRef("vector_add", "v2", ws.root)
    assert (w2.added, w2.removed) == (1, 1)


def test_diff_counts_skip_the_file_headers():
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n+d\n"
    assert diff_counts(diff) == (2, 1)
    tricky = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n--- a removed '-- ' line\n+++ an added '++' line\n"
    assert diff_counts(tricky) == (1, 1)
    assert diff_counts("(no change)") == (0, 0)


def test_the_best_version_is_the_fastest_passing_one_else_the_latest(make_ws):
    ws = make_ws(["vector_add"])
    assert best_version(ws, "vector_add", {}).version == "v3"  # nothing passed: the latest
    fast = hand_result("v2", ok=True)
    fast.rung("benchmark").figures["specs"][0]["speedup"] = 1.7
    results = {"vector_add/v1": hand_result("v1", ok=True), "vector_add/v2": fast}
    assert best_version(ws, "vector_add", results).version == "v2"
    results["vector_add/v2"] = hand_result("v2", ok=False)
    assert best_version(ws, "vector_add", results).version == "v1"
    assert best_version(ws, "nothing_here", {}) is None


def approvals(ws, script, base_of=None, results=None) -> list[ApprovalRequest]:
    """Run one exchange in ask mode (every write approved) and return its approval requests."""
    os.environ.setdefault("OPENAI_API_KEY", "scripted")
    seen: list[ApprovalRequest] = []
    with ScriptedLLM(script) as llm:
        config = AgentConfig(
            model="openai/scripted", api_base=llm.api_base, approve="ask", max_rounds=0, context_tokens=32768
        )
        bus = EventBus()
        agent = Agent(
            ws,
            config,
            bus,
            run_ladder=lambda k: pytest.fail("no ladder expected"),
            results=(lambda: results or {}),
            base_of=base_of,
        )

        def answer(e) -> None:
            if isinstance(e, ApprovalRequest):
                seen.append(e)
                agent.decide(e.request_id, True)

        bus.subscribe(answer)
        agent.send("make it faster", "vector_add")
    return seen


def test_the_approval_diffs_a_new_version_against_the_one_the_model_read(make_ws):
    ws = make_ws(["vector_add"])
    new = one_line_changed(V2)
    script = [
        Reply(tool_calls=[Call("read_file", {"path": "kernels/vector_add/v2.py"})]),
        Reply(tool_calls=[Call("write_kernel", {"problem": "vector_add", "source": new})]),
        Reply(tool_calls=[Call("write_kernel", {"problem": "vector_add", "source": new + "# again\n"})]),
        Reply("done"),
    ]
    first, second = approvals(ws, script, base_of=lambda p: KernelRef(p, "v1", ws.root))
    assert (first.path, first.base, first.new_file) == ("kernels/vector_add/v4.py", "kernels/vector_add/v2.py", True)
    assert (first.added, first.removed) == (1, 1)  # one line changed, not 33 lines added
    assert first.diff.startswith("--- a/kernels/vector_add/v2.py\n+++ b/kernels/vector_add/v4.py\n")
    # the next new version derives from the one the model just wrote
    assert (second.path, second.base, second.added, second.removed) == (
        "kernels/vector_add/v5.py",
        "kernels/vector_add/v4.py",
        1,
        0,
    )


def test_without_a_read_the_base_is_the_selected_version_else_the_best(make_ws):
    ws = make_ws(["vector_add"])
    script = [Reply(tool_calls=[Call("write_kernel", {"problem": "vector_add", "source": V1})]), Reply("ok")]
    (chosen,) = approvals(ws, script, base_of=lambda p: KernelRef(p, "v1", ws.root))
    assert chosen.base == "kernels/vector_add/v1.py" and chosen.diff == "(no change)"
    assert (chosen.added, chosen.removed) == (0, 0)
    ws2 = make_ws(["vector_add"], name="ws2")
    script = [Reply(tool_calls=[Call("write_kernel", {"problem": "vector_add", "source": V1})]), Reply("ok")]
    results = {"vector_add/v2": hand_result("v2", ok=True)}  # v2 passed: the best
    (best,) = approvals(ws2, script, results=results)
    assert best.base == "kernels/vector_add/v2.py"
    assert best.diff.startswith("--- a/kernels/vector_add/v2.py\n+++ b/kernels/vector_add/v4.py\n")


def test_the_approval_header_names_the_file_its_base_and_the_counts():
    ev = ApprovalRequest(
        request_id=1,
        path="kernels/vector_add/v4.py",
        diff="",
        new_file=True,
        base="kernels/vector_add/v2.py",
        added=3,
        removed=1,
    )
    assert approval_header(ev).plain == (
        "write kernels/vector_add/v4.py (new, from kernels/vector_add/v2.py)  +3 -1  ↑↓ PgUp PgDn scroll"
    )
    empty = ApprovalRequest(request_id=2, path="kernels/x/v1.py", diff="", new_file=True, added=9)
    assert approval_header(empty).plain.startswith("write kernels/x/v1.py (new file)  +9 -0")
    same = ApprovalRequest(request_id=3, path="kernels/x/v1.py", diff="", new_file=False, base="kernels/x/v1.py")
    assert approval_header(same).plain.startswith("write kernels/x/v1.py (changes the file)  +0 -0")


async def test_the_chat_pane_shows_the_whole_diff_from_its_header_and_scrolls_it():
    diff = "--- a/kernels/vector_add/v2.py\n+++ b/kernels/vector_add/v4.py\n@@ -1,40 +1,40 @@\n"
    diff += "".join(f" line {i}\n" for i in range(1, 20)) + "-old 20\n+new 20\n"
    diff += "".join(f" line {i}\n" for i in range(21, 41))
    chat = ChatPane(AgentConfig(model="openai/scripted"))
    agent = StandInAgent()
    async with One(chat).run_test(size=(100, 16)) as pilot:
        chat.attach(agent)
        ev = ApprovalRequest(
            request_id=7,
            path="kernels/vector_add/v4.py",
            diff=diff,
            new_file=True,
            base="kernels/vector_add/v2.py",
            added=1,
            removed=1,
        )
        await chat.handle(ev)
        await pilot.pause(0.1)
        header = chat.query_one(".chat-diff-header", Static)
        assert str(header.render()).startswith("write kernels/vector_add/v4.py (new, from kernels/vector_add/v2.py)")
        body = chat.query_one(".chat-diff", Static)
        assert body.size.height >= 43  # every line of the diff is there, none cut
        log = chat.log_view
        assert log.size.height < 43 and log.max_scroll_y > 0
        assert log.scroll_y == header.virtual_region.y  # the header at the top of the view, not the diff's end
        bar = chat.query_one(ApprovalBar)
        assert bar.has_focus
        top = log.scroll_y
        await pilot.press("pagedown")
        await pilot.pause(0.05)
        assert log.scroll_y > top
        await pilot.press("end")
        await pilot.pause(0.05)
        assert log.scroll_y == log.max_scroll_y
        await pilot.press("home")
        await pilot.pause(0.05)
        assert log.scroll_y == 0
        await pilot.press("y")
        await wait_until(pilot, lambda: agent.decided)
        assert agent.decided == [(7, True)]


# -- 2. n: the toast names the version copied ------------------------------------------------------------------------
async def test_new_version_toast_names_the_version_it_copied_and_the_tree_follows(demo_ws):
    app = KtuiApp(demo_ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        notes = notes_of(app)
        tree = app.query_one(KernelTree)
        await pilot.pause(0.1)
        assert tree.cursor_node is not None and tree.cursor_node.data == app.selected  # the cursor on v1 from the start
        await pilot.press("right_square_bracket")
        await pilot.press("n")
        await pilot.pause(0.1)
        assert notes[-1] == ("vector_add/v4 created from vector_add/v2", "information")
        assert (demo_ws.root / "kernels/vector_add/v4.py").read_text() == V2
        assert app.selected.key == "vector_add/v4" and tree.cursor_node.data == app.selected
        await pilot.press("up")  # the tree's own key: the row above v4, v3
        await pilot.pause(0.1)
        assert app.selected.key == "vector_add/v3"
        await pilot.press("n")
        await pilot.pause(0.1)
        assert notes[-1] == ("vector_add/v5 created from vector_add/v3", "information")
        assert (demo_ws.root / "kernels/vector_add/v5.py").read_text() == (
            demo_ws.root / "kernels/vector_add/v3.py"
        ).read_text()


async def test_the_tree_cursor_stays_on_its_version_when_rows_above_it_go(demo_ws):
    app = KtuiApp(demo_ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        tree = app.query_one(KernelTree)
        await pilot.press("right_square_bracket")
        assert app.selected.key == "vector_add/v2" and tree.cursor_node.data.key == "vector_add/v2"
        (demo_ws.root / "kernels/vector_add/v1.py").unlink()
        tree.rebuild(app.states)
        assert tree.version_keys() == ["vector_add/v2", "vector_add/v3"]
        at = tree.get_node_at_line(tree.cursor_line)
        assert at is not None and at.data.key == "vector_add/v2"  # not v3, which now has the row v2 had
        await pilot.pause(0.05)
        assert app.selected.key == "vector_add/v2"


# -- 3. the header names ktui once ----------------------------------------------------------------------------------
async def test_the_header_reads_ktui_once_in_a_workspace_named_ktui(tmp_path):
    ws = build_demo_ws(tmp_path / "ktui")  # the repository is a workspace, and its clone is named ktui
    app = KtuiApp(ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        shown = str(app.query_one(HeaderTitle).render())
        assert shown.lower().count("ktui") == 1, shown
    assert header_subtitle(ws.root, "ktui", "cpu (interpreter)") == "device: cpu (interpreter)"
    assert header_subtitle(Path("/w/softmax-work"), "ktui", "cpu (interpreter)") == (
        "softmax-work · device: cpu (interpreter)"
    )
    assert header_subtitle(Path("/w/softmax-work"), "ktui") == "softmax-work"


# -- 4. e: the selected version in $EDITOR ---------------------------------------------------------------------------
def test_the_editor_command_is_editor_then_visual_split_like_a_shell(tmp_path):
    p = tmp_path / "v1.py"
    assert editor_command(p, {"EDITOR": "code --wait", "VISUAL": "vi"}) == ["code", "--wait", str(p)]
    assert editor_command(p, {"EDITOR": "  ", "VISUAL": "vi"}) == ["vi", str(p)]
    assert editor_command(p, {"VISUAL": "'/opt/my editor/ed' -n"}) == ["/opt/my editor/ed", "-n", str(p)]
    assert editor_command(p, {}) is None
    with pytest.raises(ValueError):
        editor_command(p, {"EDITOR": "vi 'unclosed"})


def marker_editor(tmp_path: Path) -> tuple[Path, Path]:
    """An editor: a script that writes the path it was given into a marker file."""
    marker = tmp_path / "opened.txt"
    script = tmp_path / "fake-editor"
    script.write_text(f"#!{sys.executable}\nimport sys\nopen({str(marker)!r}, 'w').write(sys.argv[1])\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, marker


async def test_e_opens_the_selected_version_in_editor(demo_ws, tmp_path, monkeypatch):
    script, marker = marker_editor(tmp_path)
    monkeypatch.setenv("EDITOR", str(script))
    app = KtuiApp(demo_ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        assert "Open in $EDITOR" in {c.title for c in app.get_system_commands(app.screen)}
        notes = notes_of(app)
        await pilot.press("right_square_bracket")  # v2
        # run_test's headless driver cannot hand the terminal over: a clear error, and no editor run
        await pilot.press("e")
        await pilot.pause(0.05)
        assert not marker.exists()
        assert notes[-1][1] == "error" and notes[-1][0].startswith(f"this terminal cannot be handed to {script}")
        # a terminal that can be handed over (App.suspend a no-op here): the editor gets the selected version's path
        handed: list[bool] = []

        @contextlib.contextmanager
        def suspend():
            handed.append(True)
            yield

        monkeypatch.setattr(app, "suspend", suspend)
        await pilot.press("e")
        await pilot.pause(0.05)
        assert handed == [True]
        assert marker.read_text() == str(demo_ws.root / "kernels/vector_add/v2.py")


async def test_e_without_editor_or_visual_says_to_set_editor(demo_ws, monkeypatch):
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    app = KtuiApp(demo_ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        notes = notes_of(app)
        await pilot.press("e")
        await pilot.pause(0.05)
    assert notes == [(NO_EDITOR, "error")]
    assert NO_EDITOR.startswith("set $EDITOR")


# -- 5. b: the pinned baseline is marked in the tree ----------------------------------------------------------------
async def test_the_pinned_baseline_is_marked_in_the_tree(demo_ws):
    app = KtuiApp(demo_ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        tree = app.query_one(KernelTree)
        assert not any(BASE_MARK in tree.label_of(k) for k in tree.version_keys())
        await pilot.press("right_square_bracket")  # v2
        await pilot.press("b")
        await pilot.pause(0.05)
        assert Baselines(demo_ws).get("vector_add") == "v2"
        assert tree.label_of("vector_add/v2") == "v2   ⌖ base ✗ correctness"
        await pilot.press("left_square_bracket")  # v1
        await pilot.press("b")
        await pilot.pause(0.05)
        assert tree.label_of("vector_add/v1") == "v1   ⌖ base ✓ 1.00x"
        assert tree.label_of("vector_add/v2") == "v2   ✗ correctness"  # the mark moved
    again = KtuiApp(demo_ws, start_session=False)  # read back from .ktui/baseline.json at start-up
    async with again.run_test(size=(100, 30)):
        tree = again.query_one(KernelTree)
        assert [k for k in tree.version_keys() if BASE_MARK in tree.label_of(k)] == ["vector_add/v1"]


# -- 6. the workers in one readable line ----------------------------------------------------------------------------
def test_the_worker_line_names_each_worker_and_what_keeps_it_busy():
    workers = {"compiler": "starting", "judge": "ready", "candidate": "ready"}
    assert worker_line(workers, "correctness", 12.4).plain == (
        "workers: candidate ready · judge busy (correctness 12 s) · compiler starting"
    )
    assert worker_line(workers).plain == "workers: candidate ready · judge ready · compiler starting"
    assert worker_line({"candidate": "restarting", "judge": "failed"}, "run", 3).plain == (
        "workers: candidate restarting · judge failed"
    )
    # on a GPU the candidate compiles (no compiler worker): compile keeps it busy
    assert worker_line({"candidate": "ready", "judge": "ready"}, "compile", None).plain == (
        "workers: candidate busy (compile) · judge busy (compile)"
    )


async def test_the_queue_panel_shows_the_worker_line_with_the_running_rung(demo_ws):
    app = KtuiApp(demo_ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(QueuePanel)
        assert "workers:" not in str(panel.render())  # none reported (no session)

        def post(ev) -> None:
            app.post_message(CoreEvent(ev))

        for role, state in (("candidate", "ready"), ("judge", "ready"), ("compiler", "starting")):
            post(WorkerState(role=role, state=state))
        await wait_until(pilot, lambda: "compiler" in app.worker_states)
        assert str(panel.render()).splitlines()[-1] == "workers: candidate ready · judge ready · compiler starting"
        post(LadderStarted(key="vector_add/v1", run_id=1, source_sha256="ab" * 32, rungs=("compile", "correctness")))
        post(RungStarted(key="vector_add/v1", run_id=1, rung="correctness", at=time.time() - 12.2))
        post(QueueChanged(running="vector_add/v1", rung="correctness", waiting=()))
        await wait_until(pilot, lambda: "busy" in str(panel.render()))
        line = str(panel.render()).splitlines()[-1]
        assert re.fullmatch(r"workers: candidate ready · judge busy \(correctness 1[23] s\) · compiler starting", line)


def test_the_headless_transcript_names_the_base_and_the_counts():
    import io

    from ktui.agent.transcript import Printer

    class Decider:
        def __init__(self) -> None:
            self.decided: list[tuple[int, bool]] = []

        def decide(self, request_id: int, approved: bool) -> None:
            self.decided.append((request_id, approved))

    out = io.StringIO()
    agent = Decider()
    Printer(agent, out=out, ask=False)(  # type: ignore[arg-type]
        ApprovalRequest(
            request_id=5,
            path="kernels/vector_add/v4.py",
            diff="--- a/kernels/vector_add/v2.py\n+++ b/kernels/vector_add/v4.py\n-a\n+b\n",
            new_file=True,
            base="kernels/vector_add/v2.py",
            added=1,
            removed=1,
        )
    )
    lines = out.getvalue().splitlines()
    assert lines[0] == "  write kernels/vector_add/v4.py (new, from kernels/vector_add/v2.py): +1 -1"
    assert lines[1:5] == [
        "    --- a/kernels/vector_add/v2.py",
        "    +++ b/kernels/vector_add/v4.py",
        "    -a",
        "    +b",
    ]
    assert agent.decided == [(5, False)]  # not a terminal and no --yes: refused


def test_the_tui_derives_a_new_version_from_the_selected_one_of_that_problem(tmp_path):
    from types import SimpleNamespace

    from ktui.tui.chat import selected_of

    app = SimpleNamespace(selected=KernelRef("vector_add", "v2", tmp_path))
    of = selected_of(app)
    assert of("vector_add") == KernelRef("vector_add", "v2", tmp_path)
    assert of("softmax") is None  # a selection of another problem is no base
    app.selected = None
    assert of("vector_add") is None


@pytest.mark.anyio
async def test_quitting_says_it_stops_the_workers_before_the_screen_goes(make_ws):
    """New-user trial 20 L3: q left a blank screen for 3.7 s while the workers stopped (and a user killed the
    terminal); the app says so first, stops the session it owns off the event loop, then exits."""
    import time as _time

    ws = make_ws(["vector_add"])
    said: list[tuple[str, float]] = []

    class Slow:
        stopped_at = 0.0

        def stop(self) -> None:
            _time.sleep(0.3)
            Slow.stopped_at = _time.monotonic()

    app = KtuiApp(ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        app.session, app._owns_session = Slow(), True  # type: ignore[assignment]
        app.notify = lambda message, **kw: said.append((str(message), _time.monotonic()))  # type: ignore[method-assign]
        await pilot.press("q")
        for _ in range(50):
            await pilot.pause(0.05)
            if not app.is_running:
                break
    assert said and said[0][0] == "stopping the workers…", said
    assert Slow.stopped_at > said[0][1]  # the notice came first
    assert app._quitting and not app.is_running
