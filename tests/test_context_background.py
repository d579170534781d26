"""The context index built in the background (issue 13): a search while the update runs answers from what is
indexed so far and says it is partial, in ``BackgroundIndex.search``, the agent's ``search_context``, another
process's view of the index (``ContextIndex.indexing``) and ``ktui context search``'s progress on stderr. The update
is held at a chosen file (``gate``) so that "during indexing" is a state the test controls, not a race."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from ktui.context import index as I
from ktui.context.background import BackgroundIndex
from ktui.context.cli import StderrProgress, cli
from ktui.context.index import ContextIndex, Progress

from .test_context_index import _git, repo, ws  # noqa: F401  (fixtures)


class Gate:
    """Holds the index update in ``chunk_file`` at the file ``at`` (relative to its source) until ``open()``."""

    def __init__(self, at: str):
        self.at = at
        self.reached = threading.Event()
        self._go = threading.Event()

    def open(self) -> None:
        self._go.set()

    def wrap(self, real):  # type: ignore[no-untyped-def]
        def chunk_file(name: str, text: str):  # type: ignore[no-untyped-def]
            if name == self.at:
                self.reached.set()
                assert self._go.wait(60), "the gate was never opened"
            return real(name, text)

        return chunk_file


@pytest.fixture
def gate(monkeypatch):
    g = Gate("softmax/v1.py")  # the kernel: the last file of the workspace below
    monkeypatch.setattr(I, "chunk_file", g.wrap(I.chunk_file))
    monkeypatch.setattr(I, "COMMIT_SECONDS", 0.0)  # every file committed: the test sees exactly what is indexed
    yield g
    g.open()


@pytest.fixture
def linked(ws, repo) -> Path:  # noqa: F811
    (ws / "context").mkdir()
    (ws / "context" / "minicute").symlink_to(repo)
    return ws


def test_a_search_during_indexing_returns_what_is_indexed_so_far_labelled_partial(linked, gate):
    bg = BackgroundIndex(linked)
    assert bg.start() and not bg.start()  # one update at a time
    assert gate.reached.wait(30)
    # 8 files of context/minicute/ (tests/ pruned) and references/softmax.py are in; kernels/softmax/v1.py is not
    assert bg.progress() == Progress(9, 10, "kernels/")
    res = bg.search("local_tile")
    assert res.hits[0].cite == "context/minicute/cute/core.py:8" and res.hits[0].why == "definition"
    assert res.partial == Progress(9, 10, "kernels/")
    assert res.label() == "partial: indexing 9/10 files (kernels/); hits come from what is indexed so far"
    assert bg.search("ref_kernel").hits[0].cite == "references/softmax.py:1"
    missing = bg.search("custom_kernel")
    assert missing.hits == [] and missing.partial is not None
    # another process sees the update too: its lock is held and its progress committed
    other = ContextIndex.for_workspace(linked)
    assert other.indexing() == Progress(9, 10, "kernels/")
    gate.open()
    assert bg.wait(30) and bg.error == "" and bg.stats is not None and bg.stats.chunked == 7
    done = bg.search("custom_kernel")
    assert done.partial is None and done.label() == "" and done.hits[0].cite == "kernels/softmax/v1.py:1"
    assert other.indexing() is None and other.committed_progress() == Progress(10, 10)
    other.close()
    bg.close()


def test_the_agent_tool_answers_partially_while_the_index_is_built(linked, gate, monkeypatch):
    from ktui.agent import tools
    from ktui.agent.tools import Workbench
    from ktui.core.workspace import Workspace

    monkeypatch.setattr(tools, "CONTEXT_WAIT_S", 0.2)
    bg = BackgroundIndex.for_workspace(linked)
    assert bg.start() and gate.reached.wait(30)  # (the TUI's Context tab started the build)
    wb = Workbench(Workspace(linked))
    t0 = time.monotonic()
    out = wb.search_context("local_tile").splitlines()
    assert time.monotonic() - t0 < 10  # it did not wait for the build
    assert out[0] == (
        "(partial: indexing 9/10 files (kernels/); hits come from what is indexed so far; search again later for "
        "complete results)"
    )
    assert out[1] == "1. context/minicute/cute/core.py:8  [code function local_tile]  (definition)"
    gate.open()
    assert bg.wait(30)
    full = wb.search_context("custom_kernel").splitlines()
    assert full[0].startswith("1. kernels/softmax/v1.py:1  [code function custom_kernel]")
    assert not any(line.startswith("(partial") for line in full)


def test_ktui_context_search_prints_progress_on_stderr_and_waits_for_another_update(linked, gate, capsys):
    bg = BackgroundIndex(linked)
    assert bg.start() and gate.reached.wait(30)
    done: list[int] = []
    t = threading.Thread(target=lambda: done.append(cli(["--workspace", str(linked), "search", "custom_kernel"])))
    t.start()
    time.sleep(1.8)  # StderrProgress prints from the first second on, about twice a second while it waits
    assert t.is_alive()  # the CLI waits for the other update (it answers complete)
    gate.open()
    t.join(30)
    assert done == [0]
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "1. kernels/softmax/v1.py:1  [code function custom_kernel]  (definition)"
    assert "another ktui is indexing 9/10 files (kernels/)" in err.splitlines()
    bg.close()


def test_stderr_progress_lines(capsys):
    p = StderrProgress(every=0.0)
    p(Progress(0, 0))
    p(Progress(1200, 5400, "context/cutlass/"))
    p(Progress(5400, 5400, "kernels/"))
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "indexing (listing the files)"
    assert err[1] == "indexing 1200/5400 files (context/cutlass/)"
    assert re.fullmatch(r"indexed 5400 files in \d+\.\d s", err[2])
    quiet = StderrProgress(every=60.0)  # an update shorter than a second prints nothing
    quiet(Progress(3, 10, "x/"))
    quiet(Progress(10, 10, "x/"))
    assert capsys.readouterr().err == ""
