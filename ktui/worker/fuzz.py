"""Shape fuzzing: a few specs drawn per run around and beyond the reference's own (cases.md shape-class).

The reference's ``tests`` are the fixed part of every run; ``draw_specs(problem, seed, device)`` adds ``FUZZ_COUNT``
specs made from them by changing integer fields, one size class per draw (the classes in a shuffled order, so
every run has one of each):

- ``pow2``: a multiple of 2, 4, 8, 16, 64 or 128 (log-uniform target, rounded to the multiple);
- ``odd``: an odd neighbour of a power of two (2**j +- 1) or the next prime above a log-uniform target;
- ``threshold``: a block or chunk threshold (256 .. 2**24, preferring those above every size the tests use) plus
  -1, 0, +1, +3, half of it plus one, or itself plus one;
- ``unit``: one field set to 1 and another drawn as ``threshold`` (``pow2`` for a spec of one integer field);

then two per integer field aligned to powers of two (``aligned``): one with that field a multiple of
``ALIGN`` = 4096 (or of the largest power of two its range allows), the other fields of a test spec halved until the
spec fits the budget. A fast path for sizes that are a multiple of the block (``EVEN = n % BLOCK == 0``: no masks)
runs only there, and the ``pow2`` class reaches a multiple of 1024 by chance only (multiples of at most 128; red
team round 11, W5: a slip in such a path passed 7 runs of 10); a multiple of 4096 is one of every block size up to
4096, in every run; the other an odd multiple of 256, 512, 1024 or 2048 (in turn by the seed: ``ODD_BLOCKS``; on
the CPU for the innermost field only, the leading ones being held within ``lead_budget``), a multiple of that block
and of no larger power of two (red team round 13, W1: a path for sizes a multiple of 1024 but
not of 4096, as a dispatch on ``n % 4096`` then ``n % 1024`` makes, passed every run);

and then one more per integer field that a benchmark spec makes larger than every test (``bench``): that field at
the benchmark's value (or its neighbour: -1, +1, +3), the other fields of a test spec halved until the spec fits the
budget (a dimension at benchmark scale, the others small: cheap on the CPU; the innermost field on the CPU in a spec
of up to ``CPU_INNER_BENCH`` = 2**20 elements, from the test spec with the most rows, within the lead budget). So
every run reaches the benchmark's size along the innermost dimension (on a GPU along each, up to ``GPU_BUDGET``),
and a path that a kernel takes only past some width between the tests and the benchmark (a separate kernel for rows
past 32,768 columns) is checked in every run, not in the runs whose draws happen there.

and, on the CPU, one spec past two waves of a grid capped at the SM count the stand-in answers (``waves``,
``_draw_waves``: 265 rows and more, 169 tiles of 128 x 128, or two waves of a grid-stride loop of 4 programs per SM
over blocks of 1024), beyond the budgets below, which keep every other CPU spec within one wave: a persistent
kernel's loop runs more than once in every run (red team round 16, M1-M3: a wave count rounded down, an accumulator
not reset between tiles and a grid-stride step of one block passed every run).

A field's range is ``1 .. max(its benchmark value, 4x its largest test value)``, and the spec's size (the product of
its integer fields, ``protocol.spec_size``) at most ``budget(problem, device)``: other fields are halved until it
fits; on the CPU the leading fields (all but the innermost) also multiply to at most ``lead_budget`` (the
interpreter's cost goes by rows and tiles: the benchmark's scale along them is reached on a GPU only). Draws are
reproducible from ``seed`` (the run's first correctness seed, so ``--seed N`` replays them).

A reference bounds or opts out: ``fuzz = False`` (no fuzzed specs), ``fuzz = {"n": (1, 1 << 20)}`` (only the listed
fields, within inclusive bounds), ``valid_spec(spec) -> bool`` (drawn specs it rejects are redrawn). A draw whose
``generate_input`` or native ``ref_kernel`` raises is redrawn too (ops constrain sizes: matching k, powers of two).

The integers inside a tuple or list field are fields too (red team round 10: a ``"shape": (n,)`` reference got no
fuzzed spec at all): ``{"shape": (3, 129)}`` is drawn as the fields ``shape[-2]`` and ``shape[-1]`` (counted from
the end: the innermost dimension is ``shape[-1]`` whatever the rank) and handed to ``generate_input`` as a tuple
again (``flat_spec``, ``nested_spec``); a ``fuzz`` bound on ``"shape"`` bounds each of its integers, one on
``"shape[-1]"`` that one. Where a run draws no fuzzed spec, ``fuzz_note`` says why (the run
rung shows it): the reference opted out, its specs hold no integer ktui can change, or every draw was refused.
"""

from __future__ import annotations

import functools
import math
import os
import random
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import torch

from ktui.protocol import ProblemInfo, spec_label, spec_size
from ktui.protocol.distributions import INPUT_DISTRIBUTIONS
from ktui.worker.errors import CONTEXT_LOST, ProblemError
from ktui.worker.indices import declared as declared_indices
from ktui.worker.problem import Problem, trial_device
from ktui.worker.special import SPECIAL, NonfiniteCasts, float_outputs, invalid_outputs

FUZZ_COUNT = 4  # fuzzed specs per run: one per size class
CLASSES = ("pow2", "odd", "threshold", "unit")
CPU_BUDGET = 1 << 16  # spec size on the CPU: the Triton interpreter runs a kernel of this many elements in ~1 s
CPU_LEAD = 64  # and the product of the leading fields at least this (rows, tiles: ``lead_budget``)
# the ``bench`` draw of the innermost field on the CPU: up to this many elements (the interpreter runs a row's columns
# as array operations, cheap next to its rows; red team round 18 W2: a vocabulary softmax's path past 65,536
# columns, its benchmark at 128,256, never ran under the CPU budget; on one row its bug showed half the time)
CPU_INNER_BENCH = 1 << 20
GPU_BUDGET = 1 << 25  # and on a GPU: the float64 reference and the judge's verdict of 2**25 elements take ~1 s
THRESHOLDS = tuple(1 << j for j in range(8, 25))  # 256 .. 2**24: block, chunk and grid-split thresholds
MULTIPLES = (2, 4, 8, 16, 64, 128)
ALIGN = 4096  # the ``aligned`` draw: a multiple of every power-of-two block up to this (Triton blocks: 16 .. 4096)
ODD_BLOCKS = (256, 512, 1024, 2048)  # the ``odd_block`` draw: an odd multiple of one of these, in turn by seed
ALIGN_MIN = 256  # a field whose range holds no multiple of this gets no aligned draw (``pow2`` reaches 128)
TRIES = 8  # redraws per fuzzed spec before it is dropped
# the ``waves`` draw (CPU only): work for more than two waves of a grid capped at the SM count the stand-in answers
WAVE_SMS = 132  # the H200's SMs, as ``target_device.H200`` answers them without a GPU
WAVE_ROWS = 2 * WAVE_SMS + 1  # rows (one program each) past two full waves of WAVE_SMS programs: 265
WAVE_TILE = 128  # tiles of 128 x 128 along the last two leading fields: more than one wave of them (64 x 64: 4.7)
WAVE_TILES = 12  # 12 x 12 tiles of 128 (+1 each side: 13 x 13 = 169 > WAVE_SMS; 25 x 25 = 625 tiles of 64)
TILE_LEAD = 4096  # a reference whose tests hold this many leading elements (rows x cols of a GEMM's C) is tiled
WAVE_INNER = 64  # the waves spec's innermost field at most this (its cost goes by programs, not columns)
WAVE_1D = 2 * 4 * WAVE_SMS * 1024 + 1  # one field: two waves of a grid-stride loop of 4 programs per SM x 1024


def budget(tests: list[dict[str, Any]], benchmarks: list[dict[str, Any]], device: str) -> int:
    """The largest spec size a fuzzed spec may have on ``device``: on the CPU ``max(CPU_BUDGET, 2x the largest test
    spec)``; on a GPU up to the largest benchmark spec (at least 16x the largest test), capped at ``GPU_BUDGET``."""
    top = max(spec_size(s) for s in tests)
    cpu = max(CPU_BUDGET, 2 * top)
    if not device.startswith("cuda"):
        return cpu
    bench = max((spec_size(s) for s in benchmarks), default=16 * top)
    return max(cpu, min(GPU_BUDGET, max(bench, 16 * top)))


def lead_budget(tests: list[dict[str, Any]], device: str) -> int | None:
    """On the CPU, the largest product of a fuzzed spec's leading integer fields (all but the last, innermost one):
    ``max(CPU_LEAD, 4x the tests' largest)``; None on a GPU (no bound beyond ``budget``). The Triton interpreter runs
    one Python-level program per row or tile, ~6-9 ms each on 2 busy cores (measured: softmax of 8192 x 8 takes 35 to
    64 s, of 2 x 8192 0.01 to 0.1 s), so the rows of a row-parallel kernel cost far more than its columns."""
    if device.startswith("cuda"):
        return None
    return max(CPU_LEAD, 4 * max(_leading(s) for s in tests))


def _leading(spec: dict[str, Any]) -> int:
    ints = [v for v in spec.values() if _is_int(v)]
    return math.prod(max(v, 1) for v in ints[:-1])


def _fit_leading(spec: dict[str, Any], lead: int, bounds: dict[str, tuple[int, int]]) -> dict[str, Any] | None:
    """``spec`` with its largest leading field halved (down to its lower bound) until ``_leading`` is within ``lead``
    (deterministic: the draws that follow stay the same); None when it cannot get there."""
    spec = dict(spec)
    names = [k for k, v in spec.items() if _is_int(v)][:-1]
    while _leading(spec) > lead:
        shrink = [k for k in names if _shrinkable(k, spec, bounds)]
        if not shrink:
            return None
        k = max(shrink, key=lambda k: spec[k])
        spec[k] //= 2
    return spec


def _shrinkable(k: str, spec: Mapping[str, Any], bounds: Mapping[str, tuple[int, int]]) -> bool:
    """Whether field ``k`` of ``spec`` may be halved to fit a budget: above 1 and its lower bound, and, where the
    reference's ``fuzz`` dict names the fields to change (``bounds`` not empty), one of them (red team round 27,
    #3: ``fuzz = {"m": ..., "n": ...}`` left a head size ``d`` out, yet the budget's halving took it to 16, 8 and 2,
    and an honest attention kernel asserting its head size failed)."""
    return (not bounds or k in bounds) and spec[k] > 1 and spec[k] // 2 >= bounds.get(k, (1, 0))[0]


CPU_WORK_SLACK = 4  # ``_work_bound``: a drawn spec's flops per element at most this times the tests' largest


def _work_bound(module: Any, tests: list[dict[str, Any]]) -> Callable[[dict[str, Any]], bool] | None:
    """On the CPU, for a reference that declares ``flops(**spec)``: a predicate that is True for a spec whose flops
    per element (``spec_size``) exceed ``CPU_WORK_SLACK`` times the largest of the tests' (None without ``flops``,
    or when it raises on a test). The element budget bounds a linear op's cost, not a quadratic one's: an O(seq^2)
    attention drew the benchmark's seq = 4,096 beside one head and took minutes a case in the interpreter (new-user
    trial 27, F1); a matmul's flops per element (2 per m n k) never grow, a softmax's neither."""
    fn = getattr(module, "flops", None)
    if not callable(fn):
        return None
    try:
        top = max(float(fn(**t)) / max(spec_size(t), 1) for t in tests)
    except Exception:
        return None

    def too_heavy(spec: dict[str, Any]) -> bool:
        try:
            return float(fn(**spec)) > CPU_WORK_SLACK * top * max(spec_size(spec), 1)
        except Exception:
            return False

    return too_heavy


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_ITEM = re.compile(r"^(.*)\[(-\d+)\]$")


def _nested(v: Any) -> bool:
    """A tuple or list field holding an integer: its integers are fuzzed one by one (``flat_spec``)."""
    return isinstance(v, (tuple, list)) and any(_is_int(x) for x in v)


def flat_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with each element of a tuple or list field that holds an integer as a field of its own, named by
    its place from the end, ``field[-i]`` (``{"shape": (3, 129), "dtype": "float32"}`` -> ``{"shape[-2]": 3,
    "shape[-1]": 129, "dtype": "float32"}``), in the field's place: what ``draw_specs`` changes. Counted from the
    end as shapes broadcast, so ``shape[-1]`` is the innermost dimension of a 1-D and a 2-D spec alike (and of the
    benchmark's). ``nested_spec`` undoes it."""
    out: dict[str, Any] = {}
    for k, v in spec.items():
        if _nested(v):
            out.update({f"{k}[{i - len(v)}]": x for i, x in enumerate(v)})
        else:
            out[k] = v
    return out


def nested_spec(flat: Mapping[str, Any], kinds: Mapping[str, type]) -> dict[str, Any]:
    """The spec of ``flat`` (``flat_spec``'s form) with the ``field[i]`` entries of each field in ``kinds`` (its
    container type: ``tuple`` or ``list``) put back into one container, in order."""
    out: dict[str, Any] = {}
    for k, v in flat.items():
        m = _ITEM.match(k)
        if m and m.group(1) in kinds:
            out.setdefault(m.group(1), []).append(v)
        else:
            out[k] = v
    return {k: kinds[k](v) if k in kinds and isinstance(v, list) else v for k, v in out.items()}


def _containers(specs: list[dict[str, Any]]) -> dict[str, type]:
    """The container type of each tuple or list field holding integers in ``specs`` (the first one seen)."""
    kinds: dict[str, type] = {}
    for spec in specs:
        for k, v in spec.items():
            if _nested(v):
                kinds.setdefault(k, type(v))
    return kinds


def _flat_bounds(policy: Mapping[str, Any], flat_tests: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """``fuzz`` bounds by flat field: a bound on a tuple field (``"shape"``) bounds each of its integers
    (``shape[-1]``, ...), one on ``"shape[-1]"`` only that one (it wins)."""
    bounds = {str(k): (int(b[0]), int(b[1])) for k, b in policy.items()}
    for spec in flat_tests:
        for k in spec:
            m = _ITEM.match(k)
            if m and m.group(1) in bounds and k not in bounds:
                bounds[k] = bounds[m.group(1)]
    return bounds


def fuzz_note(module: Any, tests: list[dict[str, Any]], drawn: int, count: int = FUZZ_COUNT) -> str:
    """Why a run drew fewer than ``count`` fuzzed specs ('' when it drew them all, or more): the reference opted out
    (``fuzz = False``), its specs hold no integer ktui can change (or none that ``fuzz`` lists), or the draws were
    refused (``valid_spec``, or ``generate_input`` / ``ref_kernel`` raised on every one tried). For the run rung:
    shapes a kernel is never tried on are said, not left silent (red team round 10)."""
    if drawn >= count:
        return ""
    policy = getattr(module, "fuzz", True)
    if policy is False or policy is None:
        return "no fuzzed specs: the reference sets fuzz = False (only its own test sizes are checked)"
    flat = [flat_spec(s) for s in tests]
    ints = {k for s in flat for k, v in s.items() if _is_int(v)}
    if isinstance(policy, dict):
        ints &= set(_flat_bounds(policy, flat))
    if not ints:
        fields = ", ".join(f"{k}={v!r}" for k, v in tests[0].items()) if tests else "none"
        return (
            "no fuzzed specs: the test specs hold no integer ktui can change"
            + (" among the fields fuzz lists" if isinstance(policy, dict) else "")
            + f" (the first: {fields}); give sizes as integer fields, or tuples of integers, to have other sizes "
            "drawn every run"
        )
    why = f"({TRIES} tries each: valid_spec returned False, or generate_input or ref_kernel raised on the size)"
    if not drawn:
        return f"no fuzzed specs: every draw was refused {why}"
    return f"{drawn} of {count} fuzzed specs drawn: the other draws were refused {why}"


def _prime_at_least(n: int) -> int:
    n = max(n, 2)
    while any(n % d == 0 for d in range(2, int(n**0.5) + 1)):
        n += 1
    return n


def _loguniform(rng: random.Random, lo: int, hi: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(max(lo, 1)), math.log(max(hi, 1)))))) if hi > lo else lo


def _value(cls: str, rng: random.Random, lo: int, hi: int, top: int) -> int:
    """A value of size class ``cls`` within ``lo .. hi`` (``top``: the field's largest test value)."""
    if cls == "pow2":
        m = rng.choice([m for m in MULTIPLES if m <= hi] or [1])
        v = max(m, round(_loguniform(rng, max(lo, m), hi) / m) * m)
        v = v if v <= hi else (hi // m) * m
    elif cls == "odd":
        target = _loguniform(rng, lo, hi)
        if rng.random() < 0.5:
            v = _prime_at_least(target)
        else:
            v = (1 << max(target.bit_length() - 1, 1)) + rng.choice((-1, 1))
    elif cls == "threshold":
        ts = [t for t in THRESHOLDS if lo <= t <= hi]
        above = [t for t in ts if t > top]
        t = rng.choice(above if above and rng.random() < 0.7 else ts) if ts else hi
        v = t + rng.choice((-1, 0, 1, 3, t // 2 + 1, t + 1))
    else:
        v = 1
    return min(max(v, lo), hi)


def draw_specs(
    module: Any,
    tests: list[dict[str, Any]],
    benchmarks: list[dict[str, Any]],
    seed: int,
    device: str,
    trial: Callable[[dict[str, Any]], bool],
    count: int = FUZZ_COUNT,
) -> list[dict[str, Any]]:
    """``count`` fuzzed specs of the size classes (fewer when draws keep failing), one ``aligned`` spec per field
    (``aligned_fields``), one ``bench`` spec per field that the benchmarks make larger than the tests
    (``bench_fields``), one test spec reshaped to as many elements (``_draw_reshaped``), the smallest test spec
    with each size at 0 (``_draw_empty``) and test specs given a benchmark's dtype or flag that no test has
    (``_draw_bench_values``), new for every ``seed``;
    ``trial(spec)`` is True when the reference can generate and run it (the judge tries each draw). ``module`` is the
    reference module (its ``fuzz`` and ``valid_spec``).

    Raises:
        ProblemError: ``fuzz`` is neither a bool nor a dict of ``(lo, hi)`` integer bounds.
    """
    policy = getattr(module, "fuzz", True)
    if policy is False or policy is None or count <= 0:
        return []
    kinds = _containers([*tests, *benchmarks])  # tuple or list fields of integers: fuzzed as ``field[i]``
    tests, benchmarks = [flat_spec(s) for s in tests], [flat_spec(s) for s in benchmarks]
    if policy is True:
        bounds: dict[str, tuple[int, int]] = {}
        allowed: set[str] | None = None
    elif isinstance(policy, dict) and all(
        isinstance(b, (tuple, list)) and len(b) == 2 and all(_is_int(x) for x in b) for b in policy.values()
    ):
        bounds = _flat_bounds(policy, tests)
        allowed = set(bounds)
    else:
        raise ProblemError("fuzz must be True, False or a dict of field -> (lo, hi) integer bounds")
    valid: Callable[[dict[str, Any]], Any] = getattr(module, "valid_spec", lambda spec: True)
    cap = budget(tests, benchmarks, device)
    rng = random.Random(seed * 7_919 + 104_729)
    classes = list(CLASSES)
    rng.shuffle(classes)
    seen = [dict(s) for s in tests]
    out: list[dict[str, Any]] = []

    lead = lead_budget(tests, device)
    heavy = _work_bound(module, [nested_spec(s, kinds) for s in tests]) if lead is not None else None

    def accept(spec: dict[str, Any] | None, fit: bool = True) -> bool:
        if spec is not None and lead is not None and fit:
            spec = _fit_leading(spec, lead, bounds)
        if spec is None or spec in seen:
            return False
        nested = nested_spec(spec, kinds)
        if heavy is not None and heavy(nested):
            return False
        try:
            ok = bool(valid(dict(nested)))
        except Exception:
            ok = False
        if ok and trial(dict(nested)):
            seen.append(spec)
            out.append(nested)
            return True
        return False

    for j in range(count):
        for _ in range(TRIES):
            if accept(_draw(rng, classes[j % len(classes)], tests, benchmarks, bounds, allowed, cap)):
                break
    # one per field at a multiple of a large power of two (its own generator, as the bench draws below)
    aligned = random.Random(seed * 7_919 + 104_729 + 2)
    for f in aligned_fields(tests, benchmarks, bounds, allowed, cap):
        for _ in range(TRIES):
            if accept(_draw_aligned(aligned, f, tests, benchmarks, bounds, cap)):
                break
    # and one per such field at an odd multiple of 256, 512, 1024 or 2048 (in turn): a multiple of that block, not of
    # twice it (red team round 13 W1: a path for n % 1024 == 0 that was wrong unless n % 4096 == 0 passed every run,
    # the aligned draw being a multiple of 4096 and ``pow2`` of at most 128)
    odd = random.Random(seed * 7_919 + 104_729 + 3)
    odd_fields = aligned_fields(tests, benchmarks, bounds, allowed, cap)
    if lead is not None:  # on the CPU the leading fields are held within ``lead_budget``: only the innermost one
        inner = {[k for k, v in s.items() if _is_int(v)][-1] for s in tests if any(_is_int(v) for v in s.values())}
        odd_fields = [f for f in odd_fields if f in inner]
    for i, f in enumerate(odd_fields):
        for _ in range(TRIES):
            if accept(_draw_aligned(odd, f, tests, benchmarks, bounds, cap, odd_block=seed + i)):
                break
    # and one per field the benchmarks make larger than every test: that field at the benchmark's value (its own
    # generator, so the draws above stay those of earlier releases for the same seed)
    wide = random.Random(seed * 7_919 + 104_729 + 1)
    inner_cap = max(cap, CPU_INNER_BENCH) if lead is not None else cap
    for f in bench_fields(tests, benchmarks, bounds, allowed, cap):
        for _ in range(TRIES):
            if accept(_draw_bench(wide, f, tests, benchmarks, bounds, cap, inner_cap)):
                break
    # and, on the CPU, one spec past the first wave of a grid capped at the SM count (``_draw_waves``; red team
    # round 16, M1-M3: the caps above kept every spec within one wave, so a persistent kernel's loop never ran twice)
    if lead is not None:
        waves = random.Random(seed * 7_919 + 104_729 + 5)
        for _ in range(TRIES):  # each try draws another test spec to grow (one may not allow it)
            if accept(_draw_waves(waves, tests, benchmarks, bounds, allowed), fit=False):
                break
    # and one test spec reshaped: as many elements, a leading field's factor moved into the innermost field, run
    # after the spec it reshapes (red team round 15, M1: a launch cache keyed by numel served (2, 64)'s block to
    # (1, 128), whose columns 64.. were never written; every spec of a run had its own element count)
    reshape = random.Random(seed * 7_919 + 104_729 + 4)
    for _ in range(TRIES):
        if accept(_draw_reshaped(reshape, tests, bounds, allowed)):
            break
    for spec in _draw_empty(tests, bounds, allowed):
        accept(spec, fit=False)
    for spec in _draw_bench_values(tests, benchmarks):
        accept(spec, fit=False)
    return out


def _draw_bench_values(tests: list[dict[str, Any]], benchmarks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per value of a benchmark spec's field that is not a size (a str or bool: ``dtype="bfloat16"``, ``bias=True``)
    and that no test spec has, the smallest and the largest test spec (by their integer fields' product) with that
    value: the tests in float32 and the benchmark in bf16 (as the kernel is used) left the bf16 path unchecked, and a
    kernel whose 16-bit path left the last n % 8 elements unwritten passed (red team round 28, #7). Fields the
    tests do not have are left out (the benchmark's own spec shape is the reference's to declare)."""

    def size(s: Mapping[str, Any]) -> int:
        return math.prod(v for v in s.values() if _is_int(v))

    ordered = sorted(tests, key=size)
    out: list[dict[str, Any]] = []
    for b in benchmarks:
        for k, v in b.items():
            if not isinstance(v, (str, bool)) or not any(k in t for t in tests):
                continue
            if any(t.get(k) == v and type(t.get(k)) is type(v) for t in tests):
                continue
            for t in (ordered[0], ordered[-1]):
                spec = {**t, k: v}
                if spec not in out:
                    out.append(spec)
    return out


def _draw_empty(
    tests: list[dict[str, Any]], bounds: Mapping[str, tuple[int, int]], allowed: set[str] | None
) -> list[dict[str, Any]]:
    """The smallest test spec (by its integer fields' product) with one integer field at 0, once per field whose
    bounds allow 0 (every field when ``fuzz = True``; a declared ``(lo, hi)`` with lo > 0 keeps 0 out): an empty
    batch, an empty segment, an expert with no tokens, routine in serving. A row sum that returned its
    uninitialised ``torch.empty`` output when ``cols == 0`` passed every run: no test listed a 0 and fuzz never drew
    one (red team round 26, #10). The judge's trial keeps only those the reference can generate and run; a kernel
    that raises on one is told it does not support it (``worker.checked``), one that returns a wrong answer
    fails."""
    sized = [s for s in tests if any(_is_int(v) and v > 0 for v in s.values())]
    if not sized:
        return []
    base = min(sized, key=lambda s: math.prod(v for v in s.values() if _is_int(v)))
    return [
        {**base, f: 0}
        for f, v in base.items()
        if _is_int(v) and v > 0 and (allowed is None or f in allowed) and bounds.get(f, (0, 0))[0] <= 0
    ]


def _draw_waves(
    rng: random.Random,
    tests: list[dict[str, Any]],
    benchmarks: list[dict[str, Any]],
    bounds: dict[str, tuple[int, int]],
    allowed: set[str] | None,
) -> dict[str, Any] | None:
    """A test spec (drawn) grown past the first wave of a grid capped at the SM count (``WAVE_SMS``), beyond the CPU
    caps (``budget``, ``lead_budget``), which keep every other spec within one wave: a persistent kernel (one program
    per SM looping over rows or tiles) or a grid-stride loop then runs its loop more than once, so a wave count
    rounded down, an accumulator not reset between tiles or a stride of one block is checked (red team round 16,
    M1-M3). The spec's cost goes by its programs, kept small:

    - one integer field: ``WAVE_1D`` plus 0 .. 2 blocks (a vector of two waves of a grid-stride loop of 4 programs
      per SM and blocks of 1024: 1,057 programs of a kernel of one block each, ~1 s interpreted);
    - else, where the tests hold ``TILE_LEAD`` leading elements or more (a GEMM's m x n: the kernel tiles them) and
      there are two leading fields: the last two at ``WAVE_TILES x WAVE_TILE + 1`` (169 tiles of 128 x 128, 625 of
      64 x 64), the other leading fields at their lower bound;
    - else the last leading field (rows) at ``WAVE_ROWS`` plus 0 .. 31 (more than two waves of one program a row),
      the other leading fields at their lower bound;

    the innermost field at most ``WAVE_INNER``. None when a field it sets is outside its range (``_field_range``
    without the CPU budget: the ``fuzz`` bounds or ``1 .. max(benchmark, 4x the tests)``, so a problem whose
    benchmark stays within one wave gets none) or not among the ``allowed`` fields."""
    picks = [s for s in tests if any(_is_int(v) for v in s.values())]
    if not picks:
        return None
    spec = dict(rng.choice(picks))
    ints = [k for k, v in spec.items() if _is_int(v)]
    if len(ints) >= 3:  # a GEMM's reduction field by its usual name (M, K, N as KernelBench orders them), else last
        reduce = next((k for k in ints if k.lower() in ("k", "inner", "reduce", "reduction")), ints[-1])
        ints = [k for k in ints if k != reduce] + [reduce]
    inner, leading = ints[-1], ints[:-1]
    want: dict[str, int] = {}
    if not leading:
        want[inner] = WAVE_1D + 1024 * rng.randint(0, 2) + rng.choice((0, 2))
        grown = [inner]
    else:
        want[inner] = max(min(spec[inner], WAVE_INNER), bounds.get(inner, (1, 0))[0])
        for k in leading:
            want[k] = bounds.get(k, (1, 0))[0]
        if len(leading) >= 2 and max(_leading(s) for s in tests) >= TILE_LEAD:
            grown = leading[-2:]
            for k in grown:
                want[k] = WAVE_TILES * WAVE_TILE + 1 + rng.choice((0, 0, 2, WAVE_TILE))
        else:
            grown = leading[-1:]
            # a field the reference does not let vary stays at its value
            held = {k: int(spec[k]) for k in leading[:-1] if allowed is not None and k not in allowed}
            rest = math.prod(max(held.get(k, want[k]), 1) for k in leading[:-1])
            want[leading[-1]] = -(-(WAVE_ROWS + rng.randint(0, 31)) // rest)
    for k, v in want.items():
        if v == spec[k]:
            continue
        lo, hi, _, _ = _field_range(k, tests, benchmarks, bounds, v)
        if (allowed is None or k in allowed) and lo <= v <= hi:
            spec[k] = v
        elif k in grown:  # the spec cannot grow where it must
            return None
        # else a field only made smaller to keep the spec cheap keeps its value (fixed, or out of its range)
    return spec


def _draw_reshaped(
    rng: random.Random, tests: list[dict[str, Any]], bounds: dict[str, tuple[int, int]], allowed: set[str] | None
) -> dict[str, Any] | None:
    """A test spec (drawn) with a leading integer field's value ``a`` divided by a factor ``f > 1`` of it and the
    innermost integer field multiplied by ``f``: the same product of fields (the same element count where the shape
    is their product), another shape with a wider innermost dimension, so what a kernel cached for the first (keyed
    by element count) is served to the second. None when no test spec has a leading field of 2 or more within the
    bounds (``fuzz`` and the ``allowed`` fields)."""
    picks = []
    for spec in tests:
        ints = [k for k, v in spec.items() if _is_int(v)]
        if len(ints) < 2 or (allowed is not None and ints[-1] not in allowed):
            continue
        inner = ints[-1]
        for k in ints[:-1]:
            if spec[k] >= 2 and (allowed is None or k in allowed):
                picks.append((spec, k, inner))
    if not picks:
        return None
    spec, lead, inner = rng.choice(picks)
    a = spec[lead]
    factors = [f for f in range(2, a + 1) if a % f == 0]
    f = rng.choice(factors[:8] + factors[-1:])  # small factors and the whole value (a prime's only one)
    new = dict(spec)
    new[lead], new[inner] = a // f, spec[inner] * f
    lo_l = bounds.get(lead, (1, 0))[0]
    lo_i, hi_i = bounds.get(inner, (1, new[inner]))
    if new[lead] < lo_l or not lo_i <= new[inner] <= hi_i:
        return None
    return new


def _alignment(hi: int) -> int:
    """The power of two an ``aligned`` draw of a field with upper bound ``hi`` is a multiple of: ``ALIGN``, or the
    largest power of two not above ``hi``."""
    return min(ALIGN, 1 << max(hi.bit_length() - 1, 0))


def aligned_fields(
    tests: list[dict[str, Any]],
    benchmarks: list[dict[str, Any]],
    bounds: dict[str, tuple[int, int]],
    allowed: set[str] | None,
    cap: int,
) -> list[str]:
    """The integer fields (in the tests' order) whose range holds a multiple of ``ALIGN_MIN`` or more: each gets an
    ``aligned`` draw."""
    fields = list(dict.fromkeys(k for s in tests for k, v in s.items() if _is_int(v)))
    out = []
    for f in fields:
        if allowed is not None and f not in allowed:
            continue
        lo, hi, _, _ = _field_range(f, tests, benchmarks, bounds, cap)
        a = _alignment(hi)
        if a >= ALIGN_MIN and -(-lo // a) * a <= hi:
            out.append(f)
    return out


def _draw_aligned(
    rng: random.Random,
    f: str,
    tests: list[dict[str, Any]],
    benchmarks: list[dict[str, Any]],
    bounds: dict[str, tuple[int, int]],
    cap: int,
    odd_block: int | None = None,
) -> dict[str, Any] | None:
    """A test spec with field ``f`` at ``k * _alignment(hi)`` (k log-uniform within the range), the other integer
    fields halved until the spec fits ``cap``. With ``odd_block`` (an int: the seed plus the field's index): at
    ``k * b`` for ``k`` odd and the block ``b`` one of ``ODD_BLOCKS`` in turn (``odd_block`` modulo their number,
    those with an odd multiple in the field's range): a multiple of ``b`` and of no larger power of two, the sizes
    between ``pow2``'s (at most 128) and the aligned draw's (4096); every four runs in a row meet each block."""
    base = [s for s in tests if _is_int(s.get(f))]
    if not base:
        return None
    spec = dict(rng.choice(base))
    lo, hi, _, _ = _field_range(f, tests, benchmarks, bounds, cap)
    a = _alignment(hi)
    if odd_block is not None:

        def odd_in_range(b: int) -> bool:  # an odd k with lo <= k * b <= hi
            k0 = max(1, -(-lo // b))
            return (k0 if k0 % 2 else k0 + 1) * b <= hi

        blocks = [b for b in ODD_BLOCKS if odd_in_range(b)]
        if not blocks:
            return None
        a = blocks[odd_block % len(blocks)]
    kmin, kmax = max(1, -(-lo // a)), hi // a
    if kmax < kmin:
        return None
    k = _loguniform(rng, kmin, kmax)
    if odd_block is not None:
        k = k + 1 if k % 2 == 0 else k
        if k > kmax:
            k -= 2
        if k < kmin:
            return None
    spec[f] = k * a
    return _fit(rng, spec, f, bounds, cap)


def _fit(
    rng: random.Random, spec: dict[str, Any], f: str, bounds: dict[str, tuple[int, int]], cap: int
) -> dict[str, Any] | None:
    """``spec`` with its integer fields other than ``f`` halved, the largest first (``_halve``), until ``spec_size``
    fits ``cap``; None when no field can shrink further within its bounds."""
    others = [k for k, x in spec.items() if _is_int(x) and k != f]
    return _halve(rng, spec, others, bounds, cap)


def _halve(
    rng: random.Random, spec: dict[str, Any], fields: list[str], bounds: dict[str, tuple[int, int]], cap: int
) -> dict[str, Any] | None:
    """``spec`` (changed in place) with the largest of ``fields`` halved (down to its lower bound; a tie drawn from
    ``rng``) until ``spec_size`` fits ``cap``; None when none can shrink further. The largest first, not one drawn
    at random: a field moved to the benchmark's value keeps the others near a test's size, so it meets many
    instances (new-user trial 24, F3: a segment sum's ``max_len`` fuzzed to the benchmark's 64 beside 1 and 3
    segments, random halvings of the 33 a test had: no segment was longer than 56 rows, and a kernel that cut
    segments at 56 passed)."""
    while spec_size(spec) > cap:
        shrink = [k for k in fields if _shrinkable(k, spec, bounds)]
        if not shrink:
            return None
        top = max(spec[k] for k in shrink)
        k = rng.choice([k for k in shrink if spec[k] == top])
        spec[k] //= 2
    return spec


def _field_range(
    f: str, tests: list[dict[str, Any]], benchmarks: list[dict[str, Any]], bounds: dict[str, tuple[int, int]], cap: int
) -> tuple[int, int, int, int]:
    """``(lo, hi, top, bench)`` of integer field ``f``: its bounds (``fuzz`` or ``1 .. max(benchmark, 4x top)``,
    ``hi`` at most ``cap``), its largest test value and its largest benchmark value (0 when no benchmark has it)."""
    top = max((s[f] for s in tests if _is_int(s.get(f))), default=1)
    bench = max((s[f] for s in benchmarks if _is_int(s.get(f))), default=0)
    lo, hi = bounds.get(f, (1, max(bench, 4 * top)))
    return lo, max(lo, min(hi, cap)), top, bench


def bench_fields(
    tests: list[dict[str, Any]],
    benchmarks: list[dict[str, Any]],
    bounds: dict[str, tuple[int, int]],
    allowed: set[str] | None,
    cap: int,
) -> list[str]:
    """The integer fields (in the tests' order) that some benchmark spec makes larger than every test spec and that
    the bounds let a fuzzed spec reach above the tests: each gets a ``bench`` draw."""
    fields = list(dict.fromkeys(k for s in tests for k, v in s.items() if _is_int(v)))
    out = []
    for f in fields:
        if allowed is not None and f not in allowed:
            continue
        lo, hi, top, bench = _field_range(f, tests, benchmarks, bounds, cap)
        if min(bench, hi) > top:
            out.append(f)
    return out


def _draw_bench(
    rng: random.Random,
    f: str,
    tests: list[dict[str, Any]],
    benchmarks: list[dict[str, Any]],
    bounds: dict[str, tuple[int, int]],
    cap: int,
    inner_cap: int = 0,
) -> dict[str, Any] | None:
    """A test spec with field ``f`` at the benchmark's value (capped at ``hi``) or its neighbour (-1, +1, +3), the
    other integer fields halved until the spec fits ``cap`` (a dimension at benchmark scale, the others small): a
    path taken only past some width between the tests and the benchmark runs in every run. The innermost field of
    a spec of two or more (the spec's last integer), when the benchmark's value of it is past ``cap``, is drawn on the
    test spec with the most rows and fits ``inner_cap`` instead (``CPU_INNER_BENCH`` on the CPU)."""
    base = [s for s in tests if _is_int(s.get(f))]
    if not base:
        return None
    spec = dict(rng.choice(base))
    ints = [k for k, v in spec.items() if _is_int(v)]
    # only the innermost of two fields or more (a row's columns: a 1-D kernel's programs go by its length, and the
    # ``waves`` draw already takes it past 2**20) and for a width the CPU budget cannot hold even on one row (a
    # softmax's 8,192 columns fit it as before)
    lo, hi, top, bench = _field_range(f, tests, benchmarks, bounds, cap)
    inner = inner_cap > cap and len(ints) >= 2 and ints[-1] == f and bench > cap
    if inner:  # the test spec with the most rows: a bug that shows on some rows only meets several
        most: dict[str, Any] = max(base, key=_leading)
        spec = dict(most)
        lo, hi, top, bench = _field_range(f, tests, benchmarks, bounds, inner_cap)
    v = min(max(min(bench, hi) + rng.choice((0, 0, -1, 1, 3)), lo), hi)
    if v <= top:
        return None
    spec[f] = v
    # past ``cap`` by the innermost field, the leading fields shrunk to fit ``inner_cap`` (8 rows at 128,256), and
    # to the CPU's lead budget by the caller
    return _fit(rng, spec, f, bounds, inner_cap if inner else cap)


def _draw(
    rng: random.Random,
    cls: str,
    tests: list[dict[str, Any]],
    benchmarks: list[dict[str, Any]],
    bounds: dict[str, tuple[int, int]],
    allowed: set[str] | None,
    cap: int,
) -> dict[str, Any] | None:
    spec = dict(rng.choice(tests))
    fields = [k for k, v in spec.items() if _is_int(v) and (allowed is None or k in allowed)]
    if not fields:
        return None

    def rng_of(f: str) -> tuple[int, int, int]:
        top = max((s[f] for s in tests if _is_int(s.get(f))), default=1)
        bench = max((s[f] for s in benchmarks if _is_int(s.get(f))), default=0)
        lo, hi = bounds.get(f, (1, max(bench, 4 * top)))
        return lo, max(lo, min(hi, cap)), top

    f = rng.choice(fields)
    lo, hi, top = rng_of(f)
    if cls == "unit" and len(fields) == 1:  # a lone field at 1 is a test spec already (the tails include 1)
        cls = "pow2"
    spec[f] = _value(cls, rng, lo, hi, top)
    if cls == "unit" and len(fields) > 1:
        g = rng.choice([x for x in fields if x != f])
        glo, ghi, gtop = rng_of(g)
        spec[g] = _value("threshold", rng, glo, ghi, gtop)
        f = g
    # the other integer fields halved, the largest first (down to their lower bound), until it fits
    return _halve(rng, spec, [k for k in fields if k != f], bounds, cap)


INT_DISTS = ("intrange", "indices", "segments")  # the special distributions that change integer inputs


def device_assert(exc: BaseException) -> bool:
    """``exc`` (or its cause) is a CUDA error after which the process's CUDA context is lost (a device-side assert:
    torch's index kernels assert on an index out of range; an illegal address), by its message; or, where CUDA is
    available and ``exc`` is a CUDA error of another message, the context no longer runs a kernel."""
    seen: BaseException | None = exc
    cuda_error = False
    for _ in range(4):
        if seen is None:
            break
        text = f"{type(seen).__name__}: {seen}"
        if any(m in text for m in CONTEXT_LOST):
            return True
        cuda_error = cuda_error or "AcceleratorError" in text or "CUDA error" in text
        seen = seen.__cause__ or seen.__context__
    if not cuda_error or not torch.cuda.is_available():
        return False
    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
    except Exception:
        return True
    return False


def _context_lost(on: str, exc: BaseException, hint: str) -> ProblemError:
    """The reference's error for a trial on ``on`` that lost the GPU context (``device_assert``), with ``hint``."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    return ProblemError(
        f"the reference on {on} hit a CUDA error that loses the GPU context ({type(exc).__name__}: {first}): {hint}"
    )


def _sync(device: str) -> None:
    """Wait for the work queued on ``device`` (a CUDA error of a trial's kernels is raised here, in the trial)."""
    if device != "cpu" and torch.cuda.is_available():
        torch.cuda.synchronize()


# ``cases``' ordinary refills (normal, uniform, heavy, shifted, constant), tried as the special ones are
ORDINARY_TRIED = tuple(d for d in INPUT_DISTRIBUTIONS if d != "native" and d not in SPECIAL)


class Trials(NamedTuple):
    """``_special_trials``' answer: per distribution tried, why the reference is not valid on it ('' when it is);
    and per special distribution valid only on some of the float inputs, those inputs' paths (``[3]``)."""

    reasons: dict[str, str]
    inputs: dict[str, list[str]]


MAX_INPUT_TRIALS = 8  # ``_special_trials``: a special distribution is tried input by input on at most this many
# the special distributions tried input by input: those of masks and non-finite values. Not the magnitudes (large,
# extreme): on some inputs only they make an honest reassociation overflow where the reference's order does not
# (an int8 GEMM scaling after its dot: x at max/8k times w at 127 past fp32's range, the reference's w * scale
# first; new-user trial 28's W8A16 failed "NaN/inf where the reference differs")
PER_INPUT = ("masked", "nonfinite", "zeros")


def _special_trials(problem: Problem, device: str) -> Trials:
    """Per special or ordinary (``ORDINARY_TRIED``) distribution the problem allows, why the reference is not valid
    on it ('' when it is), tried on
    the smallest and the largest test spec (``special.valid_reference``); cached on the problem (once per sha).
    The distributions that change integers (``INT_DISTS``) are tried on the CPU where the reference runs there
    (``trial_device``).

    A special distribution of ``PER_INPUT`` the reference is not valid on when it refills every float input is tried
    on each float input alone (up to ``MAX_INPUT_TRIALS`` of them): an additive attention mask takes ``-inf`` where
    q, k and v cannot (red team round 27, #6: ``masked`` and ``nonfinite`` were left out of such a problem, and a flash
    attention that gave NaN on a fully masked key block passed). The inputs it is valid on alone are kept
    (``Trials.inputs``; all of them where the reference is valid on them together, else the first), and its cases
    refill those only (``Case.inputs``).

    Raises:
        ProblemError: a trial on the GPU hit a device-side assert (the judge's CUDA context is lost).
    """
    cached: Trials | None = getattr(problem, "_special_trials", None)
    if cached is not None:
        return cached
    order = sorted(range(len(problem.tests)), key=lambda i: spec_size(problem.tests[i]))
    picks = sorted({order[0], order[-1]})
    out: dict[str, str] = {}
    inputs: dict[str, list[str]] = {}
    # the ordinary refills too (red team round 27, #7: normal, heavy and shifted made Adam's second moment negative,
    # the reference's sqrt gave NaN, and an honest fused Adam failed "reference invalid ... set allow_nan"): the
    # native inputs are the reference's own domain, every other distribution is ktui's and is tried
    for dist in (d for d in problem.distributions if d in SPECIAL or d in ORDINARY_TRIED):
        reason = ""
        varied = False  # ``indices``: some integer or bool input of a tried spec took other values
        where = trial_device(problem, device) if dist in INT_DISTS else device
        tried = 0  # ``segments``: specs it varied (a spec of one segment, or no room for an empty one, has none)
        # (``segments`` tries the specs from the largest down until two of them made an empty segment)
        for i in picks if dist != "segments" else order[::-1]:
            # the integer-changing draws (offsets, indices across their dtype's range) may crash a reference's C++ (a
            # segment_reduce on unsorted offsets: SIGSEGV), which would take the judge down and be blamed on the
            # version (red team round 15, F2): on a CPU ladder they are tried in a forked child (not beside a CUDA
            # context, which a forked child cannot use: a GPU judge tries them in its own process, as before)
            if dist in INT_DISTS and device == "cpu":
                reason, moved = _in_child(functools.partial(_attempt, problem, dist, device, where, i))
            else:
                reason, moved = _attempt(problem, dist, device, where, i)
            varied = varied or moved
            tried += moved
            if reason or (dist == "segments" and tried >= len(picks)):
                break
        if dist == "indices" and not reason and not varied:
            reason = "no integer or bool inputs it can vary"
        if dist == "segments" and not reason and not varied:
            reason = "no sorted integer rows of unequal steps (offsets) to empty a segment of"
        if reason and dist in PER_INPUT and not reason.startswith(CHILD_REASONS):
            valid = _valid_inputs(problem, dist, device, picks)
            if valid:
                reason = ""
                inputs[dist] = valid
        out[dist] = reason
    trials = Trials(out, inputs)
    setattr(problem, "_special_trials", trials)  # noqa: B010 - a cache on the loaded problem
    return trials


def reference_writes(problem: Problem, before: Any, after: Any) -> str:
    """The first input (``in[1]``, ``in['x']``) that ``ref_kernel`` changed, comparing the inputs it was given
    (``before``, untouched: it ran on a copy) with that copy after the call (``after``) by the judge's own digests of
    their bytes (``tensors.input_facts``, as a version's inputs are checked), among the inputs the reference does not
    declare as outputs or in-place (``inputs_only``); '' when none."""
    from ktui.worker.problem import inputs_only
    from ktui.worker.tensors import input_facts

    was = input_facts(inputs_only(problem, before))
    now = input_facts(inputs_only(problem, after))
    changed = (path for path, (_, digest) in now.items() if digest and was.get(path, (None, digest))[1] != digest)
    return next(changed, "")


def _attempt(
    problem: Problem, dist: str, device: str, where: str, i: int, only: list[str] | None = None
) -> tuple[str, bool]:
    """``_special_trials``' trial of ``dist`` at test spec ``i`` on ``where`` (refilling the inputs ``only`` when
    given, else all): (why the reference is not valid on it, '' when it is; whether it varied an integer or bool
    input).

    Raises:
        ProblemError: on a GPU, the trial hit a CUDA error that loses the context (``device_assert``).
    """
    from ktui.worker.arguments import argument_moves
    from ktui.worker.cases import build_input, float_scalars, float_values
    from ktui.worker.problem import inputs_only
    from ktui.worker.tensors import flatten

    moved = False
    try:
        case: dict[str, Any] = {"spec_index": i, "seed": 1, "dist": dist}
        if only is not None:
            case["inputs"] = only
        data = build_input(problem, case, where)
        if dist == "scalars" and not float_scalars(inputs_only(problem, data)):
            if not argument_moves(problem, device)[0]:  # nor an int or bool argument the reference
                return "no float, int or bool arguments it can vary", moved  # takes other values of
        if dist == "edges" and not float_values(inputs_only(problem, data)):
            return "no float arguments", moved
        if dist == "intrange" and not any(
            isinstance(t, torch.Tensor) and not t.is_floating_point() and t.dtype != torch.bool
            for _, t in flatten(inputs_only(problem, data))
        ):
            return "no integer inputs", moved
        if dist in ("indices", "segments"):
            moved = _ints_varied(data, build_input(problem, {"spec_index": i, "seed": 1}, where))
            if dist == "segments" and not moved:  # nothing to try on this spec (a batch of one segment)
                return "", moved
        if dist == "nan" and problem.allow_nan:
            return "the problem allows NaN results: its nonfinite cases draw NaN", moved
        ref, _ = problem.reference(data)
        with NonfiniteCasts() as casts:
            native = problem.reference_native(data)
        # valid where some float output is: the others are left out case by case (``judge``: ``skip_outputs``; red
        # team round 34, #2: a row's sum of squares overflowing in float32 took the extreme family from y = 2x too)
        invalid = invalid_outputs(ref, native, problem.allow_nan, nan_only=dist in ORDINARY_TRIED)
        # (NaN and inf inputs: left out where any output cannot take them, as before; an output's inf beside another
        # one's NaN is no bar for the kernel's NaN handling: an honest online log-sum-exp gives NaN on +inf)
        everywhere = bool(invalid) and (set(invalid) >= float_outputs(ref) or dist in NAN_INF)
        reason = (next(iter(invalid.values())) if everywhere else "") or casts.seen
        if dist == "nan" and not reason and not _nan_judged(data, native, problem):
            reason = "no float input takes a NaN, or no float output would show one"
        _sync(where)  # never CUDA in the forked child (where is "cpu" there)
        return reason, moved
    except Exception as exc:
        if device != "cpu" and device_assert(exc):
            raise _context_lost(
                f"its inputs of the '{dist}' distribution (test spec {spec_label(problem.tests[i])})",
                exc,
                f"an index out of range? Take '{dist}' out of the reference's `distributions`, or make "
                f"the reference run on the CPU (ktui then tries these distributions there)",
            ) from None
        return f"the reference raised {type(exc.__cause__ or exc).__name__}", moved  # its own


def _valid_inputs(problem: Problem, dist: str, device: str, picks: list[int]) -> list[str]:
    """The float inputs (paths, ``[3]``) of ``problem`` on which the special distribution ``dist`` keeps the
    reference valid when it refills that input alone, at every test spec of ``picks``: all of them where it is
    valid on them together, else the first; [] when fewer than two float inputs (the whole-input trial said it)."""
    from ktui.worker.cases import float_input_paths

    paths = float_input_paths(problem, problem.generate(1, problem.tests[picks[0]], device))
    if len(paths) < 2:
        return []

    def valid_on(only: list[str]) -> bool:
        return not any(_attempt(problem, dist, device, device, i, only)[0] for i in picks)

    valid = [p for p in paths[:MAX_INPUT_TRIALS] if valid_on([p])]
    if len(valid) > 1 and not valid_on(valid):
        return valid[:1]  # valid on each alone, not on all of them together
    return valid


def _nan_judged(data: Any, native: Any, problem: Problem) -> bool:
    """Whether the ``nan`` distribution's inputs (``data``) hold a NaN and the reference's output (``native``) has a
    floating or a bool leaf: an output of integers alone (an argmax, a count) says nothing of how a kernel treats a
    NaN where torch's own rule (NaN is the largest) and a kernel's comparisons may rightly differ; a bool is what
    a NaN check answers (an AMP ``found_inf`` per row, ``isfinite(g).all(-1)``: computed as ``max|g| == inf`` it
    misses every NaN, and passed with no NaN ever drawn: red team round 26, #5)."""
    from ktui.worker.problem import inputs_only
    from ktui.worker.tensors import flatten

    has_nan = any(
        isinstance(t, torch.Tensor) and t.is_floating_point() and bool(torch.isnan(t).any())
        for _, t in flatten(inputs_only(problem, data))
    )
    floats = any(
        isinstance(t, torch.Tensor) and (t.is_floating_point() or t.dtype == torch.bool) for _, t in flatten(native)
    )
    return has_nan and floats


TRIAL_CHILD_S = 120.0  # ``_in_child``: a trial's child past this many seconds is killed (the reference hangs there)
# a special distribution that has nothing to refill (no integer inputs, no float arguments...): no note
NOT_APPLICABLE = ("no ", "the problem allows")
FLOAT_VALUES = ("zeros", "masked", "large", "extreme", "tiny")  # the special float values left out with a note
NAN_INF = ("nonfinite", "nan")  # left out, or a case skipped, where any one output cannot take them
CHILD_REASONS = ("the reference crashed", "the reference did not finish", "the reference's trial gave no answer")


def _in_child(attempt: Callable[[], tuple[str, bool]]) -> tuple[str, bool]:
    """``attempt()`` run in a forked child of this (CPU) process, its (reason, varied) sent back over a pipe; a child
    that dies (a signal: the reference's C++ crashed on these inputs) or runs past ``TRIAL_CHILD_S`` gives the
    reason that says so, and the distribution is left out as any the reference is not valid on. The child computes
    on one thread (an OpenMP pool is not usable after fork) and never returns into the judge (``os._exit``)."""
    import json
    import signal as _signal
    import time

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.close(r)
            torch.set_num_threads(1)
            reason, moved = attempt()
            os.write(w, json.dumps([reason, moved]).encode())
        except BaseException as exc:  # anything the trial raised is its answer
            os.write(w, json.dumps([f"the reference raised {type(exc).__name__}", False]).encode())
        finally:
            os._exit(0)
    os.close(w)
    deadline = time.monotonic() + TRIAL_CHILD_S
    status = None
    while status is None:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
        elif time.monotonic() > deadline:
            os.kill(pid, _signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return f"{CHILD_REASONS[1]} in {TRIAL_CHILD_S:.0f} s", False
        else:
            time.sleep(0.01)
    with os.fdopen(r, "rb") as f:
        raw = f.read()
    if os.WIFSIGNALED(status):
        name = _signal.Signals(os.WTERMSIG(status)).name
        return f"{CHILD_REASONS[0]} ({name}) on them", False
    try:
        reason, moved = json.loads(raw)
        return str(reason), bool(moved)
    except ValueError:
        return CHILD_REASONS[2], False


def _ints_varied(data: Any, native: Any) -> bool:
    """Some integer or bool tensor of ``data`` differs from the same leaf of ``native`` (the ``indices`` trial)."""
    from ktui.worker.tensors import flatten

    before = dict(flatten(native))
    return any(
        isinstance(t, torch.Tensor)
        and not t.is_floating_point()
        and not t.is_complex()
        and isinstance(before.get(p), torch.Tensor)
        and not torch.equal(t, before[p])
        for p, t in flatten(data)
    )


def _tensor_inputs(problem: Problem, device: str) -> tuple[int, int]:
    """How many tensors of one dimension or more the inputs of the smallest test spec hold (declared output buffers
    left out), and the most dimensions one has: the ``mixed`` layout needs two tensors, ``permuted`` three
    dimensions. Cached on the problem; (2, 2) when the inputs cannot be built (the cases will say why)."""
    cached: tuple[int, int] | None = getattr(problem, "_tensor_inputs", None)
    if cached is not None:
        return cached
    from ktui.worker.problem import inputs_only
    from ktui.worker.tensors import flatten

    smallest = min(range(len(problem.tests)), key=lambda i: spec_size(problem.tests[i]))
    try:
        data = problem.generate(1, problem.tests[smallest], device)
        tensors = [t for _, t in flatten(inputs_only(problem, data)) if isinstance(t, torch.Tensor) and t.ndim > 0]
        facts = (len(tensors), max((t.ndim for t in tensors), default=0))
    except Exception:
        facts = (2, 2)
    setattr(problem, "_tensor_inputs", facts)  # noqa: B010 - a cache on the loaded problem
    return facts


def fuzz_trial(problem: Problem, spec: dict[str, Any], seed: int, device: str) -> bool:
    """True when the reference generates and runs (natively) on the drawn ``spec``: a draw it refuses (raises on)
    is redrawn.

    Raises:
        ProblemError: on a GPU, the reference hit a CUDA error that loses the context (a device-side assert: an
            index out of range for that size): the judge cannot go on, and the message says how to bound the draws.
    """
    try:
        problem.reference_native(problem.generate(seed, spec, device))
        _sync(device)
    except Exception as exc:
        if device != "cpu" and device_assert(exc):
            raise _context_lost(
                f"the fuzzed spec {spec_label(spec)} (seed {seed})",
                exc,
                "an index out of range for that size? Bound the fields with `fuzz = {...}` or reject such specs with "
                "`valid_spec(spec)` in the reference",
            ) from None
        return False
    return True


def describe_for_run(problem: Problem, device: str, fuzz_seed: int | None) -> ProblemInfo:
    """The judge's ``describe`` reply for one run: the module's declaration with the special distributions the
    reference is not valid on left out and, with ``fuzz_seed``, ``draw_specs`` appended to ``tests`` (labels
    ``fuzzed(...)``, indices in ``fuzzed``).

    Raises:
        ProblemError: a bad ``fuzz`` declaration, or a ``structured_inputs`` entry the data does not have;
            ``ReferenceRaised`` when ``generate_input`` or ``ref_kernel`` raises on the smallest test spec.
    """
    info = problem.describe()
    declared_indices(problem.module)  # a bad index_outputs is the reference's error, said before any case runs
    smallest = min(problem.tests, key=spec_size)
    first = problem.generate(1, smallest, device)
    if problem.structured:  # and a structured_inputs entry the data does not have
        problem.check_structured(first)
    # and a ref_kernel that raises on the smallest test spec (a typo: new-user trial 23, F7, reported only after a
    # whole run rung of every version): ReferenceRaised, the compile rung's reference error
    ran: list[Any] = []
    problem.reference_native(first, ran)
    written = reference_writes(problem, first, ran[0])
    if written:  # the kernel would be blamed for what the reference does (new-user trial 34, F13)
        raise ProblemError(
            f"references/{problem.name}.py: ref_kernel writes into {written} (its input), which the reference does not "
            "declare: a version that does the same fails as 'input modified'. Declare it, `inplace = (...)` with its "
            "index or key, if the op updates it in place (as vLLM's fused_add_rms_norm does its residual), or "
            "clone it in ref_kernel"
        )
    del first, ran
    trials, only = _special_trials(problem, device)
    info["distributions"] = [d for d in info["distributions"] if not trials.get(d)]
    notes = [
        f"the '{d}' distribution is left out: {why} (its integer inputs drawn over their whole range or varied "
        "as indices; bound them, or declare `input_distributions`)"
        for d, why in trials.items()
        if why.startswith(CHILD_REASONS)
    ]
    if only:
        info["distribution_inputs"] = {d: list(paths) for d, paths in only.items()}
        notes += [
            f"the '{d}' distribution refills {', '.join(f'in{p}' for p in paths)} only: the reference is not valid "
            "on it in every float input"
            for d, paths in only.items()
        ]
    domain = {d: why for d, why in trials.items() if why and d in ORDINARY_TRIED}
    if domain:
        names = ", ".join(f"'{d}'" for d in domain)
        notes.append(
            f"the {names} distribution{'s are' if len(domain) > 1 else ' is'} left out: the reference is not valid "
            f"on {'them' if len(domain) > 1 else 'it'} ({next(iter(domain.values()))}): its inputs have a domain "
            "these refills leave (a variance made negative); declare `input_distributions` to choose"
        )
    # and the float special values the reference is not valid on at any output (its float32 sum of squares
    # overflowing on the max: the extreme family): said, so their cases are known missing (red team round 34)
    values = {
        d: why
        for d, why in trials.items()
        if why and d in FLOAT_VALUES and not why.startswith((*CHILD_REASONS, *NOT_APPLICABLE))
    }
    if values:
        names = ", ".join(f"'{d}'" for d in values)
        notes.append(
            f"the {names} distribution{'s are' if len(values) > 1 else ' is'} left out: {next(iter(values.values()))} "
            f"on {'them' if len(values) > 1 else 'it'} (special float values: their cases would not be judged)"
        )
    # and NaN and inf inputs left out altogether (the reference gives NaN on both: a softmax carries a NaN logit into
    # its weights), so a kernel's handling of them is known unchecked (new-user trial 33, F8: `nan` and `nonfinite`
    # left out of every run without a word; `nan` alone is for outputs that stay free of NaN, a nansum's)
    gone = [
        d
        for d in ("nonfinite", "nan")
        if d in problem.distributions and trials.get(d) and not trials[d].startswith((*CHILD_REASONS, *NOT_APPLICABLE))
    ]
    if "nonfinite" in gone and not problem.allow_nan:
        names = " and ".join(f"'{d}'" for d in gone)
        notes.append(
            f"the {names} distribution{'s are' if len(gone) > 1 else ' is'} left out: {trials['nonfinite']}: a "
            "kernel's handling of NaN and inf inputs goes unchecked; `allow_nan = True` judges where its NaN land"
        )
    if notes:
        info["distribution_notes"] = notes
    info["tensor_inputs"], info["input_ndim"] = _tensor_inputs(problem, device)
    if "scalars" in problem.distributions:  # the int and bool arguments the scalars cases move, and those never
        from ktui.worker.arguments import argument_moves, scalar_moves

        notes = argument_moves(problem, device)[1]
        if notes:
            info["scalar_notes"] = notes
        if "scalars" in info["distributions"]:
            moves = scalar_moves(problem, device, fuzz_seed or 0)
            if moves:
                info["scalar_moves"] = moves
    from ktui.worker.arguments import fixed_arguments

    fixed = fixed_arguments(problem, device)  # str, dtype and enum arguments with one value in every test spec
    if fixed:
        info["scalar_notes"] = [*info.get("scalar_notes", []), *fixed]
    if fuzz_seed is None:
        return info

    def trial(spec: dict[str, Any]) -> bool:
        return fuzz_trial(problem, spec, fuzz_seed, device)

    drawn = draw_specs(problem.module, problem.tests, problem.benchmarks, fuzz_seed, device, trial)
    note = fuzz_note(problem.module, problem.tests, len(drawn))
    if note:
        info["fuzz_note"] = note
    n = len(info["tests"])
    info["tests"] = info["tests"] + drawn
    info["labels"] = info["labels"] + ["fuzzed" + spec_label(s) for s in drawn]
    info["fuzzed"] = list(range(n, n + len(drawn)))
    info["fuzz_seed"] = fuzz_seed
    return info
