"""Integrity decided where the candidate cannot reach (issue 9, point 6).

- The judge decides whether the inputs changed from the bytes the candidate wrote after each call, compared bit for
  bit with the inputs it builds itself; the candidate's own hashes and alias list are hints that can fail a case,
  never pass one.
- The worker's fingerprint digests what each function runs (code, defaults, closure), so rewriting ``__code__``,
  ``__defaults__`` or a closure cell of ktui's helpers is seen, though the function object is the same one.
- A tampered worker fails every rung it served (run, correctness, benchmark), each naming what was patched, and is
  replaced before the next version runs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ktui.core.events import EventBus, RungFinished
from ktui.core.results import ErrorInfo, RungResult, Status

from .conftest import ROOT
from .test_cases import CASES, K, corr, good, run
from .test_gpu_cases import run as gpu_run

ADD_INTO = CASES / "references" / "add_into.py"


# -- the fingerprint: code digests, not ids -------------------------------------------------------------------------
def test_rewriting_the_code_defaults_or_closure_of_a_worker_function_is_seen():
    import ktui.worker.candidate  # noqa: F401 - the worker's modules, as the candidate has them
    from ktui.worker import integrity, tensors, timing

    base = integrity.fingerprint()
    assert integrity.tampered(base) == []
    code = tensors.hash_data.__code__
    try:
        tensors.hash_data.__code__ = (lambda data: "0" * 16).__code__
        # the same object under two names (checked imports it): named once, by its own module
        assert integrity.tampered(base) == ["ktui.worker.tensors.hash_data"]
        assert integrity.tampered(integrity.fingerprint(own_only=True), own_only=True) == []
    finally:
        tensors.hash_data.__code__ = code
    assert integrity.tampered(base) == []
    kw = timing.bench.__kwdefaults__
    try:
        timing.bench.__kwdefaults__ = {**kw, "min_reps": 1}
        assert integrity.tampered(base) == ["ktui.worker.timing.bench"]
    finally:
        timing.bench.__kwdefaults__ = kw
    assert integrity.tampered(base) == []


def test_a_closure_cell_rebound_changes_the_digest_and_a_builtin_is_known_by_id():
    from ktui.worker import integrity

    def make():
        limit = 1

        def f(x):
            return min(x, limit)

        return f

    f = make()
    before = integrity.digest(f)
    assert integrity.digest(f) == before
    f.__closure__[0].cell_contents = 2
    assert integrity.digest(f) != before
    assert integrity.digest(len) == id(len)


def test_torch_compile_is_no_patch_and_a_patched_manual_seed_still_is():
    """Importing torch._dynamo (any torch.compile) rewraps torch.manual_seed (torch/_dynamo/__init__.py): the
    candidate settles that before its baseline (``settle_torch``), so an honest torch.compile solution is not
    "patched torch.manual_seed" (GPU MODE pmpp_v2 vectorsum); replacing it, or what its wrapper calls, still is."""
    import torch

    from ktui.worker import integrity

    integrity.settle_torch()
    base = integrity.fingerprint()
    compiled = torch.compile(lambda x: x.sum() * 2, backend="eager")  # dynamo traces: its import is what patched
    assert float(compiled(torch.ones(8))) == 16.0
    torch.manual_seed(1234)  # ktui's own generate calls it through the wrapper
    torch.seed()
    assert integrity.tampered(base) == []
    wrapper = torch.manual_seed
    original = torch.random.manual_seed
    cached = original.__dict__["__dynamo_disable"]  # what the wrapper calls: cached by its first call
    try:
        torch.manual_seed = lambda seed: None  # a real patch
        assert integrity.tampered(base) == ["torch.manual_seed"]
        torch.manual_seed = wrapper
        assert integrity.tampered(base) == []
        original.__dict__["__dynamo_disable"] = lambda seed: None  # the wrapper routed elsewhere: a patch too
        assert integrity.tampered(base) == ["torch.manual_seed"]
    finally:
        torch.manual_seed = wrapper
        original.__dict__["__dynamo_disable"] = cached
    assert integrity.tampered(base) == []


def test_the_fingerprint_covers_torch_and_ktui_and_an_untouched_process_is_not_tampered():
    """What the check covers; its cost (targets 0.1 s and 0.05 s a call) is measured by
    ``benchmarks/integrity_cost.py``, not here."""
    import ktui.worker.candidate  # noqa: F401
    from ktui.worker import integrity

    base = integrity.fingerprint()
    assert len(base) > 2000  # torch, torch.Tensor, the standard modules and ktui's own
    assert integrity.tampered(base) == []
    own = integrity.fingerprint(own_only=True)
    assert 0 < len(own) < len(base)
    assert integrity.tampered(own, own_only=True) == []


# -- the judge's input check, from bytes --------------------------------------------------------------------------
def _judge_and_case(tmp_path: Path, n: int = 1025):
    from ktui.worker.judge import Judge

    path = ROOT / "references" / "vector_add.py"
    ref = {
        "problem": "vector_add",
        "path": str(path),
        "sha": hashlib.sha256(path.read_bytes()).hexdigest(),
        "search_dir": str(path.parent),
    }
    judge = Judge("cpu")
    problem = judge.problems.get(ref)
    spec_index = next(i for i, s in enumerate(problem.tests) if s == {"n": n})
    case = {"spec_index": spec_index, "seed": 7}
    judge.do_prepare({"kernel": {}, "reference": ref, "cases": [case]}, lambda p: None)
    return judge, ref, problem, case


def _execute(problem, case, folder: Path, kernel, forged: bool):
    """What the candidate's ``do_execute`` sends for one case, with its own facts forged as a patched worker would
    (hash after = hash before, no aliases) when ``forged``."""
    from ktui.worker.cases import build_input
    from ktui.worker.problem import inputs_only
    from ktui.worker.structure import structure
    from ktui.worker.tensors import aliases, hash_data, save_inputs, save_outputs

    data = build_input(problem, case, "cpu")
    inputs = inputs_only(problem, data)
    before = hash_data(inputs)
    out = kernel(data)
    entry = dict(case)
    entry.update(
        {
            "seconds": 0.0,
            "input_hash_before": before,
            "input_hash_after": before if forged else hash_data(inputs),
            "outputs": save_outputs(out, folder),
            "inputs_after": save_inputs(inputs, folder),
            "structure": structure(out),
            "aliases": [] if forged else aliases(out, inputs),
        }
    )
    return entry


def _add_into_a(data):
    a, b = data
    return a.add_(b)


def test_the_judge_fails_a_mutated_input_from_its_bytes_whatever_the_candidate_says(tmp_path):
    judge, ref, problem, case = _judge_and_case(tmp_path)
    folder = tmp_path / "out" / "case0"
    entry = _execute(problem, case, folder, _add_into_a, forged=True)
    verdict = judge.do_compare(
        {"kernel": {}, "reference": ref, "cases": [entry], "out_dir": str(tmp_path / "out")}, lambda p: None
    )["cases"][0]
    assert not verdict["ok"]
    assert verdict["reason"] == (
        "input modified: in[0]: 1025 of 1025 elements changed during the call (the kernel wrote into its input "
        "tensors); out holds exactly in[0]'s values as the call left them: the output is that input (aliasing: the "
        "output must be memory of its own) or a copy of it"
    )


def test_a_mutated_input_not_returned_is_named_with_its_count(tmp_path):
    judge, ref, problem, case = _judge_and_case(tmp_path)
    folder = tmp_path / "out" / "case0"

    def zero_some_of_b(data):
        a, b = data
        out = a + b
        b[:3] = 0
        return out

    entry = _execute(problem, case, folder, zero_some_of_b, forged=True)
    verdict = judge.do_compare(
        {"kernel": {}, "reference": ref, "cases": [entry], "out_dir": str(tmp_path / "out")}, lambda p: None
    )["cases"][0]
    assert not verdict["ok"]
    assert verdict["reason"].startswith("input modified: in[1]: 3 of 1025 elements changed during the call")


def test_honest_inputs_pass_the_byte_check_and_missing_bytes_fail(tmp_path):
    judge, ref, problem, case = _judge_and_case(tmp_path)
    folder = tmp_path / "out" / "case0"
    entry = _execute(problem, case, folder, lambda d: d[0] + d[1], forged=False)
    params = {"kernel": {}, "reference": ref, "cases": [entry], "out_dir": str(tmp_path / "out")}
    assert judge.do_compare(params, lambda p: None)["cases"][0]["ok"]
    entry.pop("inputs_after")
    verdict = judge.do_compare(params, lambda p: None)["cases"][0]
    assert not verdict["ok"] and "sent no inputs as the call left them" in verdict["reason"]


# -- through the ladder (CPU) ---------------------------------------------------------------------------------------
PATCHED = "ktui.worker.tensors.aliases, ktui.worker.tensors.hash_data"


def test_forged_hash_and_alias_helpers_fail_every_rung_and_the_judge_sees_the_aliasing(make_ws, ladder_for, cpu_pool):
    used = cpu_pool.candidate
    res = run(make_ws, ladder_for, "vector_add", K / "forged_integrity_bad.py", distributions=False)
    by = {r.name: r for r in res.rungs}
    for name in ("run", "correctness", "benchmark"):
        r = by[name]
        assert r.status is Status.FAILED, r.line()
        assert r.error is not None and r.error.type == "WorkerTampered"
        assert f"this version patched {PATCHED} in its worker" in r.error.message
    # the judge's own verdict, from the bytes, stands beside it
    assert "input modified: in[0]: " in by["correctness"].error.message
    assert "out holds exactly in[0]'s values as the call left them" in by["correctness"].error.message
    assert "not timed" in by["benchmark"].error.message
    assert by["compile"].status is Status.OK and by["dumps"].status is Status.OK
    assert cpu_pool.candidate is not used and not used.alive()  # replaced before the next version
    twin = good(run(make_ws, ladder_for, "vector_add", K / "forged_integrity_good.py", distributions=False))
    assert twin.rung("run").figures["tampered"] == []


def test_an_in_place_kernel_into_a_declared_output_buffer_passes(make_ws, ladder_for):
    good(run(make_ws, ladder_for, "add_into", K / "add_into_good.py", reference=ADD_INTO))
    bad = corr(run(make_ws, ladder_for, "add_into", K / "add_into_bad.py", reference=ADD_INTO))
    assert bad.status is Status.FAILED
    assert "input modified: in[0]: " in bad.summary and "elements changed during the call" in bad.summary


def test_a_correct_kernel_that_patches_the_worker_fails_every_rung_it_ran(make_ws, ladder_for, cpu_pool):
    ws = make_ws(
        ["vector_add"],
        {"vector_add/v1": K / "patched_timer_bad.py", "vector_add/v2": K / "forged_integrity_good.py"},
    )
    lad = ladder_for(ws, distributions=False)
    res = lad.run(ws.kernel(ws.root / "kernels/vector_add/v1.py"))
    for name in ("run", "correctness", "benchmark"):
        r = res.rung(name)
        assert r.status is Status.FAILED and "ktui.worker.timing.summarize" in r.error.message, r.line()
    c = res.rung("correctness")
    assert all(s["ok"] for s in c.figures["specs"])  # its outputs are right: the judge said so
    assert "the judge found every output within tolerance" in c.error.message
    after = lad.run(ws.kernel(ws.root / "kernels/vector_add/v2.py"))
    assert good(after).rung("run").figures["tampered"] == []  # the next version ran in a clean worker


# -- the runner's decision ------------------------------------------------------------------------------------------
class _Worker:
    role, printed_bytes, last_hello = "candidate", 0, None


class _Pool:
    device = "cpu"
    stopping = False

    def __init__(self):
        self.bus = EventBus()
        self.candidate = self.compiler = _Worker()
        self.recycled = 0

    def recycle(self):
        self.recycled += 1

    def printed_lines(self, role):
        return 0

    def log_path(self, role):
        return Path(f".ktui/logs/{role}.log")


def test_tampering_seen_late_fails_the_rungs_already_published_again(make_ws, monkeypatch):
    from ktui.core.ladder import runner
    from ktui.core.ladder.runner import Ladder

    def ok(name):
        return lambda ctx: RungResult(name, Status.OK, summary=f"{name} fine", figures={"x": 1})

    def bench(ctx):
        ctx.tampered = ["time.perf_counter"]  # what the benchmark's integrity call found
        return RungResult("benchmark", Status.OK, summary="fast")

    fakes = {"compile": ok("compile"), "run": ok("run"), "correctness": ok("correctness"), "benchmark": bench}
    monkeypatch.setattr(runner, "RUNG_IMPLS", {**runner.RUNG_IMPLS, **fakes})
    ws = make_ws(["vector_add"], {"vector_add/v1": ROOT / "kernels/vector_add/v2.py"})
    pool = _Pool()
    seen: list[RungResult] = []
    pool.bus.subscribe(lambda ev: seen.append(ev.result) if isinstance(ev, RungFinished) else None)
    lad = Ladder(ws, pool, bus=pool.bus)  # type: ignore[arg-type]
    try:
        res = lad.run(ws.kernel(ws.root / "kernels/vector_add/v1.py"), ("compile", "run", "correctness", "benchmark"))
    finally:
        lad.close()
    status = {r.name: r.status for r in res.rungs}
    assert status == {
        "compile": Status.OK,
        "run": Status.FAILED,
        "correctness": Status.FAILED,
        "benchmark": Status.FAILED,
    }
    assert all("patched time.perf_counter" in r.error.message for r in res.rungs if r.name != "compile")
    assert res.rung("run").figures == {"x": 1}  # its own figures are kept
    # published: compile, run, correctness (ok), then run and correctness again (failed), then benchmark
    assert [(r.name, r.status) for r in seen] == [
        ("compile", Status.OK),
        ("run", Status.OK),
        ("correctness", Status.OK),
        ("run", Status.FAILED),
        ("correctness", Status.FAILED),
        ("benchmark", Status.FAILED),
    ]
    assert pool.recycled == 1


def test_a_tampered_run_does_not_stop_the_ladder_and_the_benchmark_is_not_timed(make_ws, monkeypatch):
    from ktui.core.ladder import runner
    from ktui.core.ladder.runner import Ladder

    timed = []

    def run_rung(ctx):
        ctx.tampered = ["ktui.worker.tensors.hash_data"]
        return RungResult("run", Status.OK, summary="73 cases ok")

    def corr_rung(ctx):
        return RungResult(
            "correctness", Status.FAILED, summary="spec=(1,): wrong", error=ErrorInfo("CorrectnessError", "wrong")
        )

    fakes = {
        "compile": lambda ctx: RungResult("compile", Status.OK),
        "run": run_rung,
        "correctness": corr_rung,
        "benchmark": lambda ctx: timed.append(1) or RungResult("benchmark", Status.OK),
    }
    monkeypatch.setattr(runner, "RUNG_IMPLS", {**runner.RUNG_IMPLS, **fakes})
    ws = make_ws(["vector_add"], {"vector_add/v1": ROOT / "kernels/vector_add/v2.py"})
    pool = _Pool()
    lad = Ladder(ws, pool, bus=pool.bus)  # type: ignore[arg-type]
    try:
        res = lad.run(ws.kernel(ws.root / "kernels/vector_add/v1.py"), ("compile", "run", "correctness", "benchmark"))
    finally:
        lad.close()
    assert [r.name for r in res.rungs] == ["compile", "run", "correctness", "benchmark"]
    assert timed == []  # a tampered worker's timings mean nothing: not asked for
    c = res.rung("correctness")
    assert c.status is Status.FAILED and "patched ktui.worker.tensors.hash_data" in c.error.message
    assert "CorrectnessError: wrong" in c.error.message  # its own verdict stays in the message


# -- on the GPU (skipped without one; `bash benchmarks/h200.sh cases` runs them) -----------------------------------
@pytest.fixture(scope="module")
def gpu_pool(tmp_path_factory):
    from ktui.core.ladder import WorkerPool
    from ktui.core.workspace import Workspace

    root = tmp_path_factory.mktemp("gpu-integrity")
    (root / "references").mkdir()
    (root / "kernels").mkdir()
    pool = WorkerPool(Workspace(root), "cuda")
    pool.start()
    yield pool
    pool.stop()


@pytest.mark.gpu
def test_on_the_gpu_a_tampered_worker_fails_run_correctness_and_benchmark(tmp_path, gpu_pool):
    res = gpu_run(tmp_path, gpu_pool, "vector_add", K / "forged_integrity_bad.py")
    for name in ("run", "correctness", "benchmark"):
        r = res.rung(name)
        assert r.status is Status.FAILED and f"this version patched {PATCHED}" in r.error.message, r.line()
    assert "input modified: in[0]: " in res.rung("correctness").error.message
    assert "not timed" in res.rung("benchmark").error.message
    twin = gpu_run(tmp_path, gpu_pool, "vector_add", K / "forged_integrity_good.py")
    assert twin.ok, [r.line() for r in twin.rungs]
    assert twin.rung("benchmark").status is Status.OK and twin.rung("benchmark").figures["tampered"] == []


@pytest.mark.gpu
def test_on_the_gpu_a_patch_made_while_timed_fails_the_rungs_before_it_too(tmp_path, gpu_pool):
    res = gpu_run(tmp_path, gpu_pool, "vector_add", K / "patch_when_timed_bad.py")
    for name in ("run", "correctness", "benchmark"):
        r = res.rung(name)
        assert r.status is Status.FAILED and "ktui.worker.timing.summarize" in r.error.message, r.line()
    c = res.rung("correctness")
    assert all(s["ok"] for s in c.figures["specs"])  # right answers: only the worker was patched
    assert "the judge found every output within tolerance" in c.error.message


def test_the_bytes_of_a_lone_element_with_a_stride_are_read():
    import torch

    from ktui.worker.tensors import input_facts, tensor_bytes

    t = torch.arange(4.0)[::2][:1]  # shape (1,), stride (2,): torch calls it contiguous, a byte view refuses it
    assert tensor_bytes(t) == torch.tensor([0.0]).numpy().tobytes()
    assert input_facts((t,))["in[0]"][0] == {
        "path": "in[0]",
        "kind": "tensor",
        "dtype": "float32",
        "shape": [1],
        "device": "cpu",
        "class": "torch.Tensor",
    }


def test_a_method_deleted_or_shadowed_on_a_class_is_seen_and_assigning_the_base_back_is_not():
    import torch

    import ktui.worker.candidate  # noqa: F401
    from ktui.worker import integrity
    from ktui.worker.candidate import Candidate

    base = integrity.fingerprint()
    own = Candidate.__dict__["do_ping"]
    try:
        del Candidate.do_ping
        assert integrity.tampered(base) == ["ktui.worker.candidate.Candidate.do_ping"]
    finally:
        Candidate.do_ping = own
    assert integrity.tampered(base) == []
    inherited = torch._C.TensorBase.__dict__["add"]
    try:
        torch.Tensor.add = inherited  # the very attribute lookup found before: no change
        assert integrity.tampered(base) == []
        torch.Tensor.add = lambda self, other: self
        assert integrity.tampered(base) == ["torch.Tensor.add"]
    finally:
        del torch.Tensor.add
    assert integrity.tampered(base) == []
