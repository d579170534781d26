"""The panels on hand-built states: each widget mounted in a tiny app and fed a ``VersionState``/``LadderResult`` made
here, with no session and no workers (milliseconds each); the app's event bridge fed hand-made events; the chat
pane's exchange against a stand-in agent; a failing Textual worker. The real-worker Pilot tests are in test_tui.py.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widget import Widget
from textual.widgets import Input

from ktui.agent.config import AgentConfig
from ktui.agent.events import ApprovalDecided, ApprovalRequest, ToolCall
from ktui.core.events import (
    LadderFinished,
    LadderStarted,
    QueueChanged,
    RungFinished,
    RungProgress,
    RungStarted,
    WorkerState,
)
from ktui.core.results import ErrorInfo, LadderResult, RungResult, Status
from ktui.core.store import ResultStore, sha256
from ktui.core.workspace import KernelRef, Workspace
from ktui.tui.app import KtuiApp
from ktui.tui.chat import ApprovalBar, ChatPane
from ktui.tui.messages import CoreEvent
from ktui.tui.state import VersionState
from ktui.tui.widgets import AccuracyTable, KernelTree, LadderTable, QueuePanel, TimingsTable

from .conftest import ROOT

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def hand_result(version: str, ok: bool) -> LadderResult:
    """vector_add ``version`` on an H200: four rungs ok (1.00x), or correctness failed on an unwritten element."""
    specs = [
        {
            "label": f"({n},)",
            "spec": {"n": n},
            "ok": ok or n < 129,
            "seeds": [11, 12],
            "worst_seed": 12,
            "max_abs_err": 2.38e-07 if (ok or n < 129) else float("nan"),
            "max_rel_err": 5.96e-08,
            "mse": 1.1e-15,
            "rmse": 3.3e-08,
            "psnr_db": 164.2,
            "cosine": 1.0,
            "nan_count": 0,
            "inf_count": 0,
            "unwritten": 0 if (ok or n < 129) else 1,
            "worst_index": [n - 1],
        }
        for n in (1, 127, 129, 1025)
    ]
    corr = (
        RungResult(
            "correctness",
            Status.OK,
            0.05,
            "worst=(1025,) max_abs_err=2.38e-07 max_rel_err=5.96e-08 psnr_db=164.2 cosine=1",
            {"specs": specs},
        )
        if ok
        else RungResult(
            "correctness",
            Status.FAILED,
            0.05,
            "spec=(129,) seed=12: 1 element unwritten at [128]; max_abs_err=nan",
            {"specs": specs},
            error=ErrorInfo("CorrectnessError", "spec=(129,) seed=12: 1 element unwritten at [128]"),
        )
    )
    bench = RungResult(
        "benchmark",
        Status.OK,
        2.1,
        "(268435456,): 741.3 us (IQR 1.8), ref 741.7 us, 1.00x, 4346 GB/s (102% SOL)",
        {
            "specs": [
                {
                    "label": "(268435456,)",
                    "median_us": 741.25,
                    "iqr_us": 1.8,
                    "ref_median_us": 741.66,
                    "speedup": 1.0005,
                    "gbps": 4346.0,
                    "sol_pct": 102.3,
                }
            ]
        },
    )
    rungs = [
        RungResult("compile", Status.OK, 0.61, "triton: add_kernel(w=4,s=3)"),
        RungResult("run", Status.OK, 0.02, "8 calls ok on 4 specs, first 0.00869 s, total 0.0512 s"),
        corr,
    ]
    if ok:
        rungs.append(bench)
    return LadderResult(
        "vector_add",
        version,
        f"kernels/vector_add/{version}.py",
        {"type": "cuda", "name": "NVIDIA H200", "capability": [9, 0]},
        rungs,
        source_sha256="ab" * 32,
        reference_sha256="cd" * 32,
        started_at=0.0,
        seconds=3.2,
    )


def build_demo_ws(root: Path) -> Workspace:
    """At ``root``: the vector_add reference and its versions v1-v3, with stored results: v1 passing (1.00x), v2
    failing correctness, v3 never run."""
    (root / "references").mkdir(parents=True)
    shutil.copy(ROOT / "references/vector_add.py", root / "references")
    shutil.copytree(ROOT / "kernels/vector_add", root / "kernels/vector_add")
    ws = Workspace(root)
    store = ResultStore(ws)
    for version, ok in (("v1", True), ("v2", False)):
        store.save(about_files(ws, hand_result(version, ok=ok)))
    return ws


def about_files(ws: Workspace, r: LadderResult) -> LadderResult:
    """``r`` with the hashes of its version and reference on disk (other hashes read as a stale result)."""
    r.source_sha256 = sha256((ws.root / r.kernel).read_bytes())
    r.reference_sha256 = sha256(ws.reference_path(r.problem).read_bytes())
    return r


@pytest.fixture
def demo_ws(tmp_path) -> Workspace:
    return build_demo_ws(tmp_path / "demo")


class One(App):
    """A tiny app around one widget."""

    def __init__(self, widget: Widget):
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget


def cell(table, row: str, col: str) -> str:
    return str(table.get_cell(row, col))


def running(key: str = "vector_add/v1") -> VersionState:
    """v1 halfway up a new run: compile done, correctness 37 of 106 cases in, the rest waiting."""
    st = VersionState(key, result=hand_result("v1", ok=True))
    st.start(("compile", "run", "correctness", "benchmark", "dumps"), run_id=7)
    st.begin_rung("compile", 7)
    st.live["compile"] = RungResult("compile", Status.OK, 0.5, "triton: add_kernel(w=4,s=3)")
    st.begin_rung("run", 7)
    st.live["run"] = RungResult("run", Status.OK, 0.1, "8 calls ok")
    st.begin_rung("correctness", 7)
    assert st.advance(7, "correctness", 37, 106, "spec=(4099,) dist=shifted")
    return st


async def test_the_ladder_table_shows_every_rung_of_a_result():
    table = LadderTable()
    async with One(table).run_test():
        table.show(VersionState("vector_add/v2", result=hand_result("v2", ok=False)))
        assert [str(k.value) for k in table.rows][:5] == ["compile", "run", "correctness", "benchmark", "dumps"]
        assert cell(table, "compile", "status") == "ok"
        assert cell(table, "compile", "time") == "0.61s"
        assert cell(table, "compile", "figures") == "triton: add_kernel(w=4,s=3)"
        assert cell(table, "correctness", "status") == "FAILED"
        assert "1 element unwritten" in cell(table, "correctness", "figures")
        assert cell(table, "benchmark", "status") == "-"  # a failed correctness stops nothing but was the last
        table.show(None)
        assert cell(table, "compile", "status") == "-"


async def test_the_running_rung_shows_its_progress_and_later_rungs_wait():
    table = LadderTable()
    async with One(table).run_test():
        st = running()
        table.show(st)
        assert cell(table, "compile", "status") == "ok"
        assert cell(table, "correctness", "status") == "37/106"
        assert cell(table, "correctness", "figures") == "spec=(4099,) dist=shifted"
        assert cell(table, "benchmark", "status") == "waiting"
        assert st.advance(7, "correctness", 38, 106, "", "spec=(7, 1025, 300, bf16) seed=9 layout=transposed")
        table.show(st)  # the case under way, as the worker named it (new-user trial 24, F4)
        assert cell(table, "correctness", "figures") == "now spec=(7, 1025, 300, bf16) seed=9 layout=transposed"
        table.show(st, elapsed=11.0, limit=30.0)  # and the limit while it runs (new-user trial 25, F26)
        assert cell(table, "correctness", "figures").endswith("layout=transposed · limit 30 s without progress")
        assert not st.advance(6, "correctness", 99, 106)  # another run's progress is stale
        assert not st.advance(7, "benchmark", 1, 2)  # not the rung under way
        assert not st.begin_rung("dumps", 6)  # another run's rung (a cancelled run's late event): ignored
        assert not st.end_rung(RungResult("correctness", Status.FAILED, 1.0, "late"), 6)
        assert not st.finish(hand_result("v1", ok=False), 6) and st.running and "correctness" not in st.live
        st.begin_rung("benchmark", 7)  # a new rung starts without progress
        table.show(st)
        assert cell(table, "correctness", "status") == "waiting"  # not finished in this run: no live result yet
        assert cell(table, "benchmark", "status") == "running"
        assert st.finish(hand_result("v1", ok=True), 7)
        table.show(st)
        assert cell(table, "correctness", "status") == "ok" and st.progress_text() == ""


async def test_the_accuracy_table_has_a_row_per_spec_with_its_worst_figures():
    table = AccuracyTable()
    async with One(table).run_test():
        table.show(hand_result("v2", ok=False))
        assert table.row_count == 4
        assert cell(table, "(1,)", "ok") == "ok"
        assert cell(table, "(129,)", "ok") == "FAIL"
        assert cell(table, "(129,)", "unwritten") == "1"
        assert cell(table, "(129,)", "worst at") == "[128]"
        # the worst case without its spec: its seed and distribution (new-user trial 32, F7)
        from ktui.tui.widgets import worst_case_cell

        assert worst_case_cell({"label": "(1,)", "worst_case": "spec=(128, 16) seed=404 dist=large"}, 26) == (
            "seed=404 dist=large"
        )
        long = {"label": "(1,)", "worst_case": "spec=(1,) seed=311 (worst of 32 calls in a row)"}
        assert worst_case_cell(long, 26) == "seed=311 (worst of 32 cal…" and worst_case_cell({"label": "x"}, 26) == "-"
        assert cell(table, "(1025,)", "psnr_db") == "164.2"
        table.show(None)
        assert table.row_count == 0


async def test_the_timings_table_has_a_row_per_benchmark_spec_and_one_per_untimed_version(tmp_path):
    table = TimingsTable()
    async with One(table).run_test():
        v1, v2 = (KernelRef("vector_add", v, tmp_path) for v in ("v1", "v2"))
        table.show(
            "vector_add",
            [
                (v1, VersionState(v1.key, result=hand_result("v1", ok=True))),
                (v2, VersionState(v2.key, result=hand_result("v2", ok=False))),
            ],
        )
        assert [str(k.value) for k in table.rows] == ["v1:(268435456,)", "v2"]
        assert cell(table, "v1:(268435456,)", "median us") == "741.25"
        assert cell(table, "v1:(268435456,)", "speedup") == "1.00x"
        assert cell(table, "v1:(268435456,)", "verdict") == "✓ 1.00x"
        assert cell(table, "v2", "verdict") == "✗ correctness"
        # every verdict fits its column ("✗ correctnes" was cut: new-user trial 31, F8)
        from ktui.core.results import RUNG_ORDER

        longest = max([f"✗ {rung}" for rung in RUNG_ORDER] + ["◌ needs a GPU", "! reference"], key=len)
        assert table.columns["verdict"].width >= len(longest) == 13, longest


async def test_the_queue_panel_names_the_rung_and_its_progress():
    panel = QueuePanel()
    async with One(panel).run_test():
        panel.render_state(
            "vector_add/v1", "correctness", ("vector_add/v2",), {"judge": "ready", "candidate": "failed"}, "37/106"
        )
        assert str(panel.render()).splitlines() == [
            "▶ vector_add/v1",
            "  correctness 37/106",
            "waiting: vector_add/v2",
            "workers: candidate failed · judge busy (correctness)",  # (no seconds: none given)
        ]
        assert Text.from_markup(panel.border_subtitle).plain == "cand ✗ judg ✓"  # the workers, in the border
        panel.render_state("vector_add/v1", "run", (), {}, "3/146", "12s", 12.0, "limit 201s")
        assert str(panel.render()).splitlines()[:2] == ["▶ vector_add/v1  12s", "  run 3/146 · limit 201s"]
        # several waiting: one a line (a comma-joined list wrapped a lone comma: trial 21 F10), at most three
        many = tuple(f"gm_pmpp_v2_histogram_py/v{i}" for i in range(1, 8))
        panel.render_state("vector_add/v1", "run", many, {})
        assert str(panel.render()).splitlines()[2:] == [
            "waiting (7):",
            "  gm_pmpp_v2_histogram_py/v1",
            "  gm_pmpp_v2_histogram_py/v2",
            "  gm_pmpp_v2_histogram_py/v3",
            "  +4 more",
        ]
        panel.render_state(None, None, many[:4], {})  # four: all four (a "+1 more" line would take the same room)
        assert str(panel.render()).splitlines() == ["idle", "waiting (4):", *(f"  {k}" for k in many[:4])]


async def test_the_tree_labels_each_version_with_its_verdict(demo_ws):
    tree = KernelTree(demo_ws)
    async with One(tree).run_test():
        states = {
            k.key: VersionState(k.key, result=ResultStore(demo_ws).load(k.problem, k.version))
            for k in demo_ws.all_versions()
        }
        tree.rebuild(states)
        assert tree.version_keys() == ["vector_add/v1", "vector_add/v2", "vector_add/v3"]
        assert tree.label_of("vector_add/v1").endswith("✓ 1.00x")
        assert tree.label_of("vector_add/v2").endswith("✗ correctness")
        assert tree.label_of("vector_add/v3").endswith("not run")
        assert tree.label_of("vector_add/v9") == ""
        assert tree.step("vector_add/v2", 1) == "vector_add/v3" and tree.step("vector_add/v2", -1) == "vector_add/v1"
        assert tree.step("vector_add/v3", 1) is None and tree.step("vector_add/v1", -1) is None  # no wrap (F8)
        assert tree.step(None, 1) == "vector_add/v1" and tree.step(None, -1) == "vector_add/v3"
        # a problem that appears while ktui runs (an import) takes its place in the workspace's order, not the last
        # one (new-user trial 21 F10)
        (demo_ws.root / "references" / "abc_first.py").write_text(
            (demo_ws.root / "references/vector_add.py").read_text()
        )
        (demo_ws.root / "kernels" / "abc_first").mkdir()
        (demo_ws.root / "kernels" / "abc_first" / "v1.py").write_text("def custom_kernel(data):\n    return data\n")
        tree.rebuild(states)
        assert tree.version_keys()[0] == "abc_first/v1", tree.version_keys()


def test_progress_and_queue_messages_coalesce_and_others_do_not():
    a = CoreEvent(RungProgress(key="p/v1", run_id=1, rung="correctness", done=1, total=9))
    later = CoreEvent(RungProgress(key="p/v1", run_id=1, rung="correctness", done=2, total=9))
    other = CoreEvent(RungProgress(key="p/v2", run_id=1, rung="correctness", done=2, total=9))
    assert a.can_replace(later) and not a.can_replace(other)
    q = CoreEvent(QueueChanged(running=None, rung=None, waiting=()))
    assert q.can_replace(CoreEvent(QueueChanged(running="p/v1", rung=None, waiting=())))
    assert not q.can_replace(a) and not a.can_replace(q)
    started = CoreEvent(RungStarted(key="p/v1", run_id=1, rung="run"))
    assert not started.can_replace(CoreEvent(RungStarted(key="p/v1", run_id=1, rung="run")))


async def wait_until(pilot, predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.02)


async def test_bus_events_reach_the_panels_through_the_one_bridge(demo_ws):
    app = KtuiApp(demo_ws, start_session=False)
    async with app.run_test(size=(100, 30)) as pilot:
        ladder = app.query_one(LadderTable)
        post = lambda ev: app.post_message(CoreEvent(ev))  # what the bus subscriber does, from any thread
        post(QueueChanged(running="vector_add/v1", rung=None, waiting=("vector_add/v2",)))
        post(
            LadderStarted(
                key="vector_add/v1",
                run_id=3,
                source_sha256="ef" * 32,
                rungs=("compile", "run", "correctness", "benchmark", "dumps"),
            )
        )
        post(RungStarted(key="vector_add/v1", run_id=3, rung="compile"))
        post(
            RungFinished(
                key="vector_add/v1",
                run_id=3,
                result=RungResult("compile", Status.OK, 0.4, "triton: add_kernel(w=4,s=3)"),
            )
        )
        post(RungStarted(key="vector_add/v1", run_id=3, rung="correctness"))
        for done in range(1, 11):
            post(RungProgress(key="vector_add/v1", run_id=3, rung="correctness", done=done, total=106))
        post(WorkerState(role="judge", state="ready"))
        await wait_until(pilot, lambda: app.worker_states.get("judge") == "ready")
        assert cell(ladder, "correctness", "status") == "10/106"
        assert cell(ladder, "compile", "status") == "ok"
        assert "  correctness 10/106" in str(app.query_one(QueuePanel).render()).splitlines()
        tree = app.query_one(KernelTree)
        assert tree.label_of("vector_add/v1").endswith("▶ correctness")
        assert tree.label_of("vector_add/v2").endswith("… queued")
        post(LadderFinished(key="vector_add/v1", run_id=3, result=about_files(demo_ws, hand_result("v1", ok=True))))
        await wait_until(pilot, lambda: not app.states["vector_add/v1"].running)
        assert cell(ladder, "correctness", "status") == "ok"
        assert tree.label_of("vector_add/v1").endswith("✓ 1.00x")


async def test_a_failed_textual_worker_is_notified_and_logged(demo_ws):
    app = KtuiApp(demo_ws, start_session=False)
    notes: list[tuple[str, str]] = []
    async with app.run_test(size=(100, 30)) as pilot:
        app.notify = lambda message, severity="information", **kw: notes.append((message, severity))

        def boom() -> None:
            raise RuntimeError("the diff fell over")

        app.run_worker(boom, thread=True, description="the diff of vector_add/v1", exit_on_error=False)
        await wait_until(pilot, lambda: notes)
    assert notes == [
        (
            "the diff of vector_add/v1 failed: RuntimeError: the diff fell over (traceback in .ktui/logs/ktui.log)",
            "error",
        )
    ]
    log = (demo_ws.state_dir / "logs" / "ktui.log").read_text()
    assert "the diff of vector_add/v1 failed" in log and "RuntimeError: the diff fell over" in log
    assert "Traceback" in log


class StandInAgent:
    """Records what the chat pane sends; the first exchange blocks until ``release``."""

    def __init__(self):
        self.sent: list[tuple[str, str]] = []
        self.release = threading.Event()
        self.stopped = False
        self.decided: list[tuple[int, bool]] = []

    def send(self, text: str, problem: str) -> None:
        self.sent.append((text, problem))
        if len(self.sent) == 1:
            self.release.wait(5)

    def stop(self) -> None:
        self.stopped = True
        self.release.set()

    def decide(self, request_id: int, approved: bool) -> None:
        self.decided.append((request_id, approved))


async def test_the_chat_pane_owns_the_exchange_and_keeps_what_is_typed_meanwhile():
    chat = ChatPane(AgentConfig(model="openai/scripted"), problem=lambda: "vector_add")
    agent = StandInAgent()
    async with One(chat).run_test() as pilot:
        chat.attach(agent)
        box = chat.query_one("#chat-input", Input)
        box.focus()
        for text in ("first", "second"):
            box.value = text
            await pilot.press("enter")
            await pilot.pause(0.05)
        assert chat.busy and agent.sent == [("first", "vector_add")]
        assert any("(queued: second)" in str(w.render()) for w in chat.query(".chat-line"))
        agent.release.set()
        await wait_until(pilot, lambda: not chat.busy and len(agent.sent) == 2)
        assert agent.sent[1] == ("second", "vector_add")
        assert not chat.stop()  # nothing runs: Esc leaves the chat line instead
        chat.toggle_auto()
        assert chat.config.approve == "auto" and "auto" in str(chat.border_subtitle)
        chat.cycle_rounds()
        assert chat.config.max_rounds == 5


async def test_a_message_is_not_sent_while_the_models_key_is_missing():
    """New-user trial 20 L4: after ktui's line about the missing key, a message still went to litellm, whose
    5-line AuthenticationError said it again; it is not sent, and the line says why."""
    chat = ChatPane(AgentConfig(model="anthropic/claude-sonnet-4-5"), problem=lambda: "vector_add")
    agent = StandInAgent()
    async with One(chat).run_test() as pilot:
        chat.attach(agent)
        chat.missing_key = "the model anthropic/claude-sonnet-4-5 needs ANTHROPIC_API_KEY in the environment"
        box = chat.query_one("#chat-input", Input)
        box.focus()
        box.value = "hello"
        await pilot.press("enter")
        await pilot.pause(0.05)
        assert agent.sent == [] and not chat.busy
        lines = [str(w.render()) for w in chat.query(".chat-line")]
        assert lines[-1] == "not sent: the model anthropic/claude-sonnet-4-5 needs ANTHROPIC_API_KEY in the environment"


async def test_the_chat_pane_draws_tool_calls_and_takes_y_for_an_approval():
    chat = ChatPane(AgentConfig(model="openai/scripted"))
    agent = StandInAgent()
    async with One(chat).run_test() as pilot:
        chat.attach(agent)
        await chat.handle(ToolCall(call_id="c1", name="read_file", summary="path='x.py'", state="running"))
        await chat.handle(ToolCall(call_id="c1", name="read_file", summary="path='x.py'", state="done"))
        await chat.handle(ApprovalRequest(request_id=4, path="kernels/vector_add/v3.py", diff="+x\n", new_file=True))
        bar = chat.query_one(ApprovalBar)
        await pilot.pause()
        assert bar.display and bar.has_focus
        await pilot.press("y")
        await wait_until(pilot, lambda: agent.decided)
        assert agent.decided == [(4, True)]
        await chat.handle(ApprovalDecided(request_id=4, approved=True))
        lines = [str(w.render()) for w in chat.query(".chat-line")]
        assert lines == ["⚙ read_file(path='x.py')", "applied"]
        await pilot.pause()
        assert chat.query_one("#chat-input", Input).has_focus


async def test_the_first_verdict_shows_in_the_correctness_row_while_the_rest_run():
    """issue 11: "first ok (16 native) · 37/106 judged" in the correctness row; another run's first verdict is
    ignored, and the full verdict replaces it."""
    from ktui.core.events import FirstVerdict

    table = LadderTable()
    async with One(table).run_test():
        st = running()
        ok = RungResult("correctness", Status.OK, 0.3, "worst=(129,) max_abs_err=0 (16 cases)")
        assert not st.apply(FirstVerdict(key=st.key, run_id=6, result=ok, cases=16, seconds=2.0))  # another run
        assert st.apply(FirstVerdict(key=st.key, run_id=7, result=ok, cases=16, seconds=2.0))
        table.show(st)
        figures = cell(table, "correctness", "figures")
        assert figures == "first ok (16 native) · 37/106 judged"
        # while run still runs, the correctness row and the tree say the first verdict is in (new-user trial 21 F6:
        # "waiting", and "▶ run" in the tree, for 30 s after it)
        st.running_rung, st.progress = "run", (20, 158, "", "")
        table.show(st)
        assert cell(table, "correctness", "status") == "first ✓", cell(table, "correctness", "status")
        assert st.badge() == ("▶ run · first ✓", "bold yellow")
        st.running_rung, st.progress = "correctness", (37, 106, "", "")
        bad = RungResult("correctness", Status.FAILED, 0.3, "spec=(129,) seed=7: 1 element unwritten at [128]")
        assert st.apply(FirstVerdict(key=st.key, run_id=7, result=bad, cases=16, seconds=2.0))
        table.show(st)
        assert cell(table, "correctness", "figures").startswith("first FAILED (16 native): spec=(129,)")
        st.running_rung, st.progress = "run", (21, 158, "", "")
        table.show(st)
        assert cell(table, "correctness", "status") == "first ✗"  # within the column's 8 cells (trial 33, F9)
        st.running_rung, st.progress = "correctness", (37, 106, "", "")
        assert st.badge() == ("▶ correctness · first ✗", "bold red")
        assert "1 element unwritten" in cell(table, "correctness", "figures")
        st.live["correctness"] = RungResult("correctness", Status.OK, 1.0, "worst=(4099,) (106 cases)")
        table.show(st)
        assert cell(table, "correctness", "figures") == "worst=(4099,) (106 cases)"  # the full verdict


async def test_the_diff_tabs_message_wraps_to_the_pane(demo_ws):
    """New-user trial 21 F8: "Nothing to compare yet: ... once both have bee" was cut at the pane's edge (a Log does
    not wrap); the message is wrapped to the pane's width."""
    from ktui.tui.inside import DiffView

    view = DiffView()
    async with One(view).run_test(size=(50, 12)) as pilot:
        view.show(demo_ws, None, {})
        await pilot.pause()
        lines = [str(ln) for ln in view.lines]
        assert len(lines) > 2 and all(len(ln) <= 50 for ln in lines), lines
        assert " ".join(ln.strip() for ln in lines) == DiffView.NOTHING


async def test_a_stale_highlight_from_the_source_table_names_no_sass_row_and_is_ignored():
    """New-user trial 25, F1: paging versions quickly (``]`` every 0.1 s) crashed the TUI with RowDoesNotExist in
    the SASS tab: a source row's highlight, queued before the tables were filled with another version, named an
    instruction row the new table does not have."""
    from textual.widgets import DataTable

    from ktui.tui.inside import SourceSass

    view = SourceSass()
    async with One(view).run_test():
        src, asm = view.query_one("#src", DataTable), view.query_one("#asm", DataTable)
        src.add_row("5", "x = tl.load(p)", "", key="5")
        view._map = {"lines": {"5": [999]}, "instrs": []}  # an instruction of the version shown before
        view.on_data_table_row_highlighted(DataTable.RowHighlighted(src, 0, src.coordinate_to_cell_key((0, 0))[0]))
        assert asm.row_count == 0 and not view._syncing
        asm.add_row("0000", "LDG.E.128", "5", "", "", key="0")
        view._map = {"lines": {"5": [0]}, "instrs": [5]}
        view.on_data_table_row_highlighted(DataTable.RowHighlighted(src, 0, src.coordinate_to_cell_key((0, 0))[0]))
        assert asm.cursor_row == 0
