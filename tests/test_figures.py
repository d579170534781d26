"""The figures schemas (ktui.core.figures): what they accept, what they refuse, and their JSON Schema form."""

from __future__ import annotations

import json

import pytest

from ktui.core.figures import FIGURES, check, json_schema
from ktui.core.ladder.rungs.compile import compile_result
from ktui.core.ladder.rungs.run import run_result
from ktui.core.results import RUNG_ORDER


def test_every_rung_has_a_schema():
    assert set(FIGURES) == set(RUNG_ORDER)


def test_the_folds_figures_match_their_schemas():
    rr = compile_result({"languages": ["triton"], "launches": [{"kernel": "k", "target": "sm_90a"}]}, [], [])
    assert check("compile", rr.figures) == []
    rr = run_result({"cases": [{"spec_index": 0, "seed": 1, "seconds": 0.5}], "tampered": []}, [], 1)
    assert check("run", rr.figures) == []
    assert check("benchmark", {"reason": "interpreter"}, skipped=True) == []


def test_unknown_and_missing_figures_are_named():
    problems = check("run", {"calls": 1, "total_s": 0.1, "seeds": [], "tampered": [], "speed": 3})
    assert "run: unknown figure 'speed'" in problems
    assert "run: missing figure 'first_call_s'" in problems
    inner = check("correctness", {"specs": [{"label": "(1,)", "mystery": 1}], "cases": 1})
    assert inner == ["correctness.specs[0]: unknown figure 'mystery'"]
    with pytest.raises(KeyError):
        check("lint", {})


def test_the_json_schema_is_json_and_closed():
    schema = json_schema()
    json.dumps(schema)
    run = schema["run"]
    assert run["type"] == "object" and run["additionalProperties"] is False
    assert set(run["required"]) == {"calls", "first_call_s", "total_s", "seeds", "tampered"}
    assert run["properties"]["total_s"] == {"type": ["number", "string"]}  # "nan", "inf": json_safe
    assert run["properties"]["calls"] == {"type": "integer", "description": "cases executed"}  # its line's comment
    corr = schema["correctness"]
    assert corr["properties"]["specs"]["items"] == {"$ref": "#/$defs/CorrectnessSpec"}
    spec = corr["$defs"]["CorrectnessSpec"]
    assert spec["properties"]["label"] == {"type": "string", "description": "``(2, 4099, bf16)``"}
    assert spec["required"] == [] and spec["additionalProperties"] is False


def test_every_metric_the_correctness_fold_keeps_is_in_the_schema():
    from ktui.core.figures import CorrectnessSpec
    from ktui.core.ladder.rungs.correctness import METRIC_KEYS

    assert set(METRIC_KEYS) <= set(CorrectnessSpec.__annotations__)
