"""Checks crossed (issue 9.2, cases.md uncrossed) and two red-team findings (fuzzed widths stopped at 4x the largest
test; an fp32 output of bf16 inputs judged by bf16's rules), each kind with a bad kernel and its honest twin through
the real ladder on the CPU, plus the pure parts: the covering design, the autotune cases, the per-kernel config
shifts, the benchmark-width draws and the tolerance dtype of each output.

- layouts ran only on the two largest specs with native values, each distribution with one seed, the decoy fill only
  with native values: a covering design drawn per run crosses layout x distribution x fill x spec class;
- autotune configs were pinned in lockstep across kernels, and the autotuner's own choice was never checked: each
  kernel gets its own config per case, and ``config: "auto"`` cases let the autotuner choose;
- a path taken only past 32,768 columns passed: fuzzing reaches the benchmark's size along each dimension;
- an fp32 output computed from bf16 inputs was judged by bf16's rules: each output is judged by its own dtype.

The seeds are fixed; the pure tests check the property over many seeds.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from pathlib import Path

import pytest
import torch

from ktui.core.ladder import LadderOptions, make_cases
from ktui.core.ladder.cases import (
    BURST_CALLS,
    FILLS,
    autotune_cases,
    covering_cases,
    layouts_of,
    spec_classes,
    spec_variants,
)
from ktui.core.results import Status
from ktui.protocol import mixed_variants, spec_ints, spec_size

from .conftest import ROOT
from .test_cases import CASES, K, corr, good, run

R = CASES / "references"


def _problem(path: Path):
    from ktui.worker.problem import Problem

    return Problem(path, path.stem, hashlib.sha256(path.read_bytes()).hexdigest())


def _describe(path: Path, seed: int):
    from ktui.worker.fuzz import describe_for_run

    return describe_for_run(_problem(path), "cpu", seed)


SOFTMAX = ROOT / "references" / "softmax.py"


def planned_count(reference: Path, figures, configs: int = 0, **options) -> int:
    """The number of cases ``make_cases`` (and ``autotune_cases`` for ``configs``) plans for the run of
    ``reference`` whose correctness ``figures`` these are, under ``LadderOptions(**options)``: the run's describe
    drawn again from its seed (the smallest of its seeds), as the judge drew it."""
    from ktui.worker.fuzz import describe_for_run

    seed = min(s["seeds"][0] for s in figures["specs"])
    desc = describe_for_run(_problem(reference), "cpu", seed if options.get("fuzz", True) else None)
    assert desc["tests"] == [s["spec"] for s in figures["specs"]]  # the same specs, fuzzed ones included
    return len(make_cases(desc, LadderOptions(**options), seed)) + len(autotune_cases(desc, configs, seed))


def _row(case, classes, variants):
    return (
        case.get("layout", "contiguous"),
        case.get("dist", "native"),
        case.get("fill", "poison"),
        classes[case["spec_index"]],
        variants[case["spec_index"]],
    )


# -- the covering design ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [10, 11, 12])
def test_every_pair_of_layout_distribution_fill_spec_class_and_variant_is_in_a_case(seed):
    desc = _describe(SOFTMAX, seed)
    cases = make_cases(desc, LadderOptions(), seed=seed)
    classes = spec_classes(desc["tests"])
    variants = spec_variants(desc["tests"])
    assert set(variants) == {"float32", "bfloat16"}
    # (a spec with a size at 0, fuzz's empty draw, runs once and stays out of the design: no layout or distribution
    # changes an empty input)
    keep = [i for i, t in enumerate(desc["tests"]) if 0 not in spec_ints(t)]
    assert len(keep) < len(desc["tests"])  # the empty draws are there
    domains = [["contiguous", *layouts_of(desc)], desc["distributions"], list(FILLS)]
    domains += [sorted({classes[i] for i in keep}), sorted({variants[i] for i in keep})]
    assert len(domains[1]) > 6 and {"small", "large"} <= {c.split("-")[0] for c in domains[3]}
    rows = {_row(c, classes, variants) for c in cases}
    specs_have = {(classes[i], variants[i]) for i in keep}
    for (a, da), (b, db) in itertools.combinations(enumerate(domains), 2):
        for va, vb in itertools.product(da, db):
            if (a, b) == (3, 4) and (va, vb) not in specs_have:
                continue  # no spec of that class in that dtype
            assert any(r[a] == va and r[b] == vb for r in rows), (va, vb)
    small = {i for i, c in enumerate(classes) if c.startswith("small")}
    assert any(c.get("layout") and c["spec_index"] in small for c in cases)  # layouts on narrow specs too
    assert make_cases(desc, LadderOptions(), seed=seed) == cases  # replayed by seed
    assert make_cases(desc, LadderOptions(), seed=seed + 100) != cases  # drawn anew for another


def test_the_design_adds_little_more_than_the_layout_distribution_pairs_the_fixed_part_leaves_out(monkeypatch):
    import ktui.core.ladder.cases as plan

    desc = _describe(SOFTMAX, 10)
    opts = LadderOptions()
    cases = make_cases(desc, opts, seed=10)
    monkeypatch.setattr(plan, "covering_cases", lambda *args: [])
    fixed = make_cases(desc, opts, seed=10)
    design = covering_cases(desc, opts, 10, fixed)
    assert len(cases) == len(fixed) + len(design)
    missing = len(layouts_of(desc)) * (len(desc["distributions"]) - 1)  # every non-native dist with every layout
    # beyond those pairs, at most one case per spec class (a class the missing pairs' cases cannot all take: 7
    # classes with round 11's aligned draw gave 41 of 36 at seed 10; 5 classes, 36)
    n_classes = len(set(spec_classes(desc["tests"])))
    assert missing <= len(design) <= missing + n_classes, (len(design), missing, n_classes)
    assert sorted(c["seed"] for c in design) == list(range(10 + 401, 10 + 401 + len(design)))
    for c in cases:  # a fuzzed spec in a design case carries its spec
        assert ("spec" in c) == (c["spec_index"] in desc["fuzzed"])


def test_no_layouts_where_none_apply_and_the_rest_still_crossed():
    desc = _describe(SOFTMAX, 10)
    only = make_cases({**desc, "contiguous_only": True}, LadderOptions(), seed=10)
    assert not any("layout" in c for c in only)
    decoy_dists = {c["dist"] for c in only if c.get("fill") == "decoy" and c.get("dist")}
    assert decoy_dists == set(desc["distributions"]) - {"native"}  # fill x distribution
    bare = make_cases(desc, LadderOptions(layouts=False, distributions=False), seed=10)
    assert not any("layout" in c or "dist" in c for c in bare)


def test_each_spec_runs_each_distribution_with_its_own_seed():
    desc = _describe(SOFTMAX, 10)
    cases = make_cases(desc, LadderOptions(), seed=10)
    for dist in desc["distributions"][1:]:
        seeds = [c["seed"] for c in cases if c.get("dist") == dist]
        assert len(seeds) >= 2 and len(set(seeds)) == len(seeds), (dist, seeds)


def test_the_burst_case_ends_phase_one_on_the_smallest_spec():
    desc = _describe(SOFTMAX, 10)
    cases = make_cases(desc, LadderOptions(), seed=10)
    burst = [k for k, c in enumerate(cases) if "calls" in c]
    assert len(burst) == 1
    k = burst[0]
    fixed = [i for i in range(len(desc["tests"])) if i not in desc["fuzzed"]]
    smallest = min(spec_size(desc["tests"][i]) for i in fixed)
    assert cases[k]["seed"] == 10 + 301 and spec_size(desc["tests"][cases[k]["spec_index"]]) == smallest
    assert BURST_CALLS[0] <= cases[k]["calls"] <= BURST_CALLS[1]
    assert cases[k + 1].get("fresh") and not any(c.get("fresh") for c in cases[: k + 1])  # the end of phase 1
    assert len({c["calls"] for s in range(20) for c in make_cases(desc, LadderOptions(), seed=s) if "calls" in c}) > 1


def test_flat_offsets_on_narrow_rows_fail_on_a_crossed_layout(make_ws, ladder_for):
    """Layouts ran only on the two largest specs (4099 columns): flat offsets below 1024 columns passed."""
    bad = corr(run(make_ws, ladder_for, "softmax", K / "narrow_flat_bad.py", seed=3, distributions=False))
    assert bad.status is Status.FAILED and "layout=" in bad.summary
    failed = [c for s in bad.figures["specs"] for c in s["failed_cases"]]
    assert failed and all("layout=" in c for c in failed)
    assert all(s["spec"]["cols"] <= 1024 for s in bad.figures["specs"] if not s["ok"])
    good(run(make_ws, ladder_for, "softmax", K / "narrow_flat_good.py", seed=3, distributions=False))


def test_a_kernel_right_only_under_the_poison_fails_on_a_decoy_with_other_values(make_ws, ladder_for):
    """The decoy fill ran only with the reference's own inputs: a softmax that skips the max subtraction unless its
    output buffer holds NaN passed."""
    bad = corr(run(make_ws, ladder_for, "softmax", K / "poison_watch_bad.py", seed=3, layouts=False))
    assert bad.status is Status.FAILED and "fill=decoy" in bad.summary
    failed = [c for s in bad.figures["specs"] for c in s["failed_cases"]]
    assert failed and all("fill=decoy" in c and "dist=" in c for c in failed)
    good(run(make_ws, ladder_for, "softmax", K / "poison_watch_good.py", seed=3, layouts=False))


# -- autotuning: independent configs per kernel, the autotuner's own choice ---------------------------------------
def test_autotune_cases_pin_each_config_per_spec_and_let_the_autotuner_choose():
    desc = {"tests": [{"n": 64}, {"n": 1}, {"n": 8200}], "fuzzed": [2]}
    cases = autotune_cases(desc, 3, seed=5)
    assert [c for c in cases if c["config"] != "auto"] == [
        {"spec_index": i, "seed": 5, "config": c} for c in (1, 2) for i in (0, 1)
    ]
    assert [c for c in cases if c["config"] == "auto"] == [
        {"spec_index": 1, "seed": 5 + 501, "config": "auto"},
        {"spec_index": 0, "seed": 5 + 502, "config": "auto"},
    ]
    assert autotune_cases(desc, 1, seed=5) == [] and autotune_cases(desc, 0, seed=5) == []


def test_the_case_names_the_configs_each_kernel_launched():
    from ktui.worker.cases import case_label

    pinned = {"spec_index": 0, "seed": 5, "config": 1, "configs": {"partial_sums": 2, "reduce_partials": 0}}
    assert case_label("(4, 129)", pinned) == "spec=(4, 129) seed=5 config=partial_sums:2,reduce_partials:0"
    auto = {"spec_index": 0, "seed": 5, "config": "auto", "configs": {"add_kernel": 1}}
    assert case_label("(4, 129)", auto) == "spec=(4, 129) seed=5 config=auto(add_kernel:1)"
    assert case_label("(4, 129)", {"spec_index": 0, "seed": 5, "config": 1}) == "spec=(4, 129) seed=5 config=1"
    assert case_label("(4, 129)", {"spec_index": 0, "seed": 5, "config": 0}) == "spec=(4, 129) seed=5"


def test_config_shifts_are_per_kernel_and_a_specs_cases_run_every_config():
    from ktui.worker.capture import config_shift

    agree = 0
    for spec_index in range(40):
        salt = f"7:{spec_index}"  # the spec's first seed: config 0 (its first case) and 1 .. C-1 (autotune_cases)
        for n in (1, 2, 3, 4, 7):
            assert {(c + config_shift(salt, "partial_sums")) % n for c in range(7)} == set(range(n))
        a, b = (config_shift(salt, k) % 3 for k in ("partial_sums", "reduce_partials"))
        agree += a == b
    assert 5 <= agree <= 25  # independent: about a third of the specs pair them equal, not all


def test_two_kernels_whose_configs_must_agree_fail_with_independent_configs(make_ws, ladder_for):
    """Configs pinned in lockstep (config i for every kernel) paired two split factors equal: passed."""
    ref = R / "row_sum_split.py"
    bad = corr(run(make_ws, ladder_for, "row_sum_split", K / "autotune_lockstep_bad.py", reference=ref, seed=4))
    assert bad.status is Status.FAILED
    ran = re.search(r"config=(?:auto\()?partial_sums:(\d),reduce_partials:(\d)", bad.summary)
    assert ran and ran[1] != ran[2], bad.summary  # the failing case names the configs, and they differ
    twin = good(run(make_ws, ladder_for, "row_sum_split", K / "autotune_lockstep_good.py", reference=ref, seed=4))
    assert "autotune: 3 configs" in twin.rung("compile").summary


def test_a_kernel_right_only_while_configs_are_pinned_fails_on_the_autotuners_own_choice(make_ws, ladder_for):
    """Every checked call pinned its configs, so the autotuner never chose: a kernel that switches to an unmasked
    copy once the autotuner's cache holds a choice passed. Under the interpreter ktui times the configs itself."""
    opts = {"seed": 2, "layouts": False, "distributions": False, "fuzz": False}
    bad = corr(run(make_ws, ladder_for, "vector_add", K / "autotune_tuned_dispatch_bad.py", **opts))
    assert bad.status is Status.FAILED and "unwritten" in bad.summary
    failed = [c for s in bad.figures["specs"] for c in s["failed_cases"]]
    assert failed and all(c.endswith("config=auto") for c in failed), failed  # the tuned calls launched no tuner
    good(run(make_ws, ladder_for, "vector_add", K / "autotune_tuned_dispatch_good.py", **opts))


# -- red team: a wide path past 32,768 columns -----------------------------------------------------------------
def test_fuzzing_reaches_the_benchmark_width_in_every_run():
    from ktui.worker.fuzz import WAVE_ROWS, draw_specs

    p = _problem(R / "softmax_wide_bench.py")
    for seed in range(30):
        drawn = draw_specs(p.module, p.tests, p.benchmarks, seed, "cpu", lambda s: True)
        assert any(s["cols"] > 32_768 for s in drawn), seed  # (the four size classes alone: some runs only)
        small = [s for s in drawn if s["rows"] < WAVE_ROWS]  # but a spec past two waves (where the bounds let one)
        assert len(small) >= len(drawn) - 1 and all(s["cols"] <= 64 for s in drawn if s not in small)
        assert all(s["rows"] * s["cols"] <= 1 << 16 and s["rows"] <= 64 for s in small)  # cheap on the CPU
    sm = _problem(SOFTMAX)
    for seed in range(10):  # the example: its benchmark's 8192 columns, and rows within the CPU's row budget
        drawn = draw_specs(sm.module, sm.tests, sm.benchmarks, seed, "cpu", lambda s: True)
        assert any(s["cols"] >= 8191 for s in drawn)
        assert all(s["rows"] <= 4 * 33 or (s["rows"] >= WAVE_ROWS and s["cols"] <= 64) for s in drawn)


def test_a_wide_path_past_32768_columns_fails_on_the_benchmark_width(make_ws, ladder_for):
    from ktui.worker.fuzz import FUZZ_COUNT, draw_specs

    ref = R / "softmax_wide_bench.py"
    p = _problem(ref)
    classes_only = draw_specs(p.module, p.tests, p.benchmarks, 6, "cpu", lambda s: True, count=FUZZ_COUNT)
    assert all(s["cols"] <= 32_768 for s in classes_only[:FUZZ_COUNT])  # seed 6: only the benchmark draw is wider
    bad = corr(run(make_ws, ladder_for, "softmax_wide", K / "softmax_wide_path_bad.py", reference=ref, seed=6))
    assert bad.status is Status.FAILED and bad.summary.startswith("spec=fuzzed(")
    failing = [s for s in bad.figures["specs"] if not s["ok"]]
    assert failing and all(s["fuzzed"] and s["spec"]["cols"] > 32_768 for s in failing)
    assert "elements outside atol=1e-05 rtol=1e-05 or 8x float32's own error" in bad.summary
    good(run(make_ws, ladder_for, "softmax_wide", K / "softmax_wide_path_good.py", reference=ref, seed=6))


# -- red team: each output by its own dtype ---------------------------------------------------------------------
def test_each_output_is_judged_by_its_own_dtype():
    from ktui.worker.problem import output_dtype, policy_dtype

    bf16 = torch.zeros(4, dtype=torch.bfloat16)
    fp32 = torch.zeros(2, dtype=torch.float32)
    assert policy_dtype(bf16, fp32) == "float32"  # was bfloat16: the lowest precision among inputs and output
    assert policy_dtype(fp32, (fp32, bf16)) == "bfloat16"
    assert policy_dtype(bf16, torch.zeros(2, dtype=torch.int64)) == "int64"
    assert policy_dtype(bf16, ()) == "bfloat16"  # no outputs given (the roofline): the inputs' precision
    # a Python float: float32's rules at least, whatever its neighbours (red team round 24, F5)
    assert output_dtype(fp32, "bfloat16") == "float32" and output_dtype(3.0, "bfloat16") == "float32"


def test_an_fp32_output_from_bf16_inputs_fails_fp32s_rules(make_ws, ladder_for):
    """Row sums rounded to bf16 and stored as fp32 passed bf16's PSNR, cosine and elementwise bounds."""
    ref = R / "row_sum_bf16_fp32.py"
    bad = corr(run(make_ws, ladder_for, "row_sum_fp32", K / "row_sum_fp32_out_bf16_rounded_bad.py", reference=ref))
    assert bad.status is Status.FAILED
    assert "elements outside atol=1e-05 rtol=1e-05" in bad.summary and "reference computed in float32" in bad.summary
    worst = max((s for s in bad.figures["specs"] if not s["ok"]), key=lambda s: s["max_rel_err"])
    assert 1e-3 < worst["max_rel_err"] <= 2.0**-8  # half a bf16 ulp: within bf16's rules, far outside fp32's
    assert worst["tolerance"].startswith("atol=1e-05 rtol=1e-05")
    twin = corr(good(run(make_ws, ladder_for, "row_sum_fp32", K / "row_sum_fp32_out_good.py", reference=ref)))
    judged = [s for s in twin.figures["specs"] if s["tolerance"] is not None]
    assert len(judged) > 10 and all(s["tolerance"].startswith("atol=1e-05") for s in judged)
    # (fuzz's empty draws have no element to judge)
    assert all(0 in s["spec"].values() for s in twin.figures["specs"] if s["tolerance"] is None)


# -- mixed layouts -----------------------------------------------------------------------------------------------
def test_inputs_laid_out_differently_from_each_other_catch_a_kernel_that_shares_one_stride(make_ws, ladder_for):
    """Every single-layout case passes it (both inputs strided alike); ``layout=mixed`` (one input contiguous, the
    other strided, in either order) fails it in every run. The twin that reads each input's own stride passes."""
    for seed in (5, 6):
        res = run(make_ws, ladder_for, "vector_add", K / "mixed_strides_bad.py", seed=seed)
        assert not res.ok
        bad = next(r for r in res.rungs if r.status is Status.FAILED)
        # the run rung when b is read past its storage (the interpreter's bounds check), else correctness
        assert bad.name in ("run", "correctness") and "layout=mixed" in bad.line(), bad.line()
        if bad.name == "correctness":
            failed = [c for s in bad.figures["specs"] for c in s["failed_cases"]]
            assert failed and all("layout=mixed" in c for c in failed), failed
        good(run(make_ws, ladder_for, "vector_add", K / "mixed_strides_good.py", seed=seed))


def test_mixed_alternates_input_by_input_and_needs_two_inputs():
    from ktui.worker.cases import build_input, mixed_layouts

    assert mixed_layouts(4, 2) == ["contiguous", "transposed"] and mixed_layouts(5, 2) == ["transposed", "contiguous"]
    assert mixed_layouts(6, 2) == ["contiguous", "padded"]
    for tensors in (2, 3, 4, 5):  # over mixed_variants consecutive seeds every two inputs differ, each way round
        rows = [mixed_layouts(s, tensors) for s in range(100, 100 + mixed_variants(tensors))]
        for i, j in itertools.combinations(range(tensors), 2):
            assert any(r[i] == "contiguous" != r[j] for r in rows) and any(r[j] == "contiguous" != r[i] for r in rows)
    prob = _problem(ROOT / "references" / "vector_add.py")
    a, b = build_input(prob, {"spec_index": 3, "seed": 3, "layout": "mixed"}, "cpu")
    assert a.stride() == (2,) and b.is_contiguous()  # 1-D: the strided one is the stride-2 view
    a0, b0 = build_input(prob, {"spec_index": 3, "seed": 3}, "cpu")
    assert torch.equal(a, a0) and torch.equal(b, b0)  # the same values
    one = _describe(SOFTMAX, 1)
    assert one["tensor_inputs"] == 1 and "mixed" not in layouts_of(one)
    two = _describe(ROOT / "references" / "vector_add.py", 1)
    assert two["tensor_inputs"] == 2 and "mixed" in layouts_of(two)
    assert not any(c.get("layout") == "mixed" for c in make_cases(one, LadderOptions(), seed=1))


def test_a_third_input_read_with_the_first_ones_stride_fails_on_mixed_layouts(make_ws, ladder_for):
    """Three inputs: every pair of them is laid out differently in some case of every run (the fixed part runs all
    ``mixed_variants`` seeds on the largest specs); the twin that reads each input's own stride passes."""
    ref = CASES / "references" / "fma3.py"
    res = run(make_ws, ladder_for, "fma3", K / "fma3_shared_stride_bad.py", reference=ref, seed=12)
    bad = next(r for r in res.rungs if r.status is Status.FAILED)
    assert bad.name in ("run", "correctness") and "layout=mixed" in bad.line(), bad.line()
    good(run(make_ws, ladder_for, "fma3", K / "fma3_good.py", reference=ref, seed=12))


def test_leading_dims_flattened_into_rows_fail_on_a_head_permuted_input(make_ws, ladder_for):
    """A 3-D softmax that flattens (batch, seq) into rows of stride ``x.stride(-2)`` refuses a non-unit last stride
    and broadcast inputs (unsupported, not failed) and is right on every other layout but ``permuted`` (the first
    two dims stored swapped), which fails it every run; the twin that indexes (b, s) with both strides passes."""
    ref = CASES / "references" / "softmax3d.py"
    res = run(make_ws, ladder_for, "softmax3d", K / "softmax3d_flat_rows_bad.py", reference=ref, seed=4)
    bad = next(r for r in res.rungs if r.status is Status.FAILED)
    # the run rung when rows are read past the storage (the interpreter's bounds check), else correctness
    assert bad.name in ("run", "correctness") and "layout=permuted" in bad.line(), bad.line()
    if bad.name == "correctness":
        failed = [c for s in bad.figures["specs"] for c in s["failed_cases"]]
        assert failed and all("layout=permuted" in c for c in failed), failed
    res = good(run(make_ws, ladder_for, "softmax3d", K / "softmax3d_good.py", reference=ref, seed=4))
    assert not [w for w in res.rung("correctness").warnings if "unsupported" in w]


def test_permuted_applies_only_to_inputs_of_three_dims():
    from ktui.worker.cases import build_input, layout_of

    three = _describe(CASES / "references" / "softmax3d.py", 1)
    assert three["input_ndim"] == 3 and "permuted" in layouts_of(three)
    assert "permuted" not in layouts_of(_describe(SOFTMAX, 1))  # 2-D: transposed is the same
    prob = _problem(CASES / "references" / "softmax3d.py")
    x = build_input(prob, {"spec_index": 4, "seed": 2, "layout": "permuted"}, "cpu")
    assert x.stride(-1) == 1 and x.stride(0) < x.stride(1) and layout_of(x) == "permuted"
    assert torch.equal(x, build_input(prob, {"spec_index": 4, "seed": 2}, "cpu"))
