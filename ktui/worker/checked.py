"""The candidate's checked calls: ``do_execute`` calls ``custom_kernel`` on each correctness case, in poisoned memory
between guard bands, and writes its outputs for the judge (a mixin of ``ktui.worker.candidate.Candidate``). Every call
goes through ``ktui.worker.invoke``, the path of the timed calls too: the kernel cannot tell the two apart."""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch

from ktui.protocol import (
    CallRecord,
    Case,
    ExecutedCase,
    ExecuteReply,
    ExecuteRequest,
    KernelSource,
    OnProgress,
    OutputLeaf,
    Sources,
)
from ktui.worker import allocation, capture, global_state, integrity, interp_races, interp_sched, interp_waits
from ktui.worker.cases import build_input, case_label, empty_spec, intrange_hint, label_of, spec_of
from ktui.worker.errors import CaseFailed, KernelError, loses_context, reraise_as_case
from ktui.worker.grad_modes import (
    CallMode,
    case_mode,
    cotangent_layout,
    frozen_path,
    input_grads,
    live_grad_paths,
    requires_grad_again,
)
from ktui.worker.guards import Guards
from ktui.worker.interp_bounds import is_out_of_bounds
from ktui.worker.problem import Problem, ProblemCache, inputs_only
from ktui.worker.structure import structure
from ktui.worker.tensors import (
    NestingError,
    aliases,
    buffer_leaves,
    decoy_,
    flatten,
    generator_states,
    geometry,
    hash_data,
    hash_flat,
    is_plain_tensor,
    poison_,
    replaced_leaves,
    repointed_leaves,
    save_input_leaves,
    save_outputs,
    shared_outputs,
)

# ``requires_grad`` cases: the j-th other forward call made between a call and its backward takes this case's seed
# plus j times this (its own inputs, of the case's shape)
INTERLEAVED_SEED = 4_099
INTERLEAVED_CALLS = 3  # ``requires_grad`` cases: at most this many other forward calls before a call's backward


def interleaved_calls(seed: int) -> int:
    """How many other forward calls a ``requires_grad`` case of ``seed`` makes before its own backward: 1 to
    ``INTERLEAVED_CALLS``, by the seed (a run's grad cases take each: a ring of k buffers per shape is overwritten
    where k or more other calls come between)."""
    return 1 + seed % INTERLEAVED_CALLS


def _out_of_bounds(label: str, found: list[str], out: Any, inputs: Any) -> str:
    """The failure of a call that wrote outside its memory (``found``: the guards' findings), naming first any output
    that is an input: a kernel that writes its result into an input as if it were contiguous hits that input's
    padding, and the aliasing is the fault to fix (the padding write its consequence)."""
    shared = aliases(out, inputs)
    first = f"output aliases input: {', '.join(shared)} (the output must be memory of its own); " if shared else ""
    return f"{label}: {first}out-of-bounds write: {'; '.join(found[:4])}"


def readable(leaves: list[OutputLeaf]) -> bool:
    """Every output leaf went to the judge as bytes or a value (a tensor's file, a number, a None): the outputs can
    be kept and hashed, so a change after the call shows. A None (``(y, None)``, red team round 18 F4) is a value:
    without it the outputs were let go, and the next call's output landing in their memory read as reused."""
    return all(
        leaf.get("file") or leaf["kind"] == "number" or (leaf["kind"] == "other" and leaf.get("type") == "NoneType")
        for leaf in leaves
    )


class CheckedCalls:
    """``do_execute`` and the one call it makes per case (``_call``)."""

    device: str
    problems: ProblemCache
    baseline: dict[str, int]
    state_changed: str = ""  # what the last checked call changed of torch's global settings (``global_state``)

    if TYPE_CHECKING:  # provided by Candidate

        def _sync(self) -> None: ...
        def _load(self, k: KernelSource) -> Callable[[Any], Any]: ...
        def _fn(self, params: Sources) -> Callable[[Any], Any]: ...

    def _call(self, fn: Callable[[Any], Any], data: Any, case: Case, guards: Guards | None = None) -> tuple[Any, float]:
        self._sync()
        t0 = time.perf_counter()
        decoy = case["seed"] if case.get("fill") == "decoy" else None
        with (
            allocation.poisoned_allocations(decoy, guards),
            capture.pinned_config(case.get("config", 0), f"{case['seed']}:{case['spec_index']}"),
        ):
            with capture.recording(case):  # the Triton/CuTeDSL launches of this case (cases.md hidden-torch)
                # torch's global settings read before and after the call, on the kernel's thread, between the
                # call's steps, and put back when it changed them (``global_state.settled_call``): a change fails
                # the case after its out-of-bounds check
                out, self.state_changed = global_state.settled_call(fn, data, self.device, CallMode(case))
        self._sync()
        return out, time.perf_counter() - t0

    def _burst(
        self,
        fn: Callable[[Any], Any],
        problem: Problem,
        case: Case,
        entry: ExecutedCase,
        folder: Path,
        expected: list[OutputLeaf] | None,
        kept: list[tuple[Any, Any, str, str]],
        step: Callable[[str], None] | None = None,
    ) -> None:
        """The burst case (``calls``: n, issue 9.4): n checked calls in a row on the case's spec, call c on fresh inputs
        of seed ``seed + c``, each written under ``folder/call<c>`` with its inputs as the call left them. Every output
        stays alive until all cases ran, with its hash when its call returned (``kept``: the end of ``do_execute``
        marks one that changed after), so a ring of output buffers or a kernel that switches after a number of calls
        shows: a call whose output lies in the storage of an earlier call's output, which the caller still holds, is
        marked ``reused``. ``entry`` gets ``calls_out`` (one ``CallRecord`` per call) and the calls' summed
        ``seconds``. ``step`` gets each call's label before it starts (progress: a call finished, the next named).

        Raises:
            CaseFailed: a call raised or wrote out of bounds (the message names the call).
            KernelError: an output nests too deep.
        """
        n = case["calls"]
        records: list[CallRecord] = []
        owners: dict[int, int] = {}  # storage address of a kept output -> the call that returned it
        total = 0.0
        for c in range(n):
            sub = cast(Case, {k: v for k, v in case.items() if k != "calls"})
            sub["seed"] = case["seed"] + c
            label = f"{case_label(label_of(problem, sub), sub)} (call {c + 1} of {n} in a row)"
            if step is not None:
                step(label)
            guards = Guards()
            data = guards.wrap_data(build_input(problem, sub, self.device))
            bufs = problem.output_buffers(data)
            for buf in bufs:
                poison_(buf)
            inputs = inputs_only(problem, data)
            before = flatten(inputs, "in")  # the caller's objects: checked after the call, whatever the fields hold
            h_before = hash_flat(before)
            where_before = geometry(before)
            try:
                out, seconds = self._call(fn, data, case, guards)  # recorded as the burst case's launches
                guards.name_outputs(out)
                out_of_bounds = guards.violations()
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                reraise_as_case(exc, label)
            finally:
                guards.close()
            if out_of_bounds:
                raise CaseFailed(_out_of_bounds(label, out_of_bounds, out, inputs))
            if self.state_changed:
                raise CaseFailed(f"{label}: {self.state_changed}")
            try:
                out_digests: list[str] = []
                in_digests: list[str] = []
                leaves = save_outputs(out, folder / f"call{c}", expected, out_digests)
                inputs_after = save_input_leaves(before, folder / f"call{c}", in_digests)
            except NestingError as exc:
                raise KernelError(f"{label}: {exc}") from None
            replaced = replaced_leaves(before, inputs)
            repointed = repointed_leaves(before, where_before)
            rec: CallRecord = {
                "seed": sub["seed"],
                "dir": f"call{c}",
                "seconds": round(seconds, 6),
                "input_hash_before": h_before,
                "input_hash_after": hash_flat(before, in_digests),
                "inputs_after": inputs_after,
                "outputs": leaves,
                "structure": structure(out),
                "aliases": aliases(out, inputs),
                "shared_outputs": shared_outputs(out),
                "buffer_leaves": buffer_leaves(out, bufs),
            }
            if replaced:
                rec["inputs_replaced"] = replaced
            if repointed:
                rec["inputs_repointed"] = repointed
            states = generator_states(before)  # where the call left each generator it was given
            if states:
                rec["generators_after"] = states
            mine: dict[int, str] = {}  # storage address -> the first output leaf in it
            for path, t in flatten(out):
                if is_plain_tensor(t) and t.layout == torch.strided and not t.is_meta and t.numel():
                    mine.setdefault(t.untyped_storage().data_ptr(), path)
            for ptr, path in mine.items():
                if ptr in owners:
                    held = owners[ptr] + 1
                    rec["reused"] = f"{path} lies in the memory of call {held}'s output, which the caller still holds"
                    break
            for ptr in mine:
                owners.setdefault(ptr, c)
            records.append(rec)
            in_place = problem.inplace_tensors(data)
            if in_place:  # declared in-place inputs: judged as outputs (``do_execute``)
                rec["inplace_outputs"] = save_outputs(in_place, folder / f"call{c}" / "inplace")
                kept.append((rec, in_place, hash_data(in_place), "changed_after"))
            if readable(leaves):  # bytes sent: readable
                kept.append((rec, out, hash_data(out, out_digests), "changed_after"))
            kept.append((rec, before, rec["input_hash_after"], "inputs_changed_after"))
            total += seconds
            del out, data
        entry["calls_out"] = records
        entry["seconds"] = round(total, 6)
        patched = integrity.tampered(self.baseline, own_only=True)  # ktui's own code, after every case
        if patched:
            entry["tampered"] = patched

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
        # (entry, an output or the inputs, its hash when the call returned, the entry's key to set if it changes)
        kept: list[tuple[Any, Any, str, str]] = []
        expected = params.get("expected") or []  # the reference's output leaves per case, from the judge's prepare
        base = int(params.get("first_index", 0))  # folders continue a run's numbering (cases in place of refused ones)
        threads_before = threading.active_count()
        interp_races.take()  # (nothing an earlier request's calls left)
        interp_waits.take_waited_on_later()
        for i, case in enumerate(cases):
            if case.get("fresh"):
                fn = self._load(params["kernel"])  # a second phase, from a fresh module again
            interp_sched.order_from(base + i)  # the interpreter's program orders, the same on a replay
            label = case_label(label_of(problem, case), case)
            interp_races.case_label[0] = label  # named in a race warning (new-user trial 35, F7)
            entry = cast(ExecutedCase, dict(case))  # cast: a copy of the Case; ExecutedCase adds only optional keys
            progress({"done": i, "total": len(cases), "case": label})  # what runs now, should the worker die
            if case.get("calls"):  # the burst: many calls in a row, every output kept (issue 9.4)
                fold = expected[i] if i < len(expected) else None

                def step(call: str, i: int = i) -> None:  # each call of the burst is progress: the limit restarts
                    progress({"done": i, "total": len(cases)})
                    progress({"done": i, "total": len(cases), "case": call})

                self._burst(fn, problem, case, entry, out_dir / f"case{base + i}", fold, kept, step)
                results.append(entry)
                progress({"done": i + 1, "total": len(cases), "entry": entry})  # streamed as every case is
                continue
            with case_mode(case):  # (inference: the inputs are inference tensors; ktui.worker.grad_modes)
                for rep in range(case.get("repeat", 1)):
                    guards = Guards()  # canaries around every input and every torch.empty* of the call (cases.md oob)
                    data = guards.wrap_data(build_input(problem, case, self.device))
                    bufs = problem.output_buffers(data)
                    for j, buf in enumerate(bufs):
                        if case.get("fill") == "decoy":
                            decoy_(buf, case["seed"] + 7919 * (j + 1))
                        else:
                            poison_(buf)
                    live = live_grad_paths(problem.grad_paths, case)  # (a frozen input's left out)
                    if case.get("grad") == "requires_grad":  # after ktui's own writes: its inputs as generated
                        requires_grad_again(data, live)
                        frozen = frozen_path(problem.grad_paths, case)
                        if frozen:  # named in the case's label: "frozen=in[1]"
                            entry["frozen_path"] = frozen
                            label = case_label(label_of(problem, case), entry)
                    inputs = inputs_only(problem, data)
                    before = flatten(inputs, "in")  # the caller's objects: checked after the call, whatever fields hold
                    h_before = hash_flat(before)
                    where_before = geometry(before)
                    try:
                        out, seconds = self._call(fn, data, case, guards)
                        if capture.configs_ran():  # the config each autotuned kernel launched: in the case's name
                            entry["configs"] = capture.configs_ran()
                            label = case_label(label_of(problem, case), entry)
                        guards.name_outputs(out)
                        out_of_bounds = guards.violations()
                    except BaseException as exc:
                        if isinstance(exc, KeyboardInterrupt):
                            raise
                        if (
                            (
                                case.get("layout", "contiguous") != "contiguous"
                                or case.get("dist") == "scalars"
                                # a 0 size fuzz drew (``fuzz._draw_empty``); one the reference's tests list is theirs
                                or (empty_spec(spec_of(problem, case)) and case.get("spec") is not None)
                            )
                            and not isinstance(exc, SystemExit)
                            and not is_out_of_bounds(exc)  # a memory error, whatever the layout
                            and not loses_context(exc)  # a CUDA fault: no synchronize may follow it
                        ):
                            self._sync()
                            entry["unsupported"] = (
                                f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                                if str(exc)
                                else type(exc).__name__
                            ) + _crash_note(exc, fn, case, problem)
                            break
                        shown = {**entry, "configs": capture.configs_ran()}  # the configs it ran when it raised
                        try:
                            reraise_as_case(exc, case_label(label_of(problem, case), shown))
                        except CaseFailed as failed:  # (an intrange case: where its values came from)
                            raise CaseFailed(f"{failed}{intrange_hint(case, before)}") from exc
                    finally:
                        guards.close()
                    if out_of_bounds:
                        raise CaseFailed(
                            _out_of_bounds(label, out_of_bounds, out, inputs) + intrange_hint(case, before)
                        )
                    if self.state_changed:
                        raise CaseFailed(f"{label}: {self.state_changed}")
                    grads: list[Any] = []
                    if rep == 0 and case.get("grad") == "requires_grad" and live:
                        # other forwards of the op between this call and its backward, as a model using the op in
                        # several layers runs it: a buffer the forward saves for its backward and reuses per shape is
                        # overwritten by then (red team round 35, #3: a SiLU keeping sigmoid(x) per shape passed, its
                        # first layer's gradient 1.75 off), a ring of them too (round 35b, #4: two per shape passed
                        # one other call): 1 to ``INTERLEAVED_CALLS`` of them, by the case's seed
                        before_other = hash_data(out)  # (an output buffer another call writes: said as such)
                        others: list[tuple[Any, Any, int]] = []  # (inputs, outputs, seed) of each other call
                        for j in range(1, 1 + interleaved_calls(case["seed"])):
                            seed_j = case["seed"] + INTERLEAVED_SEED * j
                            try:
                                other = build_input(problem, {**case, "seed": seed_j}, self.device)
                                requires_grad_again(other, live)
                                self._sync()
                                with allocation.poisoned_allocations(None), capture.recording(case, backward=True):
                                    out_other, changed = global_state.settled_call(
                                        fn, other, self.device, CallMode(case)
                                    )
                                self._sync()
                            except BaseException as exc:
                                reraise_as_case(exc, f"{label}: another forward call before this one's backward")
                            if changed:
                                raise CaseFailed(f"{label}: another forward call before this one's backward: {changed}")
                            others.append((other, out_other, seed_j))
                        if hash_data(out) != before_other:
                            entry["changed_after"] = True
                        # the version's backward, as a training step runs it, before anything is read: what it
                        # does to the outputs or the inputs is seen (red team round 29, #8)
                        try:
                            with capture.recording(case, backward=True):  # its launches: compiled, dumped too
                                grads = input_grads(out, data, live, case["seed"])
                            self._sync()
                            returned = hash_data(grads)
                            # and the other calls' backwards after it, the last made first: a gradient buffer the
                            # backward keeps and returns again is overwritten (round 35, #4; later: ``kept`` below)
                            for other, out_other, seed_j in reversed(others):
                                input_grads(out_other, other, live, seed_j)
                            self._sync()
                            if hash_data(grads) != returned:
                                entry["grads_changed_after"] = True
                        except BaseException as exc:
                            reraise_as_case(
                                exc,
                                f"{label}: the backward (autograd.grad of the outputs, seeded cotangents, laid out "
                                f"{cotangent_layout(case['seed'])})",
                            )
                        del others
                    folder = out_dir / f"case{base + i}" / (f"repeat{rep}" if rep else "")
                    out_digests: list[str] = []
                    in_digests: list[str] = []
                    try:
                        leaves = save_outputs(out, folder, expected[i] if i < len(expected) else None, out_digests)
                    except NestingError as exc:
                        raise KernelError(f"{label}: {exc}") from None
                    if rep == 0:
                        try:  # the inputs as the call left them: the judge decides from these bytes (the hashes: hints)
                            inputs_after = save_input_leaves(before, folder, in_digests)
                        except NestingError as exc:
                            raise KernelError(f"{label}: the inputs after the call: {exc}") from None
                        in_place = problem.inplace_tensors(data)
                        if in_place:  # declared in-place inputs: their contents after the call are judged as outputs
                            # an output that is a declared in-place input keeps the caller's layout (compare)
                            entry["inplace_aliases"] = aliases(out, in_place)
                            try:
                                entry["inplace_outputs"] = save_outputs(in_place, folder / "inplace")
                            except NestingError as exc:  # (a dict of tensors: cannot nest)
                                raise KernelError(f"{label}: {exc}") from None
                            kept.append((entry, in_place, hash_data(in_place), "changed_after"))
                        if grads:  # the inputs' gradients, in ``problem.grad_paths``' sorted order: out[0], out[1]...
                            grad_digests: list[str] = []
                            entry["grad_outputs"] = save_outputs(grads, folder / "grad", None, grad_digests)
                            # kept alive and hashed again at the end: a later backward must not write them
                            kept.append((entry, grads, hash_data(grads, grad_digests), "grads_changed_after"))
                        entry.update(
                            {
                                "seconds": round(seconds, 6),
                                "input_hash_before": h_before,
                                "input_hash_after": hash_flat(before, in_digests),
                                "inputs_after": inputs_after,
                                "outputs": leaves,
                                "structure": structure(out),
                                "aliases": aliases(out, inputs),
                                "shared_outputs": shared_outputs(out),
                                "buffer_leaves": buffer_leaves(out, bufs),
                            }
                        )
                        replaced = replaced_leaves(before, inputs)  # a field or an entry the call pointed elsewhere
                        if replaced:
                            entry["inputs_replaced"] = replaced
                        repointed = repointed_leaves(before, where_before)  # set_, resize_, as_strided_, .data =
                        if repointed:
                            entry["inputs_repointed"] = repointed
                        states = generator_states(before)  # where the call left each generator it was given
                        if states:
                            entry["generators_after"] = states
                        patched = integrity.tampered(self.baseline, own_only=True)  # ktui's own code, after every case
                        if patched:
                            entry["tampered"] = patched
                        if readable(leaves):  # bytes sent: readable
                            kept.append((entry, out, hash_data(out, out_digests), "changed_after"))
                        kept.append((entry, before, entry["input_hash_after"], "inputs_changed_after"))
                    else:
                        entry["repeat_outputs"] = leaves
                        entry["repeat_dir"] = f"repeat{rep}"
                    del out, data
            results.append(entry)
            # each case as it ran: the judge compares them while the rest run (the first sweep: the first verdict);
            # the reply's entry is the final one (the end-of-request checks), which is judged again where it differs
            progress({"done": i + 1, "total": len(cases), "entry": entry})
        # Every output stays alive until all cases ran: one that changes afterwards was still being written when the
        # call returned (a stream or thread the kernel did not wait for), or a later call wrote into it (a buffer
        # kept and reused across calls, which hands the caller memory the next call overwrites).
        self._sync()
        time.sleep(0.05)
        for entry, obj, digest, key in kept:  # (the inputs as flattened before their call: the caller's objects)
            if (hash_flat(obj) if key == "inputs_changed_after" else hash_data(obj)) != digest:
                entry[key] = True
        del kept
        threads = threading.active_count() - threads_before
        launch_table = capture.take_launches(cases, results)  # each entry gets its case's "launches"
        reply: ExecuteReply = {
            "cases": results,
            "tampered": integrity.tampered(self.baseline),
            "threads_left": max(0, threads),
            "launch_table": launch_table,
        }
        interp_races.case_label[0] = ""
        races = interp_races.take()  # programs of one launch writing one element (the interpreter's record)
        if races:
            reply["races"] = races
        later = interp_waits.take_waited_on_later()  # a wait a later-started program ended (a grid barrier)
        if later:
            reply["waited_on_later"] = later
        notes = self.interpreter_notes()
        if notes:
            reply["interpreter_notes"] = notes
        return reply

    def interpreter_notes(self) -> list[str]:
        """What the interpreter's verdict does not show (the candidate's ``interpreter_notes``); [] here."""
        return []


def _crash_note(exc: BaseException, fn: Any, case: Mapping[str, Any], problem: Problem) -> str:
    """What an exception on a fuzzed empty size (a 0 field) was: a refusal the version raised itself (its own file's
    ``raise``: nothing to add) or a crash elsewhere (Triton's compiler or interpreter, torch), which a service meets
    on its first empty batch: said so, with the fix (new-user trial 31, F4: ``triton.next_power_of_2(0)`` is 0, and
    ``tl.arange(0, 0)`` does not compile)."""
    if not empty_spec(spec_of(problem, case)) or case.get("layout", "contiguous") != "contiguous":
        return ""
    frames = traceback.extract_tb(exc.__traceback__)
    own = getattr(getattr(fn, "__code__", None), "co_filename", None)
    if frames and own and frames[-1].filename == own:
        return ""
    return (
        " (a crash, not a refusal the version raised: torch returns an empty output there and a service meets empty "
        "batches; return early when a size is 0, or raise a clear error in custom_kernel)"
    )
