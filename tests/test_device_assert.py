"""A reference that indexes out of range on ktui's trial inputs never costs the judge its GPU context (the H200 run
of 2026-12-04: red team round 12's RoPE reference, whose ``intrange`` positions ran past its cos/sin cache, hit a
device-side assert in the distribution trials, and every case after it failed with "CUDA error: device-side assert
triggered" and no word of why). The integer-changing distributions are tried on the CPU where the reference runs
there; a trial on the GPU that still hits such an error is the reference's error, saying what to bound."""

from __future__ import annotations

import hashlib

import pytest

from ktui.worker import fuzz
from ktui.worker.errors import ProblemError
from ktui.worker.problem import Problem

from .test_cases import CASES

ROPE = CASES / "references" / "rt12_rope.py"  # cos_cache[pos], the cache MAX_POS rows long


def _problem(path=ROPE):
    return Problem(path, path.stem, hashlib.sha256(path.read_bytes()).hexdigest())


def test_integer_distributions_are_tried_on_the_cpu_when_the_reference_runs_there(monkeypatch):
    p = _problem()
    p.distributions = ["native", "intrange", "indices"]
    asked: list[str] = []
    generate = p.generate

    def spy(seed, spec, device):
        asked.append(device)
        return generate(seed, spec, device)

    monkeypatch.setattr(p, "generate", spy)
    # device "cuda" on a machine without one: any trial input built there would raise, and say so as a reason
    trials = fuzz._special_trials(p, "cuda").reasons
    assert trials == {"intrange": "the reference raised IndexError", "indices": ""}, trials
    assert asked and set(asked) == {"cpu"}, asked


def test_a_reference_that_runs_only_on_the_gpu_is_tried_there(monkeypatch):
    p = _problem()

    def gpu_only(data):
        raise RuntimeError("this reference needs CUDA")

    monkeypatch.setattr(p, "reference_native", gpu_only)
    assert fuzz.trial_device(p, "cuda") == "cuda"
    assert fuzz.trial_device(_problem(), "cuda") == "cpu"
    assert fuzz.trial_device(_problem(), "cpu") == "cpu"


@pytest.mark.parametrize(
    "exc, lost",
    [
        (RuntimeError("CUDA error: device-side assert triggered\nSearch for `cudaErrorAssert'"), True),
        (RuntimeError("CUDA error: an illegal memory access was encountered"), True),
        (IndexError("index 8192 is out of bounds for dimension 0 with size 8192"), False),
        (ValueError("k must be even"), False),
    ],
)
def test_a_lost_context_is_told_from_an_ordinary_refusal(exc, lost):
    assert fuzz.device_assert(exc) is lost
    wrapped = RuntimeError("the reference raised")
    wrapped.__cause__ = exc
    assert fuzz.device_assert(wrapped) is lost


def test_a_fuzzed_spec_that_asserts_on_the_gpu_is_the_references_error_naming_the_spec(monkeypatch):
    p = _problem()

    def asserts(data):
        raise RuntimeError("CUDA error: device-side assert triggered")

    monkeypatch.setattr(p, "generate", lambda seed, spec, device: None)
    monkeypatch.setattr(p, "reference_native", asserts)
    spec = {"batch": 2, "seq": 8193, "d": 64, "dtype": "float32"}
    with pytest.raises(ProblemError) as e:
        fuzz.fuzz_trial(p, spec, 5, "cuda")
    msg = str(e.value)
    assert "fuzzed spec (2, 8193, 64, fp32)" in msg and "seed 5" in msg, msg
    assert "device-side assert" in msg and "valid_spec" in msg and "fuzz = {" in msg, msg
    # an ordinary refusal is a redraw, on either device
    monkeypatch.setattr(p, "reference_native", lambda data: (_ for _ in ()).throw(IndexError("out of range")))
    assert fuzz.fuzz_trial(p, spec, 5, "cuda") is False
    assert fuzz.fuzz_trial(p, spec, 5, "cpu") is False


def test_a_cuda_error_the_context_survives_is_an_ordinary_refusal():
    # torch raises every CUDA error as AcceleratorError: only those that lose the context stop the run (here, no
    # CUDA to probe: the message alone decides)
    assert not fuzz.device_assert(RuntimeError("CUDA error: invalid configuration argument"))
    assert not fuzz.device_assert(RuntimeError("CUDA error: too many resources requested for launch"))


def test_a_reference_without_integer_inputs_is_tried_on_its_own_device():
    p = _problem(CASES.parent.parent / "references" / "softmax.py")
    assert fuzz.trial_device(p, "cuda") == "cuda"  # nothing the integer distributions change: no CPU run
