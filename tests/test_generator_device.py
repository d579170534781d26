"""A reference's random draws through a generator of another device than the one ktui runs ``generate_input``
under (``problem.GeneratorDevice``): on the H200 (2026-12-04) ``torch.Generator()`` (a CPU generator) inside
``torch.device("cuda")`` raised "Expected a 'cuda' device type for generator but found 'cpu'" and an honest jagged
reference failed every version. The CPU has no second device: "meta" stands in for the GPU here (shapes, dtypes,
devices); the reference itself runs on the GPU in ``test_gpu_cases``."""

from __future__ import annotations

import torch

from ktui.worker.problem import GeneratorDevice


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
