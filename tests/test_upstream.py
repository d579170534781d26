"""The upstream checker beside ktui's verdict, and ``ktui eval``'s baselines (issue 14, points 1, 2 and 4).

Units: rebuilding a candidate's output for GPU MODE's ``check_implementation`` and reading its verdict
(``ktui.worker.upstream``), folding the per-case verdicts and naming where they differ (``ktui.core.upstream``), the
speedups over torch eager and torch.compile (``benchmark.baseline_figures``) and ``ktui eval``'s figures over them;
on a GPU, the judge's torch eager and torch.compile timings of an imported KernelBench reference.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pytest
import torch

from ktui.core import upstream
from ktui.core.ladder.rungs.benchmark import baseline_figures
from ktui.importers import evaluate
from ktui.worker import upstream as worker_upstream
from ktui.worker.structure import structure
from ktui.worker.tensors import save_outputs


def _saved(out, folder: Path) -> dict:
    return {"outputs": save_outputs(out, folder), "structure": structure(out)}


def test_the_output_is_rebuilt_as_returned_for_the_upstream_checker(tmp_path):
    values, idx = torch.tensor([1.5, -2.0]), torch.tensor([3, 1])
    out = {"values": values, "pair": (idx, 7), "loss": float("nan")}
    got = worker_upstream.output_object(_saved(out, tmp_path), tmp_path, "cpu")
    assert set(got) == {"values", "pair", "loss"} and torch.equal(got["values"], values)
    assert isinstance(got["pair"], tuple) and torch.equal(got["pair"][0], idx) and got["pair"][1] == 7
    assert math.isnan(got["loss"])
    lone = worker_upstream.output_object(_saved(values, tmp_path / "lone"), tmp_path / "lone", "cpu")
    assert torch.equal(lone, values)
    topk = torch.topk(torch.tensor([3.0, 1.0, 2.0]), 2)
    named = worker_upstream.output_object(_saved(topk, tmp_path / "nt"), tmp_path / "nt", "cpu")
    assert named._fields == ("values", "indices") and torch.equal(named.indices, topk.indices)
    withheld = {"outputs": [{"path": "out", "kind": "tensor", "dtype": "float32", "shape": [9], "unsent": "big"}]}
    with pytest.raises(ValueError, match="its bytes were not sent: big"):
        worker_upstream.output_object(withheld, tmp_path, "cpu")


def test_what_check_implementation_returns_is_read_as_a_verdict():
    assert worker_upstream.verdict_of((True, "")) == ("pass", "")
    assert worker_upstream.verdict_of((False, "mismatch found! SIZE MISMATCH")) == (
        "fail",
        "mismatch found! SIZE MISMATCH",
    )
    assert worker_upstream.verdict_of("") == ("pass", "")  # older checkers return a message alone
    assert worker_upstream.verdict_of("3 elements differ") == ("fail", "3 elements differ")
    assert worker_upstream.verdict_of(False) == ("fail", "")
    assert worker_upstream.verdict_of(None) == ("error", "check_implementation returned a NoneType, not (ok, message)")
    # only the upstream problem's own cases: its tests, native inputs, contiguous, one call
    assert worker_upstream.eligible({"spec_index": 0, "seed": 1})
    assert worker_upstream.eligible({"spec_index": 0, "seed": 1, "dist": "native", "repeat": 2})
    for other in (
        {"dist": "normal"},
        {"layout": "transposed"},
        {"spec": {"size": 3}},
        {"near_dup": True},
        {"calls": 3},
    ):
        assert not worker_upstream.eligible({"spec_index": 0, "seed": 1, **other}), other


def test_upstream_verdicts_fold_and_their_difference_with_ktui_is_named():
    cases = [
        {"upstream": "pass", "case": "spec=(127,) seed=1"},
        {"upstream": "fail", "upstream_message": "Number of mismatched elements: 3", "case": "spec=(129,) seed=1"},
        {"label": "(129,)"},  # not one of upstream's own cases: no verdict
    ]
    up = upstream.fold(cases)
    assert up == {
        "verdict": "fail",
        "checked": 2,
        "passed": 1,
        "failed": 1,
        "errors": 0,
        "unavailable": 0,
        "message": "Number of mismatched elements: 3",
        "case": "spec=(129,) seed=1",
    }
    assert upstream.describe(up) == (
        "upstream check_implementation: fail on 1 of 2 cases (spec=(129,) seed=1: Number of mismatched elements: 3)"
    )
    assert upstream.fold([{"label": "(1,)"}]) is None
    assert (
        upstream.fold([{"upstream": "pass"}, {"upstream": "error", "upstream_message": "raised"}])["verdict"] == "error"
    )
    assert upstream.failure_kind("correctness", "out has dtype float32, expected float64") == "dtype"
    assert upstream.failure_kind("correctness", "out has shape (1,), expected ()") == "shape"
    assert (
        upstream.failure_kind("correctness", "3 of 129 elements outside atol=1e-05 rtol=1e-05, worst at 4") == "values"
    )
    assert (
        upstream.failure_kind("benchmark", "spec=(4096,): 1.2 us is impossible: under the roofline")
        == "impossible time"
    )
    assert upstream.failure_kind("run", "RuntimeError: boom") == "run"
    assert upstream.differs("pass", False, "dtype") == "upstream: pass, ktui: fail (dtype)"
    assert upstream.differs("fail", True, "") == "upstream: fail, ktui: pass"
    assert upstream.differs("pass", True, "") == upstream.differs("fail", False, "values") == ""
    assert upstream.differs("n/a", False, "dtype") == ""  # no upstream verdict: nothing to compare
    assert upstream.dtype_note("out has dtype float32, expected float64 (5 of 5 specs failed)").startswith(
        "out is float32 where the reference returns float64: upstream's check_implementation compares values only"
    )
    assert upstream.dtype_note("out has shape (1,), expected ()") == ""


def test_speedups_over_torch_eager_and_torch_compile():
    ref = {"median_us": 30.0, "eager_median_us": 20.0, "eager_source": "eager", "compiled_median_us": 10.0}
    assert baseline_figures(ref, 5.0) == {
        "eager_median_us": 20.0,
        "eager_speedup": 4.0,
        "compiled_median_us": 10.0,
        "compile_speedup": 2.0,
        "eager_source": "eager",
    }
    failed = {
        "median_us": 30.0,
        "eager_median_us": 30.0,
        "eager_source": "ref_kernel",
        "compile_error": "Unsupported: x",
    }
    assert baseline_figures(failed, 10.0) == {
        "eager_median_us": 30.0,
        "eager_speedup": 3.0,
        "eager_source": "ref_kernel",
        "compile_error": "Unsupported: x",
    }
    assert baseline_figures({"median_us": 30.0}, 10.0) == {}  # not asked for (a plain ktui run)


def _row(name: str, ok: bool, ref: float | None, eager: float | None, comp: float | None, error: str = ""):
    return evaluate.Row(
        name,
        "v1",
        "✓" if ok else "✗ benchmark",
        ok,
        True,
        ref,
        None,
        "",
        False,
        "" if ok else "impossible",
        "cuda",
        eager_speedup=eager,
        compile_speedup=comp,
        compile_error=error,
    )


def test_eval_figures_over_each_baseline_leave_impossible_times_and_uncompiled_references_out():
    rows = [
        _row("a", True, 4.0, 2.0, 1.5),
        _row("b", True, 1.0, 0.5, 0.25),
        _row("c", False, None, None, None),  # its time was impossible: the benchmark failed, no speedup
        _row("d", True, 2.0, 2.0, None, error="Unsupported: os.environ"),  # the reference did not compile
    ]
    t = evaluate.summarize(rows, p=1.0, device="cuda", timed=True)
    assert t.fast_p == pytest.approx(2 / 4) and t.geomean_speedup == pytest.approx((4.0 * 1.0 * 2.0) ** (1 / 3))
    assert t.fast_p_eager == pytest.approx(2 / 4) and t.geomean_eager == pytest.approx((2.0 * 0.5 * 2.0) ** (1 / 3))
    assert t.compiled_rows == 3 and t.fast_p_compile == pytest.approx(1 / 3)  # over the rows that compiled
    assert t.geomean_compile == pytest.approx((1.5 * 0.25) ** 0.5)
    text = "\n".join(evaluate.render(t))
    assert "vs ref 0.50 / 2.00x  vs torch eager 0.50 / 1.26x  vs torch.compile 0.33 / 0.61x" in text
    assert "(over the 3 of 4 rows whose reference compiled)" in text
    assert "no compile" in text and "torch.compile failed: Unsupported: os.environ" in text
    cpu = evaluate.summarize([_row("a", True, None, None, None)], p=1.0, device="cpu", timed=False)
    assert (cpu.fast_p, cpu.geomean_eager, cpu.fast_p_compile) == (None, None, None)
    assert evaluate.render(cpu)[2].count("needs a GPU") == 4  # vs ref, vs eager, vs compile, roofline


@pytest.mark.gpu
def test_the_judge_times_torch_eager_and_torch_compile_of_a_kernelbench_reference(tmp_path):
    """On a GPU: an imported KernelBench problem's ``eager`` (Model.forward with the given weights) and
    torch.compile of it, timed by the judge beside ref_kernel, on the benchmark spec."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from ktui.importers import kernelbench
    from ktui.worker.judge import Judge

    from .test_importers import KB_LINEAR, new_ws

    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "2_Linear_relu.py").write_text(KB_LINEAR)
    ws = new_ws(tmp_path / "ws")
    (written,), _ = kernelbench.import_files([level / "2_Linear_relu.py"], ws, check=False)
    path = written.reference
    ref = {"problem": written.problem, "path": str(path), "sha": hashlib.sha256(path.read_bytes()).hexdigest()}
    reply = Judge("cuda").do_time_reference(
        {"reference": ref, "kernel": ref, "spec_indices": [0], "seed": 3, "baselines": True}, lambda p: None
    )
    (spec,) = reply["specs"]
    assert spec["eager_source"] == "eager" and spec["eager_median_us"] > 0
    assert spec.get("compiled_median_us", 0) > 0, spec.get("compile_error")
    assert spec["compile_s"] > 0 and spec["median_us"] > 0


def test_kernelbench_eager_is_the_model_forward_with_the_given_weights(tmp_path):
    """An imported KernelBench reference's ``eager`` (the torch eager baseline) computes what ``ref_kernel`` does,
    with the very tensors of ``state`` as the model's weights (a refill of them is seen), and compiles."""
    import importlib.util

    from ktui.importers import kernelbench

    from .test_importers import KB_LINEAR, new_ws

    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "2_Linear_relu.py").write_text(KB_LINEAR)
    ws = new_ws(tmp_path / "ws")
    (written,), _ = kernelbench.import_files([level / "2_Linear_relu.py"], ws, check=False)
    spec = importlib.util.spec_from_file_location("kb_linear_eager", written.reference)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    data = mod.generate_input(5, **mod.tests[0])
    assert torch.equal(mod.eager(data), mod.ref_kernel(data))
    data[2]["fc.weight"].mul_(-1.0)  # the timing's refill writes into the same tensors: the model sees it
    assert torch.equal(mod.eager(data), mod.ref_kernel(data))
    compiled = torch.compile(mod.eager, dynamic=False, backend="eager")
    assert torch.allclose(compiled(data), mod.ref_kernel(data))


def test_eval_reruns_a_stored_result_without_baselines_and_stops_starting_versions_past_its_deadline(tmp_path):
    import time

    from ktui.core.results import LadderResult, RungResult, Status
    from ktui.core.workspace import Workspace
    from ktui.importers import kernelbench

    from .test_importers import KB_SCALE, SCALE_TRITON, new_ws

    spec = {"label": "(4096, 8192)", "median_us": 10.0, "speedup": 1.5}
    plain = LadderResult("p", "v1", "kernels/p/v1.py", {"type": "cuda"})
    plain.rungs = [RungResult("correctness", Status.OK), RungResult("benchmark", Status.OK, figures={"specs": [spec]})]
    assert not evaluate.has_baselines(plain)  # a plain ktui run: eval times the baselines again
    timed = {**spec, "eager_median_us": 12.0, "compile_error": "Unsupported: x"}
    plain.rungs[1] = RungResult("benchmark", Status.OK, figures={"specs": [timed]})
    assert evaluate.has_baselines(plain)  # a reference that does not compile has its answer
    skipped = LadderResult("p", "v1", "kernels/p/v1.py", {"type": "cpu"}, [RungResult("benchmark", Status.SKIPPED)])
    assert evaluate.has_baselines(skipped)  # nothing to time on the CPU

    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "1_Scale_add.py").write_text(KB_SCALE)
    root = new_ws(tmp_path / "ws")
    kernelbench.import_files([level / "1_Scale_add.py"], root, check=False)
    (root / "kernels" / "kb1_1_scale_add").mkdir()
    (root / "kernels" / "kb1_1_scale_add" / "v1.py").write_text(SCALE_TRITON)
    ws = Workspace(root)
    spent = time.monotonic() - 1.0
    table = evaluate.evaluate(ws, [], lambda: pytest.fail("past the deadline nothing starts"), "cpu", deadline=spent)
    assert (table.rows, table.not_run) == ([], ["kb1_1_scale_add/v1"])
    assert "not run (the budget was spent): 1 version(s), kb1_1_scale_add/v1: run ktui eval again" in "\n".join(
        evaluate.render(table)
    )
