"""The judge's per-case verdict (its ``compare`` handler): one executed case against its prepared reference.

A case fails before any figure is computed when the candidate's inputs differ from the judge's, an output aliases an
input or changed after the call returned, or the outputs' structure differs from the reference's (container types,
lengths, dict keys and field names: ``ktui.worker.structure``; then the leaves' paths); otherwise each
output leaf is judged (``ktui.worker.metrics.verdict``) and checked for lower precision than declared (TF32 in a
float32 op) and for a second call on identical inputs answering differently.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

import torch

from ktui.protocol import CaseVerdict, ExecutedCase, OutputLeaf
from ktui.worker import metrics
from ktui.worker.cases import case_label, label_of
from ktui.worker.problem import Problem
from ktui.worker.structure import mismatch
from ktui.worker.tensors import flatten, load_output, poisoned_mask, same_bits
from ktui.worker.tolerance import EXACT, Tolerance, resolve


def judge_case(problem: Problem, prep: dict[str, Any], case: ExecutedCase, folder: Path, device: str) -> CaseVerdict:
    """The verdict on one executed case against its prepared reference ``prep`` (``Judge._prepare_one``): the
    candidate's inputs unchanged and identical to the judge's, no output aliasing an input, outputs of the expected
    structure, then each output leaf's verdict (``judge_leaf``); the worst leaf's figures are the case's."""
    # cast: these Case keys appear in CaseVerdict with the same types (int or str).
    base = cast(
        CaseVerdict, {k: case[k] for k in ("spec_index", "seed", "dist", "layout", "config", "repeat") if k in case}
    )
    shown = {**case, "layout": prep.get("layout_name") or case.get("layout")} if case.get("layout") else case
    base.update(
        {
            "label": label_of(problem, case),
            "case": case_label(label_of(problem, case), shown),
            "precision": prep["precision"],
            "policy_dtype": prep["policy_dtype"],
            "warnings": [],
        }
    )

    def fail(reason: str) -> CaseVerdict:
        return {**base, "ok": False, "reason": reason, "score": math.inf}

    if case.get("unsupported"):
        return {**base, "ok": True, "reason": "", "score": 0.0, "unsupported": case["unsupported"]}
    if prep.get("skip"):  # special values on which this case's reference is no valid target: not judged
        return {**base, "ok": True, "reason": "", "score": 0.0, "skipped": prep["skip"]}
    if case["input_hash_before"] != prep["input_hash"]:
        return fail(
            "the candidate's inputs differ from the judge's for the same case: generate_input is not "
            "deterministic, or the candidate worker was tampered with"
        )
    if case.get("aliases"):
        return fail(f"output aliases input: {', '.join(case['aliases'])} (the output must be memory of its own)")
    if case.get("changed_after"):
        return fail(
            "output changed after the call returned: still being written when custom_kernel returned "
            "(synchronize before returning), or a later call overwrote it (an output buffer kept and "
            "reused across calls)"
        )
    if case["input_hash_after"] != case["input_hash_before"]:
        return fail("input modified: the kernel wrote into its input tensors")
    want = flatten(prep["expected"])
    wref = dict(flatten(prep["ref"]))
    got = case["outputs"]
    by_path = {g["path"]: g for g in got}
    containers = mismatch(prep["structure"], case["structure"]) if "structure" in case and "structure" in prep else ""
    if containers:
        if set(by_path) != {p for p, _ in want}:
            containers += f"; returned {', '.join(by_path) or 'nothing'}, expected {', '.join(p for p, _ in want)}"
        return fail(containers)
    if len(got) != len(want) or set(by_path) != {p for p, _ in want}:
        return fail(
            f"returned {len(got)} output(s) ({', '.join(g['path'] or 'out' for g in got)}), "
            f"expected {len(want)} ({', '.join(p or 'out' for p, _ in want)}): the output's structure "
            "(nesting, names of dict keys) must match the reference's"
        )
    tol = resolve(prep["policy_dtype"], problem.tolerance)
    leaves: list[dict[str, Any]] = []
    for path, exp in want:  # matched by path, not by order: swapped dict entries compare with their names' values
        g = by_path[path]
        # An integer or bool output compares exactly, whatever precision its inputs have (an index is right or
        # wrong); float outputs use the policy of the lowest precision involved.
        exp_int = isinstance(exp, (bool, int)) or (
            isinstance(exp, torch.Tensor) and not exp.is_floating_point() and not exp.is_complex()
        )
        leaf_tol = EXACT if exp_int else with_native(tol, prep, path)
        try:
            m = judge_leaf(problem, prep, case, folder, leaf_tol, path, exp, wref[path], g, device)
        except Exception as e:
            return fail(f"{path}: cannot compare with the reference ({type(e).__name__}: {e})")
        if isinstance(m, str):
            return fail(m)
        leaves.append(m)
    worst = max(leaves, key=lambda m: m["score"]) if leaves else {"ok": True, "reason": "", "score": 0.0}
    warnings = [w for m in leaves for w in m.get("warnings", [])]
    # cast: the worst leaf's figures are metrics.verdict's, CaseVerdict's keys (a chunked verdict adds ``chunked``).
    return cast(
        CaseVerdict,
        {
            **base,
            **worst,
            "ok": all(m["ok"] for m in leaves),
            "tolerance": worst.get("tolerance") or tol.describe(),
            "outputs": len(leaves),
            "warnings": warnings,
            **({"tf32_level": True} if any(m.get("tf32_level") for m in leaves) else {}),
        },
    )


def judge_leaf(
    problem: Problem,
    prep: dict[str, Any],
    case: ExecutedCase,
    folder: Path,
    tol: Tolerance,
    path: str,
    exp: Any,
    ref: Any,
    g: OutputLeaf,
    device: str,
) -> dict[str, Any] | str:
    """The verdict for one output leaf (``metrics.verdict``, chunked over ``metrics.LARGE`` elements, with the
    precision and determinism checks), or the reason it cannot be compared (a str)."""
    if not isinstance(exp, torch.Tensor):
        exp = torch.tensor(exp)
        ref = torch.tensor(ref, dtype=torch.float64) if isinstance(ref, (int, float)) else ref
    if g["kind"] == "number":
        out = torch.tensor(g["value"], dtype=torch.float64 if isinstance(g["value"], float) else exp.dtype)
        if isinstance(g["value"], float) and not exp.is_floating_point():
            if not float(g["value"]).is_integer():
                return f"{path} is {g['value']!r}, expected an integer"
            out = out.to(exp.dtype)
    elif g["kind"] != "tensor":
        return f"{path} is a {g['type']}, expected a tensor"
    else:
        exp_dtype = str(exp.dtype).removeprefix("torch.")
        if g.get("class", "torch.Tensor") not in ("torch.Tensor", "torch.nn.parameter.Parameter"):
            return (
                f"{path} is a {g['class']}, a subclass of torch.Tensor: return a plain tensor (a "
                "subclass can change what reading it gives)"
            )
        if g.get("device") and g["device"].split(":")[0] != device.split(":")[0]:
            return (
                f"{path} is on {g['device']}, expected {device}: the kernel must return its "
                "output on the device it ran on"
            )
        if g["dtype"] != exp_dtype:
            return f"{path} has dtype {g['dtype']}, expected {exp_dtype}"
        if list(g["shape"]) != list(exp.shape):
            return f"{path} has shape {tuple(g['shape'])}, expected {tuple(exp.shape)}"
        out = load_output(folder, g)
    if out.numel() > metrics.LARGE:
        m = metrics.verdict_large(out, ref, tol, allow_nan=problem.allow_nan, device=device)
        m["baseline_psnr_db"] = None
    else:
        m = metrics.verdict(out, ref, tol, unwritten=poisoned_mask(out), allow_nan=problem.allow_nan)
        m["baseline_psnr_db"] = metrics.error_metrics(exp, ref)["psnr_db"] if prep["precision"] != "native" else None
    m["path"] = path
    m["tolerance"] = tol.describe()
    if tol.native_dtype:
        m["native_max_abs_err"] = tol.native_err
    if path and not m["ok"]:
        m["reason"] = f"output {path}: {m['reason']}"
    precision_check(prep, path, m)
    if case.get("repeat_outputs"):
        determinism_check(
            folder / case["repeat_dir"], case["repeat_outputs"], g, out, ref, tol, m, problem.allow_nan, device
        )
    return m


def with_native(tol: Tolerance, prep: dict[str, Any], path: str) -> Tolerance:
    """``tol`` with the native-precision reference's errors on output ``path`` (``prep["native_err"]``, measured by
    ``ktui.worker.native``), when the judge measured them; else ``tol``."""
    err = (prep.get("native_err") or {}).get(path)
    if not err:
        return tol
    return tol.with_native(err["max_abs"], err["rel_l2"], str(prep["policy_dtype"]))


# The TF32 band (cases.md tf32): a measured rel_l2_err from 0.3x the smaller to 4x the larger of what TF32 operands
# cost on the case rounded and truncated (hardware may do either: the H200 truncates, which on data of one sign is a
# bias, ~14x the rounded error), and 10x above what fp32 costs.
TF32_BAND = (0.3, 4.0)


def precision_check(prep: dict[str, Any], path: str, m: dict[str, Any]) -> None:
    """Add to the leaf's verdict ``m`` what float32 and TF32 each cost on this case (``expected_rel_l2_fp32``,
    ``expected_rel_l2_tf32``) and ``tf32_level`` (True) when the measured error is in ``TF32_BAND`` although the op
    is declared float32. The correctness rung turns it into one warning per spec, for kernels that use a dot."""
    exp = (prep.get("expected_rel_l2") or {}).get(path)
    if not exp:
        return
    m["expected_rel_l2_fp32"], m["expected_rel_l2_tf32"] = exp["float32"], exp["tf32"]
    rz = exp.get("tf32_rz", exp["tf32"])
    m["expected_rel_l2_tf32_rz"] = rz
    measured = m["rel_l2_err"]
    lo, hi = TF32_BAND
    if (
        math.isfinite(measured)
        and measured > 10 * max(exp["float32"], 1e-7)
        and lo * min(exp["tf32"], rz) <= measured <= hi * max(exp["tf32"], rz)
    ):
        m["tf32_level"] = True


def determinism_check(
    folder: Path,
    repeat: list[OutputLeaf],
    leaf: OutputLeaf,
    out: torch.Tensor,
    ref: Any,
    tol: Tolerance,
    m: dict[str, Any],
    allow_nan: bool = False,
    device: str = "cpu",
) -> None:
    """Compare the output of a second call on identical inputs (``repeat``) with the first (``leaf``, ``out``): a
    different answer fails the leaf's verdict ``m`` when it is wrong or beyond the tolerance, else warns."""
    other = next((r for r in repeat if r["path"] == leaf["path"]), None)
    if other is not None and other.get("kind") == "number" and leaf.get("kind") == "number":
        if other["value"] != leaf["value"]:
            m["ok"], m["score"] = False, math.inf
            m["reason"] = (
                f"nondeterministic: the second call on identical inputs returned {other['value']!r}, "
                f"the first {leaf['value']!r}"
            )
        return
    if other is None or other.get("kind") != "tensor" or other.get("shape") != leaf.get("shape"):
        m["ok"], m["score"] = False, math.inf
        m["reason"] = "nondeterministic: the second call on identical inputs returned a different structure"
        return
    again = load_output(folder, other)
    if same_bits(out, again):  # bitwise, 0-d outputs too
        return
    # The second answer is an answer too: it must pass the same verdict as the first (a kernel that is right
    # once and then returns something else must not pass on the first call's figures).
    second = (
        metrics.verdict_large(again, ref, tol, allow_nan=allow_nan, device=device)
        if again.numel() > metrics.LARGE
        else metrics.verdict(again, ref, tol, unwritten=poisoned_mask(again), allow_nan=allow_nan)
    )
    if not second["ok"] and m["ok"]:
        m["ok"], m["score"] = False, math.inf
        m["reason"] = f"the second call on identical inputs is wrong: {second['reason']}"
        return
    a, b = out.double(), again.double()
    differ = int((a != b).logical_and(~(a.isnan() & b.isnan())).sum())
    spread = float((a - b).abs().nan_to_num(math.inf).max())
    m["nondeterministic_elements"], m["run_to_run_spread"] = differ, spread
    exact = not out.is_floating_point() or tol.mode == "exact"
    allowance = None
    if tol.mode == "allclose":
        allowance = (tol.atol + tol.rtol * ref.double().abs()).clamp_min(tol.native_atol)
    too_far = (
        exact
        or (allowance is not None and bool(((a - b).abs() > allowance).any()))
        or (tol.mode == "psnr" and metrics.error_metrics(again, ref)["psnr_db"] < tol.min_psnr_db)
    )
    text = f"nondeterministic: {differ} element(s) differ between two calls on identical inputs, spread {spread:.3g}"
    if too_far:
        m["ok"], m["score"] = False, math.inf
        m["reason"] = (
            (m["reason"] + "; " if m["reason"] else "")
            + text
            + (" (exact compare for integer outputs)" if exact else " (beyond the tolerance)")
        )
    else:
        m["warnings"].append(text + " (within the tolerance: float atomics or a race?)")
