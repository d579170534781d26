"""Red team round 13 (the mechanisms of round 12, attacked): integer inputs with row structure an honest kernel may
rely on keep it when ktui varies them (findings F1 and F7; the red team's kernels and the open findings are in the
issue's note)."""

from __future__ import annotations

import numpy as np
import torch

from ktui.worker.special import near_duplicate_, vary_indices_


def _row_perms(rows: int, n: int, g: torch.Generator) -> torch.Tensor:
    return torch.stack([torch.randperm(n, generator=g) for _ in range(rows)])


def test_indices_keep_a_permutation_per_row_a_permutation() -> None:
    """F1: each row of ``perm`` a permutation of 0..n-1 (an un-permute's index): the whole tensor is not all
    distinct, and values redrawn within min..max broke the rows; now each row is put in another order."""
    g = torch.Generator().manual_seed(4)
    perm = _row_perms(8, 64, g)
    before = perm.clone()
    vary_indices_(perm, g)
    assert not torch.equal(perm, before)
    assert torch.equal(perm.sort(-1).values, torch.arange(64).expand(8, -1))


def test_near_duplicates_swap_integers_within_a_row() -> None:
    """F1: the near-duplicate case swapped elements across rows, so a row stopped being a permutation; integer
    tensors of two or more dimensions now swap pairs within a row (the interior still changes)."""
    g = torch.Generator().manual_seed(5)
    perm = _row_perms(8, 64, g)
    before = perm.clone()
    near_duplicate_(perm, g)
    assert int((perm != before).sum()) >= 2
    assert torch.equal(perm.sort(-1).values, torch.arange(64).expand(8, -1))
    assert perm[0, 0] == before[0, 0] and perm[-1, -1] == before[-1, -1]  # the first and last as generated


def test_indices_keep_a_padding_mask_a_padding_mask() -> None:
    """F7: a right-padded mask (each row's True first) was shuffled, which broke an honest masked mean taking a
    row's count of True as its length; now each row gets a new count of True, still first (or last)."""
    g = torch.Generator().manual_seed(6)
    lengths = torch.tensor([1, 5, 17, 33, 2, 33, 9, 12])
    mask = torch.arange(33) < lengths[:, None]
    before = mask.clone()
    vary_indices_(mask, g)
    counts = mask.sum(-1)
    assert not torch.equal(mask, before) and bool((counts >= 1).all())
    assert torch.equal(mask, torch.arange(33) < counts[:, None])  # still True first in every row
    left = torch.arange(33) >= 33 - lengths[:, None]  # left-padded: True last
    vary_indices_(left, g)
    assert torch.equal(left, torch.arange(33) >= 33 - left.sum(-1)[:, None])


def test_the_expanded_layout_leaves_1d_integers_as_they_are() -> None:
    """F3: the expanded layout made offsets [0, 3, 7, 12] into [0, 0, 0, 0] (other values, not another layout), the
    reference raised and every version of the problem failed. 1-D floats and 2-D integers are still expanded."""
    from ktui.worker.cases import _relayout

    offsets = torch.tensor([0, 3, 7, 12])
    assert _relayout(offsets, "expanded") is offsets
    x = torch.randn(5)
    assert _relayout(x, "expanded").stride() == (0,)
    pos = torch.arange(12).reshape(3, 4)
    assert _relayout(pos, "expanded").stride() == (0, 1)


# -- W1: sizes a multiple of a block and of no larger power of two -------------------------------------------------
def test_every_run_draws_an_odd_multiple_of_a_block_in_turn_by_seed():
    from ktui.worker.fuzz import ODD_BLOCKS, draw_specs

    from .test_cases_inputs import problem

    va = problem("vector_add")
    met = set()
    for seed in range(8):
        d = draw_specs(va.module, va.tests, va.benchmarks, seed, "cpu", lambda s: True)
        block = ODD_BLOCKS[seed % len(ODD_BLOCKS)]  # vector_add's one field: the seed picks the block
        assert any(s["n"] % block == 0 and (s["n"] // block) % 2 == 1 for s in d), (seed, block, d)
        assert any(s["n"] % 4096 == 0 for s in d), (seed, d)  # the aligned draw stays (round 11, W5)
        met |= {b for b in ODD_BLOCKS for s in d if s["n"] % b == 0 and (s["n"] // b) % 2 == 1}
    assert met == set(ODD_BLOCKS), met


def test_a_slip_in_the_1024_path_of_a_size_dispatch_fails_and_its_twin_passes(make_ws, ladder_for):
    from ktui.core.results import Status

    from .test_cases import CHECKED, K, corr, good, run
    from .test_redteam_round11b import VADD

    opts = dict(reference=VADD, repeat=False, layouts=False, distributions=False, rungs=CHECKED)
    for seed in (2, 3):  # the odd multiple of 1024, then of 2048: a multiple of 1024, not of 4096
        bad = corr(run(make_ws, ladder_for, "vadd", K / "rt13_block_dispatch_bad.py", seed=seed, **opts))
        assert bad.status is Status.FAILED and "fuzzed(" in bad.summary, (seed, bad.line())
    good(run(make_ws, ladder_for, "vadd", K / "rt13_block_dispatch_good.py", seed=2, **opts))


# -- F4: the float32 scan bar includes the sequential order ----------------------------------------------------------
def test_an_honest_scan_of_the_whole_vector_as_one_block_passes(make_ws, ladder_for):
    # seed 4 draws a 16,384-element fuzzed vector on ``large`` inputs: 17.5x the 1024-block bar before the fix
    from .test_cases import CHECKED, K, good, run
    from .test_redteam_round11b import CUMSUM

    good(run(make_ws, ladder_for, "cumsum", K / "rt13_scan_oneblock_good.py", reference=CUMSUM, seed=4, rungs=CHECKED))


def test_the_sequential_float32_scan_rounds_every_running_value():
    from ktui.worker.float32_scans import SEQUENTIAL, blocked_scan, run_in_float32

    x = torch.randn(3, 5000, generator=torch.Generator().manual_seed(1)) * 1e3
    seq = blocked_scan(x, 1, np.add, 0.0, block=SEQUENTIAL)
    ref = torch.from_numpy(np.add.accumulate(x.numpy(), axis=1, dtype=np.float32))
    assert torch.equal(seq, ref)  # numpy's float32 accumulate: one rounding per element, in order
    assert not torch.equal(blocked_scan(x, 1, np.add, 0.0), seq)  # the 1024-block order rounds otherwise
    out, replaced = run_in_float32(lambda t: torch.cumsum(t, dim=1), x, block=SEQUENTIAL)
    assert replaced == 1 and torch.equal(out, ref)


# -- F6: Triton's driver answers the device queries on the CPU --------------------------------------------------------
def test_a_softmax_sized_from_tritons_driver_is_checked_on_the_cpu(make_ws, ladder_for):
    from .test_cases import CHECKED, K, good, run

    ok = good(run(make_ws, ladder_for, "softmax", K / "rt13_softmax_driver_props_good.py", seed=3, rungs=CHECKED))
    warned = [w for r in ok.rungs for w in r.warnings if "triton driver get_device_properties" in w]
    assert warned and "NVIDIA H200, 132 SMs, sm_90" in warned[0], [r.warnings for r in ok.rungs]


def test_the_stand_in_driver_answers_the_device_queries_and_nothing_else():
    import pytest

    from ktui.worker import target_device as td

    d = td.StandInDriver()
    props = d.utils.get_device_properties(0)
    assert props["multiprocessor_count"] == 132 and props["max_shared_mem"] == 232_448 and props["warpSize"] == 32
    t = d.get_current_target()
    assert (t.backend, t.arch, t.warp_size) == ("cuda", 90, 32)
    assert d.get_current_device() == 0 and d.get_active_torch_device() == torch.device("cpu")
    with pytest.raises(RuntimeError, match="0 active drivers.*get_benchmarker"):
        d.get_benchmarker()  # the autotuner's benchmarker stays ktui's under the interpreter


# -- F2: varied jagged offsets keep every segment within the longest generated ----------------------------------------
def test_an_honest_jagged_sum_with_its_block_from_max_len_passes(make_ws, ladder_for):
    from .test_cases import CASES, CHECKED, K, good, run

    ref = CASES / "references" / "rt13_jagged_sum.py"
    for seed in (3, 4, 5):  # seed 3: indices made a 64-step segment 100+ long; 4 and 5: the near-duplicate did
        good(run(make_ws, ladder_for, "jagged", K / "rt13_jagged_sum_good.py", reference=ref, seed=seed, rungs=CHECKED))


def test_uneven_sorted_rows_keep_their_steps_and_near_duplicates_grow_none_past_the_longest():
    from ktui.worker.special import near_duplicate_

    g = torch.Generator().manual_seed(7)
    lengths = torch.randint(1, 65, (4, 300), generator=g)
    offsets = torch.cat([torch.zeros(4, 1, dtype=torch.int64), lengths.cumsum(1)], dim=1)
    before = offsets.clone()
    vary_indices_(offsets, g)
    steps, old = offsets.diff(dim=1), before.diff(dim=1)
    assert not torch.equal(offsets, before) and torch.equal(offsets[:, [0, -1]], before[:, [0, -1]])
    assert torch.equal(steps.sort(dim=1).values, old.sort(dim=1).values)  # the segment lengths, in another order
    dup = before.clone()
    near_duplicate_(dup, torch.Generator().manual_seed(8))
    assert not torch.equal(dup, before)
    assert int(dup.diff(dim=1).max()) <= 64 and int(dup.diff(dim=1).min()) >= 0  # sorted, no segment past max_len
    pos = torch.arange(100).expand(2, -1).clone()  # equal steps (positions): still drawn between the ends
    vary_indices_(pos, torch.Generator().manual_seed(9))
    assert not torch.equal(pos, torch.arange(100).expand(2, -1)) and bool((pos.diff(dim=1) >= 0).all())
    assert torch.equal(pos[:, [0, -1]], torch.tensor([[0, 99], [0, 99]]))  # no room for distinct ones: repeats


def test_equal_steps_longer_than_one_stay_and_the_odd_block_fits_the_range():
    from ktui.worker.fuzz import _draw_aligned

    fixed = torch.arange(0, 40, 4).expand(3, -1).clone()  # segments all of length 4: no other order exists
    vary_indices_(fixed, torch.Generator().manual_seed(1))
    assert torch.equal(fixed, torch.arange(0, 40, 4).expand(3, -1))
    import random

    tests = [{"n": 3000}]
    for seed in range(8):  # n in [3000, 5000]: 2048 has no odd multiple there, the others do
        spec = _draw_aligned(random.Random(seed), "n", tests, [], {"n": (3000, 5000)}, 1 << 20, odd_block=seed)
        assert spec is not None and 3000 <= spec["n"] <= 5000, (seed, spec)
        assert any(spec["n"] % b == 0 and (spec["n"] // b) % 2 == 1 for b in (256, 512, 1024)), spec
