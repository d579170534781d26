"""Large artifacts of a run (dumps, Nsight Compute reports) are recorded by hash (issue 12): an ``artifact``
record per file, its bytes in the session's blob store up to ``ARTIFACT_BLOB_MAX`` (once per content), a larger
one by its hash and size alone; the fold keeps each path's hash."""

from __future__ import annotations

import hashlib

from ktui.core.events import LadderFinished
from ktui.core.results import LadderResult, RungResult, Status
from ktui.sessions import record
from ktui.sessions.fold import fold
from ktui.sessions.log import read_log
from ktui.sessions.record import Recorder, artifact_paths


def _result(dump_rel: str, report_rel: str) -> LadderResult:
    dumps = RungResult(
        "dumps",
        Status.OK,
        figures={"kernels": [{"kernel": "k", "files": {"ptx": f"{dump_rel}/k.ptx", "sass": f"{dump_rel}/k.sass"}}]},
    )
    profile = RungResult("profile", Status.OK, figures={"report": f"{report_rel}.ncu-rep"})
    return LadderResult("p", "v1", "kernels/p/v1.py", {"type": "cuda"}, rungs=[dumps, profile])


def test_dump_and_report_files_are_recorded_by_hash_and_stored_once(make_ws, monkeypatch):
    ws = make_ws([])
    d = ws.root / ".ktui" / "dumps" / "p" / "v1-abc"
    d.mkdir(parents=True)
    (d / "k.ptx").write_text(".visible .entry k() { ret; }\n")
    (d / "k.sass").write_bytes(b"S" * 5000)
    prof = ws.root / ".ktui" / "profiles" / "p"
    prof.mkdir(parents=True)
    (prof / "v1-abc.ncu-rep").write_bytes(b"R" * 300)
    (prof / "v1-abc.raw.csv").write_text("a,b\n1,2\n")
    res = _result(".ktui/dumps/p/v1-abc", ".ktui/profiles/p/v1-abc")
    assert [p for _, p in artifact_paths(res)] == [
        ".ktui/dumps/p/v1-abc/k.ptx",
        ".ktui/dumps/p/v1-abc/k.sass",
        ".ktui/profiles/p/v1-abc.ncu-rep",
        ".ktui/profiles/p/v1-abc.raw.csv",
        ".ktui/profiles/p/v1-abc.details.csv",
        ".ktui/profiles/p/v1-abc.source.csv",
    ]
    monkeypatch.setattr(record, "ARTIFACT_BLOB_MAX", 1000)  # the SASS (5000 bytes) is referenced, not stored
    rec = Recorder(ws, "run", ["ktui", "run"], environ={})
    rec(LadderFinished(key="p/v1", run_id=1, result=res))
    rec(LadderFinished(key="p/v1", run_id=2, result=res))  # the same files again: no new records
    rec.close()
    log = read_log(rec.path)
    arts = [r.data for r in log.records if r.type == "artifact"]
    assert [(a["path"].rsplit("/", 1)[-1], a["stored"], a["rung"]) for a in arts] == [
        ("k.ptx", True, "dumps"),
        ("k.sass", False, "dumps"),
        ("v1-abc.ncu-rep", True, "profile"),
        ("v1-abc.raw.csv", True, "profile"),
    ]  # details.csv and source.csv do not exist: skipped
    sass = next(a for a in arts if a["path"].endswith("k.sass"))
    assert sass["sha256"] == hashlib.sha256(b"S" * 5000).hexdigest() and sass["bytes"] == 5000
    for a in arts:
        blob = rec.dir / "blobs" / a["sha256"]
        assert blob.is_file() == a["stored"]
        if a["stored"]:
            assert hashlib.sha256(blob.read_bytes()).hexdigest() == a["sha256"]
    # each artifact record comes before the ladder result that names it
    types = [r.type for r in log.records]
    assert types.index("artifact") < types.index("LadderFinished")
    state = fold(log.records)
    assert (
        state.artifacts[".ktui/dumps/p/v1-abc/k.ptx"] == hashlib.sha256(b".visible .entry k() { ret; }\n").hexdigest()
    )
    assert state.skipped == 0

    (d / "k.ptx").write_text(".visible .entry k() { ret; }\n// changed\n")  # new content at the same path: recorded
    rec2 = Recorder(ws, "run", ["ktui", "run"], environ={})
    rec2(LadderFinished(key="p/v1", run_id=3, result=res))
    rec2.close()
    assert len([r for r in read_log(rec2.path).records if r.type == "artifact"]) == 4
