"""The case plan of one correctness run: which spec runs with which seed, input distribution, memory layout and
output fill, in which order. The cases themselves are built in the workers (``ktui.worker.cases``); here each is a
small JSON dict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ktui.core.ladder.context import LadderOptions
from ktui.protocol import Case, spec_size

if TYPE_CHECKING:
    from ktui.protocol import ProblemInfo

LAYOUTS = ("transposed", "padded", "offset", "expanded")  # the memory layouts tried on the two largest specs


def make_cases(describe: ProblemInfo, options: LadderOptions, seed: int) -> list[Case]:
    """The correctness cases of one run (see ``ktui.worker.cases``), in two phases, each from a freshly imported
    module so that state a kernel keeps between calls (a cached size, grid or output) shows in both directions
    (cases.md stale-cache):

    1. sizes growing: per test spec, ``options.seeds`` seeds of the reference's own inputs, the first one called
       twice on identical inputs (nondeterminism), the second with decoy values instead of the poison in the memory
       the kernel allocates (a kernel that looks for the poison cannot tell it is checked);
    2. sizes shrinking: one case per other input distribution the problem allows, then the transposed, padded,
       offset and expanded layouts on the two largest specs.

    Each case is ``{"spec_index", "seed"}`` (index into ``describe["tests"]``) plus, where they apply, ``repeat``
    (2), ``fill`` ("decoy"), ``dist`` (a distribution name), ``layout`` (one of ``LAYOUTS``) and ``fresh`` (True on
    the first case of phase 2: the module is imported again). Seeds: ``seed + k`` for the k-th seed of phase 1,
    ``seed + 101 + j`` for the j-th distribution, ``seed + 7`` for the layouts.
    """
    tests = describe["tests"]
    up = sorted(range(len(tests)), key=lambda i: spec_size(tests[i]))
    cases: list[Case] = []
    for i in up:
        for k in range(options.seeds):
            c: Case = {"spec_index": i, "seed": seed + k}
            if k == 0 and options.repeat:
                c["repeat"] = 2
            if k == 1:  # memory the kernel allocates holds ordinary-looking values, not the poison: unwatched
                c["fill"] = "decoy"
            cases.append(c)
    phase2: list[Case] = []
    if options.distributions:
        for i in reversed(up):
            for j, dist in enumerate(d for d in describe.get("distributions", ["native"]) if d != "native"):
                phase2.append({"spec_index": i, "seed": seed + 101 + j, "dist": dist})
    if options.layouts and not describe.get("contiguous_only"):
        phase2 += [
            {"spec_index": i, "seed": seed + 7, "layout": lay} for i in list(reversed(up))[:2] for lay in LAYOUTS
        ]
    if phase2:
        phase2[0]["fresh"] = True
    return cases + phase2
