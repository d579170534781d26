"""Red team round 20: each finding fixed as a mechanism, with a bad kernel, its honest twin and a test asserting the
verdict and its message (docs/cases.md)."""

from __future__ import annotations

from ktui.core.results import Status

from .test_cases import CASES, K, corr, good, run

R = CASES / "references"
CHECKED = dict(layouts=False, seeds=1, seed=1, rungs=("compile", "run", "correctness"))


def test_a_reference_returning_float8_is_judged_and_an_unclamped_rtz_quantizer_fails(make_ws, ladder_for):
    """F2: every version of a reference returning float8 failed its compile rung with ktui's own error ("gt_cpu" not
    implemented for 'Float8_e5m2': ``special.valid_reference`` compared float8 on the CPU); it compares in float64."""
    ref = R / "rt20_fp8_e5m2.py"
    ok = good(run(make_ws, ladder_for, "fp8q", K / "rt20_fp8_e5m2_good.py", reference=ref, **CHECKED))
    assert corr(ok).figures["cases"] > 20
    bad = corr(run(make_ws, ladder_for, "fp8q", K / "rt20_fp8_e5m2_rtz_unclamped_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED and "NaN/inf where the reference differs" in bad.summary, bad.summary


def test_leaves_computed_from_topk_sorted_false_results_follow_their_order():
    """F1: the router's weights (``scores.gather(1, ids)`` renormalized) follow its ids' positions; a leaf mixed
    with anything not constant along the topk dimension, or reduced along it, does not."""
    import torch

    from ktui.worker.unordered import UnorderedOps, canonical_

    torch.manual_seed(0)
    scores = torch.rand(4, 16)
    with UnorderedOps() as seen:
        _, ids = torch.topk(scores + 0.1, 4, dim=-1, sorted=False)
        w = scores.gather(1, ids)
        w = w / w.sum(-1, keepdim=True)
        half = w.to(torch.float16)
        mixed = w * torch.arange(4.0)  # positions weighted: not a follower
        total = w.sum(-1)
        shifted = w.roll(1, dims=1)  # positions moved: not a follower
    out = {"w": w, "ids": ids, "half": half, "mixed": mixed, "total": total, "shifted": shifted}
    groups = seen.groups(out)
    source = groups[0].pop("source")  # what the call ranked: orders and judges the lone indices
    assert torch.equal(source, scores + 0.1)
    assert groups == [
        {"values": None, "indices": "out['ids']", "dim": 1, "largest": True, "companions": ["out['w']", "out['half']"]}
    ]
    groups[0]["source"] = source
    pairs = {(r, int(i)): float(x) for r in range(4) for i, x in zip(ids[r], w[r], strict=True)}
    canonical_(out, groups)
    picked = source.gather(1, ids)
    assert bool((picked[:, 1:] <= picked[:, :-1]).all())  # in the order of what they select, largest first
    assert {(r, int(i)): float(x) for r in range(4) for i, x in zip(ids[r], w[r], strict=True)} == pairs


def test_a_router_returning_its_picks_sorted_passes_and_one_pairing_weights_wrongly_fails(make_ws, ladder_for):
    """F1: an honest router returning its picks in descending order failed 15 of 15 specs: its weights were compared
    by position while its ids were sorted; a router whose weights go to the wrong ids still fails."""
    ref = R / "rt20_router.py"
    ok = corr(good(run(make_ws, ladder_for, "router", K / "rt20_router_sorted_good.py", reference=ref, **CHECKED)))
    assert any("out[0], out[1]" in w or "out[1], out[0]" in w for w in ok.warnings), ok.warnings
    bad = corr(run(make_ws, ladder_for, "router", K / "rt20_router_swapped_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED and "out[0]" in bad.summary, bad.summary


def test_an_honest_blocked_bf16_scan_passes_the_extreme_family_and_a_scan_dropping_its_carry_fails(make_ws, ladder_for):
    """New-user trial 20 H1: an honest blocked bf16 scan failed the extreme family (517 of 1,537 elements "off"):
    a prefix that cancels against an input of 4e37 is lost by the float64 truth itself, so its value there depends
    on the order of the sums. The off rule's bound now grows by how far the truth moves when the inputs move by u
    (``worker.conditioning``, as the gross bound did); a scan whose carry stops past 4,096 elements still fails.
    (Since stop 34 the extreme family's huge elements share one sign per tensor, so no prefix cancels against them
    here; the conditioning rule keeps its own tests.)"""
    ref = R / "nu20_rowcumsum.py"
    opts = dict(seed=1250870934, rungs=("compile", "run", "correctness"))
    ok = corr(good(run(make_ws, ladder_for, "rowcumsum", K / "nu20_rowcumsum_blocked_good.py", reference=ref, **opts)))
    assert not any("are 0 where the reference is not" in w for w in ok.warnings), ok.warnings
    bad = corr(run(make_ws, ladder_for, "rowcumsum", K / "nu20_rowcumsum_carry_stops_bad.py", reference=ref, **opts))
    assert bad.status is Status.FAILED and "4099" in bad.summary, bad.summary


def test_an_fp32_softmax_skipping_small_exps_fails_and_its_twin_passes(make_ws, ladder_for):
    """W1: ``tl.where(x > -17, exp(x), 0)`` wrote 0 for every probability below e^-17 of its row's max and passed
    under the default fp32 tolerance (atol 1e-5: an absolute error below it anywhere); a caller's log(p) gives -inf.
    A 0 where the float32 reference is a normal number and the float64 truth one its inputs determine now fails."""
    ref = R / "rt20_softmax_cut.py"
    bad = corr(run(make_ws, ladder_for, "softmax", K / "rt20_softmax_skip_small_exp_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED, bad.summary
    assert "0 (or below eps of the truth) where the reference computed in float32 is not" in bad.summary, bad.summary
    good(run(make_ws, ladder_for, "softmax", K / "rt20_softmax_good.py", reference=ref, **CHECKED))


def test_a_zero_where_the_truth_is_not_determined_by_the_inputs_is_not_failed():
    """The rule asks the truth to move by less than half of itself when the inputs move by u: a cancellation to 0
    (x - mean where x is the mean) is left to the tolerance."""
    import hashlib

    import torch

    from ktui.worker import compare
    from ktui.worker.problem import Problem

    src = R / "rt20_softmax_cut.py"
    problem = Problem(src, "softmax", hashlib.sha256(src.read_bytes()).hexdigest())
    x = torch.tensor([[0.0, -10.0, 5.0]])
    truth = torch.softmax(x.double(), -1)
    native = torch.softmax(x, -1)
    out = native.clone()
    out[0, 1] = 0.0  # 3e-7: well determined by the inputs, above eps rms(ref) = 7e-8
    prep = {"inputs_of": lambda: x.clone()}
    m = {"ok": True, "score": 0.0, "reason": ""}
    compare.zeros_where_the_truth_is_not(problem, prep, m, out, native, truth, "out", 1 << 22)
    assert not m["ok"] and m["reason"].startswith("1 of 3 element 0 (or below eps of the truth)"), m
    y = torch.tensor([[1.0, 2.0, 3.0]])
    centered = (y - y.mean()).double() + torch.tensor([[0.0, 1e-9, 0.0]], dtype=torch.float64)  # truth ~1e-9
    prep = {"inputs_of": lambda: y.clone()}
    m = {"ok": True, "score": 0.0, "reason": ""}
    ident = Problem(src, "softmax", hashlib.sha256(src.read_bytes()).hexdigest())
    ident.module.ref_kernel = lambda data: data - data.mean()  # the truth moves by ~u |y| >> 1e-9: undetermined
    compare.zeros_where_the_truth_is_not(
        ident, prep, m, torch.tensor([[-1.0, 0.0, 1.0]]), torch.tensor([[-1.0, 1e-8, 1.0]]), centered, "out", 1 << 22
    )
    assert m["ok"], m
    # red team 20b F1: tanh as 2 sigmoid(2x) - 1 rounds to 0 where |x| < eps / 2, below eps rms(ref): not failed
    tanh = Problem(src, "softmax", hashlib.sha256(src.read_bytes()).hexdigest())
    tanh.module.ref_kernel = torch.tanh
    t = torch.tensor([3e-8, -2e-8, 0.5, -1.0, 2.0, 1e-3])
    formula = 2 * torch.sigmoid(2 * t) - 1
    assert formula[0] == 0 and formula[1] == 0 and torch.tanh(t)[0] != 0
    m = {"ok": True, "score": 0.0, "reason": ""}
    prep = {"inputs_of": lambda: t.clone()}
    compare.zeros_where_the_truth_is_not(tanh, prep, m, formula, torch.tanh(t), torch.tanh(t.double()), "out", 1 << 22)
    assert m["ok"], m


def test_a_softmax_or_normalize_along_the_topk_dimension_follows_its_order_and_one_across_it_does_not():
    """Red team 20b F3: ``softmax(w, -1)`` of a ``topk(sorted=False)``'s values (a Mistral-style router), an L1
    normalize and a ``where`` against zeros were compared by position while the ids were put in order."""
    import torch
    import torch.nn.functional as F

    from ktui.worker.unordered import UnorderedOps

    x = torch.randn(3, 16, generator=torch.Generator().manual_seed(0))
    with UnorderedOps() as seen:
        w, ids = torch.topk(x, 4, sorted=False)
        sm = torch.softmax(w, -1)
        nm = F.normalize(w, p=1, dim=-1)
        kept = torch.where(w > 0, w, torch.zeros_like(w))
        across = torch.softmax(w, 0)  # mixes rows: positions along the topk dimension are not its own
        weighted = w * torch.arange(4.0)  # a weight per position: not a follower
    (g,) = seen.groups({"ids": ids, "sm": sm, "nm": nm, "kept": kept, "across": across, "weighted": weighted})
    assert g["companions"] == ["out['sm']", "out['nm']", "out['kept']"]


def test_rows_picked_by_topk_sorted_false_ids_follow_their_order_and_a_gate_on_the_wrong_row_fails(make_ws, ladder_for):
    """Red team 20b F3's rest: the rows ``x[ids]`` (``index_select``, ``embedding``) of a ``topk(sorted=False)``'s
    ids, scaled by the picks' gates, were compared by position while the ids were put in order, so top-k pooling
    sorted by score failed. Such rows follow the ids' order, each moved whole; a kernel pairing each row with another
    pick's gate still fails."""
    import torch

    from ktui.worker.unordered import UnorderedOps, canonical_

    x = torch.randn(10, 3, generator=torch.Generator().manual_seed(0))
    s = torch.randn(10, generator=torch.Generator().manual_seed(1))
    table = torch.randn(10, 2, generator=torch.Generator().manual_seed(2))
    with UnorderedOps() as seen:
        w, ids = torch.topk(s, 4, sorted=False)
        rows = x[ids] * torch.sigmoid(w).unsqueeze(-1)
        sel = x.index_select(0, ids)
        emb = torch.nn.functional.embedding(ids, table)
        cols = x.repeat(1, 4)[:, ids[:2]]  # picks along another dimension of another tensor: compared in place
    out = {"ids": ids, "rows": rows, "sel": sel, "emb": emb, "cols": cols}
    (g,) = seen.groups(out)
    assert g["companions"] == ["out['rows']", "out['sel']", "out['emb']"], g
    canonical_(out, [g])
    order = torch.sort(s, descending=True)[1][:4]
    assert torch.equal(out["ids"], order) and torch.equal(out["sel"], x[order]), out
    ref = R / "rt20b_topk_rows.py"
    good(run(make_ws, ladder_for, "pool", K / "rt20b_topk_rows_good.py", reference=ref, **CHECKED))
    bad = corr(run(make_ws, ladder_for, "pool", K / "rt20b_topk_rows_bad.py", reference=ref, **CHECKED))
    assert bad.status is Status.FAILED and "output out[1]" in bad.summary, bad.summary
