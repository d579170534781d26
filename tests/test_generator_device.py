"""A reference's random draws through a generator of another device than the one ktui runs ``generate_input``
under (``problem.GeneratorDevice``): on the H200 (2026-12-04) ``torch.Generator()`` (a CPU generator) inside
``torch.device("cuda")`` raised "Expected a 'cuda' device type for generator but found 'cpu'" and an honest jagged
reference failed every version. The CPU has no second device: "meta" stands in for the GPU here (shapes, dtypes,
devices); the reference itself runs on the GPU in ``test_gpu_cases``."""

from __future__ import annotations

import pytest
import torch

from ktui.worker.problem import BitView, Float64Kept, GeneratorDevice

from .test_cases import K

REF = K.parent / "references"


def test_draws_through_a_cpu_generator_land_on_the_device_with_the_cpu_numbers():
    g = torch.Generator().manual_seed(5)
    with torch.device("meta"), GeneratorDevice("meta"):
        a = torch.randint(1, 9, (7,), generator=g)
        b = torch.randn(3, 4, generator=g, dtype=torch.float64)
        c = torch.randperm(6, generator=g)
        d = torch.normal(0.0, 1.0, (2, 2), generator=g)
        e = torch.zeros(4)  # no generator: torch.device's own rule
    assert [t.device.type for t in (a, b, c, d, e)] == ["meta"] * 5
    assert (a.shape, a.dtype, b.shape, b.dtype, c.shape, d.shape) == (
        (7,),
        torch.int64,
        (3, 4),
        torch.float64,
        (6,),
        (2, 2),
    )
    # the generator advanced as on the CPU: the next draw is the CPU's next draw
    h = torch.Generator().manual_seed(5)
    torch.randint(1, 9, (7,), generator=h), torch.randn(3, 4, generator=h, dtype=torch.float64)
    torch.randperm(6, generator=h), torch.normal(0.0, 1.0, (2, 2), generator=h)
    assert torch.equal(torch.rand(5, generator=g), torch.rand(5, generator=h))


def test_same_device_and_explicit_device_are_left_to_torch():
    g = torch.Generator().manual_seed(1)
    with torch.device("cpu"), GeneratorDevice("cpu"):
        x = torch.randn(4, generator=g)
        y = torch.empty(3)
        y.uniform_(generator=g)
    h = torch.Generator().manual_seed(1)
    assert torch.equal(x, torch.randn(4, generator=h)) and torch.equal(y, torch.empty(3).uniform_(generator=h))
    with torch.device("meta"), GeneratorDevice("meta"):
        z = torch.randn(2, generator=g, device="cpu")
    assert z.device.type == "cpu"


def test_the_float64_truth_keeps_float64_through_a_references_float32_casts():
    """``a.to(torch.float32) @ b.to(torch.float32)`` in the float64 run (``Float64Kept``): the truth is float64, so
    the native float32 result has its own error again (H200, 2026-12-04: it read 0, "where the reference computed
    in float32 is exact", and an honest fp8 GEMM failed by 1.8e-4 at K = 4096 against a float32 result)."""
    import hashlib

    from ktui.worker.problem import Problem

    ref = REF / "rt15_fp8_mm.py"
    problem = Problem(ref, "rt15_fp8_mm", hashlib.sha256(ref.read_bytes()).hexdigest())
    data = problem.generate(1, {"m": 64, "n": 64, "k": 4096}, "cpu")
    truth, precision = problem.reference(data)
    native = problem.reference_native(data)
    exact = data[0].double() @ data[1].double()
    assert precision == "float64" and truth.dtype == torch.float64 and torch.equal(truth, exact)
    assert native.dtype == torch.float32 and 0 < float((native.double() - truth).abs().max()) < 1e-3
    with Float64Kept():
        x = torch.ones(3, dtype=torch.float64)
        kept = [x.float(), x.to(torch.float32), x.to(dtype=torch.float32), x.type(torch.float32)]
        kept.append(x.to("cpu", torch.float32))
        cast = [x.to(torch.float16), x.to(torch.float32, copy=True), x.to("meta", torch.float32), x.int()]
        kept[0].mul_(3.0)  # a copy, as the cast of a low-precision input is: the input is not written
        with pytest.raises(BitView):
            kept[1].view(torch.int32)  # float32 bits a float64 value does not have
    assert all(t.dtype == torch.float64 and t is not x for t in kept) and torch.equal(x, torch.ones(3).double())
    assert [t.dtype for t in cast] == [torch.float16, torch.float32, torch.float32, torch.int32]


def test_a_float32_buffer_the_reference_makes_holds_the_float64_truth():
    """``torch.zeros(V, D, dtype=torch.float32).index_add_(0, ids, g.float())`` (round 31's embedding backward): the
    float64 run raised "self (Float) and source (Double) must have the same scalar type", the truth fell back to
    torch's float32 order, and an honest kernel adding in another order failed by one ulp of a cancelling partial sum
    (1.2e-4 at 1e-5). Factories make float32 as written, then float64."""
    import hashlib

    from ktui.worker.problem import Problem

    ref = K.parent / "references" / "rt31_embbwd.py"
    problem = Problem(ref, "rt31_embbwd", hashlib.sha256(ref.read_bytes()).hexdigest())
    data = problem.generate(3, {"n": 129, "vocab": 17, "d": 33, "dtype": "float32"}, "cpu")
    truth, precision = problem.reference(data)
    exact = torch.zeros(17, 33, dtype=torch.float64).index_add_(0, data[1], data[0].double())
    assert precision == "float64" and truth.dtype == torch.float64 and torch.equal(truth, exact)
    with Float64Kept():
        made = [torch.zeros(2, dtype=torch.float32), torch.zeros(2), torch.full((2,), 0.1), torch.tensor([0.1])]
        made += [torch.ones(2, dtype=torch.float64).new_zeros(2, dtype=torch.float32), torch.zeros_like(made[0])]
        kept = [torch.zeros(2, dtype=torch.float16), torch.arange(3), torch.zeros(2, dtype=torch.int32)]
    assert all(t.dtype == torch.float64 for t in made), [t.dtype for t in made]
    assert float(made[2][0]) == float(torch.tensor(0.1, dtype=torch.float32))  # the float32 value, made float64
    assert [t.dtype for t in kept] == [torch.float16, torch.int64, torch.int32]


def test_a_reference_reading_a_float32_casts_bits_runs_its_casts_as_written(tmp_path):
    """``x.float().view(torch.int32)`` in ``ref_kernel``: the float64 run falls back to the casts as written."""
    import hashlib

    from ktui.worker.problem import Problem

    ref = tmp_path / "bits.py"
    ref.write_text(
        "import torch\n"
        "def generate_input(seed, n):\n"
        "    return (torch.randn(n),)\n"
        "def ref_kernel(data):\n"
        "    (x,) = data\n"
        "    h = x.float()\n"
        "    h.mul_(2.0)\n"
        "    return (x.float().view(torch.int32) & 0x7FFFFFFF).view(torch.float32) + h\n"
        "tests = [{'n': 5}]\n"
    )
    problem = Problem(ref, "bits", hashlib.sha256(ref.read_bytes()).hexdigest())
    data = problem.generate(1, {"n": 5}, "cpu")
    out, precision = problem.reference(data)
    assert precision == "float64" and out.shape == (5,)
    assert torch.allclose(out.double(), data[0].abs().double() + 2 * data[0].double())


def test_draws_from_tensors_and_nn_init_draws_keep_their_tensors_devices():
    """Review of GeneratorDevice: tensors given as keywords are moved too, ``nn.init``'s draws (``tensor=``) fill in
    place, and a draw from tensors the reference kept on the CPU stays there (only inputs on the device bring the
    result to it)."""
    g, h = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    w, v = torch.empty(4, 5), torch.empty(4, 5)
    with torch.device("meta"), GeneratorDevice("meta"):
        a = torch.normal(mean=torch.zeros(6, device="cpu"), std=1.0, generator=g)
        idx = torch.multinomial(torch.ones(8, device="cpu"), 3, generator=g)
        torch.nn.init.normal_(w, generator=g)
    b = torch.normal(mean=torch.zeros(6), std=1.0, generator=h)
    jdx = torch.multinomial(torch.ones(8), 3, generator=h)
    torch.nn.init.normal_(v, generator=h)
    assert (a.device.type, idx.device.type) == ("cpu", "cpu")
    assert torch.equal(a, b) and torch.equal(idx, jdx) and torch.equal(w, v)
