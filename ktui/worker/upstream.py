"""The problem's own checker, run in the judge beside ktui's verdict: GPU MODE's
``check_implementation(data, output) -> (ok, message)`` (``problems/<set>/utils.py``'s ``match_reference`` and the
like), which an imported GPU MODE reference keeps verbatim.

Its verdict is shown next to ktui's and never replaces it: where they differ, ``ktui run``, its ``--json`` and
``ktui eval`` say so (``upstream: pass, ktui: fail (dtype)``). Like ``ref_kernel`` it is reference code, so it runs
only here, in the judge (no candidate code ever runs in this process): the candidate's output arrives as bytes and
is rebuilt into tensors on the judge's device (``output_object``); ``data`` is the case's inputs as the judge builds
them (``cases.build_input``), a copy no kernel saw, as GPU MODE's ``eval.py`` passes a clone of the generated data.

Only the cases that are the upstream problem's own are checked (``eligible``): its test specs (no fuzzed size), the
inputs exactly as ``generate_input`` draws them (the ``native`` distribution, contiguous, not perturbed) and one call
at a time (no burst): upstream's tolerances are set for those inputs, not for ktui's special values or layouts.
"""

from __future__ import annotations

import ast
import collections
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import torch

from ktui.protocol import CaseVerdict, Container, ExecutedCase, OutputLeaf
from ktui.worker.cases import build_input
from ktui.worker.problem import Problem
from ktui.worker.tensors import load_output

CHECK_NAME = "check_implementation"  # GPU MODE's name (reference.py)
MESSAGE_CHARS = 400  # an upstream message is kept to this many characters (``match_reference`` lists 5 elements)


def checker(problem: Problem) -> Callable[..., Any] | None:
    """The reference module's ``check_implementation`` when it defines a callable one, else None."""
    fn = getattr(problem.module, CHECK_NAME, None)
    return fn if callable(fn) else None


def eligible(case: Mapping[str, Any]) -> bool:
    """Whether ``case`` is one of the upstream problem's own cases (see the module's docstring): a test spec of the
    module (no fuzzed ``spec``), ``native`` inputs, contiguous, no near-duplicate, a single call."""
    return (
        case.get("spec") is None
        and case.get("dist", "native") == "native"
        and case.get("layout", "contiguous") == "contiguous"
        and not case.get("near_dup")
        and not case.get("calls")
        and not case.get("unsupported")
    )


def output_object(case: ExecutedCase, folder: Path, device: str) -> Any:
    """The candidate's output of ``case`` as the object ``custom_kernel`` returned, rebuilt from its leaves (files
    under ``folder``, loaded on ``device``) and its containers (``case["structure"]``): tuples, lists and dicts as
    such, a named tuple as a named tuple of the same fields, a dataclass as a ``SimpleNamespace`` of its fields.

    Raises:
        ValueError: a leaf's bytes were not sent (``tensors.save_outputs`` withheld them) or a leaf is neither a
            tensor nor a number, so the output cannot be rebuilt (the message says which).
    """
    leaves = {leaf["path"]: leaf for leaf in case.get("outputs", [])}
    containers = {c["path"]: c for c in case.get("structure", [])}

    def leaf_value(leaf: OutputLeaf) -> Any:
        if leaf["kind"] == "number":
            value = leaf["value"]
            return float(value) if isinstance(value, str) else value  # inf and NaN travel as strings
        if leaf["kind"] != "tensor" or not leaf.get("dtype"):
            raise ValueError(f"{leaf['path']} is a {leaf.get('type') or leaf.get('class')}, not a tensor or number")
        try:
            return load_output(folder, leaf).to(device)
        except ValueError as exc:
            raise ValueError(f"{leaf['path']}: {exc}") from None

    def build(path: str) -> Any:
        node: Container | None = containers.get(path)
        if node is None:
            if path not in leaves:
                raise ValueError(f"{path} is missing from the output")
            return leaf_value(leaves[path])
        kind, keys = node["kind"], node["keys"]
        if kind in ("tuple", "list"):
            items = [build(f"{path}[{i}]") for i in range(int(keys[0]))]
            return tuple(items) if kind == "tuple" else items
        if kind == "namedtuple":
            cls = collections.namedtuple(node["name"].rsplit(".", 1)[-1], keys, rename=True)  # type: ignore[misc]
            return cls(*(build(f"{path}[{i}]") for i in range(len(keys))))
        if kind == "dict":
            return {ast.literal_eval(k): build(f"{path}[{k}]") for k in keys}
        return types.SimpleNamespace(**{k: build(f"{path}.{k}") for k in keys})

    return build("out")


Status = Literal["pass", "fail", "error"]


def verdict_of(result: Any) -> tuple[Status, str]:
    """``(pass|fail|error, message)`` from what ``check_implementation`` returned: GPU MODE's ``(ok, message)``,
    or a message alone ('' passes), or a bool; anything else is an ``error`` naming its type."""
    if isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[0], (bool, torch.Tensor)):
        ok, message = result
        return ("pass" if bool(ok) else "fail"), str(message)[:MESSAGE_CHARS]
    if isinstance(result, str):
        return ("pass" if not result else "fail"), result[:MESSAGE_CHARS]
    if isinstance(result, bool):
        return ("pass" if result else "fail"), ""
    return "error", f"{CHECK_NAME} returned a {type(result).__name__}, not (ok, message)"


def check(problem: Problem, case: ExecutedCase, folder: Path, device: str) -> CaseVerdict:
    """The upstream checker's verdict on one executed case: ``{"upstream": "pass"|"fail"|"error"|"n/a",
    "upstream_message": ...}``. ``n/a``: the output could not be rebuilt (its bytes were withheld, or a leaf is no
    tensor or number); ``error``: the checker raised (the upstream harness would stop on it) or returned something
    else than a verdict. The checker gets the case's inputs built afresh on ``device`` and the rebuilt output; the
    global RNG is reseeded from the OS's entropy after it (``torch.seed()``: it may seed)."""
    fn = checker(problem)
    if fn is None:
        return CaseVerdict()
    try:
        output = output_object(case, folder, device)
    except ValueError as exc:
        return CaseVerdict(upstream="n/a", upstream_message=f"the output cannot be given to {CHECK_NAME}: {exc}")
    data = build_input(problem, case, device)
    try:
        result = fn(data, output)
    except Exception as exc:
        text = (str(exc).strip().splitlines() or [""])[0][:MESSAGE_CHARS]
        return CaseVerdict(upstream="error", upstream_message=f"{CHECK_NAME} raised {type(exc).__name__}: {text}")
    finally:
        torch.seed()
    status, message = verdict_of(result)
    return CaseVerdict(upstream=status, upstream_message=message)
