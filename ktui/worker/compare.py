"""The judge's per-case verdict (its ``compare`` handler): one executed case against its prepared reference.

A case fails before any figure is computed when the candidate's inputs differ from the judge's, an output aliases an
input or changed after the call returned, or the outputs' structure differs from the reference's (container types,
lengths, dict keys and field names: ``ktui.worker.structure``; then the leaves' paths); otherwise each
output leaf is judged (``ktui.worker.metrics.verdict``) and checked for lower precision than declared (TF32 in a
float32 op) and for a second call on identical inputs answering differently.

Whether an input changed during the call is decided here from the inputs' bytes as the call left them, which the
candidate writes beside its outputs, against the inputs the judge built itself (``input_changes``): the candidate's
own hashes and alias list are hints that can fail a case, never pass one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import torch

from ktui.protocol import Case, CaseVerdict, ExecutedCase, OutputLeaf
from ktui.protocol.distributions import SPECIAL_DISTRIBUTIONS
from ktui.worker import metrics
from ktui.worker.accumulator import FLOAT32_U, pair_magnitude
from ktui.worker.cases import build_input, case_label, empty_spec, label_of, spec_of
from ktui.worker.conditioning import GROSS_SLACK, native_rounding_moves, rounding_slack, truth_slack
from ktui.worker.ftz import ftz_allowance
from ktui.worker.grad_modes import MODE_FLAGS
from ktui.worker.indices import IndexSource, declared, index_allowance, select_verdict, traced_index_verdict
from ktui.worker.locate import index_of, where_bad
from ktui.worker.native import LOCAL_WINDOW, entry_rounding_allowance, local_errors
from ktui.worker.native import rounding_allowance as truth_moves
from ktui.worker.problem import Problem, _map, inputs_only, output_dtype
from ktui.worker.structure import mismatch
from ktui.worker.tensors import (
    bytes_digest,
    dtype_from_name,
    dtype_name,
    flatten,
    load_output,
    poisoned_mask,
    same_bits,
    tensor_bytes,
)
from ktui.worker.tolerance import EXACT, NATIVE_FACTOR, Tolerance, resolve
from ktui.worker.unordered import UnorderedGroup, canonical_, canonical_files, described

FLOAT32_EPS = float(torch.finfo(torch.float32).eps)  # ``rounding_allowance``: one ulp of what a kernel computes in
# ``rounding_allowance``: each inexact op result moved by this many ulps, up or down. A GPU kernel's exp, log, rsqrt
# and division are approximate: the CUDA C++ Programming Guide's table of single-precision functions gives expf,
# logf, rsqrtf within 2 ulp, the intrinsics __expf and __fdividef within 2 ulp over the range they meet (Triton's
# tl.exp lowers to ex2.approx.f32); correctly rounded ops are within half an ulp.
NATIVE_NOISE_ULPS = 2.0


def judge_case(problem: Problem, prep: dict[str, Any], case: ExecutedCase, folder: Path, device: str) -> CaseVerdict:
    """The verdict on one executed case against its prepared reference ``prep`` (``Judge._prepare_one``): the
    candidate's inputs unchanged and identical to the judge's, no output aliasing an input, outputs of the expected
    structure, then each output leaf's verdict (``judge_leaf``); the worst leaf's figures are the case's."""
    # cast: these Case keys appear in CaseVerdict with the same types (int or str).
    base = cast(
        CaseVerdict,
        {k: case[k] for k in ("spec_index", "seed", "dist", "layout", "config", "repeat", "grad") if k in case},
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
    if prep.get("layout_detail"):  # a verdict on a laid-out case names each input's layout and strides
        base["case"] = case_label(label_of(problem, case), {**shown, "layout_detail": prep["layout_detail"]})
    if case["input_hash_before"] != prep["input_hash"]:
        return fail(
            "the candidate's inputs differ from the judge's for the same case: generate_input is not "
            "deterministic, or the candidate worker was tampered with"
        )
    own = [a for a in case.get("aliases") or [] if a not in (prep.get("aliases") or [])]  # the reference's may stay
    if own:
        return fail(f"output aliases input: {', '.join(own)} (the output must be memory of its own)")
    # pairs of the reference's own tensor leaves only: a tensor where it returns None fails on the structure
    tensors = {p for p, t in flatten(prep["expected"]) if isinstance(t, torch.Tensor)}
    shared = [
        p
        for p in case.get("shared_outputs") or []
        if p not in (prep.get("shared_outputs") or []) and set(p.split(" shares memory with ")) <= tensors
    ]
    if shared:
        return fail(
            f"outputs share memory: {', '.join(shared[:4])}, where the reference's are separate (an in-place op on "
            "one changes the other: return memory of its own, e.g. out[-1:].clone())"
        )
    not_buffer = buffer_mismatch(problem, prep, case.get("buffer_leaves") or {})
    if not_buffer:
        return fail(not_buffer)
    changed = input_changes(problem, prep, case, folder, device)  # the judge's own check, from the bytes
    if changed:
        return fail(changed)
    if case.get("inputs_replaced"):
        return fail(
            f"input modified: {', '.join(case['inputs_replaced'][:4])} replaced during the call (a field or an entry "
            "of the caller's inputs now holds another object: the caller's inputs are not the kernel's to rebind)"
        )
    if case.get("inputs_repointed"):
        return fail(
            f"input modified: {', '.join(case['inputs_repointed'][:4])} re-pointed during the call (set_, resize_, "
            "as_strided_ or .data = on the caller's tensor: it no longer views the memory it viewed, even where its "
            "values read the same; make a local copy instead: x = x.contiguous())"
        )
    if case.get("changed_after"):
        return fail(
            "output changed after the call returned: still being written when custom_kernel returned "
            "(synchronize before returning), or a later call overwrote it (an output buffer kept and "
            "reused across calls)"
        )
    if case.get("grads_changed_after"):
        return fail(
            "gradient changed after the backward returned: a later backward of the op (another call's, made after "
            "this one's) wrote into a gradient this one returned (a gradient buffer kept per shape and returned "
            "again; a model using the op twice reads the other use's gradient): return memory of its own each time"
        )
    if case.get("inputs_changed_after"):
        return fail(
            "input modified after the call returned: its inputs as the call left them were checked, and they "
            "changed later, before the last call of the run (a thread still writing into them, or a later call "
            "that kept them as its scratch memory: the caller's tensors are not the kernel's to keep)"
        )
    if case["input_hash_after"] != case["input_hash_before"]:
        return fail("input modified: the kernel wrote into its input tensors")
    moved = generator_mismatch(prep.get("generators_after") or {}, case.get("generators_after") or {})
    if moved:
        return fail(moved)
    verdict = judge_outputs(problem, prep, case, folder, device, base)
    # a failed case, or one passed only against the reference's own error (``native_fails_too``: within 8x its error
    # nearby, which says nothing where that error is the truth's own noise), on special values
    excused = verdict["ok"] and any(str(w).startswith(EXCUSED) for w in verdict.get("warnings") or [])
    if (not verdict["ok"] or excused) and case.get("dist") in SPECIAL_DISTRIBUTIONS:
        why = undetermined_truth(problem, prep)
        if why:  # no valid target on these special values, as ``special.valid_reference`` finds before the call
            return {**base, "ok": True, "reason": "", "score": 0.0, "skipped": why}
    return verdict


def generator_mismatch(reference: dict[str, str], got: dict[str, str]) -> str:
    """Why the generators a call was given are not where the reference leaves them ('' when they are): ``reference``
    and ``got`` map each ``torch.Generator`` input's path to a digest of its state after the call
    (``tensors.generator_states``). Red team round 23, F1: a dropout drawing its mask from a copy of the caller's
    generator left it where it was, so every call with one generator dropped the same elements."""
    moved = [p for p in reference if got.get(p) != reference[p]]
    if not moved:
        return ""
    return (
        f"random state: the generator {', '.join(moved)} is not where the reference's call leaves it (the reference "
        "draws from it and advances it: draw from the caller's generator itself, as many numbers as the reference "
        "does, not from a copy or a generator of its own)"
    )


UNDETERMINED_FRAC = 0.01  # ``undetermined_truth``: the share of an output's elements that makes a case no target


def undetermined_truth(problem: Problem, prep: dict[str, Any]) -> str:
    """Why the float64 truth of a case on special values is no target ('' when it is one): its own roundings
    (``conditioning.rounding_slack``: the reference under random rounding) move at least ``UNDETERMINED_FRAC`` of a
    float output's elements by more than one unit roundoff of the output's dtype times the output's largest
    magnitude. New-user trial 22 F9: ``intrange`` drew RoPE positions near 2**62, where float64 does not hold the
    position and one rounding of the angle moves it by radians; the native reference failed by the same margin and an
    honest kernel failed correctness. Computed only for a failed case on special values."""
    inputs_of = prep.get("inputs_of")
    if inputs_of is None or not problem.float64 or prep.get("precision") != "float64":
        return ""
    expected = dict(flatten(prep["expected"]))
    for path, r in flatten(prep["ref"]):
        e = expected.get(path)
        if not isinstance(r, torch.Tensor) or not isinstance(e, torch.Tensor) or not e.is_floating_point():
            continue
        finite = r.detach().double()  # float8 has no max (red team 20's fp8 reference)
        finite = finite[torch.isfinite(finite)]
        if finite.numel() == 0:
            continue
        slack = rounding_slack(problem, inputs_of, path, r, prep.get("unordered"))
        if slack is None:
            continue
        bound = torch.finfo(e.dtype).eps / 2 * float(finite.abs().max())
        moved = int((slack > bound).sum())
        if moved >= max(1, UNDETERMINED_FRAC * r.numel()):
            return (
                f"the float64 reference is no truth on these values: its own roundings move {moved} of {r.numel()} "
                f"elements of {path} by more than {bound:.3g} (one {e.dtype} rounding of its largest value); the "
                "inputs exceed what its float math resolves (an integer past 2**53 made a float: leave this "
                "distribution out with input_distributions, or bound the values generate_input draws)"
            )
    return ""


def buffer_mismatch(problem: Problem, prep: dict[str, Any], got: dict[str, int]) -> str:
    """Why an output is not what the reference returns as a declared output buffer (``prep["buffer_leaves"]``: leaf
    path -> index into ``problem.outputs``; ``got``: the same for what the kernel returned, ``tensors.buffer_leaves``);
    '' when every such leaf is its buffer. A checked call's and a timed call's outputs alike (red team round 9)."""
    for path, j in (prep.get("buffer_leaves") or {}).items():
        if got.get(path) != j:
            return (
                f"{path} is not the declared output buffer (outputs entry {problem.outputs[j]!r}): the reference "
                "writes its result into that buffer and returns it, and callers read the buffer; write the result "
                "there and return it"
            )
    return ""


def judge_outputs(
    problem: Problem,
    prep: dict[str, Any],
    case: ExecutedCase,
    folder: Path,
    device: str,
    base: CaseVerdict,
    large: int = metrics.LARGE,
) -> CaseVerdict:
    """The second half of ``judge_case``, shared with the verdict on timed calls' outputs (``Judge.do_check_timed``):
    the outputs (``case["outputs"]``, their files under ``folder``) of the expected structure (``prep["structure"]``
    against ``case["structure"]``), then each leaf's verdict (``judge_leaf``; outputs of more than ``large``
    elements chunked on ``device``); the worst leaf's figures, added to ``base``, are the case's."""

    def fail(reason: str) -> CaseVerdict:
        return {**base, "ok": False, "reason": reason, "score": math.inf}

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
    unordered = prep.get("unordered") or []
    if unordered:  # topk(sorted=False) and unstable sort results: both sides in one order (``worker.unordered``)
        canonical_files(unordered, got, folder, prep["expected"])
        if case.get("repeat_outputs"):
            canonical_files(unordered, case["repeat_outputs"], folder / case["repeat_dir"], prep["expected"])
    tol = resolve(prep["policy_dtype"], problem.tolerance)
    leaves: list[dict[str, Any]] = []
    unjudged = prep.get("skip_outputs") or {}  # special values on which that output's reference is no valid target
    notes = [f"output {p or 'out'} not judged on this case: {why}" for p, why in unjudged.items()]
    for path, exp in want:  # matched by path, not by order: swapped dict entries compare with their names' values
        if path in unjudged:
            continue
        g = by_path[path]
        # An integer or bool output compares exactly, whatever precision its inputs have (an index is right or
        # wrong); a float output by its own dtype's policy: an fp32 log-sum-exp returned beside a bf16 softmax is
        # judged as fp32 (red team round 9: both were judged by the lowest precision among the outputs).
        exp_int = isinstance(exp, (bool, int)) or (
            isinstance(exp, torch.Tensor) and not exp.is_floating_point() and not exp.is_complex()
        )
        own = resolve(output_dtype(exp, prep["policy_dtype"]), problem.tolerance)  # each leaf by its own dtype
        leaf_tol = EXACT if exp_int else with_native(own, prep, path)
        try:
            m = judge_leaf(problem, prep, case, folder, leaf_tol, path, exp, wref[path], g, device, large)
        except Exception as e:
            return fail(f"{path}: cannot compare with the reference ({type(e).__name__}: {e})")
        if isinstance(m, str):
            return fail(m)
        leaves.append(m)
    in_place = judge_inplace(problem, prep, case, folder, device, large)
    if isinstance(in_place, str):
        return fail(in_place)
    leaves += in_place
    grads = judge_grads(problem, prep, case, folder, device, large)
    if isinstance(grads, str):
        return fail(grads)
    leaves += grads
    worst = max(leaves, key=lambda m: m["score"]) if leaves else {"ok": True, "reason": "", "score": 0.0}
    # a topk(sorted=False)'s leaves are told compared in sorted order; an unstable sort's are sorted already (only
    # its ties are put in order) and unique(sorted=False)'s are a set by its contract: nothing to say
    told = [u for u in unordered if u.get("kind") not in ("sort", "set")]
    warnings = notes + [w for m in leaves for w in m.get("warnings", [])] + ([described(told)] if told else [])
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


def judge_inplace(
    problem: Problem, prep: dict[str, Any], case: ExecutedCase, folder: Path, device: str, large: int
) -> list[dict[str, Any]] | str:
    """The verdicts of the declared in-place inputs (the reference's ``inplace``), judged as outputs: each one's
    contents after the call (``case["inplace_outputs"]``, files under ``folder/inplace``) against the reference's
    after its own call (``prep["inplace_ref"]``, float64 where it ran; the native ones ``prep["inplace_expected"]``
    give dtypes, shapes and the native error), by the output's rules (``judge_leaf``: its own dtype's tolerance,
    unwritten elements, the native allowances), named ``in[0]`` as the input is; a failure reads ``in-place input
    in[0]: ...``. Empty when the reference declares none; a str when the candidate sent none (the case fails)."""
    if not prep.get("inplace_ref"):
        return []
    sent = {"in" + g["path"][3:]: g for g in case.get("inplace_outputs") or []}
    truth = dict(flatten(prep["inplace_ref"], "in"))
    native_err = {"in" + k[3:]: v for k, v in (prep.get("inplace_native_err") or {}).items()}
    sub_prep = {**prep, "native_err": native_err, "expected_rel_l2": {}}
    # one call's contents: the second call's (``repeat``) are not judged for these
    sub_case = cast(ExecutedCase, {k: v for k, v in case.items() if k not in ("repeat_outputs", "repeat_dir")})
    out: list[dict[str, Any]] = []
    for path, exp in flatten(prep["inplace_expected"], "in"):
        g = sent.get(path)
        if g is None:
            return (
                f"the candidate sent no contents of the declared in-place input {path} as the call left it (ktui's "
                "worker code was altered?)"
            )
        g = cast(OutputLeaf, {**g, "path": path})
        exp_int = isinstance(exp, torch.Tensor) and not exp.is_floating_point() and not exp.is_complex()
        own = resolve(output_dtype(exp, prep["policy_dtype"]), problem.tolerance)
        tol = EXACT if exp_int else with_native(own, sub_prep, path)
        try:
            m = judge_leaf(
                problem, sub_prep, sub_case, folder / "inplace", tol, path, exp, truth[path], g, device, large
            )
        except Exception as e:
            return f"in-place input {path}: cannot compare with the reference ({type(e).__name__}: {e})"
        if isinstance(m, str):
            return f"in-place input {m}"
        m["reason"] = m["reason"].replace(f"output {path}:", f"in-place input {path}:", 1)
        out.append(m)
    return out


def judge_grads(
    problem: Problem, prep: dict[str, Any], case: ExecutedCase, folder: Path, device: str, large: int
) -> list[dict[str, Any]] | str:
    """The verdicts of a ``requires_grad`` case's input gradients (``worker.grad_modes``: red team round 29, #8): the
    version's (``case["grad_outputs"]``, files under ``folder/grad``, one per ``prep["grad_paths"]`` input in that
    order) against the reference's through its own backward on the same seeded cotangents (``prep["grad_ref"]``,
    float64 where it ran; the native ones ``prep["grad_expected"]`` give dtypes, shapes and the native error,
    ``prep["grad_native_err"]``), by an output's rules (``judge_leaf``: the gradient's own dtype's tolerance, unwritten
    elements, the native allowances), named as its input is; a failure reads ``the gradient of in[0]: ...``. Empty
    when the case judges no gradient; a str when the version sent another number of them (the case fails)."""
    names: list[str] = prep.get("grad_paths") or []
    if not names:
        return []
    sent = case.get("grad_outputs") or []
    if len(sent) != len(names):
        return (
            f"the version's backward gave {len(sent)} input gradient{'s' if len(sent) != 1 else ''}, expected "
            f"{len(names)} ({', '.join(names)}): the outputs that require grad must reach every input the reference's "
            "reach"
        )
    sub_prep = {
        **prep,
        "native_err": prep.get("grad_native_err") or {},
        "native_local": prep.get("grad_native_local") or {},  # (red team round 35b, #2)
        "expected_rel_l2": {},
        "precision": prep["grad_precision"],
        "flags": {},
        "needs_grad": [],
        "unordered": [],
        "index_sources": {},
        "inputs_of": None,  # (the allowances that run the reference again compute outputs, not gradients)
    }
    sub_case = cast(ExecutedCase, {k: v for k, v in case.items() if k not in ("repeat_outputs", "repeat_dir", "grad")})
    out: list[dict[str, Any]] = []
    for path, exp, truth, g in zip(names, prep["grad_expected"], prep["grad_ref"], sent, strict=True):
        g = cast(OutputLeaf, {**g, "path": path})
        tol = with_native(resolve(output_dtype(exp, prep["policy_dtype"]), problem.tolerance), sub_prep, path)
        try:
            m = judge_leaf(problem, sub_prep, sub_case, folder / "grad", tol, path, exp, truth, g, device, large)
        except Exception as e:
            return f"the gradient of {path}: cannot compare with the reference's ({type(e).__name__}: {e})"
        if isinstance(m, str):
            return f"the gradient of {m}"
        m["reason"] = m["reason"].replace(
            f"output {path}:", f"the gradient of {path} (the backward on seeded cotangents):", 1
        )
        out.append(m)
    return out


_INPUT_META = ("kind", "dtype", "shape", "class", "type", "repr")  # what an input leaf must keep (``input_leaf``)


def wrong_device(path: str, g: OutputLeaf, case: ExecutedCase, device: str) -> str:
    """Why output leaf ``g`` is not on the device the kernel ran on, or ''. The type (``cuda``, ``cpu``) is the judge's
    ``device``'s; the index is the inputs' (``case["inputs_after"]``' tensor leaves, ``cuda:0``): an output left on
    ``cuda:1`` for inputs on ``cuda:0`` makes the caller's next op with its own tensors raise "Expected all tensors
    to be on the same device" (red team round 21b, F3)."""
    where = g.get("device")
    if not where:
        return ""
    if where.split(":")[0] != device.split(":")[0]:
        return f"{path} is on {where}, expected {device}: the kernel must return its output on the device it ran on"
    inputs = {str(i["device"]) for i in case.get("inputs_after", []) if i.get("kind") == "tensor" and i.get("device")}
    if ":" in where and inputs and where not in inputs:
        return (
            f"{path} is on {where}, its inputs on {', '.join(sorted(inputs))}: the kernel must return its output on "
            "the device its inputs are on"
        )
    return ""


def input_changes(problem: Problem, prep: dict[str, Any], case: ExecutedCase, folder: Path, device: str) -> str:
    """Why the inputs as the call left them (``inputs_after``: the bytes the candidate wrote after the call,
    ``tensors.save_inputs``) are not, bit for bit, the inputs the judge built for the case (``prep["inputs"]``,
    ``tensors.input_facts``); '' when they are.

    Decided here, from the bytes received, never from the candidate's own hashes and alias list (a kernel that
    patches its worker forges those). A changed input is named with how many of its elements changed (counted
    against the case's inputs built again), and an output whose bytes are exactly a changed input's with it (the
    kernel wrote its result into the input and returned the input, or a copy)."""
    sent = case.get("inputs_after")
    if sent is None:
        return (
            "the candidate sent no inputs as the call left them, so the judge cannot check them (ktui's worker "
            "code was altered?)"
        )
    want: dict[str, tuple[OutputLeaf, str]] = prep["inputs"]
    got = {leaf.get("path", ""): leaf for leaf in sent}
    if len(got) != len(sent) or set(got) != set(want):
        diff = sorted(set(got) ^ set(want)) or ["a repeated path"]
        return f"input modified: the inputs' structure changed during the call ({', '.join(diff[:4])})"
    changed: list[tuple[str, bytes]] = []
    for path, (desc, digest) in want.items():
        g = got[path]
        if any(g.get(k) != desc.get(k) for k in _INPUT_META):
            return f"input modified: {path} was replaced during the call: {_leaf_text(g)}, expected {_leaf_text(desc)}"
        if not digest:
            continue
        if not g.get("file"):
            return f"the bytes of input {path} as the call left it were not sent, so the judge cannot check it"
        data = (folder / g["file"]).read_bytes()
        if bytes_digest(data) != digest:
            changed.append((path, data))
    if not changed:
        return ""
    rebuilt = dict(flatten(inputs_only(problem, build_input(problem, case, device)), "in"))
    parts = [f"{path}: {_changed_elements(rebuilt[path], data)} changed during the call" for path, data in changed]
    text = f"input modified: {'; '.join(parts)} (the kernel wrote into its input tensors)"
    for path, data in changed:
        for o in case.get("outputs", []):
            same_meta = o.get("dtype") == got[path].get("dtype") and o.get("shape") == got[path].get("shape")
            if o.get("file") and same_meta and (folder / o["file"]).read_bytes() == data:
                return (
                    f"{text}; {o['path']} holds exactly {path}'s values as the call left them: the output is that "
                    "input (aliasing: the output must be memory of its own) or a copy of it"
                )
    return text


def _leaf_text(leaf: OutputLeaf) -> str:
    if leaf.get("kind") == "tensor" and leaf.get("dtype"):
        return f"a {leaf['dtype']} tensor of shape {tuple(leaf.get('shape', []))}"
    if leaf.get("kind") == "tensor":
        return f"a {leaf.get('class')}"
    return f"{leaf.get('type')} {leaf.get('repr', '')}".strip()


def _changed_elements(before: torch.Tensor, after: bytes) -> str:
    """``3 of 1025 elements``: elements of ``before`` (the judge's input) whose bytes differ in ``after`` (the
    candidate's, same dtype and shape), NaN payloads included."""
    size = max(before.element_size(), 1)
    a = torch.frombuffer(bytearray(tensor_bytes(before)), dtype=torch.uint8) if before.numel() else None
    b = torch.frombuffer(bytearray(after), dtype=torch.uint8) if after else None
    if a is None or b is None or a.numel() != b.numel():
        return "its bytes"
    n = int((a.view(-1, size) != b.view(-1, size)).any(dim=1).sum())
    if n == 0:  # the judge's two builds disagree with each other: generate_input is not deterministic
        return "its bytes (the judge's inputs differ between two builds: generate_input is not deterministic?)"
    return f"{n} of {before.numel()} elements"


def number_dtype(exp: torch.Tensor, dtype: str) -> str:
    """Why a tensor of ``dtype`` cannot stand for the Python number the reference returned (``exp``, made a tensor:
    int64 for an int, bool, float32 for a float), '' when it can. A Python number fixes a value, not a width (red
    team round 16, F1: a count kept on the device as a 0-d int32 tensor failed "has dtype int32, expected int64"):
    for an int any integer dtype that holds it exactly, for a float any floating dtype (its value then judged by the
    tolerance), for a bool a bool."""
    try:
        t = dtype_from_name(dtype)
    except ValueError:
        return f"has dtype {dtype}, expected a tensor of the Python number's kind"
    if exp.dtype == torch.bool:
        return "" if t == torch.bool else f"has dtype {dtype}, expected bool (the reference returns a Python bool)"
    if exp.is_floating_point():
        if t.is_floating_point:
            return ""
        return f"has dtype {dtype}, expected a floating dtype (the reference returns a Python float)"
    if t.is_floating_point or t.is_complex or t == torch.bool:
        return f"has dtype {dtype}, expected an integer dtype (the reference returns a Python int)"
    info = torch.iinfo(t)
    value = int(exp)
    if not info.min <= value <= info.max:
        return f"has dtype {dtype}, which cannot hold the reference's Python int {value}"
    return ""


def overflow_rounded(out: torch.Tensor, ref: Any) -> Any:
    """``ref`` (the float64 truth) with the elements whose truth rounds to +-inf in ``out``'s dtype (past its range:
    fp16's 65504 + half an ulp) set to that infinity where ``out`` holds it: the correctly rounded answer in the
    output's dtype is inf there (new-user trial 28, F2: an honest fp16 GEMM gave inf where the truth was 68110.3, and
    failed against the fp16 reference's 65344, finite only because it rounded ``w * scale`` first; another seed
    passed). A finite answer there is judged against the finite truth as before. ``ref`` unchanged when ``out`` is
    not a floating tensor narrower than float64 or nothing overflows."""
    if (
        not isinstance(ref, torch.Tensor)
        or not ref.is_floating_point()
        or not out.is_floating_point()
        or out.dtype == torch.float64
        or out.shape != ref.shape
        or ref.dtype != torch.float64
    ):
        return ref
    rounded = ref.to(out.dtype).to(torch.float64)  # (read back in float64: fp8 has no isinf)
    past = torch.isinf(rounded) & torch.isfinite(ref)
    if not bool(past.any()):
        return ref
    o = out.to(ref.device)
    same = past & (o.to(torch.float64) == rounded)
    return torch.where(same, rounded, ref) if bool(same.any()) else ref


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
    large: int = metrics.LARGE,
) -> dict[str, Any] | str:
    """The verdict for one output leaf (``metrics.verdict``; ``metrics.verdict_large``, chunked on ``device``, over
    ``large`` elements; with the precision and determinism checks), or the reason it cannot be compared (a str)."""
    if exp is None:  # the reference returns None there (``(y, None)``: attention weights not asked for)
        if g["kind"] == "other" and g.get("type") == "NoneType":
            return {"ok": True, "reason": "", "score": -1.0, "none": True}  # (never the case's worst leaf)
        got = g.get("type") or g.get("dtype") or g["kind"]
        return f"{path} is a {got}, expected None (the reference returns None there)"
    type_note = ""
    exp_tensor = isinstance(exp, torch.Tensor)  # (a Python number becomes a tensor below: no native precision)
    if g["kind"] == "number" and isinstance(exp, torch.Tensor):  # red team round 5: a float for a 0-d tensor
        kind = "float" if isinstance(g["value"], str) else type(g["value"]).__name__
        type_note = (
            f"{path or 'out'} is a Python {kind} where the reference returns a {exp.dim()}-d "
            f"{str(exp.dtype).removeprefix('torch.')} tensor (a host sync per call; a caller that expects a tensor "
            "breaks)"
        )
    if not isinstance(exp, torch.Tensor):
        exp = torch.tensor(exp)
        ref = torch.tensor(ref, dtype=torch.float64) if isinstance(ref, (int, float)) else ref
    if g["kind"] == "number":
        value = float(g["value"]) if isinstance(g["value"], str) else g["value"]  # inf, NaN travel as "inf", "nan"
        out = torch.tensor(value, dtype=torch.float64 if isinstance(value, float) else exp.dtype)
        if isinstance(value, float) and not exp.is_floating_point():
            if not value.is_integer():
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
        why = flagged_output(prep, path, g, case.get("grad"))
        if why:
            return why
        why = wrong_device(path, g, case, device)
        if why:
            return why
        if not exp_tensor:  # a Python number from the reference: its value is the target, not torch's dtype for it
            why = number_dtype(exp, g["dtype"])
            if why:
                return f"{path} {why}"
            exp = exp.to(dtype_from_name(g["dtype"]))
        elif g["dtype"] != exp_dtype:
            return f"{path} has dtype {g['dtype']}, expected {exp_dtype}"
        if list(g["shape"]) != list(exp.shape):
            return f"{path} has shape {tuple(g['shape'])}, expected {tuple(exp.shape)}"
        # an in-place input (``in[1]``) keeps the caller's layout, which the kernel cannot change (new-user trial 25,
        # F10: a padded residual written in place was warned "not row-major ... return .contiguous()")
        # and so does an output that is a declared in-place input (an in-place op returning its state: red team round
        # 32b, #10, 7-9 "not row-major" warnings a run)
        returned = {a.partition(" aliases ")[0] for a in case.get("inplace_aliases") or []}
        caller_layout = path.startswith("in[") or path in broadcast_views(prep, case) or path in returned
        if exp_tensor and g.get("stride") is not None and not caller_layout:
            why, layout_note = layout_mismatch(
                path, exp, list(g["shape"]), list(g["stride"]), bool(prep.get("inputs_row_major"))
            )
            if why:
                return why
            type_note = type_note or layout_note
        out = load_output(folder, g)
    if out.is_complex():  # judged as its (real, imaginary) pairs: each part written and within rtol |z| of its own
        tol = replace(tol, pairs=True)
        out = torch.view_as_real(out.resolve_conj()).contiguous()
        ref = torch.view_as_real(ref.resolve_conj().to(torch.complex128 if ref.dtype != torch.complex32 else ref.dtype))
        exp = torch.view_as_real(exp.resolve_conj()) if isinstance(exp, torch.Tensor) and exp.is_complex() else exp
    ref = overflow_rounded(out, ref)
    if out.numel() > large:
        native = exp if isinstance(exp, torch.Tensor) else None
        m = metrics.verdict_large(out, ref, tol, allow_nan=problem.allow_nan, device=device, native=native)
        m["baseline_psnr_db"] = None
    else:
        m = metrics.verdict(out, ref, tol, unwritten=unwritten_mask(out, exp), allow_nan=problem.allow_nan)
        m["baseline_psnr_db"] = metrics.error_metrics(exp, ref)["psnr_db"] if prep["precision"] != "native" else None
        native_zeros_too(m, out, exp, ref)
    m["path"] = path
    if type_note:
        m.setdefault("warnings", []).append(type_note)
    m["tolerance"] = tol.describe()
    if tol.native_dtype:
        m["native_max_abs_err"] = tol.native_err
    if tol.mode == "exact" and not m["ok"]:
        # an integer result of float math: measured by the judge (float inputs), or computed natively (no float
        # input: a uint8 mean rounded; the reference is then its own truth)
        ranks = next(
            (u for u in prep.get("unordered") or [] if u["indices"] == path and u.get("source") is not None), None
        )
        # an index output the reference made with a ranking op (max, argmax, sort, topk...), unless it declares its
        # index outputs itself: judged by what it selects under the op's tie rule, never as a number
        traced = (prep.get("index_sources") or {}).get(path) if declared(problem.module) is None else None
        if traced is None and (
            (prep.get("native_err") or {}).get(path) is not None or prep.get("precision") == "native"
        ):
            integer_native_allowance(m, out, exp, ref, lambda: rounding_allowance(problem, prep, case["seed"], path))
        if not m["ok"] and exp_tensor and g["kind"] == "tensor" and ranks is not None:
            unordered_index_allowance(m, out, ref, ranks)  # a lone topk(sorted=False) indices leaf: by what it selects
        elif not m["ok"] and exp_tensor and g["kind"] == "tensor" and traced is not None:
            traced_index_allowance(m, out, exp, traced)
        elif not m["ok"] and exp_tensor and g["kind"] == "tensor":  # indices: judged by what they select (ties)
            index_allowance(problem.module, path, m, out, ref, prep["ref"], prep.get("inputs_of"))
    elementwise_failed = (  # low precision's elementwise rules (``metrics._elementwise``)
        float(m.get("gross_ratio", 0.0)) > 1
        or float(m.get("firm_frac") or 0.0) > tol.max_firm_frac
        or float(m.get("off_frac") or 0.0) > tol.max_off_frac
        or float(m.get("rel_l1_err") or 0.0) > tol.max_rel_l1
    )
    if not m["ok"] and elementwise_failed and tol.bounds_gross and exp_tensor and g["kind"] == "tensor":
        m = ill_conditioned_allowance(problem, prep, m, out, ref, tol, path, unwritten_mask(out, exp), device, large)
    if not m["ok"] and tol.mode != "exact" and exp_tensor and g["kind"] == "tensor" and out.numel() <= large:
        native_fails_too(m, out, exp, ref, tol, problem.allow_nan)
    if not m["ok"] and exp_tensor and g["kind"] == "tensor" and not m.get("unwritten"):
        # a float32 subnormal input the kernel read as zero, as the GPU's flush-to-zero paths do (ktui.worker.ftz)
        m = ftz_allowance(
            problem, prep.get("inputs_of"), m, out, ref, tol, path, unwritten_mask(out, exp), device, large
        )
    if m["ok"] and tol.mode == "allclose" and exp_tensor and g["kind"] == "tensor":
        zeros_where_the_truth_is_not(problem, prep, m, out, exp, ref, path, large)
    if m["ok"] and not (m.get("reference_fails") or m.get("ftz_elements")) and exp_tensor and g["kind"] == "tensor":
        # (a leaf judged against the reference's own error, or against flushed subnormals, was held to another bar)
        local_native_check(prep, m, out, ref, tol, path)
        if m["ok"] and out.numel() <= large:
            count_native_check(
                m, out, exp, ref, tol, lambda: rounding_allowance(problem, prep, case["seed"], path, counts=True)
            )
    if not m["ok"] and not m.get("unwritten") and empty_spec(spec_of(problem, case)):
        empty_size_allowance(m, out, ref, tol, path, problem.allow_nan)
    if path and not m["ok"]:
        m["reason"] = f"output {path}: {m['reason']}"
    precision_check(prep, path, m)
    if case.get("repeat_outputs") and not m.get("reference_fails"):  # (an excused leaf: no verdict to repeat)
        determinism_check(
            folder / case["repeat_dir"], case["repeat_outputs"], g, out, ref, tol, m, problem.allow_nan, device
        )
    return m


def native_zeros_too(m: dict[str, Any], out: torch.Tensor, exp: Any, ref: torch.Tensor) -> None:
    """Drop the zeros warning (``metrics.FLUSHED``) from the leaf's verdict ``m`` (in place) where the reference in its
    own precision (``exp``) is 0 too at every element the kernel zeroed (``out`` 0, the truth ``ref`` not): an RMSNorm
    whose float32 sum of squares overflows on the extreme family's values near the max gives 0 there in torch's own
    bf16 run as in any honest kernel's, and "never written, or zeroed?" on every honest version's run read as an alarm
    (new-user trial 34, F1). The verdict is not changed; a kernel zeroing anywhere else keeps the warning."""
    said = [w for w in m.get("warnings") or [] if metrics.FLUSHED in w]
    if not said or not isinstance(exp, torch.Tensor) or exp.shape != out.shape or out.is_complex():
        return
    zeroed = (out == 0) & (ref != 0)
    if bool(zeroed.any()) and bool((exp.detach().cpu().to(torch.float64)[zeroed.cpu()] == 0).all()):
        m["warnings"] = [w for w in m["warnings"] if metrics.FLUSHED not in w]


def empty_size_allowance(m: dict[str, Any], out: Any, ref: Any, tol: Tolerance, path: str, allow_nan: bool) -> None:
    """On a spec with a size of 0 (``fuzz._draw_empty``), a failed leaf (``m``, updated in place) whose failing
    elements all sit where the float64 reference is not finite passes with a warning: a reduction over nothing has a
    conventional value (-inf, NaN) that honest kernels meet differently (an online log-sum-exp gives NaN where torch
    gives -inf). Every element where the reference is finite is judged as on any case: a sum over nothing is 0 by
    every convention, and an output that does not reduce over the empty size (a GEMM's bias where K = 0: red team
    round 27, #1, zeros passed) is no convention at all. Unwritten elements fail before this (round 26, #10)."""
    if not (isinstance(out, torch.Tensor) and isinstance(ref, torch.Tensor)) or out.shape != ref.shape:
        return
    r = ref.detach().cpu()
    conventional = (
        ~torch.isfinite(r) if (r.is_floating_point() or r.is_complex()) else torch.zeros_like(r, dtype=torch.bool)
    )
    if not bool(conventional.any()):
        return
    judged = ~conventional
    if bool(judged.any()):
        sub = metrics.verdict(out.detach().cpu()[judged], r[judged], tol, allow_nan=allow_nan)
        if not sub["ok"]:
            m["reason"] = (
                f"{sub['reason']} (an empty size: judged where the reference's value is finite, {int(judged.sum())} of "
                f"{r.numel()} elements; a value over nothing is a convention only where it is -inf or NaN)"
            )
            return
    m.setdefault("warnings", []).append(
        f"an empty size: the value of {path or 'out'} over nothing is a convention where the reference gives "
        f"-inf or NaN ({int(conventional.sum())} of {r.numel()} elements), only that it is written is checked there "
        f"(the kernel's own figures: {m['reason']})"
    )
    m.update(ok=True, score=0.0, reason="")


FLAG_HARM = {
    "inference": "an inference tensor (made under torch.inference_mode): outside inference mode a caller's in-place "
    "op on it (y.add_(1), y[0] = 0), autograd and save_for_backward raise; return a normal tensor (torch.no_grad() "
    "gives one without autograd's cost)",
    "requires_grad": "a tensor that requires grad: a caller's in-place write (y[0] = 0) and y.numpy() raise on it; "
    "return it detached (or compute under torch.no_grad())",
    "conj": "a lazily conjugated view (.conj()): y.numpy() raises on it, and a kernel reading its memory gets the "
    "imaginary parts with the wrong sign; return y.resolve_conj()",
    "neg": "a lazily negated view: y.numpy() raises on it, and a kernel reading its memory gets the values with the "
    "wrong sign; return y.resolve_neg()",
}


def flagged_output(prep: dict[str, Any], path: str, g: OutputLeaf, grad: str | None = None) -> str:
    """Why output leaf ``g`` is not a tensor a caller can use as the reference's ('' when it is): a flag of
    ``tensors.OUTPUT_FLAGS`` the reference's output at ``path`` does not have (``prep["flags"]``): an inference tensor
    (``@torch.inference_mode()`` on custom_kernel passed every rung: red team round 21, F1), one that requires grad
    or a lazily conjugated view (red team round 21b, F3). A reference whose output has a flag lets the version's
    have it there. On a ``requires_grad`` case, an output the reference makes requiring grad (``prep["needs_grad"]``)
    must require it too (red team round 29, #10: a kernel with no autograd path cut the training graph)."""
    theirs = set((prep.get("flags") or {}).get(path, []))
    if grad in MODE_FLAGS:  # the reference called in the case's grad mode has it too (``worker.grad_modes``)
        theirs.add(MODE_FLAGS[grad])
    extra = [f for f in g.get("flags") or [] if f not in theirs]
    if extra:
        return f"{path or 'out'} is " + "; and ".join(FLAG_HARM.get(f, f) for f in extra)
    if (
        grad == "requires_grad"
        and path in (prep.get("needs_grad") or [])
        and "requires_grad" not in (g.get("flags") or [])
    ):
        return (
            f"{path or 'out'} does not require grad where the reference's does (its inputs require grad: the "
            "reference's training use): a training step through it gives those inputs no gradient; compute it in a "
            "torch.autograd.Function whose backward gives the inputs' gradients (red team round 29, #10)"
        )
    return ""


def overlaps(shape: list[int], stride: list[int]) -> bool:
    """Whether a strided layout puts two elements at one address (a broadcast view: a stride 0 over a dimension of
    more than one element, or strides too small for the sizes below them)."""
    dims = sorted((st, n) for n, st in zip(shape, stride, strict=True) if n > 1)
    least = 1
    for st, n in dims:
        if st < least:
            return True
        least = st * n
    return False


def row_major(shape: list[int], stride: list[int]) -> bool:
    """Whether a strided layout is row-major (``Tensor.is_contiguous``: dimensions of one element ignored)."""
    want = 1
    for n, st in zip(reversed(shape), reversed(stride), strict=True):
        if n != 1 and st != want:
            return False
        want *= n
    return True


def traced_index_allowance(m: dict[str, Any], out: torch.Tensor, native: torch.Tensor, src: IndexSource) -> None:
    """Judge an integer output the reference made with a ranking op (``src``: ``indices.IndexOps``), which failed its
    exact compare (``m``, updated in place), by what it selects from the tensor the op ranked, under the op's tie
    rule (``indices.traced_index_verdict``): passed with a warning naming the ties, or failed with what it selects."""
    name = f"what {src['op']} ranked" if not src["of_input"] else "the input it ranks"
    try:
        why = traced_index_verdict(out, native, src, name)
    except ValueError as e:
        m["reason"] += f" ({e})"
        return
    if why:
        m["reason"] = f"{why} (judged as the indices of the reference's {src['op']})"
        return
    n = int((out.reshape(-1).long() != native.reshape(-1).long().to(out.device)).sum())
    m.update(ok=True, reason="", score=0.0, outside_tol=0, index_ties=n)
    if n:
        m.setdefault("warnings", []).append(
            f"{n} of {out.numel()} indices differ from the reference's {src['op']} and select equal values of {name} "
            f"along dim {src['dim']} ({src['op']} leaves the order of ties open): accepted as indices"
        )


def unordered_index_allowance(m: dict[str, Any], out: torch.Tensor, ref: torch.Tensor, g: UnorderedGroup) -> None:
    """Judge a ``topk(sorted=False)`` indices leaf returned without its values (``m``, failed its exact compare,
    updated in place) by what it selects from the tensor the call ranked (``g["source"]``; both sides already in
    the order of what they select, ``worker.unordered``): equal values at every position, in range, no index twice
    where the reference's are distinct (``indices.select_verdict``). The kernel may pick other ones of equal values
    than the reference did (red team round 20 F1: a router on constant scores)."""
    src = g.get("source")
    if src is None:
        return
    name = "the tensor its topk(sorted=False) ranks"
    try:
        why = select_verdict(out, ref, src, g["dim"], name)
    except ValueError as e:
        m["reason"] += f" ({e})"
        return
    if why:
        m["reason"] = f"{why} (judged as the indices of a topk(sorted=False) by what they select)"
        return
    n = int((out.reshape(-1).long() != ref.reshape(-1).long().to(out.device)).sum())
    m.update(ok=True, reason="", score=0.0, outside_tol=0, index_ties=n)
    m.setdefault("warnings", []).append(
        f"{n} of {out.numel()} indices differ from the reference's and select equal values of {name} along dim "
        f"{g['dim']} (ties picked otherwise): accepted"
    )


def broadcast_views(prep: Mapping[str, Any], case: Mapping[str, Any]) -> set[str]:
    """The output paths that are views of a broadcast input (``prep["broadcast_inputs"]``: the ``expanded``
    layout) where the reference's output at that path views the same input (``prep["aliases"]``, from the native
    run's own inputs): their layout is the caller's, not the kernel's, and ``layout_mismatch`` does not judge it.
    The native reference runs on a copy of the inputs, which ``clone`` makes dense, so its view (``qkv.split``'s
    k) does not overlap where the kernel's view of the caller's broadcast ``qkv`` does: red team round 22's honest
    attention prologue failed 5 of 19 specs on the expanded layout (2026-12-06, the CPU and the H100)."""
    broadcast = set(prep.get("broadcast_inputs") or [])
    allowed = set(prep.get("aliases") or [])
    out: set[str] = set()
    for a in case.get("aliases") or []:
        path, _, source = a.partition(" aliases ")
        if a in allowed and source in broadcast:
            out.add(path)
    return out


def layout_mismatch(
    path: str, exp: torch.Tensor, shape: list[int], stride: list[int], inputs_row_major: bool
) -> tuple[str, str]:
    """(why the kernel's output ``path`` fails, a warning about its layout), each '' when none, from its ``shape``
    and ``stride`` (elements) beside the reference's ``exp``. An output whose elements share memory where the
    reference's do not fails: a caller that writes one element writes others. One that is not row-major where the
    reference returns row-major from row-major inputs is warned about (red team round 19, W4: ``out_t.t()``, right
    values, strides (1, rows): a caller's ``.view()`` raises, a kernel reading ``data_ptr()`` row-major reads it
    transposed), not failed: torch's own ops return such views, and ``odd_outputs``' honest transposed outputs
    pass."""
    if exp.numel() <= 1:
        return "", ""
    shown = f"strides {tuple(stride)} for shape {tuple(shape)}"
    if overlaps(shape, stride) and not overlaps(list(exp.shape), list(exp.stride())):
        return (
            f"{path} has {shown}: its elements share memory (a broadcast view) where the reference's output does "
            "not, so a caller writing one element writes others; return a tensor with its own memory",
            "",
        )
    if inputs_row_major and exp.is_contiguous() and not row_major(shape, stride):
        return "", (
            f"{path} has {shown}, not row-major, where the reference returns row-major strides "
            f"{tuple(exp.stride())} from row-major inputs: a caller's .view() raises and code reading it by "
            "data_ptr() as row-major reads other elements; write it row-major (or return .contiguous())"
        )
    return "", ""


def ill_conditioned_allowance(
    problem: Problem,
    prep: dict[str, Any],
    m: dict[str, Any],
    out: torch.Tensor,
    ref: torch.Tensor,
    tol: Tolerance,
    path: str,
    unwritten: torch.Tensor | None,
    device: str,
    large: int,
) -> dict[str, Any]:
    """The verdict ``m`` of a leaf that failed low precision's elementwise rules (the gross bound, the firm and off
    fractions or the L1 error), judged again with each element's bounds grown by ``GROSS_SLACK`` times how far the
    float64 truth moves there when the inputs move (``ktui.worker.conditioning``): the gross bound's by the output's
    u relative (a step of the inputs, such as a rounding, moves it by a whole step), the firm and off bounds' by
    float32's u (a prefix sum that cancels against a value of 4e37 moves by ~1e30: new-user trial 20, an honest bf16
    scan on the extreme family, where the float64 truth itself had lost the prefix), the L1 error counting only what
    lies beyond; ``m`` itself when nothing could be measured. A warning says how many elements past a plain bound
    were let through."""
    inputs_of = prep.get("inputs_of")
    if inputs_of is None:
        return m
    order = prep.get("unordered")
    rounding = rounding_slack(problem, inputs_of, path, ref, order)  # the same at both u: computed once
    slack = (
        truth_slack(problem, inputs_of, path, ref, tol, rounding=rounding, order=order)
        if rounding is not None
        else None
    )
    if slack is None or not bool((slack > 0).any()):
        return m
    slack = slack * GROSS_SLACK
    # the off and firm bounds grow by the truth's move at float32's u, the precision an honest kernel computes in:
    # a prefix cancelling against 4e37 moves by ~1e30 there (new-user trial 20 H1), while an fp16 accumulator's
    # errors stay far past it (red team round 12); the output's u would cover the accumulator
    elem = truth_slack(problem, inputs_of, path, ref, tol, FLOAT32_U, rounding=rounding, order=order)
    elem = elem * GROSS_SLACK if elem is not None else None
    if out.numel() > large:
        again = metrics.verdict_large(
            out, ref, tol, allow_nan=problem.allow_nan, device=device, gross_slack=slack, elem_slack=elem
        )
    else:
        again = metrics.verdict(
            out, ref, tol, unwritten=unwritten, allow_nan=problem.allow_nan, gross_slack=slack, elem_slack=elem
        )
    let = int(again.pop("gross_slacked", 0))
    again.update({k: v for k, v in m.items() if k not in again})  # what judge_leaf added (path, tolerance...)
    if m.get("warnings"):  # its type note among them; its zeros count anew (``metrics.FLUSHED``)
        kept = [w for w in m["warnings"] if metrics.FLUSHED not in w]
        again["warnings"] = kept + [w for w in again.get("warnings", []) if w not in kept]
    if let:
        again.setdefault("warnings", []).append(
            f"{let} element{'s' * (let != 1)} past the bounds ({tol.elem_ulps:g} u |ref|, {tol.gross_ulps:g} u "
            "max(|ref|, rms(ref))) where the float64 truth itself moves that far when the inputs move by "
            f"u = {tol.unit_roundoff:.3g} relative (a step of the inputs, such as a rounding, or a cancellation "
            f"against much larger values): allowed {GROSS_SLACK:g}x that move beyond the bounds"
        )
    return again


def zeros_where_the_truth_is_not(
    problem: Problem,
    prep: dict[str, Any],
    m: dict[str, Any],
    out: torch.Tensor,
    exp: torch.Tensor,
    ref: torch.Tensor,
    path: str,
    large: int,
) -> None:
    """Fail the passing leaf ``m`` (a float32 or float64 output, an allclose tolerance) where the kernel wrote
    0, or a value of at most eps times the truth's magnitude (nothing of it kept), and the reference computed in
    the output's own precision (``exp``) is a normal number, as is the float64 truth (``ref``), which the case's
    inputs determine (moved by the dtype's unit roundoff, ``conditioning.truth_slack``, it moves by less than half of
    itself) and which the output's precision resolves at the output's scale (at least eps rms(ref)). An atol allows
    an absolute error below it anywhere, so a softmax that skips every probability below e^-17 of its row's max
    passed (red team round 20, W1), while a caller's ``log(p)`` or ``1 / p`` turns each of those zeros into an
    infinity; a declared tolerance too (``softmax.py``'s atol of 1e-6 let it through again); and so did the same
    zeros floored at FLT_MIN (red team round 25, #6). Below eps rms(ref) a 0 is what a formula with intermediates
    at the output's scale rounds to: ``tanh(x) = 2 sigmoid(2x) - 1`` or ``softplus = log(1 + exp(x))`` give 0 where
    |x| or exp(x) is below eps / 2 (red team round 20b, F1: an honest tanh failed 3 of 12 specs). Only outputs up
    to ``large`` elements (test sizes)."""
    if out.numel() > large or not out.is_floating_point() or out.is_complex() or out.dtype != exp.dtype:
        return
    o, e = out.detach().cpu().reshape(-1), exp.detach().cpu().reshape(-1)
    r = ref.detach().to("cpu", torch.float64).reshape(-1)
    if o.shape != r.shape or e.shape != r.shape:
        return
    tiny = torch.finfo(out.dtype).tiny
    fin = r[torch.isfinite(r)]
    scale = float(fin.square().mean().sqrt()) * torch.finfo(out.dtype).eps if fin.numel() else 0.0
    # 0, or a value that kept nothing of the truth (at most eps |truth|: 1.2e-38 written for e^-30 in fp32, red
    # team round 25, #6, passed with max_rel_err = 1 where an exact 0 failed), where the reference computed in the
    # output's precision kept it and the truth is within the dtype's range (a saturation at its largest value, a
    # truth of 1e56 beside nan_to_num's 3.4e38, keeps nothing of the truth either, honestly)
    eps = torch.finfo(out.dtype).eps
    gone = (o.double().abs() <= r.abs() * eps) & (e.double().abs() > r.abs() * eps)
    gone &= r.abs() <= torch.finfo(out.dtype).max
    zeros = gone & (e != 0) & (e.abs() >= tiny) & (r.abs() >= max(tiny, scale)) & torch.isfinite(r)
    if not bool(zeros.any()):
        return
    inputs_of = prep.get("inputs_of")
    u = torch.finfo(out.dtype).eps / 2
    tol = resolve(dtype_name(out.dtype), None)
    slack = truth_slack(problem, inputs_of, path, ref, tol, u, order=prep.get("unordered")) if inputs_of else None
    if slack is None:
        return
    firm = zeros & (GROSS_SLACK * slack < r.abs() / 2)
    n = int(firm.sum())
    if not n:
        return
    i = int(torch.nonzero(firm)[0])
    shape = tuple(out.shape)
    m.update(
        ok=False,
        score=max(float(m.get("score", 0.0)), 1.0 + n / out.numel()),
        reason=(
            f"{n} of {out.numel()} element{'s' * (n != 1)} 0 (or below eps of the truth) where the reference "
            f"computed in {dtype_name(out.dtype)} is not and the float64 truth is a number its inputs determine, above "
            f"{dtype_name(out.dtype)}'s resolution at the output's scale (eps rms(ref) = {scale:.3g}), first at "
            f"{index_of(i, shape)}: got {float(o[i]):.6g}, expected {float(r[i]):.6g} (values skipped or flushed: "
            "within atol, but a caller's log or division turns each into an infinity) "
            f"({where_bad(firm.reshape(shape))})"
        ),
    )


def local_native_check(
    prep: dict[str, Any], m: dict[str, Any], out: torch.Tensor, ref: torch.Tensor, tol: Tolerance, path: str
) -> None:
    """Fail the passing leaf ``m`` where an element is further off than the tolerance's own allowance plus
    ``tol.native_factor`` (``NATIVE_FACTOR``, 8, by default) times the reference's own error *near it*
    (``native.local_errors``: within ``LOCAL_WINDOW`` elements, over the same native runs), though within that
    factor times its largest error anywhere (``tol.native_err``, which the leaf's verdict allowed every element).
    One element whose native error is large set the bar for all: ``log(x + finfo(x.dtype).eps)`` on images with
    black pixels, whose float64 run reads float64's eps there (native error 20 at those pixels, 4e-7 elsewhere),
    let a fast log 0.06 off on every other pixel pass at "0% of tolerance" (red team round 25, #2). Applies to
    full-precision outputs judged with the native allowance (``tol.native_atol`` > 0), where the judge kept the
    local errors (at most ``native.LOCAL_MAX`` elements); elements where the output or the truth is not finite are
    the verdict's own."""
    loc = (prep.get("native_local") or {}).get(path)
    if loc is None or tol.mode != "allclose" or tol.native_atol <= 0 or out.is_complex() or ref.is_complex():
        return
    if not out.is_floating_point() or out.numel() != loc.numel() or ref.numel() != loc.numel():
        return
    o = out.detach().to("cpu", torch.float64).reshape(-1)
    r = ref.detach().to("cpu", torch.float64).reshape(-1)
    d = (o - r).abs()
    allow = tol.elementwise(r.abs(), torch.finfo(out.dtype).tiny) + tol.native_factor * loc.to(torch.float64)
    beyond = torch.isfinite(o) & torch.isfinite(r) & (d > allow)
    n = int(beyond.sum())
    if not n:
        return
    i = int(torch.nonzero(beyond)[0])
    shape = tuple(out.shape)
    dt = tol.native_dtype or dtype_name(out.dtype)
    m.update(
        ok=False,
        score=max(float(m.get("score", 0.0)), float((d[beyond] / allow[beyond]).max())),
        reason=(
            f"{n} of {out.numel()} element{'s' * (n != 1)} further off than {tol.native_factor:g}x the error of the "
            f"reference computed in {dt} near them (within {LOCAL_WINDOW} elements) plus atol/rtol, first at "
            f"{index_of(i, shape)}: got {float(o[i]):.6g}, expected {float(r[i]):.6g}, off by {float(d[i]):.3g} where "
            f"the reference's own error nearby is at most {float(loc[i]):.2g} (its largest, {tol.native_err:.2g}, "
            f"is elsewhere and sets no bar here) ({where_bad(beyond.reshape(shape))})"
        ),
    )


def count_native_check(
    m: dict[str, Any],
    out: torch.Tensor,
    native: Any,
    ref: torch.Tensor,
    tol: Tolerance,
    near: Callable[[], torch.Tensor | None],
) -> None:
    """Fail the passing leaf ``m`` (in place) of a float output of whole numbers (counts: ``torch.histc``, a float
    tally) where it differs from the float64 truth ``ref`` by whole numbers the native allowance let through: the
    reference computed in its own precision (``native``) puts a value near a bin's edge in the next bin, off by 1
    there, and the default allowance of ``tol.native_factor`` (8) times that anywhere let a histogram dropping
    ``x == hi`` (a count lost where no rounding decides) pass (red team round 30, #9, open since stop 41). A count
    is a decision, not a rounding: the output is judged as an integer output of float math is
    (``integer_native_allowance``): each element off by more than the tolerance's own allowance only where, and by
    as much as, the native reference is off there, or the truth itself moves under a few roundings (``near()``:
    ``rounding_allowance``, computed only then; None: where the native reference is off).

    Applies where the native allowance is on and in use (``tol.native_atol`` > 0), and the truth and the native
    reference are finite whole numbers that the output's dtype holds exactly (at most 2**(mantissa + 1)): an
    accumulated rounding gives no such output, so the whole-number errors are decisions."""
    if tol.mode != "allclose" or tol.native_atol <= 0 or not out.is_floating_point() or out.is_complex():
        return
    if not isinstance(native, torch.Tensor) or tuple(native.shape) != tuple(out.shape) or not out.numel():
        return
    if tuple(ref.shape) != tuple(out.shape) or not ref.is_floating_point():
        return
    r = ref.detach().to("cpu", torch.float64).reshape(-1)
    e = native.detach().to("cpu", torch.float64).reshape(-1)
    exact = 2.0 ** (_mantissa_bits(out.dtype) + 1)
    whole = torch.isfinite(r) & torch.isfinite(e) & (r == r.round()) & (e == e.round())
    if not bool(whole.all()) or float(r.abs().max()) > exact or float(e.abs().max()) > exact:
        return
    own = (e - r).abs()
    if not bool((own >= 1).any()):  # the native reference is exact: the fixed tolerance judged it
        return
    o = out.detach().to("cpu", torch.float64).reshape(-1)
    d = (o - r).abs()
    fixed = tol.elementwise(r.abs(), torch.finfo(out.dtype).tiny)
    allow = fixed + _with_moves(own, bool((d > fixed + own).any()), near, tuple(out.shape))
    beyond = torch.isfinite(o) & (d > allow)
    n = int(beyond.sum())
    if not n:
        return
    i = int(torch.nonzero(beyond)[0])
    shape = tuple(out.shape)
    m.update(
        ok=False,
        score=max(float(m.get("score", 0.0)), float((d[beyond] / allow[beyond].clamp_min(1e-30)).max())),
        reason=(
            f"{n} of {out.numel()} element{'s' * (out.numel() != 1)} of an output of whole numbers (counts) differ "
            "from the float64 truth where neither the reference computed in its own precision differs nor the truth "
            f"moves when the inputs move by a few roundings (a count lost or gained, not a value rounded into the next "
            f"bin), first at {index_of(i, shape)}: got {float(o[i]):.6g}, expected {float(r[i]):.6g} (the reference's "
            f"own error of {tol.native_err:g} elsewhere sets no bar here) ({where_bad(beyond.reshape(shape))})"
        ),
    )


def _with_moves(
    own: torch.Tensor, beyond_own: bool, near: Callable[[], torch.Tensor | None], shape: tuple[int, ...]
) -> torch.Tensor:
    """The allowance of an integer output of float math (flat, float64): the native reference's own error at each
    element (``own``), raised to how far the truth moves there (``near()``, of ``shape``; computed only when some
    element is further off than ``own`` allows, ``beyond_own``, and left out when it is None or of another shape)."""
    if not beyond_own:
        return own
    moved = near()
    if moved is None or tuple(moved.shape) != shape:
        return own
    return torch.maximum(own, moved.detach().to("cpu", torch.float64).reshape(-1))


def _mantissa_bits(dtype: torch.dtype) -> int:
    """The stored mantissa bits of a floating ``dtype`` (23 for float32, 52 float64, 10 float16, 7 bfloat16)."""
    eps = torch.finfo(dtype).eps
    return round(-math.log2(eps))


def unwritten_mask(out: torch.Tensor, native: Any) -> torch.Tensor:
    """The elements of ``out`` still holding the poison pattern, less those equal to the reference computed in the
    native precision (``native``, same shape): an int8 quantization may rightly give 90 (0x5A, the poison byte) where
    the native computation does and the float64 truth differs by one (``integer_native_allowance`` judges those). The
    verdict also leaves out those equal to the float64 truth."""
    mask = poisoned_mask(out)
    if isinstance(native, torch.Tensor) and tuple(native.shape) == tuple(out.shape) and not out.is_floating_point():
        mask &= ~(out == native.to(out.device, out.dtype))
    return mask


def native_fails_too(
    m: dict[str, Any], out: torch.Tensor, native: Any, ref: torch.Tensor, tol: Tolerance, allow_nan: bool
) -> None:
    """A float output that fails (``m``, the kernel's verdict) is judged against the reference's own error where
    the reference in its own precision (``native``: ``ref_kernel`` on the case's inputs as given) fails the same
    verdict against the float64 truth (``ref``): the case has no target an honest kernel of that precision can meet
    as a whole (an fp16 row sum of ``shifted`` inputs past 65504; a bf16 layer norm whose variance overflows on
    ``extreme`` values: red team round 9), so the kernel is held to the reference's error element by element
    instead: every element within ``NATIVE_FACTOR`` times the native reference's error near that element (the
    largest within ``native.LOCAL_WINDOW`` elements, ``native.local_errors``) plus the
    tolerance's own elementwise allowance, and non-finite only where the native reference is non-finite too. Within
    it, the leaf passes with a warning that says so (``reference_fails``); beyond it the failure stands and its
    reason says how many elements are further off than the reference's own error allows. Not applied: to a
    tolerance the reference sets itself (``tol.explicit``: taken exactly as written; the reason notes the
    reference's own failure) unless every element is within it and only ktui's whole-output ``rel_l2`` rule failed
    (``m["whole_only"]``) as it does for the reference itself: then the kernel's rel_l2 is held to ``NATIVE_FACTOR``
    times the reference's, to unwritten elements, to a case whose float64 truth holds NaN (the reference is
    invalid there), or to anything but a float tensor of the reference's shape. Computed only when the kernel
    failed: a passing run pays nothing."""
    if m.get("unwritten") or not isinstance(native, torch.Tensor) or not native.is_floating_point():
        return
    if tuple(native.shape) != tuple(ref.shape) or tuple(out.shape) != tuple(ref.shape) or not out.is_floating_point():
        return
    r = ref.detach().to("cpu", torch.float64).reshape(-1)
    if not allow_nan and bool(torch.isnan(r).any()):  # the truth itself is invalid: the reference's fault, stated
        return
    nv = metrics.verdict(native, ref, tol, allow_nan=allow_nan)
    if nv["ok"]:
        return
    dt = str(native.dtype).removeprefix("torch.")
    if tol.explicit and m.get("whole_only") and nv.get("whole_only"):
        # every element within the reference's own tolerance, and only ktui's whole-output rule (rel_l2) failed,
        # which the reference itself fails the same way: a GELU's 1 + erf(x / sqrt 2) cancelling in float32 at
        # x = -4.5, on a 1-element output (a new user's first problem failed so). The kernel's rel_l2 is held to
        # NATIVE_FACTOR times the reference's own (any failure of the reference excused any kernel within the
        # elementwise tolerance: red team round 17b)
        ours, theirs = float(m["rel_l2_err"]), float(nv["rel_l2_err"])
        if ours <= NATIVE_FACTOR * theirs:
            _excuse(
                m,
                nv,
                dt,
                f"ktui's whole-output rule here ({nv['reason']}), and the kernel's rel_l2 ({ours:.3g}) is within "
                f"{NATIVE_FACTOR:g}x the reference's ({theirs:.3g})",
            )
        else:
            m["reason"] += (
                f" (the reference itself in {dt} fails it too, rel_l2 {theirs:.3g}; the kernel's is more than "
                f"{NATIVE_FACTOR:g}x that)"
            )
            m["reference_fails_too"] = True
        return
    if tol.explicit:
        # the reference's own tolerance is taken exactly as written: the failure stands, explained
        m["reason"] += (
            f" (the reference itself in {dt} fails this tolerance here too: {nv['reason']}; the reference's "
            "tolerance cannot be met on this case)"
        )
        m["reference_fails_too"] = True
        return
    o = out.detach().to("cpu", torch.float64).reshape(-1)
    n = native.detach().to("cpu", torch.float64).reshape(-1)
    fin = torch.isfinite(r)
    fi = torch.finfo(native.dtype)  # at least two roundings of the output dtype: where the native reference happens
    allow = torch.maximum(tol.elementwise(r.abs(), fi.tiny), 2 * fi.eps * r.abs() + fi.tiny)  # to be exact, another
    # honest order of operations is not
    d_out, d_nat = (o - r).abs(), (n - r).abs()
    # the reference's error near each element (``native.local_errors``: the largest within LOCAL_WINDOW elements),
    # not at the element alone: the kernel's error is another sample of the same kind of error, and where the
    # reference happened to be nearly exact it need not be (new-user trial 27: an honest bf16 FlashAttention failed
    # on 5 of ~8,000 elements beyond 8x torch's own error at those very elements, torch failing the case worse)
    near = local_errors([torch.where(torch.isfinite(d_nat), d_nat, torch.zeros_like(d_nat))]).to(torch.float64)
    d_nat_near = torch.maximum(d_nat, near)  # (local_errors is float32: never below the element's own)
    within = torch.where(torch.isfinite(o) & torch.isfinite(n), d_out <= NATIVE_FACTOR * d_nat_near + allow, False)
    # non-finite only where the native reference is too (the same value: an overflow to the same infinity)
    same = (o == n) | (torch.isnan(o) & torch.isnan(n))
    within |= ~torch.isfinite(o) & ~torch.isfinite(n) & same
    # finite where the native reference overflowed: right (within the allowance), or saturated at the dtype's
    # largest value with the truth's sign where the truth is beyond the dtype's range
    saturated = (r.abs() > fi.max) & (o.abs() >= fi.max) & (torch.sign(o) == torch.sign(r))
    within |= torch.isfinite(o) & ~torch.isfinite(n) & fin & ((d_out <= allow) | saturated)
    # non-finite where the native reference is finite: never. A finite native value where the truth is beyond the
    # dtype's range is a saturation the reference asks for (``nan_to_num``: the dtype's largest value; its float64
    # run saturates at float64's), and an overflow to inf there passed (red team round 25, #3)
    within |= ~fin & same  # where the truth is infinite: as the native reference gives it
    beyond = int((~within).sum())
    if beyond:
        # the element that decides, named (new-user trial 21 F3: which one, and the reference's value there, was
        # left for the user to work out)
        i = int(torch.nonzero(~within)[0, 0])
        m["reference_fails_too"] = True
        m["reason"] += (
            f" (the reference itself in {dt} fails this case too: {nv['reason']}; but {beyond} of {o.numel()} "
            f"elements are further off than {NATIVE_FACTOR:g}x its own error there, first at "
            f"{index_of(i, tuple(out.shape))}: got {float(o[i]):.6g}, expected {float(r[i]):.6g}, the reference in "
            f"{dt} {float(n[i]):.6g})"
        )
        return
    _excuse(
        m,
        nv,
        dt,
        f"this case against its float64 result ({nv['reason']}), and every element is within {NATIVE_FACTOR:g}x its "
        "error there",
    )


EXCUSED = "judged against the reference's own"  # how ``_excuse``'s warning begins (``judge_case`` looks for it)


def _excuse(m: dict[str, Any], nv: dict[str, Any], dt: str, because: str) -> None:
    """Pass the leaf verdict ``m`` that the native reference's verdict ``nv`` fails too (``native_fails_too``), with
    the warning that says why (``because``: what the reference fails, and how close the kernel is) and the kernel's
    own figures."""
    why = m["reason"]
    m.update(ok=True, score=0.0, reason="", reference_fails=nv["reason"])
    m.setdefault("warnings", []).append(
        f"{EXCUSED} {dt} error: the reference itself fails {because}; the kernel's own figures: {why}"
    )


def integer_native_allowance(
    m: dict[str, Any],
    out: torch.Tensor,
    native: Any,
    ref: torch.Tensor,
    near: Callable[[], torch.Tensor | None],
) -> None:
    """Accept an integer output of float math (a quantization, a rounding) that differs from the float64 truth
    ``ref`` only where, and only as much as, a program computing in the inputs' own precision may (cases.md integer
    outputs of float math): at each element, by at most what the reference computed in its own precision
    (``native``, same shape) is off there, or what the truth itself moves by when the inputs move by a few roundings
    of that precision (``near()``: per element, ``ktui.worker.native.rounding_allowance``, computed only when some
    element differs where the native reference does not; None when it cannot be). So a kernel that rounds a value within
    its precision's rounding of a half-way point the other way passes, wherever that is, and one that truncates
    elsewhere fails, however few such elements it has (red team: a quantizer flooring its remainder block passed a
    count of 8x the native reference's flips). ``m`` (the exact verdict, failed) is updated in place: passed with a
    warning that says so, or its reason extended with how many elements differ outside the allowance and the
    first of them."""
    if m.get("unwritten") or not isinstance(out, torch.Tensor) or not isinstance(native, torch.Tensor):
        return
    if tuple(native.shape) != tuple(out.shape) or tuple(ref.shape) != tuple(out.shape):
        return
    o = out.detach().to("cpu", torch.float64).reshape(-1)
    r = ref.detach().to("cpu", torch.float64).reshape(-1)
    d = (o - r).abs()
    own = (native.detach().to("cpu", torch.float64).reshape(-1) - r).abs()
    own = torch.where(torch.isfinite(own), own, torch.zeros_like(own))
    allow = _with_moves(own, bool((d > own).any()), near, tuple(out.shape))
    beyond = ~(d <= allow)  # NaN (a float compared with the truth) is beyond
    n_off = int((d > 0).sum())
    if bool(beyond.any()):
        i = int(torch.nonzero(beyond)[0])
        at = list(torch.unravel_index(torch.tensor(i), tuple(out.shape))) if out.dim() else []
        m["reason"] += (
            f"; {int(beyond.sum())} of them where neither the reference computed in its own precision differs from "
            f"the float64 truth nor the truth is within that precision's rounding of a half-way point (first at "
            f"{[int(k) for k in at]}: {_num(o[i])} where the truth is {_num(r[i])})"
        )
        return
    at_own = int(((d > 0) & (own > 0)).sum())
    m["ok"], m["reason"], m["score"] = True, "", float((d / allow.clamp_min(1)).max()) if n_off else 0.0
    m.setdefault("warnings", []).append(
        f"{n_off} of {d.numel()} {'bool' if out.dtype == torch.bool else 'integer'} elements differ from the float64 "
        f"truth by at most {float(d.max()):g}, each "
        f"where the reference computed in its own precision does ({at_own}) or within that precision's rounding of "
        f"a half-way point ({n_off - at_own}): accepted"
    )


def _num(x: torch.Tensor) -> str:
    v = float(x)
    return str(int(v)) if v.is_integer() else f"{v:g}"


def rounding_allowance(
    problem: Problem, prep: dict[str, Any], seed: int, path: str, counts: bool = False
) -> torch.Tensor | None:
    """Per element of integer output ``path`` (or, ``counts``, a float output of whole numbers:
    ``count_native_check``), how far its float64 truth moves where a program computing in the inputs' precision may
    land (cached in ``prep``; None when the case cannot be rebuilt, or ``counts`` with no floating input):

    - ``ktui.worker.native.rounding_allowance``: the case's inputs (``prep["inputs_of"]()`` builds them again) moved
      by a few unit roundoffs of their lowest floating precision; when the inputs hold no floating tensor,
      ``native.entry_rounding_allowance`` (the values moved where integers enter float math: none in integer
      arithmetic, which rounds nothing);
    - and the larger of ``NATIVE_NOISE_PAIRS`` antithetic pairs of float64 runs under ``RoundingNoise`` at the
      precision a kernel computes in (float32's, float64's for float64 inputs): each inexact result of the
      reference's ops moved by ``NATIVE_NOISE_ULPS`` ulps of it, up or down. An intermediate rounds too, not only the
      inputs: ``sigmoid(x) > 0.5`` is False in float32 for 0 < x < 1.2e-7 (sigmoid rounds to 0.5), each float32
      sigmoid to a slightly other bound, and no move of x by a few ulps of x shows it (red team round 35, #6)."""
    cache: dict[str, torch.Tensor | None] = prep.setdefault("rounding_allowance", {})
    key = f"counts:{path}" if counts else path
    if key in cache:
        return cache[key]
    cache[key] = None
    rebuild = prep.get("inputs_of")
    if rebuild is None:
        return None
    data = rebuild()
    floats = [
        t.dtype for _, t in flatten(inputs_only(problem, data)) if isinstance(t, torch.Tensor) and t.is_floating_point()
    ]
    order = prep.get("unordered") or []
    if floats:
        unit = max(torch.finfo(dt).eps for dt in floats) / 2
        moved = truth_moves(
            lambda d: canonical_(problem.reference(d)[0], order),
            _map,
            data,
            prep["ref"],
            unit,
            seed,
            frozenset({path}) if counts else frozenset(),
        )
    elif counts:
        return None
    else:
        moved = entry_rounding_allowance(
            lambda d: canonical_(problem.reference_native(d), order), data, prep["ref"], seed
        )
    got = moved.get(path)
    truth = dict(flatten(prep["ref"])).get(path)
    if got is not None and isinstance(truth, torch.Tensor) and problem.float64:
        ulp = min(max((torch.finfo(dt).eps for dt in floats), default=FLOAT32_EPS), FLOAT32_EPS)
        noise = native_rounding_moves(problem, rebuild, path, truth, NATIVE_NOISE_ULPS * ulp, seed, order)
        if noise is not None and noise.numel() == got.numel():
            got = torch.maximum(got.reshape(-1).to(torch.float64), noise.to(got.device)).reshape(got.shape)
    cache[key] = got
    return got


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
    if again.is_complex():  # as the first answer is judged: its (real, imaginary) pairs
        again = torch.view_as_real(again.resolve_conj()).contiguous()
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
        if device == "cpu":  # (``worker.interp_sched.reversed_order``)
            m["reason"] += (
                " (the interpreter may have run a launch's programs in another order in the second call, as it "
                "does on about every other launch: a race between programs gives that; see the run rung's warnings)"
            )
        return
    a, b = out.double(), again.double()
    differ = int((a != b).logical_and(~(a.isnan() & b.isnan())).sum())
    spread = float((a - b).abs().nan_to_num(math.inf).max())
    m["nondeterministic_elements"], m["run_to_run_spread"] = differ, spread
    exact = not out.is_floating_point() or tol.mode == "exact"
    allowance = None
    if tol.mode == "allclose":
        scale = pair_magnitude(ref.double().reshape(-1)).reshape(ref.shape) if tol.pairs else ref.double().abs()
        allowance = (tol.atol + tol.rtol * scale).clamp_min(tol.native_atol)
    too_far = (
        exact
        or (allowance is not None and bool(((a - b).abs() > allowance).any()))
        or (tol.mode == "psnr" and metrics.error_metrics(again, ref)["psnr_db"] < tol.min_psnr_db)
    )
    text = f"nondeterministic: {differ} element(s) differ between two calls on identical inputs, spread {spread:.3g}"
    if too_far:
        m["ok"], m["score"] = False, math.inf
        # first: that two calls differ says more than how the first one differs from the truth (a race? new-user
        # trial 33, F3: it came last in a 700-character reason, and ktui status and eval cut it off)
        m["reason"] = (
            text
            + (" (exact compare for integer outputs: a race?)" if exact else " (beyond the tolerance: a race?)")
            + ("; " + m["reason"] if m["reason"] else "")
        )
    else:
        m["warnings"].append(text + " (within the tolerance: float atomics or a race?)")


def judge_burst(
    problem: Problem,
    prepare: Callable[[Case], dict[str, Any]],
    case: ExecutedCase,
    folder: Path,
    device: str,
) -> CaseVerdict:
    """The verdict on a burst case (``calls``: n calls in a row, recorded in ``case["calls_out"]``, issue 9.4): each
    call judged as a case of its own (``judge_case``: its inputs of seed ``seed + c``, whose reference ``prepare``
    gives, its outputs under ``folder/<dir>``), and a call whose output lies in the storage of an earlier call's
    output, which the caller still holds (``reused``), fails as a reused buffer. Returns the first failing call's
    verdict, its reason and case name saying which call (``call 17 of 24 in a row``), or the worst call's when all
    pass; ``calls`` and ``call`` (from 1) say which."""
    records = case.get("calls_out") or []
    n = int(case.get("calls", len(records)))
    first: Case = {k: v for k, v in case.items() if k in Case.__annotations__ and k != "calls"}  # type: ignore[assignment]
    if len(records) != n or any(rec.get("seed") != case["seed"] + c for c, rec in enumerate(records)):
        prep = prepare(first)
        return {
            "spec_index": case["spec_index"],
            "seed": case["seed"],
            "label": label_of(problem, case),
            "case": f"{case_label(label_of(problem, case), case)} calls={n}",
            "precision": prep["precision"],
            "policy_dtype": prep["policy_dtype"],
            "warnings": [],
            "ok": False,
            "score": math.inf,
            "reason": f"the candidate sent {len(records)} calls of the burst's {n}, or calls on other seeds (ktui's "
            "worker code was altered?)",
            "calls": n,
        }
    verdicts: list[CaseVerdict] = []
    for c, rec in enumerate(records):
        sub: Case = {**first, "seed": rec["seed"]}
        executed = cast(ExecutedCase, {**sub, **{k: v for k, v in rec.items() if k not in ("dir", "reused", "seed")}})
        v = judge_case(problem, prepare(sub), executed, folder / rec["dir"], device)
        if v["ok"] and rec.get("reused"):
            v = {
                **v,
                "ok": False,
                "score": math.inf,
                "reason": f"output reused across calls: {rec['reused']} (an output buffer kept and reused, or a "
                "ring of them: a later call overwrites memory the caller still holds)",
            }
        where = f"call {c + 1} of {n} in a row"
        if not v["ok"]:
            shown = f"{v.get('case', '')} ({where})"
            return {**v, "reason": f"{where}: {v['reason']}", "case": shown, "calls": n, "call": c + 1}
        verdicts.append({**v, "call": c + 1})
    worst = max(verdicts, key=lambda v: v.get("score", 0.0))
    return {**worst, "calls": n, "case": f"{worst.get('case', '')} (worst of {n} calls in a row)"}
