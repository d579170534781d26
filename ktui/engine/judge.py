"""The judge worker: runs only trusted reference code, and decides verdicts.

No candidate code ever runs in this process, so a kernel that patches torch in its own worker cannot change how its
outputs (or anyone's) are judged. It generates the same inputs as the candidate from the same seeds, computes the
reference in float64, and compares the candidate's outputs, which arrive as raw bytes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import torch

from ktui.engine import metrics
from ktui.engine.problem import ProblemCache, inputs_only, policy_dtype, spec_label
from ktui.engine.tensors import describe, flatten, hash_data, load_output, poisoned_mask
from ktui.engine.timing import bench, measure_bandwidth, measure_peak_tflops
from ktui.tolerance import resolve

Progress = Callable[[dict[str, Any]], None]


def _cpu(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if isinstance(obj, (tuple, list)):
        return type(obj)(_cpu(v) for v in obj)
    if isinstance(obj, dict):
        return {k: _cpu(v) for k, v in obj.items()}
    return obj


class Judge:
    def __init__(self, device: str):
        self.device = device
        self.problems = ProblemCache()
        self.prepared: dict[tuple[str, int, int], dict[str, Any]] = {}
        self.ref_times: dict[tuple[str, int, int], dict[str, Any]] = {}
        self.roof: dict[str, Any] = {}

    def do_describe(self, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
        return self.problems.get(params["reference"]).describe()

    # -- correctness -------------------------------------------------------------------------------------------
    def _prepare_one(self, problem, spec_index: int, seed: int) -> dict[str, Any]:
        spec = problem.tests[spec_index]
        data = problem.generate(seed, spec, self.device)
        inputs = inputs_only(problem, data)
        expected = problem.reference_native(data)
        ref, precision = problem.reference(data)
        entry = {
            "input_hash": hash_data(inputs),
            "expected": _cpu(expected),
            "ref": _cpu(ref),
            "precision": precision,
            "policy_dtype": policy_dtype(inputs, expected),
        }
        self.prepared[(problem.sha, spec_index, seed)] = entry
        return entry

    def do_prepare(self, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
        """Generate each case's inputs and compute its reference output (float64 where the op allows it) and the
        native-precision reference (for the expected dtypes and shapes). Keeps them for ``compare``."""
        problem = self.problems.get(params["reference"])
        self.prepared.clear()
        out = []
        for i, case in enumerate(params["cases"]):
            e = self._prepare_one(problem, case["spec_index"], case["seed"])
            out.append({"input_hash": e["input_hash"], "expected": describe(e["expected"]),
                        "precision": e["precision"], "policy_dtype": e["policy_dtype"]})
            progress({"done": i + 1, "total": len(params["cases"])})
        return {"cases": out}

    def do_compare(self, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
        """Judge each executed case: inputs unchanged and identical to the judge's, outputs of the expected
        structure, shapes and dtypes, and every output within tolerance (``ktui.engine.metrics.verdict``)."""
        problem = self.problems.get(params["reference"])
        out_dir = Path(params["out_dir"])
        results = []
        for i, case in enumerate(params["cases"]):
            key = (problem.sha, case["spec_index"], case["seed"])
            prep = self.prepared.get(key) or self._prepare_one(problem, case["spec_index"], case["seed"])
            results.append(self._judge_case(problem, prep, case, out_dir / f"case{i}"))
            progress({"done": i + 1, "total": len(params["cases"])})
        return {"cases": results}

    def _judge_case(self, problem, prep: dict[str, Any], case: dict[str, Any], folder: Path) -> dict[str, Any]:
        spec = problem.tests[case["spec_index"]]
        base = {"spec_index": case["spec_index"], "seed": case["seed"], "label": spec_label(spec),
                "precision": prep["precision"], "policy_dtype": prep["policy_dtype"]}

        def fail(reason: str) -> dict[str, Any]:
            return {**base, "ok": False, "reason": reason, "score": math.inf}

        if case["input_hash_before"] != prep["input_hash"]:
            return fail("the candidate's inputs differ from the judge's for the same seed: generate_input is not "
                        "deterministic, or the candidate worker was tampered with")
        if case["input_hash_after"] != case["input_hash_before"]:
            return fail("input modified: the kernel wrote into its input tensors")
        want = flatten(prep["expected"])
        wref = dict(flatten(prep["ref"]))
        got = case["outputs"]
        if len(got) != len(want):
            return fail(f"returned {len(got)} output(s) ({', '.join(g['path'] for g in got)}), "
                        f"expected {len(want)} ({', '.join(p for p, _ in want)})")
        tol = resolve(prep["policy_dtype"], problem.tolerance)
        leaves = []
        for (path, exp), g in zip(want, got):
            ref = wref[path]
            if not isinstance(exp, torch.Tensor):
                exp = torch.tensor(exp)
                ref = torch.tensor(ref, dtype=torch.float64) if isinstance(ref, (int, float)) else ref
            if g["kind"] == "number":
                out = torch.tensor(g["value"], dtype=exp.dtype)
            elif g["kind"] != "tensor":
                return fail(f"{path} is a {g['type']}, expected a tensor")
            else:
                if g["dtype"] != str(exp.dtype).removeprefix("torch."):
                    return fail(f"{path} has dtype {g['dtype']}, expected {str(exp.dtype).removeprefix('torch.')}")
                if list(g["shape"]) != list(exp.shape):
                    return fail(f"{path} has shape {tuple(g['shape'])}, expected {tuple(exp.shape)}")
                out = load_output(folder, g)
            m = metrics.verdict(out, ref, tol, unwritten=poisoned_mask(out))
            m["baseline_psnr_db"] = metrics.error_metrics(exp, ref)["psnr_db"] if prep["precision"] != "native" else None
            m["path"] = path
            leaves.append(m)
        worst = max(leaves, key=lambda m: m["score"]) if leaves else {"ok": True, "reason": "", "score": 0.0}
        return {**base, **worst, "ok": all(m["ok"] for m in leaves), "tolerance": tol.describe(),
                "outputs": len(leaves)}

    # -- benchmark ---------------------------------------------------------------------------------------------
    def do_time_reference(self, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
        """Time ``ref_kernel`` (native precision) on each benchmark spec, once per reference source and spec, and
        report the spec's declared flops and bytes and its lowest input precision (for the roofline)."""
        problem = self.problems.get(params["reference"])
        out = []
        for n, idx in enumerate(params["spec_indices"]):
            key = (problem.sha, idx, params["seed"])
            if key not in self.ref_times:
                spec = problem.benchmarks[idx]
                data = problem.generate(params["seed"], spec, self.device)
                stats = bench(lambda: problem.module.ref_kernel(data), self.device)
                self.ref_times[key] = {
                    "spec_index": idx, **stats,
                    "flops": problem.flops(spec), "bytes": problem.bytes_moved(spec),
                    "dtype": policy_dtype(inputs_only(problem, data), ()),
                }
                del data
            out.append(self.ref_times[key])
            progress({"done": n + 1, "total": len(params["spec_indices"])})
        torch.cuda.empty_cache()
        return {"specs": out}

    def do_roofline(self, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
        """The measured ceilings: device bandwidth (GB/s) and matmul peak (TFLOP/s) for each dtype asked."""
        if "bandwidth_gbps" not in self.roof:
            self.roof["bandwidth_gbps"] = measure_bandwidth(self.device)
            self.roof["peak_tflops"] = {}
        for name in params.get("dtypes", []):
            if name not in self.roof["peak_tflops"]:
                self.roof["peak_tflops"][name] = measure_peak_tflops(getattr(torch, name), self.device)
        torch.cuda.empty_cache()
        return self.roof
