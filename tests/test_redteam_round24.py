"""Red team round 24: each finding fixed as a mechanism, with a bad kernel, its honest twin and a test asserting the
verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, K, corr, good, run

R = CASES / "references"
CHECKED = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))


def test_a_torch_nn_layer_called_for_the_output_is_torch_not_a_kernel(make_ws, ladder_for):
    """F7: ``torch.nn.Softmax(dim=-1)(x)`` after a dummy Triton launch passed every rung with no warning: the scan
    skipped capitalized names (classes) and did not follow the instance. A torch.nn layer's instance, called (or its
    ``forward``), is torch computing (``flow._is_nn_module``); the twin computes every output in Triton."""
    ref = R / "rt24_softmax_composite.py"
    good(run(make_ws, ladder_for, "softmax", K / "rt24_softmax_nnmodule_good.py", reference=ref, **CHECKED))
    res = run(make_ws, ladder_for, "softmax", K / "rt24_softmax_nnmodule_bad.py", reference=ref, **CHECKED)
    assert not res.ok
    text = " ".join(r.summary + (r.error.message if r.error else "") for r in res.rungs)
    assert "falls back to torch for a torch.nn.Softmax instance called through torch.nn.Softmax(dim=-1)" in text, text
    assert res.rung("compile").status is Status.FAILED and "the launches compute nothing the version" in text, text
    # the same dead launch with the softmax computed in numpy, which no name rule reads: the dry call still tells
    res = run(make_ws, ladder_for, "softmax", K / "rt24_softmax_numpy_bad.py", reference=ref, **CHECKED)
    compile_rung = res.rung("compile")
    assert compile_rung.status is Status.FAILED, compile_rung.line()
    assert compile_rung.summary.startswith("times torch, not a kernel: on spec=(2, 4099, fp32) the dry call (every"), (
        compile_rung.summary
    )


def test_the_scan_follows_torch_nn_instances_and_leaves_holders_alone():
    from ktui.core.inspect.scan import scan_source

    head = "import torch\nfrom torch.nn import GELU, Parameter\nSM = torch.nn.Softmax(dim=-1)\n"

    def torch_findings(body: str) -> list[str]:
        return [f.text for f in scan_source(head + body) if f.kind.startswith("torch")]

    assert torch_findings("def custom_kernel(x):\n    g = GELU()\n    return g(x)\n") == [
        "falls back to torch for a torch.nn.GELU instance called through g"
    ]
    assert torch_findings("def custom_kernel(x):\n    return SM.forward(x)\n") == [
        "falls back to torch for a torch.nn.Softmax instance.forward called through SM.forward"
    ]
    honest = (
        "def custom_kernel(x):\n    w = Parameter(x)\n    m = torch.nn.Linear(4, 4)\n    return torch.empty_like(w)\n"
    )
    assert torch_findings(honest) == []


def test_a_python_float_output_is_judged_at_float32_at_least_whatever_the_other_leaves(make_ws, ladder_for):
    """F5: a loss returned as a Python float took the bf16 inputs' rules, so 0.995x the MSE passed "at 50% of
    tolerance"; F6: a float mean beside int64 predictions took int64's, exact, and an honest float32 mean failed on
    an ulp. A Python float is judged by float32's rules (float64's when the case's are), with the native allowance
    (``problem.output_dtype``)."""
    ref = R / "rt24_mse_pyfloat.py"
    good(run(make_ws, ladder_for, "mse", K / "rt24_mse_pyfloat_good.py", reference=ref, **CHECKED))
    bad = corr(run(make_ws, ladder_for, "mse", K / "rt24_mse_pyfloat_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED, bad.line()
    assert "atol=1e-05 rtol=1e-05" in bad.summary, bad.summary
    ok = good(
        run(make_ws, ladder_for, "pred", K / "rt24_pred_mean_good.py", reference=R / "rt24_pred_mean.py", **CHECKED)
    )
    assert ok.rung("correctness").status is Status.OK


def test_output_dtype_of_numbers():
    import torch

    from ktui.worker.problem import output_dtype

    assert output_dtype(0.5, "bfloat16") == "float32"
    assert output_dtype(0.5, "int64") == "float32"
    assert output_dtype(0.5, "float64") == "float64"
    assert output_dtype(3, "bfloat16") == "bfloat16" and output_dtype(True, "int64") == "int64"
    assert output_dtype(torch.zeros(2, dtype=torch.float16), "float32") == "float16"


def test_an_int_parameter_that_sizes_the_output_is_moved_and_a_kernel_ignoring_it_fails(make_ws, ladder_for):
    """F8: top-k's ``k`` in the data: every +1, -1 or x2 changed the output's shape, so none was kept ("a size: the
    spec's business") and a kernel with k = 8 folded in passed. An int that is no dimension or element count of
    any input tensor is a parameter (``arguments._parameters``): its moves may change the output's shape."""
    ref = R / "rt24_topk_k.py"
    ok = good(run(make_ws, ladder_for, "topk", K / "rt24_topk_k_good.py", reference=ref, **CHECKED))
    assert not any("never varied" in w for r in ok.rungs for w in r.warnings), [r.warnings for r in ok.rungs]
    bad = corr(run(make_ws, ladder_for, "topk", K / "rt24_topk_k_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED, bad.line()
    failed = [c for s in bad.figures["specs"] for c in s["failed_cases"]]
    assert failed and all("dist=scalars vary=[1]" in c for c in failed), failed
    assert "out has shape" in bad.summary, bad.summary


def test_a_dry_call_whose_host_code_reads_an_unwritten_count_dumps_the_launches_the_run_made(make_ws, ladder_for):
    """F9: an honest stream compaction (count, scan, ``.item()``, allocate, write) failed the dumps rung: nothing
    runs in its dry call, so the host read an unwritten total ("negative dimension"). A dry call whose host code
    raises dumps the launches the run observed instead, with a warning that says why."""
    ref = R / "rt24_compact.py"
    rungs = ("compile", "run", "correctness", "dumps")
    res = good(
        run(
            make_ws,
            ladder_for,
            "compact",
            K / "rt24_compact_sentinel_good.py",
            reference=ref,
            **{**CHECKED, "rungs": rungs},
        )
    )
    dumps = res.rung("dumps")
    assert dumps.status is Status.OK, dumps.line()
    assert {k["kernel"] for k in dumps.figures["kernels"]} == {"count_kernel", "scan_kernel", "write_kernel"}
    w = " ".join(dumps.warnings)
    assert "raised RuntimeError in host code" in w and "dumped instead the" in w, dumps.warnings


def test_a_cummax_may_keep_any_of_equal_running_maxima_but_never_a_later_one(make_ws, ladder_for):
    """F10: an honest cummax keeping the first of equal maxima failed "indices repeat where the reference's are
    distinct" (sort and topk's rule; torch keeps the last, undocumented). cummax and cummin indices are judged by
    what they select, any of the equal running extremes so far (``indices._CAUSAL``); one pointing at a later equal
    element (round 24, F2's bad kernel) fails."""
    ref = R / "rt24_cummax.py"
    good(run(make_ws, ladder_for, "cummax", K / "rt24_cummax_good.py", reference=ref, **CHECKED))
    good(run(make_ws, ladder_for, "cummax", K / "rt24_cummax_first_good.py", reference=ref, **CHECKED))
    bad = corr(run(make_ws, ladder_for, "cummax", K / "rt24_cummax_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED, bad.line()
    assert "indices point past their own position along dim" in bad.summary, bad.summary


def test_an_out_of_memory_drawing_inputs_is_not_blamed_on_the_reference():
    """On the H200 (2026-12-06) round 23's kernel keeping every call's scratch filled the device's 139 GiB during
    the timed calls; the next ``generate_input`` ran out of memory and the benchmark read "reference error
    (references/rt23_leak.py:7 in generate_input) ... OutOfMemoryError". The message says what happened and is no
    reference error (the version's rung fails; the reference is not blamed)."""
    from pathlib import Path

    import torch

    from ktui.core.results import is_reference_message
    from ktui.worker.problem import reference_error

    try:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 MiB.")
    except torch.OutOfMemoryError as exc:
        said = reference_error(exc, Path("references/rt23_leak.py"), "generate_input(seed=1, n=16777216)")
    message = str(said)
    assert message.startswith(
        "out of memory: generate_input(seed=1, n=16777216) (references/rt23_leak.py) could not allocate, with "
    ), message
    assert "CUDA out of memory. Tried to allocate 64.00 MiB." in message
    assert not is_reference_message(message)
