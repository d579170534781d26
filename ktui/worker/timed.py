"""The candidate's timed calls: ``do_benchmark`` (CUDA events; on the CPU, with ``untimed_calls``, the verified
stretch: the same calls with nothing timed), ``do_host_loop`` (a device-synchronized loop timed from ktui's process)
and ``do_bench_outputs`` (the kept outputs, written for the judge), a mixin of ``ktui.worker.candidate.Candidate``.

Every call runs through ``ktui.worker.invoke.calls``, on the main thread, as the checked calls do (one path: a
kernel that tells the two apart by its thread or its stack sees nothing to tell), each phase of calls handed over
whole. Unlike checked calls, these run as a user's do: on the inputs ``generate_input`` made (no layouts or special
values), without guard bands or poison, many in a row on one shape. A kernel that tells a checked call some other
way gains nothing, since their outputs are verified as checked ones are. Of every spec's calls, a few
(``KEEP_TIMED``; ``KEEP_STRETCH`` of a stretch; one of a host loop's) are kept, chosen at random after each call
returned (``timing.Reservoir``): each kept output is copied right after its call (the device synchronized first,
outside the timed events) and the output itself stays alive until the calls end. Then an output that no longer
equals its copy changed after its call returned (a ring of output buffers reused, a thread or stream still writing),
two kept outputs in one storage are one buffer handed out twice, and an output in an input's storage aliases it:
each is reported in ``integrity``. The copies go to the judge, which verifies every element
(``Judge.do_check_timed``). Outputs in the declared output buffers (``outputs`` of the reference: the same buffers
every call, by design) and in declared in-place inputs (``inplace``) are exempt from the storage checks; their copies
are verified all the same, and an output leaf the reference returns as its buffer must be that buffer on a timed call
as on a checked one (``buffer_leaves``, judged by the judge). Every output not
kept is filled with the poison before it is dropped, so the memory the next call gets from the caching allocator
holds the poison, as in a checked call: an element a call never writes is found as unwritten.
"""

from __future__ import annotations

import functools
import gc
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from ktui.protocol import (
    BenchmarkReply,
    BenchmarkRequest,
    BenchOutputsReply,
    BenchOutputsRequest,
    BenchSpecTiming,
    BenchSpecUntimed,
    HostLoopReply,
    HostLoopRequest,
    KeptCall,
    KernelSource,
    OnProgress,
    Sources,
    TimedOutput,
    spec_label,
)
from ktui.worker import allocation, global_state, invoke
from ktui.worker.errors import CaseFailed, KernelError, reraise_as_case
from ktui.worker.problem import Problem, ProblemCache, inputs_only
from ktui.worker.structure import structure
from ktui.worker.tensors import (
    MAX_DEPTH,
    NestingError,
    aliases,
    buffer_leaves,
    copy_into,
    dataclass_fields,
    flatten,
    is_plain_tensor,
    plain_key,
    poison_,
    same_bits,
    save_outputs,
    with_fields,
)
from ktui.worker.timing import Kept, Reservoir, bench, clock_probe, host_loop, stretch

KEEP_TIMED = 3  # event-timed calls kept per spec and verified in full (each costs the judge one full reference)
# calls of a verified stretch kept and verified in full: a stretch runs on a small test spec, where a full check costs
# little; a kernel wrong after its first quarter of the calls escapes all of them with probability 0.25**16 = 2e-10
KEEP_STRETCH = 16
# Every other call of a stretch is screened (its copy sent to the judge: ``Judge.do_check_timed``), up to this many
# bytes of copies per stretch (its spec is small by construction: a few KB a call); past them, the later calls are not
# screened and the reply says how many were
SCREEN_BYTES = 64 << 20


def _entry(k: Kept, base: int, buffers: list[torch.Tensor]) -> dict[str, Any]:
    """What is kept of call ``k`` for the judge (``bench_outputs``): its place from 1, its inputs' seed (``base + 1 +
    rep``), its copy, its output's structure and which leaves are the declared output buffers ``buffers``."""
    return {
        "call": k.index + 1,
        "seed": base + 1 + k.rep,
        "copy": k.copy,
        "structure": structure(k.out),
        "buffer_leaves": buffer_leaves(k.out, buffers),
    }


def copy_tree(obj: Any, _depth: int = 0) -> Any:
    """A copy of an output taken right after its call: every plain tensor leaf cloned (same shape and dtype), in
    plain tuples, lists and dicts with the same paths as ``tensors.flatten`` gives (a named tuple becomes a tuple, a
    dict subclass a dict). Containers are walked with the builtin types' own methods; a dict with a key that is not a
    builtin scalar, a tensor subclass and any other leaf are kept as they are, not copied (the judge refuses them on
    their metadata; no code of the kernel's runs here).

    Raises:
        NestingError: more than ``MAX_DEPTH`` levels of containers.
    """
    cls = type(obj)
    if issubclass(cls, (tuple, list, dict)) and _depth >= MAX_DEPTH:
        raise NestingError(
            f"the output nests tuples, lists or dicts more than {MAX_DEPTH} levels deep (or contains itself): "
            "return the reference's structure"
        )
    if issubclass(cls, tuple):
        return tuple(copy_tree(v, _depth + 1) for v in tuple.__iter__(obj))
    if issubclass(cls, list):
        return [copy_tree(v, _depth + 1) for v in list.__iter__(obj)]
    if issubclass(cls, dict):
        items = list(dict.items(obj))
        if not all(plain_key(k) for k, _ in items):
            return obj
        return {k: copy_tree(v, _depth + 1) for k, v in items}
    if is_plain_tensor(obj) and obj.layout == torch.strided and not obj.is_meta:
        return obj.detach().clone()
    fields = dataclass_fields(obj)
    if fields is not None:  # a dataclass: its fields copied as a tuple's would be (the paths ``flatten`` gives)
        if _depth >= MAX_DEPTH:
            raise NestingError(f"the output nests containers more than {MAX_DEPTH} levels deep (or contains itself)")
        return with_fields(obj, {k: copy_tree(v, _depth + 1) for k, v in fields})
    return obj


def _storage(t: Any) -> int | None:
    """The storage address of a plain, strided, non-empty tensor (None for anything else)."""
    if not is_plain_tensor(t) or t.layout != torch.strided or t.is_meta or not t.numel():
        return None
    return int(t.untyped_storage().data_ptr())


def settled(settings: global_state.Saved, what: str) -> None:
    """Put back what a stretch of calls changed of torch's global settings since ``settings`` (on the kernel's
    thread) and fail on it: a kernel that changes one only after some calls shows in the stretch, not in a checked
    call.

    Raises:
        CaseFailed: the calls changed a setting (``what`` names the stretch).
    """
    changed = invoke.run(functools.partial(global_state.settle, settings))
    if changed:
        raise CaseFailed(f"{what}: {changed}")


def declared_outputs(problem: Problem, data: Any) -> set[int]:
    """The storage addresses of the declared output buffers of ``data`` (the reference's ``outputs``) and of its
    declared in-place inputs (``inplace``): the same memory every call by design, written by the call and refreshed
    before the next."""
    declared = [*problem.output_buffers(data), *problem.inplace_tensors(data).values()]
    return {p for p in map(_storage, declared) if p is not None}


def aliased_inputs(problem: Problem, data: Any, allowed: list[str]) -> set[int]:
    """The storage addresses of the inputs of ``data`` that ``allowed`` (``out[1] aliases in[0]``: the reference's
    own outputs that are views of its inputs, from the judge's prepare) names: a version's outputs may view them,
    and ktui neither poisons them when it drops such an output nor takes them for one buffer handed out twice (red
    team round 22, F7: ``qkv.split``'s k and v)."""
    named = {a.rsplit(" aliases ", 1)[-1] for a in allowed}
    leaves = dict(flatten(inputs_only(problem, data), "in"))
    return {p for p in (_storage(leaves.get(n)) for n in named) if p is not None}


def _input_storages(problem: Problem, data: Any) -> set[int]:
    """The storage addresses of the input tensors of ``data``."""
    return {p for p in (_storage(t) for _, t in flatten(inputs_only(problem, data))) if p is not None}


def poison_dropped(out: Any, exempt: set[int]) -> None:
    """Fill every plain, contiguous tensor leaf of ``out`` with the poison (``tensors.poison_``) unless its storage
    is in ``exempt`` (the declared output buffers): ``out`` is a timed call's output ktui drops now, and the next call
    gets its memory back from the caching allocator."""
    try:
        leaves = flatten(out)
    except NestingError:
        return
    for _, t in leaves:
        ptr = _storage(t)
        if ptr is not None and ptr not in exempt and t.is_contiguous() and not t.requires_grad:
            poison_(t)


RETAINED_GRACE_S = 1.0  # ``Retained.line``: how long buffers still alive get to be freed before they count
RETAINED_MAX = 4  # ``Retained``: buffers of a stretch that may outlive it (a workspace cached per shape, a last output)


class Retained:
    """Weak references to the storages of every output a stretch of calls returned (``watch``, from the
    ``Reservoir``) and of every buffer the calls allocated with ``torch.empty``, ``empty_like``, ``empty_strided`` or
    ``new_empty`` (``allocated``, armed by the verified stretch around each call: ``allocation.recorder``), but
    those in ``exempt`` (the inputs', the declared output buffers'): once ktui dropped its own references, a storage
    still alive is one the kernel keeps (red team round 22, F8: a kernel appending every call's tensors to a
    module-level list "until the device is done with them" passed every check while a caller's memory grew by 2 MB
    a call; round 23, F4: the same with a scratch buffer the kernel never returns).
    ``torch.multiprocessing.reductions.StorageWeakRef``: a weak reference to the C++ storage itself, so a kept view
    counts as much as the tensor."""

    def __init__(self, exempt: set[int]):
        self.exempt = exempt
        # storage cdata -> (its weak reference, bytes, the call that made it: 0-based)
        self.refs: dict[int, tuple[StorageWeakRef, int, int]] = {}
        self.outputs: set[int] = set()  # the cdata of those an output was in
        self.offered = 0  # calls returned so far (the call under way is this one)

    def _add(self, t: Any) -> int | None:
        ptr = _storage(t)
        if ptr is None or ptr in self.exempt:
            return None
        storage = t.untyped_storage()
        ref = StorageWeakRef(storage)  # type: ignore[no-untyped-call]
        old = self.refs.get(ref.cdata)
        if old is None or old[0].expired():  # type: ignore[no-untyped-call]  # (a freed one's address: new)
            self.refs[ref.cdata] = (ref, storage.nbytes(), self.offered)
        return int(ref.cdata)

    def watch(self, out: Any) -> None:
        """Watch the storages of ``out``, the output of the call under way (it returned now)."""
        try:
            leaves = flatten(out)
        except NestingError:
            leaves = []
        for _, t in leaves:
            key = self._add(t)
            if key is not None:
                self.outputs.add(key)
        self.offered += 1

    def allocated(self, t: torch.Tensor) -> None:
        """Watch the storage of ``t``, a buffer a call allocated."""
        self._add(t)

    def line(self, what: str) -> str:
        """Why the buffers still alive fail the calls ('' when they do not): more than ``RETAINED_MAX`` of those
        the second half of the calls made are alive (a pool the first calls fill, ``ring16_good``'s 16 buffers per
        shape, stops growing; a leak grows to the end). Call after ktui dropped every output it held (a collection
        runs first: a reference cycle is no leak)."""
        for wait_s in (0.0, RETAINED_GRACE_S):  # a buffer a thread of the kernel frees shortly after is no leak
            time.sleep(wait_s)  # (``late_input_write_good``: a cleanup thread holds its workspace 0.2 s)
            gc.collect()
            alive = {k: (n, c) for k, (ref, n, c) in self.refs.items() if not ref.expired()}  # type: ignore[no-untyped-call]
            late = [k for k, (_, c) in alive.items() if c >= self.offered // 2]
            if len(late) <= RETAINED_MAX:
                return ""
        outputs = len(self.outputs & alive.keys())
        mib = sum(n for n, _ in alive.values()) / 2**20
        last = self.offered - self.offered // 2
        return (
            f"memory retained: {len(alive)} buffers of {self.offered} {what}s ({mib:.3g} MiB; {outputs} of them "
            f"outputs; {len(late)} made by the last {last} calls) are still alive after the caller dropped them: the "
            "kernel keeps references to its outputs or its scratch buffers (a list, a dict, a cache never trimmed), "
            "so a caller's memory grows with every call"
        )


def integrity_of(
    kept: list[Kept], exempt: set[int], inputs: Any, calls: int, what: str, allowed: Sequence[str] = ()
) -> list[str]:
    """What the kept calls' outputs show now that the timing ended (the device synchronized): one line per output
    that no longer equals the copy taken when its call returned, per storage two kept calls both returned, and per
    output in an input's storage. ``what`` names the calls (``timed call``), ``calls`` how many there were; outputs
    whose storage is in ``exempt`` (the declared output buffers) are left out of the storage checks."""
    lines: list[str] = []
    owner: dict[int, int] = {}
    for k in sorted(kept, key=lambda k: k.index):
        n = f"{what} {k.index + 1} of {calls}"
        try:
            pairs = list(zip(flatten(k.out), flatten(k.copy), strict=True))
        except (NestingError, ValueError):
            continue  # refused on its structure when written
        shared = [a for a in aliases(k.out, inputs) if a not in allowed]  # the reference's own views may stay
        if shared:
            lines.append(
                f"the output of {n} aliases its input ({', '.join(shared[:3])}): the output must be memory of its own"
            )
            continue
        for (path, t), (_, c) in pairs:
            ptr = _storage(t)
            if ptr is None or ptr in exempt:
                continue
            if ptr in owner and owner[ptr] != k.index:
                lines.append(
                    f"{what}s {owner[ptr] + 1} and {k.index + 1} of {calls} returned the same buffer ({path}): an "
                    "output kept and reused across calls hands the caller memory the next call overwrites"
                )
                continue
            owner[ptr] = k.index
            if c is not t and not same_bits(t, c):
                lines.append(
                    f"the output of {n} changed after the call returned ({path}): a later call wrote into it (a "
                    "ring of output buffers reused across calls), or work was still running when it returned"
                )
    return lines


class TimedCalls:
    """``do_benchmark``, ``do_host_loop`` and ``do_bench_outputs``; ``bench_last`` keeps, per benchmark spec and
    source (``bench``, ``host``), the copies of the kept calls' outputs with their inputs' seeds until
    ``bench_outputs`` writes them."""

    device: str
    problems: ProblemCache
    baseline: dict[str, int]

    if TYPE_CHECKING:  # provided by Candidate

        def _sync(self) -> None: ...
        def _load(self, k: KernelSource) -> Callable[[Any], Any]: ...
        def _fn(self, params: Sources) -> Callable[[Any], Any]: ...

    bench_last: dict[int, dict[str, Any]]

    def _snapshot(self, out: Any) -> Any:
        self._sync()  # the output as the caller has it once the call's work is done: outside the timed events
        return copy_tree(out)

    @staticmethod
    def _screen(
        into: list[dict[str, Any]], k: Kept, *, base: int, buffers: list[torch.Tensor], room: list[int]
    ) -> None:
        """Record call ``k`` (not kept: its copy only) for the judge's screen of the stretch, while ``room`` (one
        int, bytes left) lasts."""
        size = sum(t.numel() * t.element_size() for _, t in flatten(k.copy) if isinstance(t, torch.Tensor))
        if size > room[0]:
            room[0] = -1  # (no later call either: the screened calls are the first ones)
            return
        room[0] -= size
        into.append(_entry(k, base, buffers))

    def _keep(
        self, idx: int, source: str, kept: list[Kept], base: int, calls: int, buffers: list[torch.Tensor]
    ) -> list[KeptCall]:
        """Store the copies of ``kept`` (drops the outputs themselves), with which of each output's leaves are the
        declared output buffers ``buffers`` (``tensors.buffer_leaves``: the judge holds timed calls to the rule of
        checked ones); returns what the reply says of them."""
        entries = [_entry(k, base, buffers) for k in sorted(kept, key=lambda k: k.index)]
        self.bench_last.setdefault(idx, {})[source] = {"kept": entries, "calls": calls}
        return [{"call": e["call"], "seed": e["seed"]} for e in entries]

    # -- benchmark -----------------------------------------------------------------------------------------------
    def do_benchmark(self, params: BenchmarkRequest, progress: OnProgress) -> BenchmarkReply:
        """Time ``custom_kernel`` on each benchmark spec (CUDA only): see ``ktui.worker.timing.bench``; with
        ``untimed_calls`` (the CPU), call it that many times on each test spec instead, timing nothing
        (``timing.stretch``, the verified stretch).

        Every call gets fresh input contents, generated outside the call from a new seed (``seed + 1 + rep``) and
        copied into the same buffers (a kernel that caches its output by input pointer or content cannot replay it);
        every call runs through ``invoke.calls`` on the main thread, unguarded and unpoisoned, as a user's calls
        run; ``KEEP_TIMED`` timed calls (``KEEP_STRETCH`` of a stretch) are kept (see the module's docstring) for
        ``bench_outputs``.

        Raises:
            KernelError: an output nests too deep to copy.
        """
        problem = self.problems.get(params["reference"])
        fn = self._fn(params)
        untimed = params.get("untimed_calls")
        results: list[BenchSpecTiming] = []
        stretches: list[BenchSpecUntimed] = []
        self.bench_last.clear()
        for n, idx in enumerate(params["spec_indices"]):
            spec = problem.tests[idx] if untimed is not None else problem.benchmarks[idx]
            label = f"{'verified stretch' if untimed is not None else 'benchmark'} spec={spec_label(spec)}"
            progress({"done": n, "total": len(params["spec_indices"]), "case": label})
            base = params["seed"]
            data = problem.generate(base, spec, self.device)
            allowed = params.get("allowed_aliases") or []
            exempt = declared_outputs(problem, data) | aliased_inputs(problem, data, allowed)

            retained = Retained(exempt | _input_storages(problem, data))
            scratch = allocation.recorder(retained.allocated)

            def refresh(rep: int, spec: dict[str, Any] = spec, data: Any = data, base: int = base) -> None:
                allocation.disarm(scratch)  # (the inputs' allocations are not the kernel's)
                copy_into(data, problem.generate(base + 1 + rep, spec, self.device))
                if untimed is not None:  # the verified stretch (untimed): each call's allocations are watched
                    allocation.arm(scratch)

            # the kernel's calls: one stretch per phase, handed to the main thread whole (``invoke.calls``)
            calls = functools.partial(invoke.calls, fn, data, self.device)
            buffers = problem.output_buffers(data)
            screened: list[dict[str, Any]] = []
            screen = None
            if untimed is not None:  # the stretch: every call's copy too, for the judge's screen
                screen = functools.partial(self._screen, screened, base=base, buffers=buffers, room=[SCREEN_BYTES])
            keep = Reservoir(
                KEEP_TIMED if untimed is None else KEEP_STRETCH,
                self._snapshot,
                functools.partial(poison_dropped, exempt=exempt),
                watch=retained.watch,
                screen=screen,
            )
            settings = invoke.run(global_state.save)  # the stretch's calls are judged whole (``settled``)
            try:
                if untimed is None:
                    stats, kept = bench(None, self.device, before=refresh, calls=calls, keep=keep)
                    reps = stats["reps"]
                    # (the GPU still at the timed calls' clocks; none where ``bench`` ran without CUDA)
                    probe_us = clock_probe(self.device) if self.device.startswith("cuda") else 0.0
                else:
                    kept, reps = stretch(calls, untimed, before=refresh, keep=keep), untimed
            except NestingError as exc:
                raise KernelError(f"{label}: {exc}") from None
            except BaseException as exc:
                reraise_as_case(exc, label)
            finally:
                allocation.disarm(scratch)
            self._sync()
            what = "timed call" if untimed is None else "call"
            settled(settings, f"{label}, its {what}s")
            lines = integrity_of(kept, exempt, inputs_only(problem, data), reps, what, allowed)
            kept_calls = self._keep(idx, "bench" if untimed is None else "stretch", kept, base, reps, buffers)
            if untimed is not None:
                self.bench_last[idx]["stretch"]["screened"] = sorted(screened, key=lambda e: int(e["call"]))
            keep.kept.clear()  # (copied: ktui holds no output of these calls now)
            del kept
            leak = retained.line(what)
            if leak:
                lines.append(leak)
            if untimed is None:
                results.append(
                    {"spec_index": idx, **stats, "probe_us": probe_us, "kept": kept_calls, "integrity": lines}
                )
            else:
                stretches.append({"spec_index": idx, "calls": reps, "kept": kept_calls, "integrity": lines})
            del data, keep
            progress({"done": n + 1, "total": len(params["spec_indices"])})
        if untimed is not None:
            return {"specs": [], "untimed": stretches}
        return {"specs": results}

    def do_bench_outputs(self, params: BenchOutputsRequest, progress: OnProgress) -> BenchOutputsReply:
        """Write the copies of the kept calls of one spec and source (``bench``: the last ``benchmark``; ``host``: the
        last ``host_loop`` of that spec) under ``out_dir`` (a folder per kept call, as ``tensors.save_outputs``
        writes a case's outputs) and forget them.

        Raises:
            KeyError: nothing is kept for that spec and source.
            KernelError: an output nests too deep.
        """
        idx, source = params["spec_index"], params["source"]
        entry = self.bench_last.get(idx, {}).pop(source, None)
        if entry is None:
            raise KeyError(f"no {source} output kept for benchmark spec {idx}")
        out_dir = Path(params["out_dir"])

        def written(entries: list[dict[str, Any]], prefix: str) -> list[TimedOutput]:
            outputs: list[TimedOutput] = []
            for j, k in enumerate(entries):
                folder = out_dir / f"{prefix}{idx}_{j}"
                try:
                    leaves = save_outputs(k["copy"], folder)
                except NestingError as exc:
                    raise KernelError(f"benchmark {source} call {k['call']}: {exc}") from None
                outputs.append(
                    {
                        "call": k["call"],
                        "seed": k["seed"],
                        "dir": folder.name,
                        "outputs": leaves,
                        "structure": k["structure"],
                        "buffer_leaves": k["buffer_leaves"],
                    }
                )
            return outputs

        reply: BenchOutputsReply = {
            "spec_index": idx,
            "source": source,
            "calls": entry["calls"],
            "outputs": written(entry["kept"], source),
        }
        if "screened" in entry:
            reply["screened"] = written(entry["screened"], f"screen-{source}")
        del entry
        if self.device == "cuda":
            torch.cuda.empty_cache()
        return reply

    def do_host_loop(self, params: HostLoopRequest, progress: OnProgress) -> HostLoopReply:
        """``calls`` iterations of fresh inputs (``seed + 1 + i``, copied into the same buffers), a call and a device
        synchronize (``timing.host_loop``), the calls one stretch of ``invoke.calls`` as the timed calls are;
        ``run_kernel: False`` runs the same loop with the same hand-over and a call of nothing (a loop of fresh
        inputs and synchronizes). ktui's own process times both requests from outside and takes the difference, so
        neither events on the wrong stream, nor a patched timer, nor a memo of the last call's output (every call
        has new inputs) can hide the work. One call, chosen at random after each returned, is kept for
        ``bench_outputs`` (``kept``, with the storage checks in ``integrity``)."""
        problem = self.problems.get(params["reference"])
        fn = self._fn(params)
        idx, calls, base = params["spec_index"], params["calls"], params["seed"]
        spec = problem.benchmarks[idx]
        data = problem.generate(base, spec, self.device)
        allowed = params.get("allowed_aliases") or []
        exempt = declared_outputs(problem, data) | aliased_inputs(problem, data, allowed)
        settings = invoke.run(global_state.save)
        invoke.call(fn, data, self.device)
        self._sync()

        def refresh(i: int) -> None:
            copy_into(data, problem.generate(base + 1 + i, spec, self.device))

        run_kernel = params.get("run_kernel", True)
        keep = Reservoir(1, self._snapshot) if run_kernel and calls else None
        kernel = fn if run_kernel else id  # the baseline: the same stretch, calling nothing of the kernel's
        loop = functools.partial(invoke.calls, kernel, data, self.device)
        pair = probe = None
        if self.device.startswith("cuda"):  # the calls' own events and the clock probe's, read after each synchronize
            pair, probe = (
                (
                    torch.cuda.Event(enable_timing=True),  # type: ignore[no-untyped-call]
                    torch.cuda.Event(enable_timing=True),  # type: ignore[no-untyped-call]
                )
                for _ in range(2)
            )
            pair = pair if run_kernel else None
        reply = host_loop(loop, refresh, calls, run_kernel, self._sync, keep=keep, events=pair, probe=probe)[0]
        settled(settings, f"host-loop spec={spec_label(spec)}, its calls")
        if keep is None or not keep.kept:
            return reply
        lines = integrity_of(keep.kept, exempt, inputs_only(problem, data), calls, "host-loop call", allowed)
        kept = self._keep(idx, "host", keep.kept, base, calls, problem.output_buffers(data))
        return {**reply, "kept": kept, "integrity": lines}
