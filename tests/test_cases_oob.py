"""cases.md oob: reads and writes past a buffer's end, with their honest twins.

Under the Triton interpreter every ``tl.load`` / ``tl.store`` is bounds-checked against its tensors' storage
(``ktui.worker.interp_bounds``); on every device the inputs ktui builds and the buffers a kernel allocates sit
between canaries checked after each call (``ktui.worker.guards``). The GPU case (the canary catching a store past
the end) is in ``tests/test_gpu_cases.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from ktui.core.results import Status
from ktui.worker.allocation import poisoned_allocations
from ktui.worker.guards import GUARD_BYTES, Guards, payload_of
from ktui.worker.timing import direct, host_loop

from .test_cases import good, run

K = Path(__file__).resolve().parent / "cases" / "kernels"
FAST = dict(distributions=False, layouts=False, seeds=2)


def failed(res, rung: str = "run"):
    r = res.rung(rung)
    assert r is not None and r.status is Status.FAILED, [x.line() for x in res.rungs]
    return r


# -- through the ladder, under the interpreter -------------------------------------------------------------------
def test_store_mask_le_n_fails_with_the_out_of_bounds_load_named(make_ws, ladder_for):
    r = failed(run(make_ws, ladder_for, "vector_add", K / "oob_store_le_bad.py", **FAST))
    msg = r.line()
    print(msg)
    assert "OutOfBoundsAccess: out-of-bounds load at offset" in msg
    assert "of a_ptr (float32" in msg and "v1.py line 14" in msg
    good(run(make_ws, ladder_for, "vector_add", K / "oob_store_lt_good.py"))


def test_a_missing_store_mask_fails_naming_the_store_instead_of_crashing_the_worker(make_ws, ladder_for):
    r = failed(run(make_ws, ladder_for, "vector_add", K / "oob_store_nomask_bad.py", **FAST))
    msg = r.line()
    print(msg)
    m = re.search(r"out-of-bounds store at offset (\d+) of out_ptr \(float32, (\d+) elements? up to the end", msg)
    assert m and m.group(1) == m.group(2), msg  # the first element past the end
    assert re.search(r"\d+ of 128 active lanes outside every tensor argument", msg)
    assert "WorkerCrashed" not in msg


def test_a_missing_load_mask_fails_on_the_last_row_and_the_masked_twin_passes(make_ws, ladder_for):
    r = failed(run(make_ws, ladder_for, "softmax", K / "oob_load_nomask_bad.py", **FAST))
    msg = r.line()
    print(msg)
    assert "out-of-bounds load at offset" in msg and "of x_ptr" in msg and "v1.py line 16" in msg
    good(run(make_ws, ladder_for, "softmax", K / "oob_load_masked_good.py"))


# -- the guard bands themselves (plain tensor compares: the same code runs on a GPU) -------------------------------
def raw_storage(g: Guards, t: torch.Tensor) -> torch.Tensor:
    """The whole guarded allocation behind ``t`` as float32 elements, canaries included (``t``'s own storage is the
    payload alone: the band's buffer holds the canaries around it)."""
    ptr = t.untyped_storage().data_ptr()
    band = next(b for b in g.bands if b.payload.untyped_storage().data_ptr() == ptr)
    s = band.buf.untyped_storage()
    return torch.empty(0).set_(s, 0, (s.nbytes() // 4,), (1,))


def test_inputs_keep_their_values_layouts_and_shared_storage_inside_the_guards():
    base = torch.randn(6, 9)
    data = (base, base.t(), base[:, :5], base.reshape(-1)[1:], base[:1].expand(6, 9), {"k": 3, "i": torch.arange(4)})
    g = Guards()
    wrapped = g.wrap_data(data)
    for old, new in zip(data[:5], wrapped[:5]):
        assert torch.equal(old, new) and old.stride() == new.stride()
        assert new.storage_offset() == old.storage_offset()  # as without guards (red team round 10, W2)
        assert new.untyped_storage().nbytes() == old.untyped_storage().nbytes()
        assert new.untyped_storage().data_ptr() == wrapped[0].untyped_storage().data_ptr()  # still one storage
    assert wrapped[5]["k"] == 3 and torch.equal(wrapped[5]["i"], torch.arange(4))
    assert g.violations() == []
    lo, hi = payload_of(wrapped[0].untyped_storage())
    assert hi - lo == base.untyped_storage().nbytes()
    g.close()
    assert payload_of(wrapped[0].untyped_storage()) is None


def test_writes_past_either_end_are_named_with_their_offsets():
    g = Guards()
    x = g.wrap_data((torch.zeros(10),))[0]
    with poisoned_allocations(None, g):
        out = torch.empty(129)
        scratch = torch.empty_like(out)
    g.name_outputs({"y": out})
    raw = raw_storage(g, out)
    n0 = GUARD_BYTES // 4
    raw[n0 + 129] = 1.0  # one past the end
    raw[n0 - 2] = 1.0  # two before the start
    raw_storage(g, x)[n0 + 10 : n0 + 13] = 7.0
    found = g.violations()
    assert "wrote 1 element before the start of out['y'] (element -2 of 129, float32)" in found
    assert "wrote 1 element past the end of out['y'] (element 129 of 129, float32)" in found
    assert "wrote 3 elements past the end of in[0] (elements 10..12 of 10, float32)" in found
    assert len(found) == 3  # the scratch buffer and in-bounds writes are clean
    scratch[:] = 1.0
    out[:] = 2.0
    assert len(g.violations()) == 3
    g.close()


def test_allocations_with_out_or_grad_pass_through_unguarded():
    g = Guards()
    keep = torch.empty(4)
    with poisoned_allocations(None, g):
        same = torch.empty(4, out=keep)
        grad = torch.empty(4, requires_grad=True)
    assert same is keep and payload_of(grad.untyped_storage()) is None and not g.bands


# -- the host loop: fresh inputs every call, the last output kept for the re-check ---------------------------------
def test_the_host_loop_refreshes_inputs_before_every_call_and_keeps_the_last_output():
    x = torch.zeros(3)
    memo: dict[int, torch.Tensor] = {}
    events: list[str] = []

    def fn() -> torch.Tensor:  # a last-call memo keyed on the input pointer: stale once inputs change
        events.append("call")
        return memo.setdefault(x.data_ptr(), x * 2)

    def refresh(i: int) -> None:
        events.append(f"refresh{i}")
        x.fill_(float(i + 1))

    reply, last = host_loop(direct(fn), refresh, 3, True, lambda: events.append("sync"))
    assert events == ["refresh0", "call", "sync", "refresh1", "call", "sync", "refresh2", "call", "sync"]
    assert reply["calls"] == 3 and reply["enqueue_s"] <= reply["inner_s"]
    assert torch.equal(last, torch.full((3,), 2.0))  # the memo's stale answer: the re-check sees 2, expects 6
    events.clear()
    reply, last = host_loop(direct(lambda: None), refresh, 2, False, lambda: events.append("sync"))
    assert last is None and events == ["refresh0", "sync", "refresh1", "sync"]


def test_an_out_of_bounds_access_through_a_strided_argument_says_to_index_it_by_its_strides():
    """A new user's row offset ``row * cols`` on a laid-out input read 'mask every access (offs < n)' with every
    access masked: the message names the strided arguments and the other fix."""
    import numpy as np
    import pytest

    from ktui.worker import interp_bounds as ib

    x = torch.zeros(4, 8)[:, :4]  # padded rows: strides (8, 1)
    out = torch.zeros(4, 4)

    class Ptrs:
        data = np.array([out.data_ptr() + 4 * 64], dtype=np.uint64)  # past out's 16 elements

        def get_element_ty(self):
            raise TypeError("no numpy name")

    ib._CURRENT.append(ib._ranges([("x_ptr", x), ("out_ptr", out)]))
    try:
        with pytest.raises(ib.OutOfBoundsAccess) as e:
            ib._check(Ptrs(), None, "store")
    finally:
        ib._CURRENT.pop()
    assert "x_ptr is strided (8, 1): index it by its strides (or mask every access: offs < n)" in str(e.value), e.value
    ib._CURRENT.append(ib._ranges([("out_ptr", out)]))
    try:
        with pytest.raises(ib.OutOfBoundsAccess) as e:
            ib._check(Ptrs(), None, "store")
    finally:
        ib._CURRENT.pop()
    assert str(e.value).endswith("mask every access (offs < n)"), e.value  # nothing strided: the mask alone
