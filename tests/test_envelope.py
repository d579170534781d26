"""One JSON envelope for every ``--json`` output (``ktui.core.envelope``), its schemas made from the types
(``ktui.schemas``, ``ktui schema``), ``docs/json.md`` generated from them, and the exit codes of every command:
each output parses to the envelope and validates against its command's schema, with the values it should have."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from ktui import schemas
from ktui.cli import main
from ktui.core import envelope
from ktui.core.events import LadderStarted
from ktui.core.results import ErrorInfo, RungResult, Status
from ktui.core.typeschema import SchemaBuilder

from .conftest import BAD, ROOT
from .jsonout import data_of, error_of, validator
from .test_cli import ktui
from .test_sessions_replay import SID, LogBuilder

SAMPLE = "20261201-205204-cc15"  # the session committed in sessions/


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    """``ktui ARGV`` in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


# -- the schemas and their document -----------------------------------------------------------------------------
def test_docs_json_md_is_what_ktui_schema_markdown_prints():
    """docs/json.md is generated: edit the types (their docstrings) and run `ktui schema --markdown > docs/json.md`."""
    assert (ROOT / "docs/json.md").read_text() == schemas.markdown()


def test_every_schema_is_draft_2020_12_and_names_its_command(capsys):
    full = schemas.full_schema()
    jsonschema.Draft202012Validator.check_schema(full)
    assert [c.name for c in schemas.COMMANDS] == [
        "run",
        "diff",
        "status",
        "sessions",
        "eval",
        "replay",
        "context list",
        "context reindex",
        "context search",
    ]
    for c in schemas.COMMANDS:
        one = schemas.command_schema(c.name)
        jsonschema.Draft202012Validator.check_schema(one)
        assert one["$defs"][c.data.__name__]["type"] == "object"
    ok = envelope.success("status", {"workspace": "/w", "problems": []})
    bad = envelope.failure("run", "usage", "no such kernel file: x.py", 2)
    full_v = jsonschema.Draft202012Validator(full)
    assert full_v.is_valid(ok) and full_v.is_valid(bad)
    assert validator("status").is_valid(ok) and not validator("run").is_valid(ok)  # another command's envelope
    assert not validator("run").is_valid({**bad, "exit_code": 1})  # run's exit 1 comes with data, never alone
    assert not validator("status").is_valid({**ok, "data": {"workspace": "/w", "problems": [], "extra": 1}})
    assert not validator("status").is_valid({**ok, "schema_version": 2})

    code, out, _ = run_main(capsys, "schema", "context", "search")
    assert code == 0 and json.loads(out) == schemas.command_schema("context search")
    code, out, _ = run_main(capsys, "schema", "--list")
    assert out.splitlines() == [c.name for c in schemas.COMMANDS]
    code, out, err = run_main(capsys, "schema", "nope")
    assert code == 2 and err.startswith("ktui: error: no command 'nope' prints --json; commands: run, diff")


def _rung(name: str, status: Status, figures: dict, error: ErrorInfo | None = None) -> dict:
    return dict(RungResult(name, status, 0.5, "summary", figures, error).to_json())


def test_a_rung_has_its_figures_beside_its_fields_and_nothing_else():
    """``ktui run``'s rungs: an ok rung has the figures its schema requires, a failed one what it got to, a skipped
    one only its reason; a key no schema names is refused."""
    b = SchemaBuilder({schemas.RungJson: schemas.rung_schema})
    rung = {"$schema": "https://json-schema.org/draft/2020-12/schema", **b.of(schemas.RungJson), "$defs": b.defs}
    v = jsonschema.Draft202012Validator(rung)
    run_ok = {"calls": 3, "first_call_s": 0.2, "total_s": 0.5, "seeds": [7], "tampered": []}
    assert v.is_valid(_rung("run", Status.OK, run_ok))
    assert v.is_valid(_rung("run", Status.OK, {**run_ok, "first_call_s": float("nan")}))  # written "nan"
    assert not v.is_valid(_rung("run", Status.OK, {k: x for k, x in run_ok.items() if k != "seeds"}))
    assert v.is_valid(_rung("run", Status.FAILED, {"calls": 1}, ErrorInfo("ValueError", "boom", "tb")))
    assert not v.is_valid(_rung("run", Status.OK, {**run_ok, "speed": 3}))
    assert v.is_valid(_rung("benchmark", Status.SKIPPED, {"reason": "interpreter"}))
    assert not v.is_valid(_rung("benchmark", Status.SKIPPED, {"reason": "interpreter", "specs": []}))
    assert not v.is_valid(_rung("benchmark", Status.OK, {"calls": 3}))  # run's figure on another rung
    assert not v.is_valid(_rung("lint", Status.OK, {}))
    failed = _rung("compile", Status.FAILED, {}, ErrorInfo("SyntaxError", "invalid syntax", ""))
    assert v.is_valid(failed) and failed["error"] == {
        "type": "SyntaxError",
        "message": "invalid syntax",
        "traceback": "",
    }


def test_the_envelope_writes_dataclasses_enums_and_non_finite_floats_as_json():
    env = envelope.success("eval", {"p": float("inf"), "rows": [Status.OK, (1, float("-inf"))], "x": float("nan")})
    assert env["data"] == {"p": "inf", "rows": ["ok", [1, "-inf"]], "x": "nan"}
    text = envelope.dumps(env)
    assert text.startswith('{\n  "schema_version": 1,\n  "command": "eval",\n  "exit_code": 0,\n  "data": {')
    assert json.loads(text) == env


# -- exit code 2: usage, for every command ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, command, message",
    [
        (
            ["run", "{ws}/kernels/vector_add/v9.py", "--json"],
            "run",
            "no such kernel file: {ws}/kernels/vector_add/v9.py",
        ),
        (
            ["run", "--json"],
            "run",
            "the following arguments are required: KERNEL_FILE (see `ktui run --help`)",
        ),
        (["diff", "{ws}/kernels/vector_add/v1.py", "{ws}/v9.py", "--json"], "diff", "no such kernel file: {ws}/v9.py"),
        (["status", "{tmp}", "--json"], "status", "{tmp} is not a ktui workspace"),
        (["sessions", "--workspace", "{tmp}/nope", "--json"], "sessions", "no such folder: {tmp}/nope"),
        (["eval", "--workspace", "{tmp}", "--json"], "eval", "no ktui workspace"),
        (["eval", "--p", "fast", "--json"], "eval", "argument --p: invalid float value: 'fast'"),
        (["replay", "nosuch", "--workspace", "{ws}", "--rerun", "--json"], "replay", "no session 'nosuch'"),
        (["replay", SAMPLE, "--workspace", str(ROOT), "--json"], "replay", "--band and --timeout go with"),
        (["context", "--workspace", "{tmp}", "list", "--json"], "context list", "no ktui workspace"),
        (["context", "--workspace", "{tmp}", "reindex", "--json"], "context reindex", "no ktui workspace"),
        (["context", "--workspace", "{ws}", "search", "--json"], "context search", "required: query"),
    ],
)
def test_usage_errors_are_one_line_and_the_envelope_with_exit_2(make_ws, tmp_path, capsys, argv, command, message):
    ws = make_ws(["vector_add"], {"vector_add/v1": ROOT / "kernels/vector_add/v1.py"})
    empty = tmp_path / "empty"
    empty.mkdir()

    def fill(s: str) -> str:
        return s.format(ws=ws.root, tmp=empty)

    code, out, err = run_main(capsys, *map(fill, argv))
    assert code == 2, out + err
    said = error_of(out, command, 2, "usage")
    assert fill(message) in said, said
    assert err == f"ktui: error: {said}\n"  # the same line on stderr, and only it


def test_a_usage_error_before_the_command_is_known_is_still_an_envelope(capsys):
    code, out, err = run_main(capsys, "context", "--json")
    env = json.loads(out)
    assert code == 2 and env["command"] == "context" and env["error"]["kind"] == "usage"
    assert jsonschema.Draft202012Validator(schemas.full_schema()).is_valid(env)
    assert "required: cmd" in env["error"]["message"] and err.count("\n") == 1


# -- the commands that run nothing ------------------------------------------------------------------------------
def test_status_and_sessions_json(make_ws, capsys):
    ws = make_ws(["vector_add", "softmax"], {"vector_add/v1": ROOT / "kernels/vector_add/v1.py"})
    code, out, _ = run_main(capsys, "status", str(ws.root), "--json")
    d = data_of(out, "status")
    assert code == 0 and d["workspace"] == str(ws.root)
    assert [p["problem"] for p in d["problems"]] == ["softmax", "vector_add"]
    (v1,) = d["problems"][1]["versions"]
    assert (v1["key"], v1["verdict"], v1["ok"], v1["ran_at"]) == ("vector_add/v1", "· not run", None, None)

    code, out, _ = run_main(capsys, "sessions", "--workspace", str(ROOT), "--json")
    d = data_of(out, "sessions")
    assert code == 0 and d["workspace"] == str(ROOT)
    sample = next(s for s in d["sessions"] if s["id"] == SAMPLE)
    assert sample["ended"] is True and sample["start_iso"].startswith("2026-12-01T")
    assert sample["problems"] and sample["versions"] >= 1 and sample["log_problems"] == 0


def test_context_list_reindex_and_search_json(tmp_path, monkeypatch, capsys):
    root = tmp_path / "ws"
    (root / "references").mkdir(parents=True)
    (root / "kernels" / "softmax").mkdir(parents=True)
    (root / "references" / "softmax.py").write_text("def ref_kernel(data):\n    return data.softmax(-1)\n")
    (root / "kernels" / "softmax" / "v1.py").write_text("def custom_kernel(data):\n    return data\n")
    monkeypatch.setenv("KTUI_CONTEXT_PACKAGES", "")  # the installed Triton and CuTeDSL are not indexed here
    monkeypatch.delenv("KTUI_CONTEXT_DB", raising=False)
    base = ["context", "--workspace", str(root)]
    code, out, _ = run_main(capsys, *base, "reindex", "--json")
    d = data_of(out, "context reindex")
    assert code == 0 and d["seen"] == d["chunked"] == 2 and d["failed"] == [] and isinstance(d["notes"], list)
    code, out, _ = run_main(capsys, *base, "search", "ref_kernel", "--json", "-n", "2")
    d = data_of(out, "context search")
    assert code == 0 and (d["query"], d["kind"]) == ("ref_kernel", None)
    assert d["hits"][0]["cite"] == "references/softmax.py:1" and d["hits"][0]["why"] == "definition"
    code, out, _ = run_main(capsys, *base, "search", "no_such_word_anywhere", "--json")
    assert code == 0 and data_of(out, "context search")["hits"] == []  # no hit is no error
    code, out, _ = run_main(capsys, *base, "list", "--json")
    d = data_of(out, "context list")
    names = {s["name"]: s for s in d["sources"]}
    assert code == 0 and names["references"]["files"] == 1 and names["references"]["added"] == ""
    assert d["cpp_chunker"].startswith("tree-sitter ")  # tree-sitter is a dependency: the fallback is not in use


# -- exit codes 0, 1 and 3 of the commands that run the ladder (subprocesses, as a script runs them) -----------
def _env() -> dict[str, str]:
    return {**os.environ, "KTUI_FORCE_CPU": "1"}


@pytest.mark.slow
def test_no_worker_is_exit_3_and_the_envelope_for_every_command_that_runs_one(make_ws, tmp_path):
    """``--device cuda`` where no GPU is usable (``KTUI_FORCE_CPU=1``): run, diff (a side without dumps), eval and
    replay --rerun each print the environment error as the envelope, exit 3, and the one line on stderr."""
    ws = make_ws(["vector_add"], {"vector_add/v1": ROOT / "kernels/vector_add/v1.py"})
    v1 = str(ws.root / "kernels/vector_add/v1.py")
    cases = {
        "run": ["run", v1, "--device", "cuda", "--json"],
        "diff": ["diff", v1, v1, "--device", "cuda", "--json"],
        "eval": ["eval", "--workspace", str(ws.root), "--device", "cuda", "--json"],
        "replay": ["replay", SAMPLE, "--workspace", str(ROOT), "--rerun", "--device", "cuda", "--json"],
    }
    for command, argv in cases.items():
        p = ktui(*argv)
        if p.returncode == 0:
            pytest.skip("a CUDA GPU is usable here")
        assert p.returncode == 3, (command, p.stdout, p.stderr)
        message = error_of(p.stdout, command, 3, "environment")
        assert p.stderr.endswith(f"ktui: error: {message}\n") and "Traceback" not in p.stderr, p.stderr
        assert "GPU" in message or "CUDA" in message or "cuda" in message, message


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_run_diff_eval_and_status_json_with_their_exit_codes(make_ws):
    """The ladder commands end to end on the CPU: a passing run (exit 0) and a failing one (exit 1, still data), a
    diff (0) and a diff whose side cannot be compiled (1, an error), an eval that reuses the stored verdict (0) and
    one with a failing row (1), then status; every output valid against its command's schema."""
    ws = make_ws(
        ["vector_add", "softmax"],
        {
            "vector_add/v1": ROOT / "kernels/vector_add/v1.py",
            "vector_add/v2": ROOT / "kernels/vector_add/v2.py",
            "vector_add/v3": BAD / "syntax_error.py",
            "softmax/v1": BAD / "syntax_error.py",
        },
    )
    k = ws.root / "kernels/vector_add"
    p = ktui("run", str(k / "v1.py"), "--device", "cpu", "--seeds", "1", "--rungs", "correctness,dumps", "--json")
    d = data_of(p.stdout, "run", 0)
    assert p.returncode == 0 and d["ok"] is True and (d["problem"], d["version"]) == ("vector_add", "v1")
    assert [(r["name"], r["status"]) for r in d["rungs"]] == [
        ("compile", "ok"),
        ("run", "ok"),
        ("correctness", "ok"),
        ("dumps", "ok"),
    ]
    assert d["rungs"][2]["cases"] == sum(s["cases"] for s in d["rungs"][2]["specs"]) > 7
    assert d["device"]["interpreter"] is True and d["rungs"][3]["arch"] == "sm_90a"

    p = ktui("run", str(k / "v3.py"), "--device", "cpu", "--rungs", "compile", "--json")
    d = data_of(p.stdout, "run", 1)
    assert p.returncode == 1 and d["ok"] is False and [r["status"] for r in d["rungs"]] == ["FAILED"]
    assert d["rungs"][0]["error"]["type"] == "SyntaxError" and "v3.py, line" in d["rungs"][0]["error"]["message"]

    assert ktui("run", str(k / "v2.py"), "--device", "cpu", "--rungs", "dumps", "--json").returncode == 0
    p = ktui("diff", str(k / "v1.py"), str(k / "v2.py"), "--json")
    d = data_of(p.stdout, "diff", 0)
    mix = {m["family"]: m for m in d["mix_delta"]}
    assert p.returncode == 0 and d["stage"] == "sass" and d["a"]["kernel"] == "vector_add/v1"
    assert mix["LDG.128"]["a"] == 0 < mix["LDG.128"]["b"] == mix["LDG.128"]["delta"]
    p = ktui("diff", str(k / "v3.py"), str(k / "v1.py"), "--device", "cpu", "--json")
    said = error_of(p.stdout, "diff", 1, "failed")
    assert p.returncode == 1 and said.startswith("vector_add/v3: could not dump its code (") and "SyntaxError" in said
    assert "): [compile] FAILED SyntaxError: expected ':' (v3.py, line 3)" in said, said

    p = ktui("eval", "vector_add", "--workspace", str(ws.root), "--device", "cpu", "--json")
    d = data_of(p.stdout, "eval", 0)
    (row,) = d["rows"]
    assert p.returncode == 0 and (row["version"], row["ok"], row["cached"]) == ("v1", True, True)
    assert (d["total"], d["correct"], d["timed"], d["fast_p"]) == (1, 1, False, None)
    p = ktui("eval", "--workspace", str(ws.root), "--device", "cpu", "--json")
    d = data_of(p.stdout, "eval", 1)
    rows = {r["problem"]: r for r in d["rows"]}
    assert p.returncode == 1 and rows["softmax"]["ok"] is False and rows["vector_add"]["ok"] is True
    assert rows["softmax"]["verdict"] == "✗ compile" and d["correct"] == 1 and d["total"] == 2

    p = ktui("status", str(ws.root), "--json")
    d = data_of(p.stdout, "status", 0)
    verdicts = {v["key"]: v["verdict"] for pr in d["problems"] for v in pr["versions"]}
    assert verdicts["vector_add/v1"] == "✓ ok" and verdicts["vector_add/v3"] == "✗ compile"


@pytest.mark.slow
def test_a_rerun_that_cannot_rerun_a_version_exits_1_with_its_data(tmp_path):
    """``ktui replay --rerun --json``: a version whose source is not in blobs/ cannot be re-run: exit 1, and the
    data says which and why."""
    b = LogBuilder(tmp_path, model=None)
    b.ev(LadderStarted(key="vector_add/v1", run_id=1, source_sha256="ef" * 32, rungs=("compile",)))
    b.write()
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "ktui",
            "replay",
            SID,
            "--rerun",
            "--device",
            "cpu",
            "--json",
            "--workspace",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )
    d = data_of(p.stdout, "replay", 1)
    assert p.returncode == 1 and d["session"] == SID and d["verdicts_changed"] == 1
    (v,) = d["versions"]
    assert v["new"] is None and v["error"].startswith("cannot re-run: no blob efefefefefef")
    assert [x["kind"] for x in v["divergence"]] == ["missing"] and v["recorded"]["verdict"] == "not finished"


def test_the_readme_and_the_docs_name_the_envelope():
    readme = (ROOT / "README.md").read_text()
    assert '{"schema_version": 1, "command": "run", "exit_code": 0, "data": {...}}' in readme
    assert "docs/json.md" in readme and "ktui schema" in readme
    assert Path(ROOT / "docs/json.md").read_text().startswith("# ktui's JSON output")


@pytest.mark.parametrize("name", ["run_softmax_v2", "run_vector_add_v2"])
def test_a_ladder_recorded_on_the_h200_fits_the_run_schema(name):
    """The benchmark and profile figures are only made on a GPU: ``ktui run --json``'s object from the H200
    (tests/fixtures/h200, 2026-12-03, torch 2.11 + triton 3.6, before the envelope: its ``data``) validates against
    the run schema. It named a field the types lacked (``measured_us`` of each benchmark spec)."""
    data = json.loads((ROOT / "tests" / "fixtures" / "h200" / f"{name}.json").read_text())
    out = json.dumps({"schema_version": 1, "command": "run", "exit_code": 0, "data": data})
    got = data_of(out, "run")
    bench = next(r for r in got["rungs"] if r["name"] == "benchmark")
    assert got["device"]["type"] == "cuda" and bench["status"] == "ok"
    assert all(s["roofline_us"] > 0 and 0 < s["sol_pct"] <= 100 for s in bench["specs"]), bench["specs"]
