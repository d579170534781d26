"""Inputs in a dataclass are containers (red team round 8): a kernel that writes a tensor inside one fails as one
that writes a tuple's tensor does, its honest twin passes, and a tensor hidden in an object ktui cannot walk is a
clear reference error, never a tensor no check reaches."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
import torch

from ktui.core.results import Status
from ktui.worker.guards import Guards
from ktui.worker.problem import opaque_tensors
from ktui.worker.structure import mismatch, structure
from ktui.worker.tensors import flatten, hash_data

from .test_cases import CASES, K, corr, good, run

SCALED_ADD = CASES / "references" / "scaled_add.py"


@dataclass(frozen=True)
class Frozen:
    x: torch.Tensor
    w: list[torch.Tensor] = field(default_factory=list)
    scale: float = 1.0


def test_flatten_and_the_hash_reach_a_tensor_inside_a_dataclass():
    d = Frozen(torch.zeros(10_000), [torch.ones(3)], 2.0)
    assert [p for p, _ in flatten((d,), "in")] == ["in[0].x", "in[0].w[0]", "in[0].scale"]
    before = hash_data((d,))
    d.x[5000] = 1.0  # where a shortened repr shows "..."
    assert hash_data((d,)) != before


def test_the_guards_wrap_a_dataclass_tensor_and_keep_the_record_frozen():
    g = Guards()
    d = Frozen(torch.arange(8.0), [torch.ones(2)], 3.0)
    w = g.wrap_data((d,))
    assert type(w[0]) is Frozen and w[0].scale == 3.0
    assert torch.equal(w[0].x, d.x) and w[0].x.data_ptr() != d.x.data_ptr()  # in guard-banded memory
    g.close()


def test_an_output_dataclass_is_a_container_with_its_field_names():
    s = structure(Frozen(torch.zeros(2), [], 1.0))
    assert s[0]["kind"] == "dataclass" and s[0]["keys"] == ["x", "w", "scale"]
    msg = mismatch(s, structure((torch.zeros(2), [], 1.0)))
    assert "a dataclass Frozen(x, w, scale)" in msg and "a tuple of 3" in msg


class Holder:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def test_a_tensor_or_a_number_hidden_in_an_object_is_named_and_a_simplenamespace_is_walked():
    assert opaque_tensors((torch.zeros(2), Frozen(torch.zeros(1)))) == ""
    why = opaque_tensors((torch.zeros(2), Holder(w=torch.zeros(3), k=2)))
    assert why.startswith("an object of class tests.test_dataclass_inputs.Holder at in[1] holding a tensor in its ")
    assert "attribute .w: " in why and "put it in one of those" in why
    # a number there is never moved by the scalars cases (red team round 17): named too; bools and enums are not
    why = opaque_tensors((torch.zeros(2), Holder(flag=True, alpha=2.5)))
    assert "holding a float in its attribute .alpha: ktui moves the numbers it reaches" in why, why
    assert "an int in its attribute .k" in opaque_tensors((Holder(k=[3]),))
    assert opaque_tensors((Holder(flag=True, name="x"), enum.Enum("Mode", "FAST SLOW").FAST)) == ""
    # a SimpleNamespace is a record like a dataclass: its tensors and numbers are reached
    ns = SimpleNamespace(w=torch.zeros(3), alpha=2.5)
    assert opaque_tensors((torch.zeros(2), ns)) == ""
    assert [p for p, _ in flatten((torch.zeros(2), ns))] == ["out[0]", "out[1].w", "out[1].alpha"]


def test_a_kernel_writing_a_tensor_inside_the_dataclass_fails_and_its_twin_passes(make_ws, ladder_for):
    bad = corr(
        run(make_ws, ladder_for, "scaled_add", K / "dataclass_scratch_bad.py", reference=SCALED_ADD, layouts=False)
    )
    assert bad.status is Status.FAILED
    assert "input modified" in bad.summary and "in.y" in bad.summary, bad.summary
    res = good(run(make_ws, ladder_for, "scaled_add", K / "dataclass_scratch_good.py", reference=SCALED_ADD))
    assert res.rung("correctness").figures["cases"] > 3


@pytest.mark.parametrize("holder", ["Holder(torch.randn(n))", "Box(torch.randn(n))"])
def test_a_reference_hiding_a_tensor_in_an_object_fails_with_the_reason(make_ws, ladder_for, tmp_path, holder):
    ref = tmp_path / "hidden.py"
    ref.write_text(
        "import torch\n\n"
        "class Holder:\n    def __init__(self, w):\n        self.w = w\n\n"
        "class Box:\n    __slots__ = ('w',)\n    def __init__(self, w):\n        self.w = w\n\n"
        f"def generate_input(seed, n):\n    return (torch.randn(n), {holder})\n\n"
        "def ref_kernel(data):\n    return data[0] * 2\n\n"
        "tests = [{'n': 5}]\n"
    )
    res = run(make_ws, ladder_for, "hidden", K / "dataclass_scratch_good.py", reference=ref)
    assert not res.ok
    failed = next(r for r in res.rungs if r.status is not Status.OK)
    assert "holding a tensor in its attribute .w" in failed.line(), failed.line()
    assert "tuples, lists, dicts, named tuples, dataclasses and SimpleNamespaces" in failed.line()


def test_a_dataclass_whose_field_is_a_property_is_never_read():
    @dataclass
    class Out:
        y: torch.Tensor

    class Lookalike(Out):
        @property
        def y(self):  # would run the kernel's code at ktui's reads (between timed calls, say)
            raise AssertionError("ktui ran a property of the kernel's class")

    obj = object.__new__(Lookalike)
    assert flatten(obj) == [("out", obj)]  # an opaque leaf: the judge refuses it on its type
    assert structure(obj) == []


def test_named_tuples_stay_named_through_the_refills_and_the_reference_copies():
    from typing import NamedTuple

    from ktui.worker.cases import _map_inputs
    from ktui.worker.problem import clone_data

    class Pair(NamedTuple):
        x: torch.Tensor
        y: torch.Tensor

    p = Pair(torch.ones(2), torch.zeros(2))
    mapped = _map_inputs(p, (), lambda t, path: t * 2)
    assert type(mapped) is Pair and torch.equal(mapped.x, torch.full((2,), 2.0))
    assert type(clone_data(p)) is Pair
