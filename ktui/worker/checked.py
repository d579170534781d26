"""The candidate's checked calls: ``do_execute`` calls ``custom_kernel`` on each correctness case, in poisoned memory
between guard bands, and writes its outputs for the judge (a mixin of ``ktui.worker.candidate.Candidate``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ktui.protocol import Case, ExecutedCase, ExecuteReply, ExecuteRequest, KernelSource, OnProgress, Sources
from ktui.worker import allocation, capture, integrity
from ktui.worker.cases import build_input, case_label, label_of
from ktui.worker.errors import CaseFailed, KernelError, reraise_as_case
from ktui.worker.guards import Guards
from ktui.worker.interp_bounds import is_out_of_bounds
from ktui.worker.problem import ProblemCache, inputs_only
from ktui.worker.structure import structure
from ktui.worker.tensors import NestingError, aliases, decoy_, hash_data, poison_, save_outputs


class CheckedCalls:
    """``do_execute`` and the one call it makes per case (``_call``)."""

    device: str
    problems: ProblemCache
    baseline: dict[str, int]

    if TYPE_CHECKING:  # provided by Candidate

        def _sync(self) -> None: ...
        def _load(self, k: KernelSource) -> Callable[[Any], Any]: ...
        def _fn(self, params: Sources) -> Callable[[Any], Any]: ...

    def _call(self, fn: Callable[[Any], Any], data: Any, case: Case, guards: Guards | None = None) -> tuple[Any, float]:
        self._sync()
        t0 = time.perf_counter()
        decoy = case["seed"] if case.get("fill") == "decoy" else None
        with allocation.poisoned_allocations(decoy, guards), capture.pinned_config(case.get("config", 0)):
            out = fn(data)
        self._sync()
        return out, time.perf_counter() - t0

    def do_execute(self, params: ExecuteRequest, progress: OnProgress) -> ExecuteReply:
        """Call ``custom_kernel`` on each case and write its outputs under ``out_dir``.

        Declared output buffers are filled with the poison NaN first, and so is any memory the kernel allocates with
        ``torch.empty*`` during the call. Each case reports the input hash before and after the call (the judge
        compares them with its own), the call's wall time (synchronized), outputs that alias inputs, and for
        ``repeat: 2`` a second output from identical inputs. A case with a non-contiguous ``layout`` that raises is
        reported as an unsupported layout instead of failing the rung.
        """
        problem = self.problems.get(params["reference"])
        # A fresh import: host-side state that the dry call left (a cached size, a cached output) must not carry
        # into the checks (cases.md stale-cache). Compiled kernels come back from Triton's cache.
        fn = self._load(params["kernel"])
        out_dir = Path(params["out_dir"])
        results: list[ExecutedCase] = []
        cases = params["cases"]
        kept: list[tuple[ExecutedCase, Any, str]] = []  # (entry, output, its hash when the call returned)
        expected = params.get("expected") or []  # the reference's output leaves per case, from the judge's prepare
        threads_before = threading.active_count()
        for i, case in enumerate(cases):
            if case.get("fresh"):
                fn = self._load(params["kernel"])  # a second phase, from a fresh module again
            label = case_label(label_of(problem, case), case)
            entry = cast(ExecutedCase, dict(case))  # cast: a copy of the Case; ExecutedCase adds only optional keys
            progress({"done": i, "total": len(cases), "case": label})  # what runs now, should the worker die
            for rep in range(case.get("repeat", 1)):
                guards = Guards()  # canaries around every input and every torch.empty* of the call (cases.md oob)
                data = guards.wrap_data(build_input(problem, case, self.device))
                for j, buf in enumerate(problem.output_buffers(data)):
                    if case.get("fill") == "decoy":
                        decoy_(buf, case["seed"] + 7919 * (j + 1))
                    else:
                        poison_(buf)
                inputs = inputs_only(problem, data)
                h_before = hash_data(inputs)
                try:
                    out, seconds = self._call(fn, data, case, guards)
                    guards.name_outputs(out)
                    out_of_bounds = guards.violations()
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    if (
                        case.get("layout", "contiguous") != "contiguous"
                        and not isinstance(exc, SystemExit)
                        and not is_out_of_bounds(exc)  # a memory error, whatever the layout
                    ):
                        self._sync()
                        entry["unsupported"] = (
                            f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                            if str(exc)
                            else type(exc).__name__
                        )
                        break
                    reraise_as_case(exc, label)
                finally:
                    guards.close()
                if out_of_bounds:
                    raise CaseFailed(f"{label}: out-of-bounds write: {'; '.join(out_of_bounds[:4])}")
                folder = out_dir / f"case{i}" / (f"repeat{rep}" if rep else "")
                try:
                    leaves = save_outputs(out, folder, expected[i] if i < len(expected) else None)
                except NestingError as exc:
                    raise KernelError(f"{label}: {exc}") from None
                if rep == 0:
                    entry.update(
                        {
                            "seconds": round(seconds, 6),
                            "input_hash_before": h_before,
                            "input_hash_after": hash_data(inputs),
                            "outputs": leaves,
                            "structure": structure(out),
                            "aliases": aliases(out, inputs),
                        }
                    )
                    if all(leaf.get("file") or leaf["kind"] == "number" for leaf in leaves):  # bytes sent: readable
                        kept.append((entry, out, hash_data(out)))
                else:
                    entry["repeat_outputs"] = leaves
                    entry["repeat_dir"] = f"repeat{rep}"
                del out, data
            results.append(entry)
            progress({"done": i + 1, "total": len(cases)})
        # Every output stays alive until all cases ran: one that changes afterwards was still being written when the
        # call returned (a stream or thread the kernel did not wait for), or a later call wrote into it (a buffer
        # kept and reused across calls, which hands the caller memory the next call overwrites).
        self._sync()
        time.sleep(0.05)
        for entry, out, digest in kept:
            if hash_data(out) != digest:
                entry["changed_after"] = True
        del kept
        threads = threading.active_count() - threads_before
        return {"cases": results, "tampered": integrity.tampered(self.baseline), "threads_left": max(0, threads)}
