"""The case plan of one correctness run: which spec runs with which seed, input distribution, memory layout and
output fill, in which order. The cases themselves are built in the workers (``ktui.worker.cases``); here each is a
small JSON dict.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ktui.core.ladder.context import LadderOptions
from ktui.protocol import Case, spec_size

if TYPE_CHECKING:
    from ktui.protocol import ProblemInfo

LAYOUTS = ("transposed", "padded", "offset", "expanded")  # the memory layouts tried on the two largest specs
# Special-values distributions (``ktui.worker.special``; the judge offers only those its reference is valid on):
# each runs on SPECIAL_SPECS specs, the near-duplicate case on NEAR_DUP_SPECS, to keep a run's case count small.
SPECIAL = ("zeros", "masked", "large", "extreme", "nonfinite", "intrange")
SPECIAL_SPECS = 2
NEAR_DUP_SPECS = 2


def make_cases(describe: ProblemInfo, options: LadderOptions, seed: int) -> list[Case]:
    """The correctness cases of one run (see ``ktui.worker.cases``), in two phases, each from a freshly imported
    module so that state a kernel keeps between calls (a cached size, grid or output) shows in both directions
    (cases.md stale-cache):

    1. sizes growing: per test spec, ``options.seeds`` seeds of the reference's own inputs, the first one called
       twice on identical inputs (nondeterminism), the second with decoy values instead of the poison in the memory
       the kernel allocates (a kernel that looks for the poison cannot tell it is checked); on ``NEAR_DUP_SPECS``
       specs (the largest and one drawn per run) the first seed's inputs again right after it, a few interior
       elements swapped (``near_dup``: a memo keyed on a few elements replays a wrong answer); each fuzzed spec
       (``describe["fuzzed"]``, drawn by the judge around the tests) once, with the reference's own inputs;
    2. sizes shrinking: one case per other ordinary input distribution the problem allows on every test spec, each
       special-values distribution (``SPECIAL``) on ``SPECIAL_SPECS`` specs (the largest and one drawn per run),
       then the transposed, padded, offset and expanded layouts on the two largest test specs.

    Each case is ``{"spec_index", "seed"}`` (index into ``describe["tests"]``) plus, where they apply, ``repeat``
    (2), ``fill`` ("decoy"), ``dist`` (a distribution name), ``layout`` (one of ``LAYOUTS``), ``spec`` (a fuzzed
    spec itself), ``near_dup`` (True) and ``fresh`` (True on the first case of phase 2: the module is imported
    again). Seeds: ``seed + k`` for the k-th seed of phase 1 (fuzzed specs and near-duplicates take ``seed``),
    ``seed + 101 + j`` for the j-th distribution, ``seed + 7`` for the layouts. The specs drawn per run come from
    ``random.Random(seed)``: ``--seed`` replays them.
    """
    tests = describe["tests"]
    fuzzed = set(describe.get("fuzzed", []))
    rng = random.Random(seed)
    up = sorted(range(len(tests)), key=lambda i: spec_size(tests[i]))
    fixed = [i for i in up if i not in fuzzed]
    near = _largest_and_one(fixed, rng, NEAR_DUP_SPECS) if options.near_duplicates else set()
    cases: list[Case] = []
    for i in up:
        if i in fuzzed:
            cases.append({"spec_index": i, "seed": seed, "spec": dict(tests[i])})
            continue
        for k in range(options.seeds):
            c: Case = {"spec_index": i, "seed": seed + k}
            if k == 0 and options.repeat:
                c["repeat"] = 2
            if k == 1:  # memory the kernel allocates holds ordinary-looking values, not the poison: unwatched
                c["fill"] = "decoy"
            cases.append(c)
            if k == 0 and i in near:
                cases.append({"spec_index": i, "seed": seed, "near_dup": True})
    phase2: list[Case] = []
    if options.distributions:
        dists = [d for d in describe.get("distributions", ["native"]) if d != "native"]
        plain = [d for d in dists if d not in SPECIAL]
        for i in reversed(fixed):
            for j, dist in enumerate(plain):
                phase2.append({"spec_index": i, "seed": seed + 101 + j, "dist": dist})
        for j, dist in enumerate(d for d in dists if d in SPECIAL):
            for i in sorted(_largest_and_one(fixed, rng, SPECIAL_SPECS), key=lambda i: -spec_size(tests[i])):
                phase2.append({"spec_index": i, "seed": seed + 151 + j, "dist": dist})
    if options.layouts and not describe.get("contiguous_only"):
        phase2 += [
            {"spec_index": i, "seed": seed + 7, "layout": lay} for i in list(reversed(fixed))[:2] for lay in LAYOUTS
        ]
    if phase2:
        phase2[0]["fresh"] = True
    return cases + phase2


def _largest_and_one(fixed: list[int], rng: random.Random, n: int) -> set[int]:
    """The largest of ``fixed`` (sorted by size) and ``n - 1`` others drawn by ``rng``."""
    if not fixed:
        return set()
    rest = fixed[:-1]
    return {fixed[-1], *rng.sample(rest, min(n - 1, len(rest)))}
