"""Helper modules of a problem's kernel folder (new-user trial 25, F2 and F3): not versions, and part of the
verdicts of the versions that import them."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ktui.core.results import LadderResult, RungResult, Status
from ktui.core.status import STALE_KERNEL, staleness
from ktui.core.workspace import KernelRef, is_helper

V13 = "from common import pick_warps\nimport tiles.sub\n\ndef custom_kernel(data):\n    return pick_warps(data)\n"
COMMON = "from _blocks import BLOCK\n\ndef pick_warps(x):\n    return x\n"


def _ws(make_ws):
    ws = make_ws(
        ["vector_add"], {"vector_add/v13": V13, "vector_add/v1": "def custom_kernel(data):\n    return data\n"}
    )
    d = ws.root / "kernels" / "vector_add"
    (d / "common.py").write_text(COMMON)
    (d / "_blocks.py").write_text("BLOCK = 128\n")
    (d / "v2.py").write_text("")  # a version being written: named like one, no custom_kernel yet
    return ws, d


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_a_helper_module_is_no_version_and_a_version_named_file_always_is(make_ws):
    ws, d = _ws(make_ws)
    assert [k.version for k in ws.versions("vector_add")] == ["v1", "v2", "v13"]
    assert is_helper(d / "common.py") and is_helper(d / "_blocks.py") and not is_helper(d / "v2.py")


def test_the_helpers_a_version_imports_are_part_of_its_verdict(make_ws):
    """``v13`` imports ``common``, which imports ``_blocks``: both are hashed with its result, and a change of
    either makes the verdict stale (the TUI and ``ktui status`` kept ``✓ ok`` after the helper broke)."""
    ws, d = _ws(make_ws)
    k = KernelRef("vector_add", "v13", ws.root)
    helpers = ws.helpers_of(k)
    assert helpers == {"_blocks": _sha(d / "_blocks.py"), "common": _sha(d / "common.py")}
    assert ws.helpers_of(KernelRef("vector_add", "v1", ws.root)) == {}
    result = LadderResult(
        "vector_add",
        "v13",
        "kernels/vector_add/v13.py",
        {"type": "cpu"},
        [RungResult("correctness", Status.OK)],
        source_sha256=_sha(d / "v13.py"),
        reference_sha256=_sha(ws.reference_path("vector_add")),
        helpers_sha256=helpers,
    )
    assert staleness(ws, k, result) == ""
    assert LadderResult.from_json(result.to_json()).helpers_sha256 == helpers  # stored with the result
    (d / "_blocks.py").write_text("BLOCK = 64\n")
    assert staleness(ws, k, result) == STALE_KERNEL
    (d / "_blocks.py").write_text("BLOCK = 128\n")
    assert staleness(ws, k, result) == ""
    (d / "common.py").unlink()
    assert staleness(ws, k, result) == STALE_KERNEL


def test_a_saved_helper_queues_the_versions_that_import_it(make_ws):
    from types import SimpleNamespace

    from ktui.core.session import Session

    ws, d = _ws(make_ws)
    submitted: list[str] = []
    fake = SimpleNamespace(
        ws=ws,
        runs_saves=True,
        store=SimpleNamespace(root=ws.root / ".ktui" / "results"),
        bus=SimpleNamespace(publish=lambda ev: None),
        scheduler=SimpleNamespace(submit=lambda k, why: submitted.append(f"{k.key}:{why}")),
    )
    Session._on_file(fake, d / "_blocks.py", deleted=False)  # type: ignore[arg-type]
    assert submitted == ["vector_add/v13:save"]


def test_status_and_sessions_find_the_workspace_above_the_current_folder(make_ws, monkeypatch):
    """New-user trial 25, F4: from ``kernels/<problem>/``, ``ktui status`` said "not a ktui workspace" and ``ktui
    sessions`` "No recorded sessions", where ``ktui run`` found the workspace above."""
    from ktui.core.workspace import Workspace
    from ktui.sessions.catalog import workspace_root

    ws, d = _ws(make_ws)
    monkeypatch.chdir(d)
    assert Workspace.at(".").root == ws.root and workspace_root(".") == ws.root
    assert Workspace.at(str(ws.root)).root == ws.root


def test_a_second_session_on_a_workspace_does_not_run_its_saves(make_ws, tmp_path):
    """New-user trial 25, F13: two TUIs on one workspace both ran every save. The first session to watch takes
    ``.ktui/watch.lock`` (``flock``: released however its process ends); another one shows results and runs what
    it is asked, not saves."""
    import os
    from types import SimpleNamespace

    from ktui.core.session import Session
    from ktui.core.watcher import release_watch_lock, take_watch_lock

    ws, d = _ws(make_ws)
    first, holder = take_watch_lock(ws.state_dir)
    assert first is not None and first >= 0 and holder == ""
    second, holder = take_watch_lock(ws.state_dir)
    assert second is None and holder == str(os.getpid())
    submitted: list[str] = []
    fake = SimpleNamespace(
        ws=ws,
        runs_saves=False,
        store=SimpleNamespace(root=ws.root / ".ktui" / "results"),
        bus=SimpleNamespace(publish=lambda ev: None),
        scheduler=SimpleNamespace(submit=lambda k, why: submitted.append(k.key)),
    )
    Session._on_file(fake, d / "v1.py", deleted=False)  # type: ignore[arg-type]
    assert submitted == []
    fake.runs_saves = True
    Session._on_file(fake, d / "v1.py", deleted=False)  # type: ignore[arg-type]
    assert submitted == ["vector_add/v1"]
    release_watch_lock(first)
    again, _ = take_watch_lock(ws.state_dir)
    assert again is not None and again >= 0
    release_watch_lock(again)
