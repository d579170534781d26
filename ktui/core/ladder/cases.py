"""The case plan of one correctness run: which spec runs with which seed, input distribution, memory layout and
output fill, in which order. The cases themselves are built in the workers (``ktui.worker.cases``); here each is a
small JSON dict.

The fixed part (``make_cases``: seeds, repeats, decoys, near-duplicates and fuzzed specs per spec, the distributions
on every spec, the special values and layouts on a few) is completed per run by a covering design
(``covering_cases``, cases.md uncrossed): every pair of values of two of the dimensions layout x distribution x fill
x spec class x spec variant (the dtype) appears in at least one case, so a kernel wrong only for one combination
(flat offsets only on narrow rows, a decoy fill only with shifted values, a bf16 path only when strided) meets it in
every run, while the case count grows by about the number of (layout, distribution) pairs the fixed part leaves out.
A case the kernel refuses (an unsupported layout) checks nothing: the run rung puts contiguous cases in its place
(``refill_refused``) so that every pair the kernel supports is still in a case it ran.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from ktui.core.ladder.context import LadderOptions
from ktui.protocol import COTANGENT_LAYOUTS, Case, mixed_variants, spec_ints, spec_size
from ktui.protocol.distributions import SPECIAL_DISTRIBUTIONS

if TYPE_CHECKING:
    from ktui.protocol import ExecutedCase, ProblemInfo, Spec

# The memory layouts: on the two largest specs, and with every distribution, fill and spec class by the covering design;
# ``mixed`` (inputs laid out differently from each other) only for problems with two input tensors or more,
# ``permuted`` (the leading dims stored swapped) and ``channels_last`` (dim 1 stored innermost: NHWC) only for inputs
# of three dimensions or more
LAYOUTS = ("transposed", "padded", "offset", "expanded", "mixed", "permuted", "channels_last")
# Special-values distributions (``ktui.worker.special``; the judge offers only those its reference is valid on):
# each runs on SPECIAL_SPECS specs, the near-duplicate case on NEAR_DUP_SPECS, to keep a run's case count small.
SPECIAL = SPECIAL_DISTRIBUTIONS
SPECIAL_SPECS = 2
NEAR_DUP_SPECS = 2
# Special distributions that also run on the fuzzed specs (``widest_fuzzed``): the fixed test specs stop short of the
# benchmark's sizes (an int8 GEMM's K = 1024 of 4096), where an accumulator's range runs out (red team round 12 W2:
# an fp32 accumulator of int8 products, exact below 2**24 only, passed intrange at K <= 1024).
FUZZED_SPECIAL = ("intrange",)
FUZZED_SPECIAL_SEED = 801  # the n-th such case gets seed + 801 + n
# The burst case: one call per fresh input this many times in a row (drawn per run), past any fixed window of calls a
# kernel could count (issue 9.4: a ring of 16 output buffers, a tuner that switches after 16 calls).
BURST_CALLS = (17, 48)
# the autograd modes real use calls in (``ktui.worker.grad_modes``; red team round 25, #4 and #5): one case each on
# a fixed spec of the cheaper half drawn per run from ``random.Random(seed + GRAD_SEED)``, seed + GRAD_SEED + j
GRAD_MODES: tuple[Literal["no_grad", "inference", "requires_grad"], ...] = ("no_grad", "inference", "requires_grad")
GRAD_SEED = 601
FROZEN_RESIDUES = (1, 2)  # the frozen-input cases' seeds mod 6: expanded and transposed cotangents (see make_cases)
FILLS = ("poison", "decoy")  # what the memory the kernel allocates holds: the NaN poison or decoy values
ALIGN = 16  # spec class: the innermost integer field a multiple of 16 (whole vectors and blocks) or ragged
CANDIDATES = 12  # covering design: candidate cases weighed per added case (AETG, Cohen et al. 1997)
DIST_SEED_STRIDE = 1000  # distribution cases: seed + 1000 (r + 1) + base + j on the spec of rank r by size


def make_cases(describe: ProblemInfo, options: LadderOptions, seed: int) -> list[Case]:
    """The correctness cases of one run (see ``ktui.worker.cases``), in two phases, each from a freshly imported
    module so that state a kernel keeps between calls (a cached size, grid or output) shows in both directions
    (cases.md stale-cache):

    1. sizes growing, twice: first every test spec once with the first seed of the reference's own inputs, called
       twice on identical inputs (nondeterminism), and on ``NEAR_DUP_SPECS`` specs (the largest and one drawn per
       run) the same inputs again right after it, a few interior elements swapped (``near_dup``: a memo keyed on a
       few elements replays a wrong answer); these cases carry ``first`` (True): the first verdict is theirs
       (issue 11: "wrong" or "probably right" after one sweep). Then per spec the other ``options.seeds - 1``
       seeds, the second with decoy values instead of the poison in the memory the kernel allocates (a kernel that
       looks for the poison cannot tell it is checked), and each fuzzed spec (``describe["fuzzed"]``, drawn by the
       judge around the tests) once, with the reference's own inputs; then the burst case: the smallest fixed spec
       called ``calls`` times in a row (``BURST_CALLS``, drawn per run);
    2. sizes shrinking: one case per other ordinary input distribution the problem allows on every test spec, each
       special-values distribution (``SPECIAL``) on ``SPECIAL_SPECS`` specs (the largest and one drawn per run),
       those of ``FUZZED_SPECIAL`` (``intrange``) also on the fuzzed specs of ``widest_fuzzed`` (seeds
       ``seed + FUZZED_SPECIAL_SEED + n``),
       the transposed, padded, offset and expanded layouts on the two largest test specs, one case per autograd
       mode real use calls in (``GRAD_MODES``: ``grad``, on a fixed spec drawn per run from the cheaper half and on the
       largest fixed spec), then the covering design
       (``covering_cases``), larger specs first.

    Each case is ``{"spec_index", "seed"}`` (index into ``describe["tests"]``) plus, where they apply, ``first``
    (True: the leading cases, ``first_sweep``), ``repeat`` (2), ``fill`` ("decoy"), ``grad`` (a mode of
    ``GRAD_MODES``), ``dist`` (a distribution
    name), ``layout`` (one of ``LAYOUTS``), ``spec`` (a fuzzed spec itself), ``near_dup`` (True), ``calls`` (the
    burst) and ``fresh`` (True on the first case of phase 2: the module is imported again). Seeds: ``seed + k``
    for the k-th seed of phase 1 (fuzzed specs and near-duplicates take ``seed``), ``seed + 301`` for the burst,
    ``seed + 1000 (r + 1) + 101 + j`` for the j-th distribution on the spec of rank ``r`` by size (``+ 151 + j``
    for the special ones: every spec its own seed), ``seed + 7`` for the layouts, ``seed + 401 + n`` for the n-th
    case of the covering design. What is drawn per run comes from
    ``random.Random(seed)``: ``--seed`` replays it.
    """
    tests = describe["tests"]
    fuzzed = set(describe.get("fuzzed", []))
    rng = random.Random(seed)
    up = sorted(range(len(tests)), key=lambda i: spec_size(tests[i]))
    fixed = [i for i in up if i not in fuzzed]
    rank = {i: r for r, i in enumerate(fixed)}
    near = _largest_and_one(fixed, rng, NEAR_DUP_SPECS) if options.near_duplicates else set()
    cases: list[Case] = []
    for i in fixed:  # the first verdict's sweep: every test spec once, native inputs, the first seed
        c: Case = {"spec_index": i, "seed": seed, "first": True}
        if options.repeat:
            c["repeat"] = 2
        cases.append(c)
        if i in near:
            cases.append({"spec_index": i, "seed": seed, "near_dup": True, "first": True})
    for i in up:
        if i in fuzzed:
            cases.append({"spec_index": i, "seed": seed, "spec": dict(tests[i])})
            continue
        for k in range(1, options.seeds):
            c = {"spec_index": i, "seed": seed + k}
            if k == 1:  # memory the kernel allocates holds ordinary-looking values, not the poison: unwatched
                c["fill"] = "decoy"
            cases.append(c)
    phase2: list[Case] = []
    if options.distributions:
        dists = [d for d in describe.get("distributions", ["native"]) if d != "native"]
        plain = [d for d in dists if d not in SPECIAL]
        for i in reversed(fixed):
            for j, dist in enumerate(plain):
                phase2.append(
                    {"spec_index": i, "seed": seed + DIST_SEED_STRIDE * (rank[i] + 1) + 101 + j, "dist": dist}
                )
        for j, dist in enumerate(d for d in dists if d in SPECIAL):
            for i in sorted(_largest_and_one(fixed, rng, SPECIAL_SPECS), key=lambda i: -spec_size(tests[i])):
                phase2.append(
                    {"spec_index": i, "seed": seed + DIST_SEED_STRIDE * (rank[i] + 1) + 151 + j, "dist": dist}
                )
        n = 0
        for dist in (d for d in dists if d in FUZZED_SPECIAL):
            for i in widest_fuzzed(tests, fuzzed):
                phase2.append(
                    {"spec_index": i, "seed": seed + FUZZED_SPECIAL_SEED + n, "dist": dist, "spec": dict(tests[i])}
                )
                n += 1
    if options.layouts and not describe.get("contiguous_only"):
        phase2 += [
            {"spec_index": i, "seed": seed + 7 + j, "layout": lay}
            for i in list(reversed(fixed))[:2]
            for lay in layouts_of(describe)
            for j in range(mixed_variants(describe.get("tensor_inputs", 2)) if lay == "mixed" else 1)
        ]
    if fixed:
        cases.append({"spec_index": fixed[0], "seed": seed + 301, "calls": rng.randint(*BURST_CALLS)})
        drawn = random.Random(seed + GRAD_SEED)  # (its own stream: the other draws of a seed stay as they were)
        # among the cheaper half of the fixed specs: a mode's path is the kernel's whatever the size, and the CPU
        # interpreter's seconds go by the size
        cheap = sorted(fixed, key=lambda i: spec_cost(tests[i]))[: max(1, (len(fixed) + 1) // 2)]
        grad_spec = drawn.choice(cheap)
        phase2 += [
            {"spec_index": grad_spec, "seed": seed + GRAD_SEED + j, "grad": mode} for j, mode in enumerate(GRAD_MODES)
        ]
        # five more requires_grad cases, their seeds the five other residues mod 6 than the mode case's: the
        # cotangents' six layouts (contiguous, expanded, transposed, padded, per_row, per_column:
        # ``worker.grad_modes.cotangent``; red team round 31, #4; round 32b, #6; round 33, #3)
        roomy = max(cheap, key=lambda i: spec_size(tests[i]))  # (the largest of them: a 1-element output's is plain)
        layouts = len(COTANGENT_LAYOUTS)
        moded = (seed + GRAD_SEED + GRAD_MODES.index("requires_grad")) % layouts
        more = seed + GRAD_SEED + 20
        phase2 += [
            {"spec_index": roomy, "seed": more + (r - more) % layouts, "grad": "requires_grad"}
            for r in range(layouts)
            if r != moded
        ]
        # and two with one of the inputs that require grad frozen (the first, then the second, in sorted order), as a
        # training step with a frozen parameter calls the kernel: a backward branching on ``ctx.needs_input_grad``
        # (red team round 32, #4: its frozen-weight path read the gradient flat). Their seeds give the cotangents
        # the expanded and the transposed layouts (residues 1 and 2 mod 6, ``grad_modes.COTANGENT_LAYOUTS``), where a
        # path that reads its gradient as contiguous goes wrong; the worker ignores ``frozen`` where fewer than two
        # inputs require grad
        base = seed + GRAD_SEED + 10
        phase2 += [
            {"spec_index": roomy, "seed": base + (r - base) % layouts, "grad": "requires_grad", "frozen": j}
            for j, r in enumerate(FROZEN_RESIDUES)
        ]
        # and each mode on the largest fixed spec: a mode's own path may have its own size slip (red team round 27,
        # #5: a training path's floor grid dropped the tail past 1,024 elements; the cheap half held at most 127)
        largest = max(fixed, key=lambda i: (spec_cost(tests[i]), spec_size(tests[i])))
        if largest not in cheap:
            phase2 += [
                {"spec_index": largest, "seed": seed + GRAD_SEED + len(GRAD_MODES) + j, "grad": mode}
                for j, mode in enumerate(GRAD_MODES)
            ]
    phase2 += covering_cases(describe, options, seed, cases + phase2)
    if phase2:
        phase2[0]["fresh"] = True
    return restrict_inputs(describe, vary_arguments(describe, cases + phase2))


def restrict_inputs(describe: ProblemInfo, cases: list[Case]) -> list[Case]:
    """``cases`` with each case of a special distribution the reference is valid on in some inputs only
    (``describe["distribution_inputs"]``: an additive mask's -inf) given those inputs (``Case.inputs``)."""
    only = describe.get("distribution_inputs") or {}
    for c in cases:
        if c.get("dist") in only:
            c["inputs"] = list(only[c["dist"]])
    return cases


def widest_fuzzed(tests: list[Spec], fuzzed: set[int]) -> list[int]:
    """Per integer field of the fuzzed specs (indices ``fuzzed`` into ``tests``), the fuzzed spec that holds its
    largest value (ties: the cheaper by ``spec_cost``), each once, larger specs first: a reduction's K, a row's
    length, a batch, each at the largest the run drew (the fuzzer draws up to the benchmark's values within the
    CPU budget, ``ktui.worker.fuzz``)."""
    fields = sorted({k for i in fuzzed for k, v in tests[i].items() if isinstance(v, int) and not isinstance(v, bool)})
    picks: set[int] = set()
    for f in fields:
        have = [i for i in fuzzed if isinstance(tests[i].get(f), int) and not isinstance(tests[i].get(f), bool)]
        if have:
            picks.add(max(have, key=lambda i: (tests[i][f], -spec_cost(tests[i]), -i)))
    return sorted(picks, key=lambda i: -spec_size(tests[i]))


def vary_arguments(describe: ProblemInfo, cases: list[Case]) -> list[Case]:
    """``cases`` with each ``scalars`` case given the next of the judge's combinations of int, bool and float argument
    moves (``describe["scalar_moves"]``, cycling; ``ktui.worker.arguments``) as its ``vary``."""
    moves = describe.get("scalar_moves") or []
    k = 0
    for c in cases:
        if moves and c.get("dist") == "scalars":
            c["vary"] = dict(moves[k % len(moves)])
            k += 1
    return cases


def first_sweep(cases: list[Case]) -> int:
    """How many leading cases of ``cases`` carry ``first`` (``make_cases``): those the first verdict judges; 0 when
    the plan has none (an older plan, or no fixed spec).

    Raises:
        ValueError: a case with ``first`` after one without (they must lead).
    """
    n = 0
    while n < len(cases) and cases[n].get("first"):
        n += 1
    if any(c.get("first") for c in cases[n:]):
        raise ValueError("the first verdict's cases must lead the plan")
    return n


def layouts_of(describe: ProblemInfo) -> list[str]:
    """The layouts of ``LAYOUTS`` that apply to a problem: ``mixed`` only where the inputs have two tensors or more
    (``tensor_inputs``, counted by the judge; taken as two when a judge does not say), ``permuted`` only where one
    has three dimensions or more (``input_ndim``; taken as fewer when not said), and ``channels_last`` too."""
    ndim = describe.get("input_ndim", 2)
    applies = {"mixed": describe.get("tensor_inputs", 2) >= 2, "permuted": ndim >= 3, "channels_last": ndim >= 3}
    return [lay for lay in LAYOUTS if applies.get(lay, True)]


def autotune_cases(describe: ProblemInfo, configs: int, seed: int) -> list[Case]:
    """The cases an autotuned version adds once the compile rung has counted its configs (``configs``: the most of
    any of its autotuned kernels; none for fewer than two), on every fixed test spec:

    - ``config`` c for c = 1 .. configs - 1 with the spec's first seed (``seed``): in a checked call each autotuned
      kernel launches its own config, ``(c + shift) % n`` of the n configs its pruning keeps, the shift drawn per
      kernel from the case's seed and spec (``ktui.worker.capture.pinned_config``), so kernels do not move in
      lockstep and, with the spec's first case (c = 0, the same seed and shift), every config of every kernel runs
      alone on each spec (cases.md autotune-mutation, uncrossed);
    - ``config`` "auto" with seed ``seed + 501 + r`` (r: the spec's rank by size): nothing pinned, the autotuner
      benchmarks its configs and launches its own choice (on the CPU it times them in the interpreter), so a kernel
      right only while ktui pins its configs fails.
    """
    if configs <= 1:
        return []
    tests = describe["tests"]
    fuzzed = set(describe.get("fuzzed", []))
    fixed = sorted((i for i in range(len(tests)) if i not in fuzzed), key=lambda i: spec_size(tests[i]))
    pinned: list[Case] = [
        {"spec_index": i, "seed": seed, "config": c}
        for c in range(1, configs)
        for i in range(len(tests))
        if i not in fuzzed
    ]
    auto: list[Case] = [{"spec_index": i, "seed": seed + 501 + r, "config": "auto"} for r, i in enumerate(fixed)]
    return pinned + auto


def spec_classes(tests: list[Spec]) -> list[str]:
    """Per spec its class for the covering design: ``small`` (size at most the median of ``tests``, by
    ``protocol.spec_size``) or ``large``; ``aligned`` (its last integer, ``protocol.spec_ints``: the innermost
    dimension, a multiple of ``ALIGN``) or ``ragged``; and ``-unit`` when it has leading fields and they are all 1
    (one row: a row stride, a transposition or a broadcast row changes nothing there, so the other classes must
    meet the layouts too): ``small-ragged-unit``."""
    sizes = sorted(spec_size(s) for s in tests)
    median = sizes[(len(sizes) - 1) // 2] if sizes else 0
    out = []
    for s in tests:
        ints = spec_ints(s)
        size = "small" if spec_size(s) <= median else "large"
        align = "aligned" if ints and ints[-1] % ALIGN == 0 else "ragged"
        unit = "-unit" if len(ints) > 1 and lead_size(s) == 1 else ""
        out.append(f"{size}-{align}{unit}")
    return out


def lead_size(spec: Spec) -> int:
    """The product of a spec's integer fields but the last (the innermost dimension; ``protocol.spec_ints``: a
    ``shape`` tuple's too): its rows, or its tiles' count up to a block size; 1 for a spec of one integer."""
    ints = [max(v, 1) for v in spec_ints(spec)]
    return math.prod(ints[:-1])


COST_BLOCK = 4096  # spec_cost: elements one program of a typical kernel covers (a block, a row chunk)


def spec_cost(spec: Spec) -> int:
    """A proxy for what a call of ``spec`` costs the CPU interpreter, which runs one Python-level program per row,
    tile or block: its rows (``lead_size``) or its size over ``COST_BLOCK``, whichever is larger (at least 1).
    Measured on softmax: 8192 x 8 takes 35 to 64 s, 2 x 8192 0.01 to 0.1 s."""
    return max(lead_size(spec), spec_size(spec) // COST_BLOCK, 1)


Pair = tuple[tuple[int, str], tuple[int, str]]  # ((dimension, value), (later dimension, value))


def _pair(d: int, v: str, e: int, w: str) -> Pair:
    return ((d, v), (e, w)) if d < e else ((e, w), (d, v))


def _pairs(row: tuple[str, ...]) -> set[Pair]:
    return {((a, row[a]), (b, row[b])) for a in range(len(row)) for b in range(a + 1, len(row))}


def spec_variants(tests: list[Spec]) -> list[str]:
    """Per spec its variant for the covering design: the values of its fields that are not integers nor tuples or
    lists of them (sizes: ``protocol.spec_ints``), joined (the dtype, a flag, a mode): ``bf16``, ``fp32,causal``;
    ``-`` for a spec of sizes only."""
    return [",".join(str(v) for v in s.values() if not _size_field(v)) or "-" for s in tests]


def _size_field(v: object) -> bool:
    """An integer (not a bool), or a tuple or list of them: a size, not a variant."""
    items = v if isinstance(v, (tuple, list)) else (v,)
    return bool(items) and all(isinstance(x, int) and not isinstance(x, bool) for x in items)


def covering_cases(describe: ProblemInfo, options: LadderOptions, seed: int, planned: list[Case]) -> list[Case]:
    """The cases that complete ``planned`` to a strength-2 covering design (cases.md uncrossed): every pair of values
    of two dimensions among layout (contiguous and ``layouts_of`` the problem, unless ``options.layouts`` is off or
    the problem is ``contiguous_only``), distribution (native and those ``describe`` offers, unless
    ``options.distributions`` is off), fill (``FILLS``), spec class (``spec_classes`` of every spec, fuzzed ones
    included) and spec variant (``spec_variants``: the dtype...) is in a planned case or in one of these. Class and
    variant are one spec's: only the pairs of them some spec has are covered, and every case's pair is one of them.

    Greedy (AETG: each added case is the best of ``CANDIDATES``, each started from an uncovered pair and completed
    value by value to cover the most pairs still uncovered; on ties the class whose specs cost least,
    ``spec_cost``), drawn from ``random.Random(seed + 401)``: the values tied, the spec within the class and variant
    (weighted by 1 / ``spec_cost``). Case n gets seed ``seed + 401 + n``; larger specs first.
    """
    if not describe["tests"]:
        return []
    design = _Design(describe, options)
    rng = random.Random(seed + 401)
    rows = design.cover(design.uncovered(planned), rng)
    return design.cases(rows, seed + 401, rng)


REFILL_SEED = 701  # ``refill_refused``: the n-th case put in place of refused ones gets seed + 701 + n


def _empty(spec: Spec) -> bool:
    """A spec with a size at 0 (``protocol.spec_ints``, a tuple field's too): fuzz's empty draws."""
    return 0 in spec_ints(spec)


def refused_values(executed: Sequence[ExecutedCase]) -> dict[int, set[str]]:
    """What the kernel refused (``ExecutedCase.unsupported``), as values of the covering design's dimensions
    (0: layout, 1: distribution): the distribution of a refused contiguous case (``scalars``: another value of a
    float argument; a contiguous case is refused for nothing else), and the layout of a refused strided case unless
    its distribution is one of those (a kernel refuses a layout, not the values laid out in it)."""
    # (a case with a size at 0, fuzz's empty draw, is refused for its size: no value of a dimension of the design)
    refused = [c for c in executed if c.get("unsupported") and not _empty(c.get("spec") or {})]
    dists = {c.get("dist", "native") for c in refused if c.get("layout", "contiguous") == "contiguous"}
    layouts = {
        c["layout"]
        for c in refused
        if c.get("layout", "contiguous") != "contiguous" and c.get("dist", "native") not in dists
    }
    return {0: layouts, 1: dists}


def refill_refused(
    describe: ProblemInfo,
    options: LadderOptions,
    seed: int,
    planned: Sequence[Case],
    executed: Sequence[ExecutedCase],
    start: int = 0,
) -> list[Case]:
    """The cases to run in place of those the kernel refused (cases.md uncovered, refused): a refused case checked
    nothing, so the pairs of the covering design (``covering_cases``) that only it held are uncovered again, and a
    kernel that refuses strided layouts would otherwise also escape every distribution x fill x spec class pair
    its strided cases carried (a softmax wrong on its cols % 4 == 0 path with shifted rows passed 3 runs of 4).

    ``planned``: every case of the run so far (``executed`` is their reply, in order, with ``unsupported`` on those
    refused). The pairs to cover again are those of the design that no case the kernel ran holds, less those with a
    value it refused (``refused_values``: the layout of a refused layout case, else its distribution), which cannot
    be covered; the new cases are contiguous, with no refused distribution, chosen as ``covering_cases`` chooses
    (seeds ``seed + REFILL_SEED + start + n``, drawn from ``random.Random(seed + REFILL_SEED + start)``), so that
    with them every pair the kernel supports is in a case it ran. A contiguous case is refused only for a
    distribution (``scalars``): refilling after such a round excludes it too, so two rounds at most refuse anything.
    Empty when nothing was refused, or every pair is still covered.
    """
    refused = refused_values(executed)
    if not describe["tests"] or not (refused[0] or refused[1]):
        return []
    design = _Design(describe, options)
    ran = [c for c, e in zip(planned, executed, strict=True) if not e.get("unsupported")]
    todo = {pair for pair in design.uncovered(ran) if not any(value in refused.get(dim, set()) for dim, value in pair)}
    if not todo:
        return []
    design.domains[0] = ["contiguous"]
    design.domains[1] = [d for d in design.domains[1] if d not in refused[1]]
    rng = random.Random(seed + REFILL_SEED + start)
    rows = design.cover(todo, rng)
    return restrict_inputs(describe, vary_arguments(describe, design.cases(rows, seed + REFILL_SEED + start, rng)))


class _Design:
    """The dimensions of one problem's covering design (``covering_cases``): ``domains`` (layout, distribution,
    fill, spec class, spec variant), each spec's class and variant, the specs of each (class, variant) and the cost
    of each class (the median ``spec_cost`` of its specs)."""

    def __init__(self, describe: ProblemInfo, options: LadderOptions):
        tests = self.tests = describe["tests"]
        self.fuzzed = set(describe.get("fuzzed", []))
        layouts = ["contiguous"]
        if options.layouts and not describe.get("contiguous_only"):
            layouts += layouts_of(describe)
        dists = ["native"]
        if options.distributions:
            dists += [d for d in describe.get("distributions", ["native"]) if d != "native"]
        self.classes = spec_classes(tests)
        self.variants = spec_variants(tests)
        # a spec with a size at 0 (fuzz's empty draws) runs once, in phase 1: no layout or distribution changes an
        # empty input, and its class would be one no other spec shares
        design = [i for i, t in enumerate(tests) if not _empty(t)]
        self.members: dict[tuple[str, str], list[int]] = {}
        for i in design:
            self.members.setdefault((self.classes[i], self.variants[i]), []).append(i)
        self.domains = [
            layouts,
            dists,
            list(FILLS),
            sorted({self.classes[i] for i in design}),
            sorted({self.variants[i] for i in design}),
        ]
        # On ties the cheaper class, and within a class the cheaper spec (``spec_cost``): the pairs are covered all
        # the same, and the CPU interpreter's time goes by the programs a call runs.
        by_class: dict[str, list[int]] = {}
        for i in design:
            by_class.setdefault(self.classes[i], []).append(i)
        self.cost = {cls: sorted(spec_cost(tests[i]) for i in ms)[len(ms) // 2] for cls, ms in by_class.items()}

    def row(self, case: Case) -> tuple[str, ...]:
        """A case's value in each dimension."""
        i = case["spec_index"]
        return (
            case.get("layout", "contiguous"),
            case.get("dist", "native"),
            case.get("fill", "poison"),
            self.classes[i],
            self.variants[i],
        )

    def uncovered(self, cases: Sequence[Case]) -> set[Pair]:
        """The pairs of the design that none of ``cases`` holds (a class and a variant only as some spec has them)."""
        domains = self.domains
        todo = {
            ((a, va), (b, vb))
            for a in range(len(domains))
            for b in range(a + 1, len(domains))
            for va in domains[a]
            for vb in domains[b]
            if (a, b) != (3, 4) or (va, vb) in self.members  # a class and a variant no spec has: nothing to cover
        }
        for case in cases:
            todo -= _pairs(self.row(case))
        return todo

    def cover(self, uncovered: set[Pair], rng: random.Random) -> list[tuple[str, ...]]:
        """Rows (one value per dimension) that together hold every pair of ``uncovered``, greedily (AETG)."""
        uncovered = set(uncovered)
        rows: list[tuple[str, ...]] = []
        while uncovered:
            todo = sorted(uncovered)
            drawn = [
                _complete(rng.choice(todo), self.domains, uncovered, self.cost, set(self.members), rng)
                for _ in range(CANDIDATES)
            ]
            best = max(drawn, key=lambda r: (len(_pairs(r) & uncovered), -self.cost[r[3]]))  # the first of the best
            rows.append(best)
            uncovered -= _pairs(best)
        return rows

    def cases(self, rows: list[tuple[str, ...]], seed: int, rng: random.Random) -> list[Case]:
        """A case per row, its spec drawn within the row's class and variant (weighted by 1 / ``spec_cost``), case n
        with seed ``seed + n``; larger specs first."""
        tests = self.tests
        out: list[Case] = []
        for n, (layout, dist, fill, cls, var) in enumerate(rows):
            ms = self.members[(cls, var)]
            i = rng.choices(ms, weights=[1 / spec_cost(tests[j]) for j in ms])[0]
            c: Case = {"spec_index": i, "seed": seed + n}
            if i in self.fuzzed:
                c["spec"] = dict(tests[i])
            if dist != "native":
                c["dist"] = dist
            if layout != "contiguous":
                c["layout"] = layout
            if fill == "decoy":
                c["fill"] = "decoy"
            out.append(c)
        return sorted(out, key=lambda c: -spec_size(tests[c["spec_index"]]))


def _complete(
    start: Pair,
    domains: list[list[str]],
    uncovered: set[Pair],
    cost: dict[str, int],
    feasible: set[tuple[str, str]],
    rng: random.Random,
) -> tuple[str, ...]:
    """A candidate case from the uncovered pair ``start``: the other dimensions, in a drawn order, each take the value
    that covers the most uncovered pairs with those set so far (ties: the cheaper class, then a draw); the class
    (dimension 3) and the variant (4) only as a pair in ``feasible``."""
    row = dict(start)
    rest = [d for d in range(len(domains)) if d not in row]
    rng.shuffle(rest)
    for d in rest:
        values = domains[d]
        if d == 3 and 4 in row:
            values = [v for v in values if (v, row[4]) in feasible]
        elif d == 4 and 3 in row:
            values = [v for v in values if (row[3], v) in feasible]
        scored = [
            (sum(_pair(d, v, e, w) in uncovered for e, w in row.items()), -cost[v] if d == 3 else 0, rng.random(), v)
            for v in values
        ]
        row[d] = max(scored)[3]
    return tuple(row[d] for d in range(len(domains)))


def _largest_and_one(fixed: list[int], rng: random.Random, n: int) -> set[int]:
    """The largest of ``fixed`` (sorted by size) and ``n - 1`` others drawn by ``rng``."""
    if not fixed:
        return set()
    rest = fixed[:-1]
    return {fixed[-1], *rng.sample(rest, min(n - 1, len(rest)))}
