"""Which Python int, bool and float arguments the ``scalars`` cases move, and how (cases.md scalars; red team round 10).

A float argument is also moved, besides its scaling: negated, times 8 or plus 1.0 (``cases.FLOAT_MOVES``; red team
round 16, M4: the scaling by 0.5..2x never changed a leaky ReLU's slope of 0.2 past 1 or its sign, so
``max(x, slope * x)`` passed; round 17: a beta of 0.0 stays 0.0 under all of those but the last, so a kernel that
dropped ``beta * y`` passed), each move kept on the same terms as an int's below (an ``eps`` whose negation makes
the reference NaN is not negated); the run's combinations move one float at a time (none, then each float in
turn, its move drawn), so two floats are never moved together into a range no honest kernel agrees on
(``clamp(x, -lo, -hi)``).

The ``scalars`` distribution scales every Python float argument (``ktui.worker.cases.scale_scalars``). An int or a bool
argument (an exponent ``p``, a ``k``, a ``causal`` flag) is as much an argument: a kernel that folds the one value
``generate_input`` makes into a constant (``x * x * x`` for ``x ** p``) is wrong on any other. Moving one blindly is
not safe (an int is often a size, an axis or an index), so the judge tries each move on the reference first, on the
smallest and the largest test spec (``argument_moves``): an int moved by +1, -1 or x2 (``cases.INT_MOVES``), a bool
flipped, each kept only where

- the reference still runs, in float64 and in its own precision,
- its output keeps its structure and every leaf its shape and dtype (a move that changes a shape is a size: the
  spec's business, ``ktui.worker.fuzz``), except for an int that is no dimension or element count of any input
  tensor (a parameter such as top-k's ``k``, ``_parameters``), whose moves may change the output's shape (red team
  round 24, F8),
- the output stays a valid target (``special.valid_reference``: no NaN unless allowed, no overflow the native
  precision cannot follow), and
- the output changes on some spec (the output depends on the argument; a size argument that only clamps a slice,
  ``x[:n + 1]``, changes nothing and is never moved: an honest kernel that trusts it could read out of bounds).

Each run then draws a few combinations of the kept moves (``scalar_moves``, from the run's seed), each tried on the
reference as a whole, and the case plan gives one to each ``scalars`` case (``Case.vary``). An argument with no kept
move is reported with why (``scalar_notes``, shown by the run rung): the checks never saw another value of it.
"""

from __future__ import annotations

import enum
import random
from typing import Any

import torch

from ktui.protocol import spec_size
from ktui.worker.cases import (
    BOOL_MOVES,
    FLOAT_MOVES,
    HELD,
    INT_MOVES,
    RELABEL,
    _is_bool,
    _is_complex,
    _is_float,
    _map_inputs,
    build_input,
    is_int_tensor,
    is_moved_arg,
    move_ints,
    moved,
)
from ktui.worker.problem import Problem, inputs_only, trial_device
from ktui.worker.special import valid_reference
from ktui.worker.structure import structure
from ktui.worker.tensors import flatten

COMBINATIONS = 3  # combinations of kept moves drawn per run at least (one per ``scalars`` case, cycling)
MAX_COMBINATIONS = 12  # and at most, when there are more float moves to cycle through


def int_arguments(problem: Problem, data: Any) -> list[tuple[str, Any]]:
    """The Python int, bool and float leaves of ``data`` (declared output buffers left out), as (path, value) in
    order: the arguments ``move_ints`` may move."""
    found: list[tuple[str, Any]] = []

    def note(x: Any, path: str) -> Any:
        found.append((path, x))
        return x

    _map_inputs(data, problem.outputs, note, leaf=is_moved_arg)
    return found


def _picks(problem: Problem) -> list[int]:
    """The smallest and the largest test spec (indices): where a move is tried."""
    order = sorted(range(len(problem.tests)), key=lambda i: spec_size(problem.tests[i]))
    return sorted({order[0], order[-1]})


def _outcome(problem: Problem, data: Any) -> tuple[Any, Any] | str:
    """(float64 output, native output) of the reference on ``data``, or why it is no valid target (a str)."""
    try:
        ref, _ = problem.reference(data)
        native = problem.reference_native(data)
    except Exception as exc:
        return f"the reference raised {type(exc.__cause__ or exc).__name__}"
    why = valid_reference(ref, native, problem.allow_nan)
    return why or (ref, native)


def _same_kind(a: Any, b: Any, shapes: bool = True) -> bool:
    """The same structure, and every leaf the same kind, shape (unless ``shapes`` is False: the same rank) and
    dtype."""
    if structure(a) != structure(b):
        return False
    la, lb = flatten(a), flatten(b)
    if [p for p, _ in la] != [p for p, _ in lb]:
        return False
    for (_, x), (_, y) in zip(la, lb):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor) and (x.dtype != y.dtype or x.ndim != y.ndim or (shapes and x.shape != y.shape)):
            return False
        if not isinstance(x, torch.Tensor) and type(x) is not type(y):
            return False
    return True


def _differs(a: Any, b: Any) -> bool:
    """Some leaf of ``a`` differs from ``b``'s (outputs of the same kind; NaN equals NaN)."""
    for (_, x), (_, y) in zip(flatten(a), flatten(b)):
        if isinstance(x, torch.Tensor):
            x, y = x.detach().cpu(), y.detach().cpu()
            if x.shape != y.shape:  # a parameter's move (``_parameters``) resized it
                return True
            if x.is_floating_point() or x.is_complex():
                same = (x == y) | (torch.isnan(x) & torch.isnan(y))
            else:
                same = x == y
            if not bool(same.all()):
                return True
        elif x != y and not (x != x and y != y):
            return True
    return False


def _try(
    problem: Problem,
    base: dict[int, tuple[Any, Any]],
    vary: dict[str, str],
    device: str,
    same: bool = False,
    reshapes: frozenset[str] = frozenset(),
) -> str:
    """Why the moves ``vary`` are not kept ('' when they are): the reference on the moved inputs of each picked spec
    (``base``: spec index -> its unmoved float64 output and inputs) raises, changes a shape (unless every moved path
    is in ``reshapes``: ints no input tensor carries as a size, ``_parameters``), a dtype, a rank or the structure,
    is no valid target, or changes nothing on any spec (with ``same``: changes anything on some spec)."""
    changed = False
    shapes = not set(vary) & reshapes  # a parameter moved: the output's shape may follow it
    for ref0, data in base.values():
        got = _outcome(problem, move_ints(data, problem.outputs, vary))
        if isinstance(got, str):
            return got
        if not _same_kind(ref0, got[0], shapes=shapes):
            return "it changes the output's shape, dtype or structure (a size: the spec's business)"
        changed |= _differs(ref0, got[0])
    if same:
        return "it changes the output (the argument is no tag the inputs carry)" if changed else ""
    return "" if changed else "the output does not change"


def _held(problem: Problem, base: dict[int, tuple[Any, Any]]) -> tuple[set[int], list[torch.dtype]]:
    """The values the integer input tensors of the picked specs hold (``base``), and their dtypes."""
    held: set[int] = set()
    dtypes: list[torch.dtype] = []
    for _, data in base.values():
        for _, t in flatten(inputs_only(problem, data)):
            if is_int_tensor(t):
                if t.numel() <= RELABEL_SCAN:
                    held.update(int(v) for v in torch.unique(t.detach().cpu()).tolist())
                dtypes.append(t.dtype)
    return held, dtypes


RELABEL_SCAN = 1 << 22  # ``_relabels``: integer inputs of more elements than this are not scanned for a tag
RELABEL_SEEDS = 4  # ``_holding``: the seeds of each test spec looked through for inputs holding a tag


def _holding(problem: Problem, path: str, value: int, device: str) -> dict[int, tuple[Any, Any]] | None:
    """A base for ``_try`` (spec index -> unmoved float64 output and inputs) of the first inputs, over the test
    specs from the smallest and seeds 1..``RELABEL_SEEDS``, whose int argument at ``path`` is ``value`` and whose
    integer inputs hold it; None when none does (or the reference fails on it)."""
    device = trial_device(problem, device)
    order = sorted(range(len(problem.tests)), key=lambda i: spec_size(problem.tests[i]))
    for seed in range(1, RELABEL_SEEDS + 1):
        for i in order:
            try:
                data = build_input(problem, {"spec_index": i, "seed": seed}, device)
            except Exception:
                continue
            if (
                dict(int_arguments(problem, data)).get(path) != value
                or value not in _held(problem, {i: (None, data)})[0]
            ):
                continue
            try:
                ref, _ = problem.reference(data)
            except Exception:
                return None
            return {i: (ref, data)}
    return None


def _relabels(
    problem: Problem, base: dict[int, tuple[Any, Any]], path: str, value: int, device: str
) -> tuple[list[str], str]:
    """The ``relabel:`` moves (``cases.RELABEL``) kept for the int argument ``value`` at ``path``, and why none is
    ('' when one is or the value is in no integer input). Red team round 22, F6: ``ignore_index = -100`` with the
    labels' padding positions -100: every +1, -1 or x2 of it alone makes those labels invalid classes (the reference
    raises), so it was never moved and a kernel comparing the labels with the constant -100 passed. An argument whose
    value the integer inputs hold is moved with its occurrences: first to a value they do not hold (v - 1, v + 1, or
    past their ends), kept only where the reference's output does not change at all (the argument is a tag the
    inputs carry, and any tag names the same positions); then, only if that was kept, to the value they hold most
    often besides it (``relabel:held``, ``cases.held_value``: those positions become tagged too), kept on the terms
    of any move (the output changes). The first catches a kernel that compares with the constant and reads the class
    it names (-101: out of bounds), the second one that compares with the constant and guards its loads."""
    held, dtypes = _held(problem, base)
    if value not in held:
        # the picked specs' inputs at seed 1 may hold it nowhere where others do (new-user trial 35, F4: labels
        # ignored with probability 1/4 held no -100 on (1, 1) or (2, 32000) at seed 1, and a kernel comparing with
        # the constant -100 passed): the inputs of every test spec at a few seeds are looked through
        found = _holding(problem, path, value, device)
        if found is None:
            tried = f"{len(problem.tests)} test spec{'s' * (len(problem.tests) != 1)} x seeds 1..{RELABEL_SEEDS}"
            return [], f"no integer input holds {value} on the inputs tried ({tried}): no tag to move"
        base = found
        held, dtypes = _held(problem, base)

    def fits(w: int) -> bool:
        return all(torch.iinfo(d).min <= w <= torch.iinfo(d).max for d in dtypes)

    outside = next((w for w in (value - 1, value + 1, min(held) - 1, max(held) + 1) if w not in held and fits(w)), None)
    if outside is None:
        return [], "no value the integer inputs do not hold"
    first = f"{RELABEL}{outside}"
    why = _try(problem, base, {path: first}, device, same=True)
    if why:
        return [], f"{first}: {why}"
    kept = [first]
    if not _try(problem, base, {path: f"{RELABEL}{HELD}"}, device):
        kept.append(f"{RELABEL}{HELD}")
    return kept, ""


def _crosses(value: float, move: str, others: list[tuple[str, Any]]) -> str:
    """Why the float ``value`` moved by ``move`` is not kept for its order ('' when it is): it reaches or passes
    another float argument it was below or above (``others``: (path, value)), or leaves one it equalled. A pair of
    floats is often a range (``clamp(x, lo, hi)``: lo + 1.0 = 1.0 = hi, or hi negated below lo), where torch and an
    honest ``max(min(x, hi), lo)`` disagree once the order flips: no kernel's error (red team round 17b)."""
    new = float(moved(value, move))
    for path, other in others:
        w = float(other)  # (unscaled: a case that moves a float scales none, ``cases.build_input``)
        if ((float(value) > w) - (float(value) < w)) != ((new > w) - (new < w)):
            return f"it changes its order with the float in{path} (= {other!r}): a range's ends would cross"
    return ""


def _parameters(problem: Problem, base: dict[int, tuple[Any, Any]]) -> frozenset[str]:
    """The paths of the int arguments (not bools) whose value is no dimension and no element count of any input
    tensor on any picked spec (``base``): a parameter such as top-k's ``k``, whose moves may change the output's
    shape (red team round 24, F8: every +1, -1 or x2 of ``k`` changed the shape, so none was kept and a kernel with
    8 folded in passed). An int that equals a size the inputs carry (``n`` beside a tensor of n elements) is a size,
    the spec's business: moving it alone would give inputs no honest kernel is asked to agree with."""
    sizes: set[int] = set()
    for _, data in base.values():
        for _, t in flatten(inputs_only(problem, data)):
            if isinstance(t, torch.Tensor):
                sizes.update(int(d) for d in t.shape)
                sizes.add(t.numel())
    args = [dict(int_arguments(problem, data)) for _, data in base.values()]
    return frozenset(
        path
        for path, value in args[0].items()
        if type(value) is int and all(type(a.get(path)) is int and a[path] not in sizes for a in args)
    )


def _base(problem: Problem, device: str) -> dict[int, tuple[Any, Any]] | None:
    """Per picked spec its unmoved float64 output and native inputs (seed 1); None when the inputs hold no int or
    bool argument (nothing run) or the reference fails on them (the cases will say so). Built on the CPU where the
    reference runs there (``problem.trial_device``), and every move is tried on these inputs: on a GPU a moved
    argument that sends an integer input out of range (``ignore_index`` moved off the labels' -100) is a
    device-side assert, which loses the judge's CUDA context, where on the CPU it is the trial's IndexError."""
    device = trial_device(problem, device)
    built = {}
    for i in _picks(problem):
        try:
            built[i] = build_input(problem, {"spec_index": i, "seed": 1}, device)
        except Exception:
            return None
        if not int_arguments(problem, built[i]):
            return None
    out = {}
    for i, data in built.items():
        try:
            ref, _ = problem.reference(data)
        except Exception:
            return None
        out[i] = (ref, data)
    return out


def positive_only(problem: Problem, device: str) -> set[str]:
    """The float argument paths (``in[3]``'s ``[3]``) that ``generate_input`` makes positive on every spec
    ``argument_moves`` tried (its smallest and largest): a softmax scale, a temperature, an ``eps``, a smoothing.
    Their ``neg`` move is a sign the problem never makes, so a case failing only there is a domain the kernel may
    assume (red team round 29, #11; new-user trial 29, F6): ``Judge.do_compare`` reports it as a warning. Empty when
    no spec could be built."""
    argument_moves(problem, device)
    base: dict[int, tuple[Any, Any]] | None = getattr(problem, "_argument_base", None)
    seen: set[str] | None = None
    for _, data in (base or {}).values():
        pos = {p for p, v in int_arguments(problem, data) if _is_float(v) and v > 0}
        seen = pos if seen is None else seen & pos
    return seen or set()


def argument_moves(problem: Problem, device: str) -> tuple[dict[str, list[str]], list[str]]:
    """Per int, bool or float argument path the moves the reference accepts (see the module docstring), and a note
    per int or bool argument with none (``the int argument [1] (= 3) is never varied: ...``). Cached on the problem
    (once per reference sha)."""
    cached: tuple[dict[str, list[str]], list[str]] | None = getattr(problem, "_argument_moves", None)
    if cached is not None:
        return cached
    moves: dict[str, list[str]] = {}
    notes: list[str] = []
    base = _base(problem, device)
    setattr(problem, "_argument_base", base)  # noqa: B010 - the unmoved outputs, for ``scalar_moves``
    if base:
        first = next(iter(base.values()))[1]
        reshapes = _parameters(problem, base)
        setattr(problem, "_argument_reshapes", reshapes)  # noqa: B010 - for ``scalar_moves``
        for path, value in int_arguments(problem, first):
            kept: list[str] = []
            why: dict[str, list[str]] = {}
            is_float = _is_float(value) or _is_complex(value)  # (a complex: moved as a float, never ordered)
            floats = [(p, v) for p, v in int_arguments(problem, first) if p != path and _is_float(v)]
            for move in FLOAT_MOVES if is_float else BOOL_MOVES if _is_bool(value) else INT_MOVES:
                reason = _crosses(value, move, floats) if _is_float(value) else ""
                reason = reason or _try(problem, base, {path: move}, device, reshapes=reshapes)
                if reason:
                    why.setdefault(reason, []).append(move)
                else:
                    kept.append(move)
            if type(value) is int and not kept:  # (not a bool) a tag the integer inputs carry: moved with them
                kept, reason = _relabels(problem, base, path, value, device)
                if reason:
                    why.setdefault(reason, [])
            if kept:
                moves[path] = kept
            elif is_float and value * 0.5 != value:  # scaled by 0.5..2x still (``scale_scalars``): no note
                pass
            else:  # (a float of 0.0 or inf: no scaling changes it either)
                kind = type(value).__name__
                tried = "; ".join(f"{' '.join(ms)}: {r}" if ms else r for r, ms in why.items())
                notes.append(
                    f"the {kind} argument in{path} (= {value!r}) is never varied by the scalars cases: the reference "
                    f"takes no other value of it ({tried}); a kernel that folds it into a constant is not caught"
                )
    result = (moves, notes)
    setattr(problem, "_argument_moves", result)  # noqa: B010 - a cache on the loaded problem
    return result


def _fixed_kind(leaf: Any) -> bool:
    """An argument leaf no case moves: a str, a ``torch.dtype``, an enum member (not an int or float one: those
    move)."""
    return isinstance(leaf, (str, torch.dtype)) or (isinstance(leaf, enum.Enum) and not is_moved_arg(leaf))


FIXED_SPECS = 16  # fixed_arguments: the test specs whose inputs it builds, at most


def fixed_arguments(problem: Problem, device: str) -> list[str]:
    """A note per str, ``torch.dtype`` or enum argument of the inputs that has one value in every test spec (the
    first ``FIXED_SPECS``, seed 1): no case gives it another, so a kernel that ignores it (always the tanh form of a
    GELU asked for ``approximate``) is not caught; red team round 19, W5. Empty when the inputs cannot be built
    (the cases say why). Cached on the problem."""
    cached: list[str] | None = getattr(problem, "_fixed_arguments", None)
    if cached is not None:
        return cached
    values: dict[str, list[Any]] = {}
    try:
        for i in range(min(len(problem.tests), FIXED_SPECS)):
            data = build_input(problem, {"spec_index": i, "seed": 1}, device)
            _map_inputs(data, problem.outputs, lambda x, path: values.setdefault(path, []).append(x), leaf=_fixed_kind)
    except Exception:
        values = {}
    notes = [
        f"the {type(vs[0]).__name__} argument in{path} (= {vs[0]!r}) has that one value in every test spec: no case "
        "varies it, so a kernel that ignores it is not caught; give it a spec field with each value in the tests"
        for path, vs in values.items()
        if all(v == vs[0] and type(v) is type(vs[0]) for v in vs)
    ]
    setattr(problem, "_fixed_arguments", notes)  # noqa: B010 - a cache on the loaded problem
    return notes


def scalar_moves(problem: Problem, device: str, seed: int, count: int = COMBINATIONS) -> list[dict[str, str]]:
    """Up to ``count`` combinations of the kept moves (one move per int or bool argument and at most one float
    argument moved, drawn from ``seed``), each tried on the reference as a whole (``_try``); the case plan gives one
    to each ``scalars`` case. Empty when no argument can move."""
    moves, _ = argument_moves(problem, device)
    base: dict[int, tuple[Any, Any]] | None = getattr(problem, "_argument_base", None)
    if not moves or not base:
        return []
    out: list[dict[str, str]] = []
    # Floats: one at a time (``clamp(x, lo, hi)`` with both negated has lo > hi, where torch and an honest min/max
    # disagree: no such case is any kernel's error), in turn none (scaled only) and each float's each kept move
    options = [None, *((path, m) for path, ms in moves.items() if ms[0] in FLOAT_MOVES for m in ms)]
    start = random.Random(f"{seed}:float-moves").randrange(len(options))
    # as many combinations as float options (up to MAX_COMBINATIONS): a run's scalars cases (one per fixed spec at
    # least) meet each float's each move, not the few of them 3 consecutive options held (red team round 17: a
    # beta moved by +1.0 only was 1 of 5 options)
    for k in range(max(count, min(len(options), MAX_COMBINATIONS))):
        combo = {}
        pick = options[(start + k) % len(options)]
        if pick is not None:
            combo[pick[0]] = pick[1]
        for path, ms in moves.items():
            if ms[0] not in FLOAT_MOVES:  # each int's moves in turn from a drawn one: every move met in len(ms) cases
                combo[path] = ms[(k + random.Random(f"{seed}:{path}:vary").randrange(len(ms))) % len(ms)]
        if combo in out:  # {}: floats scaled only, as before these moves
            continue
        reshapes: frozenset[str] = getattr(problem, "_argument_reshapes", frozenset())
        if len(combo) > 1 and _try(problem, base, combo, device, reshapes=reshapes):  # each alone ran; together?
            continue
        out.append(combo)
    return out
