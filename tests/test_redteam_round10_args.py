"""Ways through and false alarms found by the round 10 red team, each with its twin:

- an int argument was never varied (the ``scalars`` cases scaled floats only): a kernel that folds the exponent
  ``p = 3`` into ``x * x * x`` passed; ints now move by +1, -1 or x2 and bools flip, where the reference takes it,
  and an argument never moved is named in the run rung (``ktui.worker.arguments``);
- the sizes inside a tuple spec field were never fuzzed: a ``"shape": (n,)`` reference got no fuzzed spec, silently,
  and a vec4 path wrong when n % 4 == 0 passed; the integers of tuple and list fields are fuzzed now, and a run that
  can draw no fuzzed spec says so (``ktui.worker.fuzz``).
"""

from __future__ import annotations

import hashlib

from ktui.core.results import Status

from .test_cases import CASES, K, corr, good, run

R = CASES / "references"


def _problem(name: str):
    from ktui.worker.problem import Problem

    path = R / f"{name}.py"
    return Problem(path, name, hashlib.sha256(path.read_bytes()).hexdigest())


# -- W1: int and bool arguments ------------------------------------------------------------------------------------
def test_an_int_exponent_folded_into_a_constant_fails_on_the_scalars_cases_and_its_twin_passes(make_ws, ladder_for):
    ref = R / "powi.py"
    bad = corr(run(make_ws, ladder_for, "powi", K / "powi_int_folded_bad.py", reference=ref, seed=5))
    assert bad.status is Status.FAILED, bad.summary
    assert "dist=scalars vary=[1]" in bad.summary and "elements outside" in bad.summary, bad.summary
    failed = [c for s in bad.figures["specs"] for c in s["failed_cases"]]
    assert failed and all("dist=scalars vary=[1]" in c for c in failed), failed
    good(run(make_ws, ladder_for, "powi", K / "powi_good.py", reference=ref, seed=5))


def test_int_and_bool_arguments_move_only_where_the_reference_takes_them_and_the_others_are_named():
    from ktui.worker.arguments import argument_moves, scalar_moves
    from ktui.worker.cases import build_input

    problem = _problem("args_mixed")
    moves, notes = argument_moves(problem, "cpu")
    # the exponent moves every way, the flag flips; a count that only clamps a slice and a width that sets the
    # output's shape never move, each named with why
    assert moves == {"[1]": ["+1", "-1", "x2"], "[2]": ["flip"]}
    assert len(notes) == 2, notes
    assert "in[3] (= 5) is never varied" in notes[0] and "the output does not change" in notes[0]
    assert "in[4] (= 4) is never varied" in notes[1] and "changes the output's shape" in notes[1]
    combos = scalar_moves(problem, "cpu", 3)
    assert combos and all(set(c) == {"[1]", "[2]"} for c in combos), combos
    case = {"spec_index": 0, "seed": 9, "dist": "scalars", "vary": {"[1]": "x2", "[2]": "flip"}}
    _, p, negate, count, width = build_input(problem, case, "cpu")
    assert (p, negate, count, width) == (6, False, 5, 4)


def test_the_run_rung_names_an_argument_it_never_varies(make_ws, ladder_for):
    from ktui.core.ladder.rungs.run import add_coverage_notes
    from ktui.core.results import RungResult

    rr = RungResult("run", Status.OK, summary="4 cases ok on 2 specs")
    add_coverage_notes(rr, {"scalar_notes": ["the int argument in[3] (= 5) is never varied by the scalars cases"]})
    assert rr.warnings == ["the int argument in[3] (= 5) is never varied by the scalars cases"]
    assert rr.summary == "4 cases ok on 2 specs"


# -- W5: sizes inside tuple fields ---------------------------------------------------------------------------------
def test_sizes_in_a_shape_tuple_are_fuzzed_so_an_even_fast_path_fails_and_its_twin_passes(make_ws, ladder_for):
    ref = R / "vadd_shape.py"
    bad = corr(run(make_ws, ladder_for, "vadd_shape", K / "vadd_shape_even_path_bad.py", reference=ref, seed=5))
    assert bad.status is Status.FAILED, bad.summary
    failing = [s for s in bad.figures["specs"] if not s["ok"]]
    assert failing and all(s["fuzzed"] for s in failing), [s["label"] for s in failing]
    assert all(isinstance(s["spec"]["shape"], list) and s["spec"]["shape"][-1] % 4 == 0 for s in failing)
    assert bad.summary.startswith("spec=fuzzed((") and "4 elements unwritten" in bad.summary, bad.summary
    twin = good(run(make_ws, ladder_for, "vadd_shape", K / "vadd_shape_good.py", reference=ref, seed=5))
    fuzzed = twin.rung("correctness").figures["fuzzed"]
    assert len(fuzzed) >= 4 and all(label.startswith("fuzzed((") for label in fuzzed), fuzzed


def test_flat_fields_of_a_tuple_spec_count_from_the_end_and_come_back_as_tuples():
    from ktui.protocol import spec_size
    from ktui.worker.fuzz import draw_specs, flat_spec, nested_spec

    assert flat_spec({"shape": (3, 129), "dtype": "bf16"}) == {"shape[-2]": 3, "shape[-1]": 129, "dtype": "bf16"}
    assert nested_spec({"shape[-2]": 3, "shape[-1]": 8}, {"shape": tuple}) == {"shape": (3, 8)}
    assert spec_size({"shape": (3, 129), "n": 2}) == 3 * 129 * 2
    problem = _problem("vadd_shape")
    drawn = draw_specs(problem.module, problem.tests, problem.benchmarks, 7, "cpu", lambda s: True)
    assert len(drawn) == 5 and all(isinstance(s["shape"], tuple) for s in drawn), drawn
    # the benchmark's (1 << 28,) is reached along the innermost dimension, within the CPU budget
    assert any(s["shape"][-1] >= 65535 for s in drawn), drawn

    class Bounded:
        fuzz = {"shape": (1, 100)}

    small = [{"shape": (n,)} for n in (1, 7, 33)]
    bounded = draw_specs(Bounded, small, [], 7, "cpu", lambda s: True)
    assert bounded and all(1 <= s["shape"][0] <= 100 and s not in small for s in bounded), bounded


def test_a_reference_with_no_size_ktui_can_fuzz_is_said_so_in_the_run_rung(make_ws, ladder_for):
    res = good(
        run(make_ws, ladder_for, "vadd_named", K / "vadd_shape_good.py", reference=R / "vadd_named_sizes.py", seed=5)
    )
    r = res.rung("run")
    assert "no fuzzed specs (see warnings)" in r.summary, r.summary
    assert any("no fuzzed specs: the test specs hold no integer ktui can change" in w for w in r.warnings), r.warnings
