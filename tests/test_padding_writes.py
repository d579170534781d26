"""A write into an input's padding (issue 9, open since round 7): bytes of an input's storage that its view does
not cover (a padded row's tail, the gaps of an every-other-element view, the element before an offset view) are
neither the input's values (the inputs-after check) nor past the allocation (the canaries). The guard keeps the
storage as ktui built it and compares those bytes after the call."""

from __future__ import annotations

import torch

from ktui.core.results import Status
from ktui.worker.guards import Guards

from .test_cases import K, good, run


def _padded(rows: int = 4, cols: int = 5) -> torch.Tensor:
    buf = torch.randn(rows, cols + 3)
    return buf[:, :cols]


def test_a_write_into_a_padded_rows_tail_is_named_with_its_storage_elements():
    g = Guards()
    (x,) = g.wrap_data((_padded(),))
    x.as_strided((1,), (1,), x.storage_offset() + 5).fill_(7.0)  # row 0's first padding slot: storage element 5
    x.as_strided((1,), (1,), x.storage_offset() + 8 + 6).fill_(7.0)  # row 1's second: storage element 14
    (line,) = g.violations()
    assert line == (
        "wrote 2 elements of in[0]'s storage outside its view (storage elements 5..14 of 32, float32: the padding "
        "of its layout, which the kernel was not given)"
    )
    g.close()


def test_writes_inside_the_view_and_untouched_padding_are_not_padding_writes():
    g = Guards()
    (x,) = g.wrap_data((_padded(),))
    x.add_(1.0)  # the input's own elements: the inputs-after check's to judge, not the guard's
    assert g.violations() == []
    g.close()
    g = Guards()
    every_other = torch.randn(20)[::2]
    offset = torch.randn(11)[1:]
    a, b = g.wrap_data((every_other, offset))
    a.as_strided((1,), (1,), a.storage_offset() + 1).fill_(0.5)  # a gap between two elements
    b.as_strided((1,), (1,), b.storage_offset() - 1).fill_(0.5)  # the element before the view
    lines = g.violations()
    assert [line.split(" (")[0] for line in lines] == [
        "wrote 1 element of in[0]'s storage outside its view",
        "wrote 1 element of in[1]'s storage outside its view",
    ]
    assert "storage element 1 of 20" in lines[0] and "storage element 0 of 11" in lines[1]
    g.close()


def test_two_views_of_one_storage_cover_it_together():
    g = Guards()
    base = torch.randn(10)
    lo, hi = g.wrap_data((base[:5], base[5:]))  # both halves handed out: nothing of the storage is padding
    lo.add_(1.0)
    hi.add_(1.0)
    assert g.violations() == []
    g.close()


def test_a_contiguous_input_keeps_no_copy_of_its_storage():
    g = Guards()
    g.wrap_data((torch.randn(64),))
    assert g.bands[0].views is None and g.bands[0].original is None
    g.close()


def test_a_softmax_that_keeps_its_row_max_in_the_inputs_padding_fails_and_its_twin_passes(make_ws, ladder_for):
    bad = run(make_ws, ladder_for, "softmax", K / "padding_scratch_bad.py", distributions=False)
    r = bad.rung("run")
    assert r is not None and r.status is Status.FAILED, [x.line() for x in bad.rungs]
    assert "layout=padded" in r.error.message
    assert "wrote 2 elements of in's storage outside its view" in r.error.message
    assert "the padding of its layout" in r.error.message
    good(run(make_ws, ladder_for, "softmax", K / "padding_scratch_good.py", distributions=False))
