"""``ktui.core.report``: hand-made results turned into the exact text of ``ktui run``, the agent's tool results,
the Details tab and the usage line. No workers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ktui.core import report
from ktui.core.results import ErrorInfo, LadderResult, RungResult, Status
from ktui.core.workspace import KernelRef

TB = "\n".join(f"line {i}" for i in range(1, 31)) + "\n\n"
CPU = {"type": "cpu", "interpreter": True}
H200 = {"type": "cuda", "name": "NVIDIA H200", "capability": [9, 0]}


def failed_run() -> LadderResult:
    return LadderResult(
        "softmax",
        "v3",
        "kernels/softmax/v3.py",
        CPU,
        [
            RungResult(
                "compile",
                Status.OK,
                summary="triton: softmax_kernel(w=4,s=3) [sm_90a]",
                warnings=["a warning", "another"],
                figures={
                    "launches": [
                        {
                            "language": "triton",
                            "kernel": "softmax_kernel",
                            "target": "sm_90a",
                            "num_warps": 4,
                            "num_stages": 3,
                            "signature": {"x_ptr": "*fp32", "n": "i32"},
                        }
                    ]
                },
            ),
            RungResult("run", Status.FAILED, error=ErrorInfo("IndexError", "index 4 is out of bounds", TB)),
        ],
        source_sha256="ab" * 32,
        reference_sha256="cd" * 32,
        seconds=2.345,
    )


def failed_correctness() -> LadderResult:
    specs = [
        {"label": "(1, 129)", "ok": True},
        {"label": "(2, 4099)", "ok": False, "worst_case": "seed=7", "reason": "max_abs_err 0.5 > atol 1e-06"},
    ]
    return LadderResult(
        "softmax",
        "v1",
        "kernels/softmax/v1.py",
        H200,
        [
            RungResult("compile", Status.OK, summary="triton: softmax_kernel"),
            RungResult("run", Status.OK, summary="90 cases ok"),
            RungResult(
                "correctness",
                Status.FAILED,
                summary="spec=(2, 4099) seed=7: max_abs_err 0.5",
                figures={"specs": specs},
                error=ErrorInfo("AssertionError", "not close", "Traceback\n  x\n"),
            ),
            RungResult("benchmark", Status.SKIPPED, summary="timing under the Triton interpreter is not meaningful"),
        ],
        source_sha256="0123456789abcdef" * 4,
        reference_sha256="f" * 64,
    )


def test_traceback_tail_keeps_the_last_lines_and_drops_trailing_blanks():
    assert report.traceback_tail(TB, 3) == ["line 28", "line 29", "line 30"]
    assert report.traceback_tail(TB, 2, "  ") == ["  line 29", "  line 30"]
    assert report.traceback_tail("", 15) == [] and report.traceback_tail(TB, 0) == []


def test_ktui_run_lines():
    assert report.run_lines(failed_run()) == [
        "softmax/v3  device: cpu (interpreter)",
        "[compile] ok  triton: softmax_kernel(w=4,s=3) [sm_90a]",
        "    warning: a warning",
        "    warning: another",
        "[run] FAILED IndexError: index 4 is out of bounds",
        *[f"    line {i}" for i in range(16, 31)],  # the last 15 lines
    ]
    lines = report.run_lines(failed_correctness())
    assert lines[0] == "softmax/v1  device: cuda: NVIDIA H200 (sm_90)"
    assert lines[3] == "[correctness] FAILED spec=(2, 4099) seed=7: max_abs_err 0.5"  # no traceback under it
    assert lines[4] == "[benchmark] skipped timing under the Triton interpreter is not meaningful"
    assert len(lines) == 5


def test_the_models_text():
    assert report.for_model(failed_run()) == "\n".join(
        [
            f"Ladder results for softmax/v3 (kernels/softmax/v3.py, sha256 {'ab' * 6}) on cpu (interpreter): FAILED",
            "[compile] ok  triton: softmax_kernel(w=4,s=3) [sm_90a]",
            "  warning: a warning",
            "  warning: another",
            "[run] FAILED IndexError: index 4 is out of bounds",
            "  traceback (last lines):",
            *[f"    line {i}" for i in range(11, 31)],  # the last 20 lines
        ]
    )
    assert report.for_model(failed_correctness()).splitlines()[3:] == [
        "[correctness] FAILED spec=(2, 4099) seed=7: max_abs_err 0.5",
        "  traceback (last lines):",
        "    Traceback",
        "      x",
        "  spec (2, 4099) (seed=7): max_abs_err 0.5 > atol 1e-06",
        "[benchmark] skipped timing under the Triton interpreter is not meaningful",
    ]


def test_the_details_tab():
    k = KernelRef("softmax", "v3", Path("/ws"))
    assert report.details(k, None) == [
        ("softmax/v3", "bold"),
        ("  kernels/softmax/v3.py\n", ""),
        ("Not run yet: press r to run it, a to run every version of its problem, or save the file.\n", "dim"),
    ]
    assert report.details(k, None, running=True)[-1] == (  # not "not run" while its first run is under way
        "Running now (x cancels): no rung finished yet.\n",
        "bold yellow",
    )
    # a new user saw "Not run yet" after compile, run and correctness had finished: Details follows the run, a failed
    # rung's whole message shows at once, and a previous result is marked as the last finished run's
    live = [failed_run().rungs[0], failed_run().rungs[1]]
    during = report.details(k, None, running=True, live=live)
    assert during[2] == ("Running now (x cancels): compile ok, run FAILED.\n", "bold yellow")
    assert ("\n[run] FAILED  IndexError: index 4 is out of bounds\n", "bold red") in during
    again = report.details(k, failed_run(), running=True, live=live[:1])
    assert again[2] == ("Running now (x cancels): compile ok.\n", "bold yellow")
    assert again[3] == ("\nThe last finished run, until this one ends:\n", "dim")
    assert again[4:] == report.details(k, failed_run())[2:]
    assert report.details(k, failed_run()) == [
        ("softmax/v3", "bold"),
        ("  kernels/softmax/v3.py\n", ""),
        (f"device: cpu (interpreter)   source sha256: {'ab' * 6}   reference: {'cd' * 6}   2.3 s\n", ""),
        ("  triton softmax_kernel [sm_90a] warps=4 stages=3  x_ptr:*fp32, n:i32\n", "cyan"),
        ("warning [compile]: a warning\n", "yellow"),
        ("warning [compile]: another\n", "yellow"),
        ("\n[run] FAILED  IndexError: index 4 is out of bounds\n", "bold red"),
        (TB.rstrip() + "\n", ""),  # the whole traceback
    ]
    # the run's base seed, which ``--seed`` takes (a failure names a case's seed: the base plus an offset)
    seeded = failed_correctness()
    seeded.rung("correctness").figures["seed"] = 366608469
    assert ("seed 366608469: ktui run softmax/v3 --seed 366608469 draws these cases again\n", "dim") in (
        report.details(k, seeded)
    )


@dataclass
class Done:
    prompt_tokens: int = 1234
    completion_tokens: int = 56
    cost_usd: float | None = 0.0042
    session_tokens: int = 1290
    session_cost_usd: float | None = 0.01234


def test_the_usage_line():
    assert report.usage_line(Done()) == "1234 in + 56 out tokens, $0.0042; session 1290 tokens, $0.0123"
    assert (
        report.usage_line(Done(cost_usd=None, session_cost_usd=None))
        == "1234 in + 56 out tokens, cost n/a; session 1290 tokens, cost n/a"
    )
    assert report.session_usage(Done()) == "session 1290 tokens, $0.0123"


def test_worst_speedup_is_the_smallest_of_a_passed_benchmark():
    def with_bench(status: Status, speedups: list[float | None]) -> LadderResult:
        return LadderResult(
            "p",
            "v1",
            "kernels/p/v1.py",
            H200,
            [RungResult("benchmark", status, figures={"specs": [{"speedup": s} for s in speedups]})],
        )

    assert with_bench(Status.OK, [1.5, 0.8, None, 2.0]).worst_speedup == 0.8
    assert with_bench(Status.OK, [None]).worst_speedup is None
    assert with_bench(Status.FAILED, [1.5]).worst_speedup is None
    assert failed_run().worst_speedup is None  # no benchmark rung


def test_a_failed_correctness_line_lists_the_other_failing_specs():
    """New-user trial 21 F2: the line named an extreme input's NaN while the defect of 10 of the 11 failing specs (a
    cancellation on normal inputs) was only in --json: each other failing spec gets a line, cut, at most eight."""
    lead = "spec=(3, 4099, bf16) seed=11 dist=extreme"
    specs = [{"label": "(1, 1)", "ok": True}, {"label": "(3, 4099, bf16)", "ok": False, "worst_case": lead}]
    specs += [
        {"label": f"({n}, 127, bf16)", "ok": False, "worst_case": f"spec=({n}, 127, bf16) seed=5 dist=normal",
         "reason": f"output out: {n} of 381 elements (1.0%) off by more than 8 u |ref| " + "x" * 300}
        for n in range(1, 11)
    ]  # fmt: skip
    r = RungResult("correctness", Status.FAILED, summary=f"{lead}: output out: 1 NaN/inf", figures={"specs": specs})
    lines = report.rung_lines(r)
    assert lines[0].startswith("[correctness] FAILED spec=(3, 4099, bf16)")
    listed = [ln for ln in lines if ln.startswith("    ✗ ")]
    assert len(listed) == report.FAILING_SPEC_LINES and lead not in "".join(listed)  # the lead is the line itself
    assert listed[0].startswith("    ✗ spec=(1, 127, bf16) seed=5 dist=normal: output out: 1 of 381 elements")
    assert all(len(ln) <= len("    ✗ ") + 60 + report.FAILING_SPEC_CHARS for ln in listed) and listed[0].endswith("...")
    assert lines[len(listed) + 1] == "    ... and 2 more failing specs (every one: --json, specs[].reason)"
    assert report.failing_spec_lines(RungResult("correctness", Status.OK, figures={"specs": specs})) == []
