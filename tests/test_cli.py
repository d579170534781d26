"""``ktui run`` end to end, through the installed console script, as a user runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import BAD
from .jsonout import data_of


def ktui(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    exe = shutil.which("ktui") or str(Path(sys.executable).with_name("ktui"))
    assert Path(exe).exists(), "the ktui console script is not installed (pip install -e .)"
    env = {**os.environ, "KTUI_FORCE_CPU": os.environ.get("KTUI_FORCE_CPU", "1")}
    return subprocess.run([exe, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)


def test_run_json_has_problem_kernel_device_and_rungs(make_ws):
    ws = make_ws(["vector_add"])
    # v2 (1,024-element blocks): v1's 128-element blocks are 8x the interpreted programs, for the same JSON
    p = ktui("run", str(ws.root / "kernels/vector_add/v2.py"), "--json", "--device", "cpu")
    assert p.returncode == 0, p.stderr
    d = data_of(p.stdout, "run")  # the envelope, valid against `ktui schema run`: every rung's figures too
    assert d["problem"] == "vector_add" and d["kernel"] == "kernels/vector_add/v2.py"
    assert d["device"]["type"] == "cpu" and d["device"]["interpreter"] is True
    assert [r["name"] for r in d["rungs"]] == ["compile", "run", "correctness", "benchmark", "dumps"]
    assert all(r["ok"] for r in d["rungs"])
    corr = d["rungs"][2]
    own = [s for s in corr["specs"] if not s["fuzzed"]]  # the reference's 7 specs, plus this run's fuzzed sizes
    assert len(own) == 7 and len(corr["fuzzed"]) == len(corr["specs"]) - 7 >= 1
    for spec in corr["specs"]:
        assert {"max_abs_err", "max_rel_err", "mse", "rmse", "psnr_db", "cosine"} <= set(spec)
    assert d["rungs"][3]["status"] == "skipped"


def test_run_lines_and_exit_code_1_on_a_failed_rung(make_ws):
    ws = make_ws(["softmax"], {"softmax/v1": BAD / "softmax_no_tail.py"})
    p = ktui("run", str(ws.root / "kernels/softmax/v1.py"), "--device", "cpu", "--seed", "7")
    assert p.returncode == 1, p.stdout + p.stderr
    lines = [ln for ln in p.stdout.splitlines() if not ln.startswith(" ")]  # a rung's warnings are indented below it
    assert lines[0] == "softmax/v1  device: cpu (interpreter)"
    assert lines[1].startswith("[compile] ok  triton: softmax_kernel")
    assert lines[2].startswith("[run] ok  ")
    assert lines[3].startswith("[correctness] FAILED spec=(")
    assert " seed=7: " in lines[3] or " seed=8: " in lines[3]
    # wrong already: no verified stretch of calls in a row on the CPU (it would only say so again)
    assert lines[4].startswith("[benchmark] skipped") and lines[4].endswith("not run: correctness failed"), lines[4]
    assert lines[5].startswith("[dumps] ok  softmax_kernel: ")


def test_fail_fast_stops_at_a_failed_first_verdict_and_stores_nothing(make_ws):
    """New-user trial 33, F2: a naive version's first verdict failed at 52 s and the run went on for 4 more minutes
    with no way to stop it there but ctrl+c. ``--fail-fast`` cancels the run at a failed first verdict: its line,
    exit 1, no later rung."""
    ws = make_ws(["softmax"], {"softmax/v1": BAD / "softmax_no_tail.py"})
    p = ktui("run", "softmax/v1", "--device", "cpu", "--seed", "7", "--fail-fast", cwd=ws.root)
    assert p.returncode == 1, p.stdout + p.stderr
    lines = [ln for ln in p.stdout.splitlines() if not ln.startswith(" ")]
    said = [ln for ln in lines if ln.startswith("[correctness] FAILED")]  # once (new-user trial 35, F15)
    assert len(said) == 1 and said[0].startswith("[correctness] FAILED first verdict (16 cases; the full run was"), said
    assert not any(ln.startswith(("[benchmark]", "[dumps]")) for ln in lines), p.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "no/such/file.py"], "no such kernel file"),
        (["run"], "the following arguments are required"),
    ],
)
def test_bad_usage_exits_2_with_one_line(args, message):
    p = ktui(*args)
    assert p.returncode == 2
    assert message in p.stderr
    assert "Traceback" not in p.stderr


def test_unknown_problem_exits_2(make_ws):
    ws = make_ws(["vector_add"], {"nosuch/v1": "def custom_kernel(d):\n    return d\n"})
    p = ktui("run", str(ws.root / "kernels/nosuch/v1.py"))
    assert p.returncode == 2
    assert p.stderr.strip() == (
        "ktui: error: unknown problem 'nosuch': there is no references/nosuch.py (problems: vector_add)"
    )


def test_file_outside_a_workspace_exits_2(tmp_path):
    f = tmp_path / "k.py"
    f.write_text("def custom_kernel(d):\n    return d\n")
    p = ktui("run", str(f))
    assert p.returncode == 2 and "no ktui workspace" in p.stderr and "Traceback" not in p.stderr


def test_tui_on_a_folder_that_is_not_a_workspace_exits_2(tmp_path):
    p = ktui(str(tmp_path))
    assert p.returncode == 2 and "is not a ktui workspace" in p.stderr


def test_the_readme_example_passes_as_written(tmp_path):
    import re

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    # the quick start's two files: the first block that defines the reference and the first that defines a kernel
    reference = next(b for b in blocks if "def ref_kernel" in b)
    kernel = next(b for b in blocks if "def custom_kernel" in b)
    (tmp_path / "references").mkdir()
    (tmp_path / "kernels/scale").mkdir(parents=True)
    (tmp_path / "references/scale.py").write_text(reference)
    (tmp_path / "kernels/scale/v1.py").write_text(kernel)
    p = ktui("run", str(tmp_path / "kernels/scale/v1.py"), "--device", "cpu")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "[correctness] ok  worst=" in p.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "{ws}/kernels/vector_add"], "is a folder: name a version file"),
        (["run", "{ws}/kernels/vector_add/v1.py", "--rungs", ""], "--rungs names no rung"),
        (["run", "{ws}/kernels/vector_add/v1.py", "--rungs", "dumps,speed"], "unknown rung(s) speed"),
        (["{ws}", "--device", "cuda"], "--device cuda, but no CUDA GPU"),
        (["{ws}"], "needs a terminal"),
        # the TUI takes --timeout as `ktui run` does (new-user trial 29, F3), its mistakes said at once
        (["{ws}", "--timeout", "soon"], "--timeout: 'soon' is not a number of seconds"),
        (["{ws}", "--timeout", "run=90"], "needs a terminal"),  # (taken: the terminal is what is missing)
    ],
)
def test_more_bad_usage(make_ws, args, message):
    ws = make_ws(["vector_add"])
    p = ktui(*[a.format(ws=ws.root) for a in args])
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_errors_name_the_users_file_and_skip_ktuis_own_traceback(make_ws):
    ws = make_ws(["vector_add"], {"vector_add/v1": BAD / "syntax_error.py", "vector_add/v2": BAD / "no_entry.py"})
    p = ktui("run", str(ws.root / "kernels/vector_add/v1.py"), "--json", "--device", "cpu")
    err = data_of(p.stdout, "run", 1)["rungs"][0]["error"]
    assert "v1.py, line" in err["message"] and ".ktui" not in err["message"]
    p = ktui("run", str(ws.root / "kernels/vector_add/v2.py"), "--json", "--device", "cpu")
    err = data_of(p.stdout, "run", 1)["rungs"][0]["error"]
    assert err["message"] == "kernels/vector_add/v2.py does not define custom_kernel(data)"
    assert err["traceback"] == ""


def test_a_worker_that_cannot_start_exits_3_with_one_line(make_ws):
    ws = make_ws(["vector_add"])
    p = ktui("run", str(ws.root / "kernels/vector_add/v1.py"), "--device", "cuda")  # KTUI_FORCE_CPU=1 here
    if p.returncode == 0:
        pytest.skip("a CUDA GPU is usable here")
    assert p.returncode == 3, p.stdout + p.stderr
    assert p.stderr.startswith("ktui: error: ") and len(p.stderr.strip().splitlines()) == 1
    assert "Traceback" not in p.stderr and p.stdout == ""


def test_help_lists_the_exit_codes():
    for args in (["run", "--help"], ["--help"]):
        p = ktui(*args)
        assert p.returncode == 0 and "exit codes: 0 ok, 1 a rung failed, 2 usage, 3 environment" in " ".join(
            p.stdout.split()
        )


def test_run_takes_a_problem_version_name_and_names_the_versions_when_none_resolves(make_ws):
    ws = make_ws(["vector_add"])
    p = ktui("run", "vector_add/v1", "--rungs", "compile", "--device", "cpu", "--no-record", cwd=ws.root)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "vector_add/v1  device: cpu (interpreter)"
    assert p.stdout.splitlines()[1].startswith("[compile] ok  triton: add_kernel")
    bad = ktui("run", "vector_add/v7", cwd=ws.root)
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "ktui: error: no such kernel file: vector_add/v7 (nor a version: vector_add has v1, v2, v3; give "
        "kernels/<problem>/<version>.py or problem/version)"
    )
    other = ktui("run", "softmax/v1", cwd=ws.root)
    assert other.returncode == 2 and (
        f"(nor a version: versions in {ws.root}: vector_add/v1, vector_add/v2, vector_add/v3;" in other.stderr
    ), other.stderr
    folder = ktui("run", "kernels/vector_add", cwd=ws.root)
    assert folder.returncode == 2 and "kernels/vector_add is a folder: name a version file" in folder.stderr
    problem = ktui("run", "vector_add", cwd=ws.root)
    assert problem.returncode == 2 and problem.stderr.strip() == (
        "ktui: error: vector_add is a problem: name one of its versions, e.g. vector_add/v3 (vector_add has v1, v2, v3)"
    )


def test_a_compilation_errors_one_line_names_its_cause_not_only_where():
    """Triton's CompilationError starts "at 2:11:" (source line, caret, then the cause): the ladder row and the
    summary line carry the cause (a new user saw only "CompilationError: at 2:38:")."""
    from ktui.core.results import ErrorInfo

    text = (
        "spec=(4099, fp32): CompilationError: at 2:11:\ndef k(x_ptr, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n           ^\narange's range must be a power of 2"
    )
    line = ErrorInfo("CompilationError", text).one_line()
    assert line == "spec=(4099, fp32): CompilationError: at 2:11: arange's range must be a power of 2"
    assert ErrorInfo("ValueError", "bad size\nmore").one_line() == "ValueError: bad size"
    assert ErrorInfo("KeyError", "at 3:4: nothing follows").one_line() == "KeyError: at 3:4: nothing follows"
