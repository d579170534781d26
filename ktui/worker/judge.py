"""The judge worker: runs only trusted reference code, and decides verdicts.

No candidate code ever runs in this process, so a kernel that patches torch in its own worker cannot change how its
outputs (or anyone's) are judged, and the reference's outputs never sit in memory a candidate can reach. The judge
rebuilds each case's inputs from the same description as the candidate (``ktui.worker.cases``), computes the
reference in float64, and compares the candidate's outputs, which arrive as raw bytes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

import torch

from ktui.protocol import (
    Case,
    CaseVerdict,
    CheckSamplesReply,
    CheckSamplesRequest,
    CompareReply,
    CompareRequest,
    DescribeRequest,
    ExecutedCase,
    OnProgress,
    OutputLeaf,
    PreparedCase,
    PrepareReply,
    PrepareRequest,
    ProblemInfo,
    RefSpecTiming,
    RooflineReply,
    RooflineRequest,
    SampleVerdict,
    TimeReferenceReply,
    TimeReferenceRequest,
)
from ktui.worker import metrics
from ktui.worker.cases import build_input, case_label, layout_of, round_to_tf32
from ktui.worker.problem import Problem, ProblemCache, _map, inputs_only, policy_dtype, spec_label
from ktui.worker.tensors import describe, flatten, hash_data, load_output, poisoned_mask, tensor_from_bytes
from ktui.worker.timing import bench, measure_bandwidth, measure_peak_tflops
from ktui.worker.tolerance import EXACT, Tolerance, resolve


def _cpu(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if isinstance(obj, (tuple, list)):
        return type(obj)(_cpu(v) for v in obj)
    if isinstance(obj, dict):
        return {k: _cpu(v) for k, v in obj.items()}
    return obj


CaseKey = tuple[str, int, int, str, str]  # reference sha, spec_index, seed, dist, layout


def _key(problem: Problem, case: Case) -> CaseKey:
    return (problem.sha, case["spec_index"], case["seed"], case.get("dist", "native"), case.get("layout", "contiguous"))


def _rel_l2(a: torch.Tensor, ref: torch.Tensor) -> float:
    d = a.double() - ref.double()
    nr = float(torch.linalg.vector_norm(ref.double()))
    nd = float(torch.linalg.vector_norm(d))
    return nd / nr if nr > 0 else (0.0 if nd == 0 else math.inf)


class Judge:
    """Handlers of the ``judge`` role. Keeps, per worker: the prepared references of the current cases, the timed
    reference specs (per reference source) and the measured roofline."""

    def __init__(self, device: str):
        self.device = device
        self.problems = ProblemCache()
        self.prepared: dict[CaseKey, dict[str, Any]] = {}
        self.ref_times: dict[tuple[str, int, int], RefSpecTiming] = {}  # (reference sha, spec_index, seed)
        self.roof: dict[str, Any] = {}

    def do_describe(self, params: DescribeRequest, progress: OnProgress) -> ProblemInfo:
        """What the reference module declares: specs, labels, outputs, distributions (loads it once per sha)."""
        return self.problems.get(params["reference"]).describe()

    # -- correctness -------------------------------------------------------------------------------------------
    def _prepare_one(self, problem: Problem, case: Case) -> dict[str, Any]:
        key = _key(problem, case)
        if key in self.prepared:
            return self.prepared[key]
        data = build_input(problem, case, self.device)
        inputs = inputs_only(problem, data)
        expected = problem.reference_native(data)
        ref, precision = problem.reference(data)
        first = next((t for _, t in flatten(inputs) if isinstance(t, torch.Tensor) and t.numel() > 1), None)
        entry: dict[str, Any] = {
            "layout_name": layout_of(first) if first is not None and case.get("layout") else None,
            "input_hash": hash_data(inputs),
            "expected": _cpu(expected),
            "ref": _cpu(ref),
            "precision": precision,
            "policy_dtype": policy_dtype(inputs, expected),
        }
        if entry["policy_dtype"] == "float32" and precision == "float64":
            # What float32 and TF32 arithmetic each cost against the float64 truth (cases.md tf32): the native
            # reference is plain fp32; TF32 is emulated by rounding the floating inputs to 10 mantissa bits.
            tf32_data = _map(
                data, lambda x: round_to_tf32(x) if isinstance(x, torch.Tensor) and x.dtype == torch.float32 else x
            )
            tf32_out = _cpu(problem.reference_native(tf32_data))
            entry["expected_rel_l2"] = {
                p: {
                    "float32": _rel_l2(e, dict(flatten(entry["ref"]))[p]),
                    "tf32": _rel_l2(dict(flatten(tf32_out))[p], dict(flatten(entry["ref"]))[p]),
                }
                for p, e in flatten(entry["expected"])
                if isinstance(e, torch.Tensor) and e.is_floating_point()
            }
        self.prepared[key] = entry
        return entry

    def do_prepare(self, params: PrepareRequest, progress: OnProgress) -> PrepareReply:
        """Build each case's inputs and compute its reference output (float64 where the op allows it) and the
        native-precision reference (for the expected dtypes and shapes). Keeps them for ``compare``."""
        problem = self.problems.get(params["reference"])
        self.prepared.clear()
        out: list[PreparedCase] = []
        for i, case in enumerate(params["cases"]):
            e = self._prepare_one(problem, case)
            out.append(
                {
                    "input_hash": e["input_hash"],
                    "expected": describe(e["expected"]),
                    "precision": e["precision"],
                    "policy_dtype": e["policy_dtype"],
                }
            )
            progress({"done": i + 1, "total": len(params["cases"])})
        return {"cases": out}

    def do_compare(self, params: CompareRequest, progress: OnProgress) -> CompareReply:
        """Judge each executed case: inputs unchanged and identical to the judge's, no output aliasing an input,
        outputs of the expected structure, shapes and dtypes, every output within tolerance
        (``ktui.worker.metrics.verdict``), and a repeated call on identical inputs giving the same answer."""
        problem = self.problems.get(params["reference"])
        out_dir = Path(params["out_dir"])
        results: list[CaseVerdict] = []
        for i, case in enumerate(params["cases"]):
            prep = self._prepare_one(problem, case)
            results.append(self._judge_case(problem, prep, case, out_dir / f"case{i}"))
            progress({"done": i + 1, "total": len(params["cases"])})
        return {"cases": results}

    def _judge_case(self, problem: Problem, prep: dict[str, Any], case: ExecutedCase, folder: Path) -> CaseVerdict:
        spec = problem.tests[case["spec_index"]]
        # cast: these Case keys appear in CaseVerdict with the same types (int or str).
        base = cast(
            CaseVerdict, {k: case[k] for k in ("spec_index", "seed", "dist", "layout", "config", "repeat") if k in case}
        )
        shown = {**case, "layout": prep.get("layout_name") or case.get("layout")} if case.get("layout") else case
        base.update(
            {
                "label": spec_label(spec),
                "case": case_label(spec_label(spec), shown),
                "precision": prep["precision"],
                "policy_dtype": prep["policy_dtype"],
                "warnings": [],
            }
        )

        def fail(reason: str) -> CaseVerdict:
            return {**base, "ok": False, "reason": reason, "score": math.inf}

        if case.get("unsupported"):
            return {**base, "ok": True, "reason": "", "score": 0.0, "unsupported": case["unsupported"]}
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
            leaf_tol = EXACT if exp_int else tol
            try:
                m = self._judge_leaf(problem, prep, case, folder, leaf_tol, path, exp, wref[path], g)
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
                "tolerance": tol.describe(),
                "outputs": len(leaves),
                "warnings": warnings,
            },
        )

    def _judge_leaf(
        self,
        problem: Problem,
        prep: dict[str, Any],
        case: ExecutedCase,
        folder: Path,
        tol: Tolerance,
        path: str,
        exp: Any,
        ref: Any,
        g: OutputLeaf,
    ) -> dict[str, Any] | str:
        """The verdict for one output leaf, or the reason it cannot be compared (a str)."""
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
            if g.get("device") and g["device"].split(":")[0] != self.device.split(":")[0]:
                return (
                    f"{path} is on {g['device']}, expected {self.device}: the kernel must return its "
                    "output on the device it ran on"
                )
            if g["dtype"] != exp_dtype:
                return f"{path} has dtype {g['dtype']}, expected {exp_dtype}"
            if list(g["shape"]) != list(exp.shape):
                return f"{path} has shape {tuple(g['shape'])}, expected {tuple(exp.shape)}"
            out = load_output(folder, g)
        if out.numel() > metrics.LARGE:
            m = metrics.verdict_large(out, ref, tol, allow_nan=problem.allow_nan, device=self.device)
            m["baseline_psnr_db"] = None
        else:
            m = metrics.verdict(out, ref, tol, unwritten=poisoned_mask(out), allow_nan=problem.allow_nan)
            m["baseline_psnr_db"] = (
                metrics.error_metrics(exp, ref)["psnr_db"] if prep["precision"] != "native" else None
            )
        m["path"] = path
        if path and not m["ok"]:
            m["reason"] = f"output {path}: {m['reason']}"
        self._precision_check(prep, path, m)
        if case.get("repeat_outputs"):
            self._determinism_check(
                folder / case["repeat_dir"], case["repeat_outputs"], g, out, ref, tol, m, problem.allow_nan, self.device
            )
        return m

    @staticmethod
    def _precision_check(prep: dict[str, Any], path: str, m: dict[str, Any]) -> None:
        exp = (prep.get("expected_rel_l2") or {}).get(path)
        if not exp:
            return
        m["expected_rel_l2_fp32"], m["expected_rel_l2_tf32"] = exp["float32"], exp["tf32"]
        measured = m["rel_l2_err"]
        if (
            math.isfinite(measured)
            and measured > 10 * max(exp["float32"], 1e-7)
            and 0.3 * exp["tf32"] <= measured <= 100 * exp["tf32"]
        ):  # hardware may truncate, not round
            m["warnings"].append(
                f"precision lower than declared float32: rel_l2_err {measured:.2g} is at the TF32 level (expected "
                f"{exp['float32']:.2g} for fp32, {exp['tf32']:.2g} for tf32): a tl.dot or matmul in TF32, or an "
                f"intermediate rounded to a 10-bit mantissa (fp16/bf16)?"
            )

    @staticmethod
    def _determinism_check(
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
        if torch.equal(out.contiguous().view(torch.uint8), again.contiguous().view(torch.uint8)):
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
        allowance = (tol.atol + tol.rtol * ref.double().abs()) if tol.mode == "allclose" else None
        too_far = (
            exact
            or (allowance is not None and bool(((a - b).abs() > allowance).any()))
            or (tol.mode == "psnr" and metrics.error_metrics(again, ref)["psnr_db"] < tol.min_psnr_db)
        )
        text = (
            f"nondeterministic: {differ} element(s) differ between two calls on identical inputs, spread {spread:.3g}"
        )
        if too_far:
            m["ok"], m["score"] = False, math.inf
            m["reason"] = (
                (m["reason"] + "; " if m["reason"] else "")
                + text
                + (" (exact compare for integer outputs)" if exact else " (beyond the tolerance)")
            )
        else:
            m["warnings"].append(text + " (within the tolerance: float atomics or a race?)")

    # -- benchmark ---------------------------------------------------------------------------------------------
    def do_time_reference(self, params: TimeReferenceRequest, progress: OnProgress) -> TimeReferenceReply:
        """Time ``ref_kernel`` (native precision) on each benchmark spec the same way as the candidate (fresh
        inputs per call, L2 flushed), once per reference source and spec; report the spec's declared flops and bytes
        and its lowest input precision (for the roofline)."""
        problem = self.problems.get(params["reference"])
        out: list[RefSpecTiming] = []
        for n, idx in enumerate(params["spec_indices"]):
            key = (problem.sha, idx, params["seed"])
            if key not in self.ref_times:
                spec = problem.benchmarks[idx]
                base = params["seed"]
                data = problem.generate(base, spec, self.device)

                def refresh(rep: int, spec: dict[str, Any] = spec, data: Any = data, base: int = base) -> None:
                    src = problem.generate(base + 1 + rep, spec, self.device)
                    for (_, d), (_, s) in zip(flatten(data), flatten(src)):
                        if isinstance(d, torch.Tensor):
                            d.copy_(s)

                stats, _ = bench(lambda: problem.module.ref_kernel(data), self.device, before=refresh)
                self.ref_times[key] = {
                    "spec_index": idx,
                    **stats,
                    "flops": problem.flops(spec),
                    "bytes": problem.bytes_moved(spec),
                    "dtype": policy_dtype(inputs_only(problem, data), ()),
                }
                del data
            out.append(self.ref_times[key])
            progress({"done": n + 1, "total": len(params["spec_indices"])})
        torch.cuda.empty_cache()
        return {"specs": out}

    def do_check_samples(self, params: CheckSamplesRequest, progress: OnProgress) -> CheckSamplesReply:
        """Re-check the output of the candidate's last timed call: the sampled elements (``indices`` per output
        leaf, chosen by ktui after the timing) against the reference on the inputs of that call's seed."""
        problem = self.problems.get(params["reference"])
        folder = Path(params["out_dir"])
        results: list[SampleVerdict] = []
        for item in params["specs"]:
            spec = problem.benchmarks[item["spec_index"]]
            data = problem.generate(item["seed"], spec, self.device)
            expected = problem.reference_native(data)
            ref, _ = problem.reference(data)
            tol = resolve(policy_dtype(inputs_only(problem, data), expected), problem.tolerance)
            refs = dict(flatten(ref))
            reasons = []
            for path, f in item["files"].items():
                idx = torch.tensor(item["indices"][path], dtype=torch.int64)
                got = tensor_from_bytes((folder / f["file"]).read_bytes(), f["dtype"], [len(idx)])
                want = refs[path].reshape(-1)[idx.to(refs[path].device)].cpu()
                if tol.mode == "psnr":  # elementwise stand-in for PSNR: 2**-6 relative, 1% of the RMS absolute
                    rms = float(want.double().pow(2).mean().sqrt())
                    tol = Tolerance("allclose", atol=1e-2 * rms, rtol=2.0**-6)
                v = metrics.verdict(got, want, tol, allow_nan=problem.allow_nan)
                if not v["ok"]:
                    reasons.append(f"{path}: {v['reason']}")
            results.append(
                {
                    "spec_index": item["spec_index"],
                    "ok": not reasons,
                    "reason": "; ".join(reasons),
                    "label": spec_label(spec),
                }
            )
            del data, expected, ref
        torch.cuda.empty_cache()
        return {"specs": results}

    def do_roofline(self, params: RooflineRequest, progress: OnProgress) -> RooflineReply:
        """The measured ceilings: device bandwidth (GB/s) and matmul peak (TFLOP/s) for each dtype asked."""
        if "bandwidth_gbps" not in self.roof:
            self.roof["bandwidth_gbps"] = measure_bandwidth(self.device)
            self.roof["peak_tflops"] = {}
        for name in params.get("dtypes", []):
            if name not in self.roof["peak_tflops"]:
                self.roof["peak_tflops"][name] = measure_peak_tflops(getattr(torch, name), self.device)
        torch.cuda.empty_cache()
        return cast(RooflineReply, self.roof)  # cast: both of its keys were set above
