"""Red team round 18: each finding fixed as a mechanism, with a bad kernel, its honest twin and a test asserting the
verdict and its message (docs/cases.md).

W3: a weight preparation cached per (tensor, ``_version``) served stale values when the weight was written in place
without moving its version counter (a kernel's write, a ``.data`` write), and passed because every fresh input ktui
wrote for timed and verified calls moved it; ktui writes them as a kernel would (``tensors.copy_into``)."""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, K, corr, good, run

R = CASES / "references"
FAST = dict(distributions=False, layouts=False, seeds=1)


def test_copy_into_leaves_the_version_counter_as_a_kernels_write_does():
    import torch

    from ktui.worker.tensors import copy_into

    d = (torch.zeros(4), torch.zeros(2, 3))
    before = [t._version for t in d]
    copy_into(d, (torch.ones(4), torch.ones(2, 3)))
    assert [t._version for t in d] == before and bool((d[0] == 1).all()) and bool((d[1] == 1).all())


def test_a_weight_cache_keyed_on_its_version_fails_the_verified_stretch_and_its_twin_passes(make_ws, ladder_for):
    ref = R / "rt18_rmsnorm.py"
    bad = run(make_ws, ladder_for, "rmsnorm", K / "rt18_rmsnorm_cache_bad.py", reference=ref, **FAST)
    failed = bad.failed_rung
    assert failed is not None and failed.name in ("run", "benchmark"), [r.line() for r in bad.rungs]
    if failed.name == "run":  # the grad=inference case (red team round 25, #5) reaches its ``w._version`` first:
        # inference tensors have none, so an inference server's call raises where the cache is read
        assert "grad=inference" in failed.line() and "do not track version counter" in failed.line(), failed.line()
    else:
        assert bad.rung("correctness").status is Status.OK  # fresh tensors every case: only reused buffers show it
        assert "is wrong" in failed.line() and "every call gets fresh inputs" in failed.line(), failed.line()
    good(run(make_ws, ladder_for, "rmsnorm", K / "rt18_rmsnorm_good.py", reference=ref, **FAST))


def test_a_none_in_the_references_output_is_matched_by_none_and_a_tensor_there_fails(make_ws, ladder_for):
    """F4: a reference returning (y, None) failed every kernel on every spec ('cannot compare with the reference')."""
    ref = R / "rt18_swiglu_none.py"
    good(run(make_ws, ladder_for, "swiglu", K / "rt18_swiglu_none_good.py", reference=ref, **FAST))
    bad = run(make_ws, ladder_for, "swiglu", K / "rt18_swiglu_none_bad.py", reference=ref, **FAST)
    failed = bad.failed_rung
    assert failed is not None and failed.name == "correctness", [r.line() for r in bad.rungs]
    assert "out[1] is a" in failed.line() and "expected None (the reference returns None there)" in failed.line()


def test_the_cpu_reaches_the_benchmarks_width_along_the_innermost_field():
    """W2: on the CPU every fuzzed spec stayed within 65,536 elements; the bench draw of the innermost field now goes
    to the benchmark's 128,256 columns (on the tests' most rows) in every run."""
    import hashlib

    from ktui.worker.fuzz import describe_for_run
    from ktui.worker.problem import Problem

    path = R / "rt18_wide_softmax.py"
    problem = Problem(path, path.stem, hashlib.sha256(path.read_bytes()).hexdigest())
    for seed in (1, 2, 3, 4):
        info = describe_for_run(problem, "cpu", seed)
        widest = max(info["tests"][i]["cols"] for i in info["fuzzed"])
        assert 128_255 <= widest <= 128_259, (seed, widest)
        rows = max(info["tests"][i]["rows"] for i in info["fuzzed"] if info["tests"][i]["cols"] == widest)
        assert rows == 7, (seed, rows)  # the test spec with the most rows (7, 127), within 2**20 elements


def test_a_split_path_taken_only_past_65536_columns_fails_on_the_cpu_and_its_twin_passes(make_ws, ladder_for):
    ref = R / "rt18_wide_softmax.py"
    rungs = ("compile", "run", "correctness")
    # seed 1 draws (7, 128255): a row whose max lies in its second half hides the bug, so seven rows miss it 1 in 128
    bad = run(
        make_ws, ladder_for, "vocab_softmax", K / "rt18_wide_softmax_bad.py", reference=ref, rungs=rungs, seed=1, **FAST
    )
    failed = bad.failed_rung
    assert failed is not None and failed.name == "correctness", [r.line() for r in bad.rungs]
    assert "fuzzed(" in failed.line() and "1282" in failed.line(), failed.line()  # the 128,25x-column spec
    good(run(make_ws, ladder_for, "vocab_softmax", K / "rt18_wide_softmax_good.py", reference=ref, rungs=rungs, **FAST))


def test_an_integer_output_that_could_index_an_input_says_how_to_declare_it():
    """F2: a MoE router's top-2 of a softmax failed on tied probabilities with 'got 865, expected 988' alone: its
    indices gather the softmax's values, not the input's, so ktui cannot detect them; the message says how to
    declare them (and declared, ties pass by what they select)."""
    import torch

    from ktui.worker.indices import index_allowance, select_verdict

    logits = torch.zeros(2, 8)  # every logit tied: any two indices are a right top-2
    probs = torch.softmax(logits.double(), -1)
    vals, ref_idx = probs.topk(2, dim=-1)
    ref_idx = torch.tensor([[5, 3], [7, 0]])
    out = torch.tensor([[0, 1], [0, 1]])

    class NoDecl:
        pass

    m = {"ok": False, "reason": "output out[1]: got 0, expected 5"}
    index_allowance(NoDecl, "out[1]", m, out, ref_idx, (vals, ref_idx), lambda: logits)
    assert not m["ok"]
    assert m["reason"].endswith(
        "(if out[1] holds indices into in along dim -1 whose ties may come in any order, declare index_outputs = "
        "{1: (None, -1)} in the reference: ktui then judges them by what they select)"
    ), m["reason"]

    class Declared:
        index_outputs = {1: (None, -1)}

    m = {"ok": False, "reason": "output out[1]: got 0, expected 5"}
    index_allowance(Declared, "out[1]", m, out, ref_idx, (vals, ref_idx), lambda: logits)
    assert m["ok"], m
    assert select_verdict(torch.tensor([[0, 0], [0, 1]]), ref_idx, logits, -1, "in")  # the same index twice: wrong


def test_the_tie_order_probe_tells_a_stable_sort_from_topk_and_an_unstable_sort():
    import torch

    from ktui.worker.indices import orders_ties_by_index

    class Stable:
        @staticmethod
        def ref_kernel(x):
            return torch.sort(x, dim=-1, stable=True)

    class Unstable:
        @staticmethod
        def ref_kernel(x):
            return torch.sort(x, dim=-1)

    class TopK:
        @staticmethod
        def ref_kernel(x):
            return torch.topk(x, 8, dim=-1)

    assert orders_ties_by_index(Stable, torch.randn(3, 257), None, -1, "out[1]")
    assert not orders_ties_by_index(Unstable, torch.randn(3, 257), None, -1, "out[1]")
    assert not orders_ties_by_index(TopK, torch.randn(3, 257), None, -1, "out[1]")
    assert not orders_ties_by_index(Stable, torch.randn(3, 16), None, -1, "out[1]")  # too short to tell


def test_a_sort_breaking_the_stability_its_reference_asks_for_fails_and_its_twin_passes(make_ws, ladder_for):
    ref = R / "rt18_stable_sort.py"
    rungs = ("compile", "run", "correctness")
    bad = run(make_ws, ladder_for, "sort", K / "rt18_stable_sort_bad.py", reference=ref, rungs=rungs, **FAST)
    failed = bad.failed_rung
    assert failed is not None and failed.name == "correctness", [r.line() for r in bad.rungs]
    # known as a stable sort's indices (``indices.IndexOps``, red team round 22): ties must come by index
    assert "a stable sort keeps equal values in their order, so ties come by index" in failed.line(), failed.line()
    good(run(make_ws, ladder_for, "sort", K / "rt18_stable_sort_good.py", reference=ref, rungs=rungs, **FAST))


def test_a_softmax_that_zeroes_rows_of_equal_minus_1e9_fails_and_its_twin_passes(make_ws, ladder_for):
    """W4: the native allowance moved each input one ulp at random, so a row of -1e9 (ulp 64) became one-hot and the
    float32 reference looked off by ~1 there; equal values now move alike (``native.one_ulp_away``)."""
    ref = R / "rt18_masked_softmax.py"
    opts = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    bad = corr(run(make_ws, ladder_for, "masked_softmax", K / "rt18_masked_softmax_zero_bad.py", reference=ref, **opts))
    assert bad.status is Status.FAILED, bad.line()
    assert "dist=masked" in bad.summary and "expected 0.000" in bad.summary, bad.summary
    assert "entirely" in bad.summary, bad.summary  # the whole masked row is named
    good(run(make_ws, ladder_for, "masked_softmax", K / "rt18_masked_softmax_good.py", reference=ref, **opts))


def test_topk_sorted_false_results_are_named_and_put_in_one_order():
    import torch

    from ktui.worker.unordered import UnorderedOps, canonical, canonical_

    x = torch.tensor([[0.5, 3.0, 3.0, -1.0, 2.0], [1.0, 0.0, 4.0, 4.0, 4.0]])
    with UnorderedOps() as seen:
        v, i = torch.topk(x, 3, sorted=False)
        w = x.topk(2, dim=1, largest=False, sorted=False)
        s = torch.topk(x, 2)  # sorted: its order is the reference's, compared in place
        scaled = v * 2
    groups = seen.groups({"v": v, "i": i, "lo": w.values, "s": s.values, "scaled": scaled})
    assert groups == [  # v * 2 follows v's positions (red team round 20 F1): put in the same order
        {"values": "out['v']", "indices": "out['i']", "dim": 1, "largest": True, "companions": ["out['scaled']"]},
        {"values": "out['lo']", "indices": None, "dim": 1, "largest": False, "companions": []},
    ]
    # descending by value, ties by index ascending: every order of the same picks gives the same tensors
    a = canonical(torch.tensor([[2.0, 3.0, 3.0]]), torch.tensor([[4, 2, 1]]), 1, True)
    b = canonical(torch.tensor([[3.0, 2.0, 3.0]]), torch.tensor([[1, 4, 2]]), 1, True)
    assert a[0].tolist() == b[0].tolist() == [[3.0, 3.0, 2.0]] and a[1].tolist() == b[1].tolist() == [[1, 2, 4]]
    # a different multiset stays different
    c = canonical(torch.tensor([[3.0, 2.0, 2.0]]), torch.tensor([[1, 4, 0]]), 1, True)
    assert c[0].tolist() != a[0].tolist()
    out = (torch.tensor([[1.0, 5.0, 3.0]]), torch.tensor([[7, 8, 9]]))
    canonical_(out, [{"values": "out[0]", "indices": "out[1]", "dim": 1, "largest": True, "companions": []}])
    assert out[0].tolist() == [[5.0, 3.0, 1.0]] and out[1].tolist() == [[8, 9, 7]]


def test_a_topk_sorted_false_kernel_that_sorts_passes_and_one_that_misses_a_pick_fails(make_ws, ladder_for):
    """F1: the reference's topk(sorted=False) order was compared position by position, failing an honest kernel
    that returned its picks sorted (``worker.unordered``)."""
    ref = R / "rt18_topk_unsorted.py"
    opts = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    ok = corr(good(run(make_ws, ladder_for, "topk", K / "rt18_topk_sorted_good.py", reference=ref, **opts)))
    assert any("compared in sorted order" in w for w in ok.warnings), ok.warnings
    bad = corr(run(make_ws, ladder_for, "topk", K / "rt18_topk_first_block_bad.py", reference=ref, **opts))
    assert bad.status is Status.FAILED and "4099" in bad.summary, bad.summary


def test_float_entries_are_where_integers_enter_float_math():
    import torch

    from ktui.worker.native import FloatEntries, entry_rounding_allowance

    x = torch.tensor([[100, 101, 102, 104], [1, 2, 3, 4]], dtype=torch.uint8)
    with FloatEntries() as seen:
        x.float().mean(-1)  # one entry (the cast); the mean of floats is float math already
        torch.zeros(3, dtype=torch.float32)  # no tensor argument: nothing enters
        x // 3  # integer arithmetic
    assert seen.entries == 1

    def ref(d):
        return torch.round(d.float().mean(-1)).to(torch.uint8)

    # row 0's mean is 101.75 (nowhere near a half-way point), row 1's 2.5 exactly: only row 1 may round either way
    allow = entry_rounding_allowance(ref, x, ref(x), seed=1)["out"]
    assert allow.tolist() == [0.0, 1.0]
    assert entry_rounding_allowance(lambda d: d // 3, x, x // 3, seed=1)["out"].tolist() == [[0.0] * 4] * 2


def test_a_uint8_mean_by_reciprocal_passes_and_a_truncated_mean_fails(make_ws, ladder_for):
    """F3: a rounded uint8 mean whose sum * (1/n) lands an ulp off an exact k + 0.5 failed: integer-only inputs had no
    rounding allowance (``native.entry_rounding_allowance`` moves the values where they enter float math)."""
    ref = R / "rt18_int_mean.py"
    opts = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))
    ok = corr(good(run(make_ws, ladder_for, "int_mean", K / "rt18_int_mean_reciprocal_good.py", reference=ref, **opts)))
    assert any("within that precision's rounding of a half-way point" in w for w in ok.warnings), ok.warnings
    bad = corr(run(make_ws, ladder_for, "int_mean", K / "rt18_int_mean_trunc_bad.py", reference=ref, **opts))
    assert bad.status is Status.FAILED and "nor the truth is within that precision's rounding" in bad.summary
