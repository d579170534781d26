"""The tolerance policy and the workspace layout."""

import pytest

from ktui.core.workspace import Workspace, WorkspaceError
from ktui.worker.tolerance import resolve


def test_defaults_by_precision():
    assert resolve("float32", None).mode == "allclose"
    assert resolve("bfloat16", None).mode == "psnr"
    assert resolve("int64", None).mode == "exact"
    assert resolve("float8_e4m3fnuz", None).mode == "psnr"  # no own default: falls back by class


def test_overrides_and_bad_fields():
    t = resolve("float32", {"float32": {"atol": 1e-3}})
    assert t.atol == 1e-3 and t.rtol == 1e-5
    t = resolve("bfloat16", {"bfloat16": {"min_psnr_db": 50}})
    assert t.min_psnr_db == 50 and t.mode == "psnr"
    with pytest.raises(ValueError, match="unknown field"):
        resolve("float32", {"float32": {"atool": 1}})


def test_workspace_discovery_and_versions(make_ws):
    ws = make_ws(["vector_add"])
    assert ws.problems() == ["vector_add"]
    assert [k.version for k in ws.versions("vector_add")] == ["v1", "v2", "v3"]
    k = ws.kernel(ws.root / "kernels/vector_add/v2.py")
    assert (k.problem, k.version) == ("vector_add", "v2")
    assert Workspace.find(ws.root / "kernels/vector_add/v2.py").root == ws.root
    assert ws.classify(ws.root / "kernels/vector_add/v9.py") == ("vector_add", "v9")
    assert ws.classify(ws.root / "references/vector_add.py") == ("vector_add", None)
    assert ws.classify(ws.root / "kernels/vector_add/notes.txt") is None


def test_versions_sort_numerically(make_ws):
    ws = make_ws(["vector_add"], {"vector_add/v10": "x = 1\n", "vector_add/v9": "x = 1\n"})
    assert [k.version for k in ws.versions("vector_add")][-2:] == ["v9", "v10"]
    assert ws.next_version_name("vector_add") == "v11"


def test_new_version_copies_to_next_free_name(make_ws):
    ws = make_ws(["vector_add"])
    src = ws.kernel(ws.root / "kernels/vector_add/v1.py")
    new = ws.new_version(src)
    assert new.version == "v4"
    assert new.path.read_text() == src.path.read_text()


def test_errors_name_the_problem(make_ws, tmp_path):
    ws = make_ws(["vector_add"], {"nope/v1": "x = 1\n"})
    with pytest.raises(WorkspaceError, match="unknown problem 'nope'"):
        ws.kernel(ws.root / "kernels/nope/v1.py")
    with pytest.raises(WorkspaceError, match="not a ktui workspace"):
        Workspace(tmp_path)
    with pytest.raises(WorkspaceError, match="no ktui workspace"):
        Workspace.find(tmp_path)


def test_a_snapshot_written_to_after_it_was_taken_is_taken_again_and_refused_by_the_judge(make_ws):
    import hashlib
    import os

    from ktui.core.store import Snapshots
    from ktui.worker.problem import Problem, ProblemError

    ws = make_ws(["vector_add"])
    src = ws.reference_path("vector_add")
    snaps = Snapshots(ws)
    path, sha = snaps.take("vector_add", src)
    assert sha == hashlib.sha256(src.read_bytes()).hexdigest()
    assert not os.access(path, os.W_OK) or os.geteuid() == 0  # read-only for its owner
    path.chmod(0o644)
    path.write_text(path.read_text().replace("return", "return 0 *", 1))  # what a kernel could do to it
    with pytest.raises(ProblemError, match="changed after ktui took it"):
        Problem(path, "vector_add", sha)
    again, sha2 = snaps.take("vector_add", src)
    assert (again, sha2) == (path, sha)
    assert hashlib.sha256(again.read_bytes()).hexdigest() == sha  # restored before the next run uses it
    assert Problem(again, "vector_add", sha).name == "vector_add"
