"""Red team round 21: each finding fixed as a mechanism, with a bad kernel, its honest twin and a test asserting the
verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, K, corr, good, run

R = CASES / "references"
CHECKED = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))


def test_an_output_made_under_inference_mode_fails_and_one_under_no_grad_passes(make_ws, ladder_for):
    """F1: ``@torch.inference_mode()`` on custom_kernel passed every rung (the mode is restored on return, the values
    are right); its output is an inference tensor, on which a caller's in-place ops and autograd raise. The output
    leaf says so (``inference``) and the verdict fails it where the reference's output is not one."""
    ref = R / "rt19_rmsnorm_w.py"
    good(run(make_ws, ladder_for, "rms", K / "rt21_no_grad_good.py", reference=ref, **CHECKED))
    bad = corr(run(make_ws, ladder_for, "rms", K / "rt21_inference_mode_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED, bad.line()
    assert "out is an inference tensor (made under torch.inference_mode)" in bad.summary, bad.summary
    assert "y.add_(1)" in bad.summary and "torch.no_grad()" in bad.summary, bad.summary


def test_an_output_flag_is_accepted_where_the_references_has_it_too():
    """A reference that runs under inference mode returns inference tensors (one with parameters, tensors that
    require grad): a version's output may have a flag only where the reference's has it."""
    from ktui.worker.compare import flagged_output

    leaf = {"path": "[1]", "kind": "tensor", "dtype": "float32", "shape": [2], "flags": ["inference"]}
    assert flagged_output({"flags": {"[1]": ["inference"]}}, "[1]", leaf) == ""  # type: ignore[arg-type]
    said = flagged_output({"flags": {"[1]": []}}, "[1]", leaf)  # type: ignore[arg-type]
    assert said.startswith("[1] is an inference tensor"), said
    plain = {k: v for k, v in leaf.items() if k != "flags"}
    assert flagged_output({}, "[1]", plain) == ""  # type: ignore[arg-type]
    both = {**leaf, "flags": ["requires_grad", "conj"]}
    said = flagged_output({"flags": {"[1]": ["requires_grad"]}}, "[1]", both)  # type: ignore[arg-type]
    assert said.startswith("[1] is a lazily conjugated view (.conj())") and "requires grad" not in said, said


def test_an_output_that_requires_grad_fails(make_ws, ladder_for):
    """21b F3: an RMSNorm returning ``out.requires_grad_(True)`` passed; a caller's ``y[0] = 0`` and ``y.numpy()``
    raise on it. The output leaf's flags say so, and the reference's output does not require grad."""
    ref = R / "rt19_rmsnorm_w.py"
    bad = corr(run(make_ws, ladder_for, "rms", K / "rt21b_requires_grad_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED and "out is a tensor that requires grad" in bad.summary, bad.summary


def test_a_kernel_switching_on_cudnn_benchmark_and_flushing_denormals_fails_and_the_settings_come_back(
    make_ws, ladder_for
):
    """F4: the settings a call must leave as it found them missed cuDNN's benchmark and deterministic flags, flushing
    denormals, fp16 accumulation, the SDPA backends and the preferred BLAS/linear-algebra libraries; they are read
    (``global_state.FLAGS``) and put back after a call that changed them."""
    import torch

    from ktui.worker import global_state

    ref = R / "rt19_rmsnorm_w.py"
    bad = run(make_ws, ladder_for, "rms", K / "rt21_cudnn_benchmark_bad.py", reference=ref, **CHECKED)
    assert bad.failed_rung is not None and bad.failed_rung.name == "compile", [r.line() for r in bad.rungs]
    line = bad.failed_rung.line()
    assert "torch.backends.cudnn.benchmark False -> True" in line, line
    assert "torch.set_flush_denormal False -> True" in line, line
    names = set(global_state.FLAGS)
    assert {"torch.backends.cudnn.deterministic", "torch.backends.cuda.flash_sdp_enabled()"} <= names, names
    saved = global_state.save()
    try:
        torch.backends.cuda.enable_math_sdp(False)
        torch.backends.cudnn.deterministic = True
        said = global_state.settle(saved)
    finally:
        torch.backends.cuda.enable_math_sdp(True)
        torch.backends.cudnn.deterministic = False
    assert "math_sdp_enabled() True -> False" in said and "cudnn.deterministic False -> True" in said, said
    assert torch.backends.cuda.math_sdp_enabled() and not torch.backends.cudnn.deterministic  # put back
    assert global_state.settle(saved) == ""
    # 21b F2: autocast entered and never left, anomaly detection, a TorchFunctionMode left pushed
    saved = global_state.save()
    torch.autocast("cpu", dtype=torch.bfloat16).__enter__()
    torch.set_anomaly_enabled(True)

    class Passing(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            return func(*args, **(kwargs or {}))

    mode = Passing()
    mode.__enter__()
    try:
        said = global_state.settle(saved)
    finally:
        mode.__exit__(None, None, None)
    assert "torch.is_autocast_enabled('cpu') False -> True" in said, said
    assert "torch.is_anomaly_enabled() False -> True" in said and "torch function modes pushed 0 -> 1" in said, said
    assert not torch.is_autocast_enabled("cpu") and not torch.is_anomaly_enabled()  # put back


def test_an_accurate_geglu_passes_where_the_float64_reference_cancels_and_a_closed_tail_fails(make_ws, ladder_for):
    """New-user trial 21, F5: the reference ``F.gelu(approximate="tanh")`` is ``0.5 b (1 + tanh(y))``, which cancels
    in float64 too for b far below zero; a kernel computing ``b * sigmoid(2y)`` is nearer the exact value there and
    failed bf16 (37 of 2,046 elements "off", seed 5). The float64 truth's own roundings (``RoundingNoise``: two runs
    with each rounding step jittered by an ulp) now widen the bound where they decide an element; a kernel writing 0
    for b < -2, where the truth is exact, still fails."""
    ref = R / "nu21_geglu.py"
    opts = dict(CHECKED, seed=5)
    good(run(make_ws, ladder_for, "geglu", K / "nu21_geglu_sigmoid_good.py", reference=ref, **opts))
    bad = corr(run(make_ws, ladder_for, "geglu", K / "nu21_geglu_closed_tail_bad.py", reference=ref, **opts))
    assert bad.status is Status.FAILED and "got 0, expected" in bad.summary, bad.summary


def test_rounding_noise_shows_where_the_float64_truth_cancels_and_nowhere_else():
    """At a = -4.125, b = -6.9375 (trial 21's element) the float64 tanh GELU is 2.06514e-14 against the exact
    2.00288e-14 (mpmath): one ulp of tanh near -1 is 7% of 1 + tanh(y). The noisy runs move it by that much, and a
    well-conditioned element by about float64's u; F.gelu, one fused aten op, runs as its decomposition."""
    import torch
    import torch.nn.functional as F

    from ktui.worker.conditioning import RoundingNoise

    a = torch.tensor([-4.125, 1.5, 0.75], dtype=torch.float64)
    b = torch.tensor([-6.9375, 0.5, -1.25], dtype=torch.float64)
    truth = a * F.gelu(b, approximate="tanh")
    assert abs(float(truth[0]) - 2.06514e-14) < 1e-18
    moves = []
    for seed in (1, 2, 3):
        with RoundingNoise(seed):
            moves.append(((a * F.gelu(b, approximate="tanh")) - truth).abs() / truth.abs())
    worst = torch.stack(moves).amax(0)
    assert float(worst[0]) > 0.02, worst  # the exact value is 3.1% away: the noise covers it
    assert float(worst[1:].max()) < 1e-14, worst
    plain = a * F.gelu(b, approximate="tanh")
    assert torch.equal(plain, truth)  # outside the mode nothing moves


def test_a_launch_past_hoppers_shared_memory_fails_the_run_rung_on_the_cpu(make_ws, ladder_for):
    """F2: the dumps rung checked shared memory for the first benchmark spec's launches only; a GEMM whose fp32 launch
    needs 294,912 B per block (bf16 tiles reused) ran in the interpreter and passed. The run rung compiles every
    distinct launch again for sm_90a and fails one past its 232,448 B, naming it; the twin (fp32 on smaller tiles)
    passes."""
    from ktui.core.ladder.rungs.dumps import shared_memory_over

    assert shared_memory_over([{"kernel": "k", "shared_bytes": 232_449}], "sm_90a")
    assert not shared_memory_over([{"kernel": "k", "shared_bytes": 232_448}], "sm_90a")
    assert not shared_memory_over([{"kernel": "k", "shared_bytes": 10**7}], "sm_120")  # not in the table
    ref = R / "rt21_mm_small.py"
    opts = dict(layouts=False, seeds=1, seed=1, distributions=False, fuzz=False, rungs=("compile", "run"))
    good(run(make_ws, ladder_for, "mm", K / "rt21_mm_tiles_good.py", reference=ref, **opts))
    bad = run(make_ws, ladder_for, "mm", K / "rt21_mm_tiles_bad.py", reference=ref, **opts)
    failed = bad.failed_rung
    assert failed is not None and failed.name == "run" and failed.error is not None, [r.line() for r in bad.rungs]
    message = failed.error.message
    assert "mm_kernel(" in message and "a_ptr: *fp32" in message, message
    assert "needs 294,912 B of shared memory per block, past sm_90a's 232,448 B" in message, message
    assert "bf16" not in message, message  # the bf16 launch (196,608 B) fits


def test_a_kernel_seeding_pythons_and_numpys_generators_fails_and_a_local_generator_passes(make_ws, ladder_for):
    """21b F2's rest: ``random.seed(0)`` and ``np.random.seed(0)`` in custom_kernel passed (the caller's shuffles and
    augmentations repeat from step to step). Their whole states are read around each call (a digest) and put back;
    a kernel drawing from its own ``random.Random`` passes."""
    import random

    import numpy as np

    from ktui.worker import global_state

    ref = R / "rt19_rmsnorm_w.py"
    good(run(make_ws, ladder_for, "rms", K / "rt21b_local_rng_good.py", reference=ref, **CHECKED))
    bad = run(make_ws, ladder_for, "rms", K / "rt21b_host_seed_bad.py", reference=ref, **CHECKED)
    assert bad.failed_rung is not None and bad.failed_rung.name == "compile", [r.line() for r in bad.rungs]
    line = bad.failed_rung.line()
    assert "random.getstate() 'state " in line and "numpy.random.get_state() 'state " in line, line
    assert "a local random.Random or numpy.random.default_rng" in line, line
    # a draw moves the stream as a reseed does; both are put back
    saved = global_state.save()
    first = random.random(), float(np.random.rand())
    said = global_state.settle(saved)
    assert "random.getstate()" in said and "numpy.random.get_state()" in said, said
    assert (random.random(), float(np.random.rand())) == first  # the streams are where the call found them
    assert global_state.settle(global_state.save()) == ""


def test_an_output_on_another_device_index_than_its_inputs_fails():
    """21b F3a: the judge compared the output's device type alone, so an output on ``cuda:1`` for inputs on
    ``cuda:0`` passed (the caller's next op raises "Expected all tensors to be on the same device"). The index is
    the inputs' (each input leaf names its device)."""
    from ktui.worker.compare import wrong_device

    case = {"inputs_after": [{"path": "in[0]", "kind": "tensor", "device": "cuda:0"}, {"kind": "number"}]}
    said = wrong_device("out", {"device": "cuda:1"}, case, "cuda")  # type: ignore[arg-type]
    assert said == (
        "out is on cuda:1, its inputs on cuda:0: the kernel must return its output on the device its inputs are on"
    ), said
    assert wrong_device("out", {"device": "cuda:0"}, case, "cuda") == ""  # type: ignore[arg-type]
    assert wrong_device("out", {"device": "cpu"}, case, "cuda").startswith("out is on cpu, expected cuda")  # type: ignore[arg-type]
    assert wrong_device("out", {"device": "cpu"}, {"inputs_after": []}, "cpu") == ""  # type: ignore[arg-type]


def test_a_fake_quantization_rounding_exact_ties_half_up_fails_and_half_to_even_passes(make_ws, ladder_for):
    """21b F1 (and 20b W2): with a power-of-two scale, ``x / s`` of a bf16 input is exact, so every tie is decided
    exactly and alike by every honest kernel; the runs on moved inputs pushed each tie a step away and the rounding
    noise jittered ``exp2(k)``, so a kernel rounding halves up (2.6% of the elements a step off) was excused as
    ill-conditioned. Exact scalings are kept in the moved runs (``conditioning.ExactScaling``) and exact results are
    not jittered; a step of 0.3 (``fake_quant_bf16``, inexact) still moves."""
    ref = R / "rt21b_q4.py"
    good(run(make_ws, ladder_for, "q4", K / "rt21b_q4_half_even_good.py", reference=ref, **CHECKED))
    bad = corr(run(make_ws, ladder_for, "q4", K / "rt21b_q4_half_up_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED, bad.line()
    assert "off by more than 8 u |ref|" in bad.summary, bad.summary


def test_exact_scalings_keep_their_ties_and_an_honest_reciprocal_passes():
    """The unit behind the test above: a kernel computing ``x * (1 / s)`` is honest (exact too), half up is not."""
    import hashlib

    import torch

    from ktui.worker import metrics
    from ktui.worker.compare import ill_conditioned_allowance
    from ktui.worker.conditioning import RoundingNoise
    from ktui.worker.problem import Problem
    from ktui.worker.tolerance import resolve

    path = R / "rt21b_q4.py"
    problem = Problem(path, "q4", hashlib.sha256(path.read_bytes()).hexdigest())
    tol = resolve("bfloat16", None)
    x = torch.randn(64, 512, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    ref, _ = problem.reference(x)
    xf = x.float()
    s = torch.exp2(torch.floor(torch.log2(xf.abs().amax(-1, keepdim=True))) - 6)
    verdicts = {}
    for name, q in (("half_up", torch.floor(xf / s + 0.5)), ("reciprocal", torch.round(xf * (1 / s)))):
        out = (q.clamp(-128, 127) * s).to(torch.bfloat16)
        m = metrics.verdict(out, ref, tol)
        if not m["ok"]:
            m = ill_conditioned_allowance(
                problem, {"inputs_of": lambda: x}, m, out, ref, tol, "out", None, "cpu", 1 << 26
            )
        verdicts[name] = m
    assert verdicts["reciprocal"]["ok"] and verdicts["reciprocal"]["max_abs_err"] == 0, verdicts["reciprocal"]
    assert not verdicts["half_up"]["ok"], verdicts["half_up"]
    assert "868 of 32768 elements (2.6%) off by more than 8 u |ref|" in verdicts["half_up"]["reason"]
    # exact results are not jittered; a rounded one is
    t = torch.tensor([0.5, 3.0, 2.0**-20, 0.1], dtype=torch.float64)
    with RoundingNoise(1):
        moved = [float(t[i] * 1.0 + 0.0) for i in range(4)]
        thirds = (torch.ones(4096, dtype=torch.float64) / 3) * 1.0
    assert moved[:3] == [0.5, 3.0, 2.0**-20], moved
    assert 0 < int((thirds != 1 / 3).sum()) < 4096
