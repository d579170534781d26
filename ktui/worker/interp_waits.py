"""A wait no program of its grid ends, found under the Triton interpreter.

The interpreter runs a grid's programs interleaved at their atomics and volatile loads (``interp_sched``): a program
waiting for memory another program writes (a grid-wide barrier: an arrival counter and a spin until it reaches the
grid's size; a flag an earlier or a later program sets; a spin lock) pauses at each read and the others run, so the
wait ends as on a GPU (red team round 28, #8: an honest one-launch L2 scaling with an arrival counter and an acquire
spin, which waited for ever when the interpreter ran programs one at a time).

A wait nothing ends: one program repeats the same read of the same addresses and gets the same values, over and
over, while no other program changes memory (a plain store, or an atomic that changed what it updated). Every atomic
read-modify-write, compare-and-swap and volatile load (``tl.atomic_*``, ``tl.load(..., volatile=True)``; Triton's
``atomic_poll`` polls with volatile loads) is keyed by the program, the op, its addresses, its operands and the
values it read; ``SPIN_REPEATS`` identical ones in one program with no other program's progress between them are a
wait no program of this interpreter ends, and the version needs a GPU (``capture.NeedsGPU``, its rungs that call the
kernel skipped with the reason), as inline PTX does.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from ktui.protocol import WaitedLaunch
from ktui.worker.interp_bounds import active

# Identical reads in one program that make a wait. A loop that repeats one atomic with one result legitimately (an
# atomic max of an all-zero tile into a running maximum, once per tile of a persistent program) repeats it once per
# iteration: a CPU-sized spec runs far fewer iterations per program than this. At the interpreter's ~20-50 us per
# scalar atomic, 20,000 repeats are about a second of a wait that would otherwise run to the rung's time limit.
SPIN_REPEATS = 20_000
KEYS_KEPT = 4_096  # distinct reads remembered per program (a scatter's many addresses do not grow it without bound)
MAX_WATCHED = 64  # a read of more addresses does not block its program (a scatter, not a flag)


class WaitWatch:
    """Each program's reads of one launch, how often each was repeated while no other program made progress, and
    the programs blocked in a wait (their last read repeated): ``interp_sched`` resumes them only once memory they
    read was written, or when every live program is blocked."""

    def __init__(self) -> None:
        self.counts: dict[tuple[int, ...], dict[bytes, int]] = {}
        self.progress = 0  # changes to memory in the launch: plain stores, atomics that changed what they updated
        self.own: dict[tuple[int, ...], int] = {}  # ... of them, each program's own
        self.others: dict[tuple[int, ...], int] = {}  # the others' progress each program last saw
        self.idle = 0  # repeated reads since the last change to memory (``SPIN_REPEATS``: a wait nothing ends)
        self.blocked: dict[tuple[int, ...], np.ndarray] = {}  # program -> the addresses its repeated read reads
        self._index: dict[int, set[tuple[int, ...]]] = {}  # address -> the blocked programs reading it
        self._keys: np.ndarray | None = None  # the index's addresses, sorted (None: to rebuild)
        self.last: dict[tuple[int, ...], bytes] = {}  # each program's last read (the same again: it blocks)
        self.blocked_when: dict[tuple[int, ...], int] = {}  # program -> how many programs had started when it blocked
        self.started: dict[tuple[int, ...], int] = {}  # program -> its place in the order they started (``started``)
        self.kernel = ""  # the launch's kernel (``new_launch``)
        self.constexprs: dict[str, Any] = {}  # ... and its constexpr arguments given by name

    def reset(self, kernel: str = "", constexprs: dict[str, Any] | None = None) -> None:
        """Forget everything (a new launch of ``kernel`` with ``constexprs``)."""
        self.__init__()  # type: ignore[misc]
        self.kernel, self.constexprs = kernel, dict(constexprs or {})

    def _unblock(self, program: tuple[int, ...], by: tuple[int, ...] | None = None) -> None:
        watched = self.blocked.pop(program, None)
        if watched is None:
            return
        when = self.blocked_when.pop(program, None)
        start = self.started.get(tuple(by)) if by is not None and by != program else None
        if when is not None and start is not None and start >= when and self.kernel:
            # ended by a program that started after it began to wait: on a GPU, only if that one can be resident
            # at once with it (a grid-wide barrier over more CTAs than fit: red team round 32b, #4)
            key = json.dumps([self.kernel, self.constexprs], sort_keys=True, default=str)
            WAITED_ON_LATER.setdefault(key, {"kernel": self.kernel, "constexprs": dict(self.constexprs)})
        for a in watched.tolist():
            progs = self._index.get(a)
            if progs is not None:
                progs.discard(program)
                if not progs:
                    del self._index[a]
        self._keys = None

    def progressed(self, program: tuple[int, ...], addresses: np.ndarray | None = None) -> None:
        """``program`` changed memory (a plain store, an atomic that changed what it updated) at ``addresses``
        (uint64; None: anywhere): the programs blocked reading them wake, and every program counts its reads
        again."""
        self.progress += 1
        self.own[program] = self.own.get(program, 0) + 1
        self.idle = 0
        if not self.blocked:
            return
        if addresses is None:
            for p in list(self.blocked):
                self._unblock(p, program)
            return
        if self._keys is None:
            self._keys = np.fromiter(self._index, dtype=np.uint64, count=len(self._index))
        hit = np.intersect1d(self._keys, np.asarray(addresses, dtype=np.uint64).reshape(-1))
        for a in hit.tolist():
            for p in list(self._index.get(a, ())):
                self._unblock(p, program)

    def seen(
        self,
        program: tuple[int, ...],
        kind: str,
        arrays: tuple[Any, ...],
        result: Any,
        addresses: np.ndarray | None = None,
    ) -> int:
        """Count one read of kind ``kind`` by ``program`` (operands ``arrays``, values read ``result``, numpy
        arrays) at ``addresses`` (uint64); returns how many times this very read was made by this program since
        another program last made progress (the programs interleave at these reads: ``interp_sched``). A read the
        same as the program's last blocks it on ``addresses`` until they are written."""
        others = self.progress - self.own.get(program, 0)
        counts = self.counts.setdefault(program, {})
        if self.others.get(program) != others:
            counts.clear()
            self.others[program] = others
        h = hashlib.blake2b(kind.encode(), digest_size=16)
        for a in (*arrays, result):
            arr = np.asarray(a)
            h.update(str(arr.dtype).encode() + str(arr.shape).encode())
            h.update(np.ascontiguousarray(arr).tobytes())
        key = h.digest()
        if key not in counts and len(counts) >= KEYS_KEPT:
            counts.clear()
        n = counts.get(key, 0) + 1
        counts[key] = n
        self._unblock(program)
        repeat = self.last.get(program) == key
        self.last[program] = key
        if n >= 2:
            self.idle += 1
        if repeat:
            if addresses is not None and addresses.size <= MAX_WATCHED:
                watched = np.unique(np.asarray(addresses, dtype=np.uint64).reshape(-1))
                if program not in self.blocked:
                    self.blocked_when[program] = len(self.started)
                self.blocked[program] = watched
                for a in watched.tolist():
                    self._index.setdefault(a, set()).add(program)
                self._keys = None
        return n


_WATCH = WaitWatch()
# the launches (kernel and constexprs) a program of which waited until a program that started after it began
# waiting wrote (``_unblock``), by their JSON
WAITED_ON_LATER: dict[str, WaitedLaunch] = {}


def new_launch(kernel: str = "", constexprs: dict[str, Any] | None = None) -> None:
    """Forget the reads of the launch before (``interp_sched``, at each launch of ``kernel`` with the constexpr
    arguments ``constexprs``, those given by name)."""
    _WATCH.reset(kernel, constexprs)


def started(program: tuple[int, ...]) -> None:
    """Program ``program`` of the launch under way starts (``interp_sched``): its place in the starting order."""
    _WATCH.started.setdefault(tuple(program), len(_WATCH.started))


def take_waited_on_later() -> list[WaitedLaunch]:
    """The launches (kernel, constexprs) a program of which waited for a program that started after it began
    waiting, since the last call, in a stable order; forgets them."""
    out = [WAITED_ON_LATER[k] for k in sorted(WAITED_ON_LATER)]
    WAITED_ON_LATER.clear()
    return out


def _needs_gpu(builder: Any, kind: str) -> None:
    from ktui.worker.capture import raise_needs_gpu

    idx = getattr(builder, "grid_idx", None) or (0, 0, 0)
    dims = getattr(builder, "grid_dim", None)
    grid = f" of a grid of {tuple(dims)}" if dims else ""
    raise_needs_gpu(
        f"program {tuple(idx)}{grid} made the same {kind} {SPIN_REPEATS:,} times and read the same values each "
        "time, while no other program changed memory: it waits for what no program of its grid does. The "
        "interpreter runs every program of the grid, switching between them at each atomic and volatile load, so a "
        "barrier, or a flag another program sets, ends here as on a GPU; this wait did not (run with --device cuda "
        "on a GPU machine to check this version)"
    )


def _watched(builder: Any, kind: str, arrays: tuple[Any, ...], result: Any, addresses: Any = None) -> None:
    program = tuple(getattr(builder, "grid_idx", None) or (0, 0, 0))
    _WATCH.seen(program, kind, arrays, result, None if addresses is None else active(*addresses))
    if _WATCH.idle >= SPIN_REPEATS:
        _WATCH.reset()
        _needs_gpu(builder, kind)


def polled(builder: Any, ptrs: np.ndarray, mask: np.ndarray | None, values: np.ndarray) -> bool:
    """A small plain load (a flag's) by the running program: watched as a read (a plain-load spin blocks its program
    as a volatile one does); True when it repeated (the program should pause: ``interp_sched``)."""
    program = tuple(getattr(builder, "grid_idx", None) or (0, 0, 0))
    _watched(builder, "plain load", (ptrs, mask), values, (ptrs, mask))
    return program in _WATCH.blocked


def blocked(program: tuple[int, ...]) -> bool:
    """Whether ``program`` is blocked in a wait (``interp_sched`` resumes it once what it reads is written)."""
    return program in _WATCH.blocked


def _changed(builder: Any, ptrs: np.ndarray, mask: np.ndarray | None, old: np.ndarray) -> None:
    """After an atomic of the running program at ``ptrs`` (where ``mask``) that read ``old``: progress when the
    memory there no longer holds ``old``."""
    from triton._C.libtriton import interpreter as native

    p = np.ascontiguousarray(np.asarray(ptrs, dtype=np.uint64).reshape(-1))
    o = np.asarray(old).reshape(-1)
    m = np.ones(p.size, bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), np.shape(ptrs)).reshape(-1)
    if not m.any() or o.size != p.size or o.dtype.itemsize not in (1, 2, 4, 8):
        return
    kind = np.dtype(f"u{o.dtype.itemsize}")
    now = np.asarray(native.load(p, np.ascontiguousarray(m), np.zeros(p.size, kind), kind))
    if (now[m] != o.view(kind)[m]).any():
        _WATCH.progressed(tuple(getattr(builder, "grid_idx", None) or (0, 0, 0)), p[m])


def install(builder_cls: Any) -> None:
    """Wrap ``create_atomic_rmw``, ``create_atomic_cas`` and ``create_masked_load`` (volatile loads only) of the
    interpreter's builder class ``builder_cls`` with the wait watch (methods it lacks are left alone)."""
    rmw = getattr(builder_cls, "create_atomic_rmw", None)
    if rmw is not None:

        def create_atomic_rmw(self: Any, op: Any, ptr: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
            out = rmw(self, op, ptr, val, mask, sem, scope)
            _changed(self, ptr.data, mask.data, out.data)
            kind = f"atomic {str(op).split('.')[-1].lower()}"
            _watched(self, kind, (ptr.data, val.data, mask.data), out.data, (ptr.data, mask.data))
            return out

        builder_cls.create_atomic_rmw = create_atomic_rmw
    cas = getattr(builder_cls, "create_atomic_cas", None)
    if cas is not None:

        def create_atomic_cas(self: Any, ptr: Any, cmp: Any, val: Any, sem: Any, scope: Any) -> Any:
            out = cas(self, ptr, cmp, val, sem, scope)
            _changed(self, ptr.data, None, out.data)
            _watched(self, "atomic compare-and-swap", (ptr.data, cmp.data, val.data), out.data, (ptr.data, None))
            return out

        builder_cls.create_atomic_cas = create_atomic_cas
    load = getattr(builder_cls, "create_masked_load", None)
    if load is not None:

        def create_masked_load(
            self: Any, ptrs: Any, mask: Any, other: Any, cache_policy: Any, is_volatile: Any, *rest: Any
        ) -> Any:
            out = load(self, ptrs, mask, other, cache_policy, is_volatile, *rest)
            if is_volatile:
                m = None if mask is None else mask.data
                _watched(self, "volatile load", (ptrs.data, m), out.data, (ptrs.data, m))
            return out

        builder_cls.create_masked_load = create_masked_load
    store = getattr(builder_cls, "create_masked_store", None)
    if store is not None:

        def create_masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *rest: Any) -> Any:
            where = active(ptrs.data, None if mask is None else mask.data)
            _WATCH.progressed(tuple(getattr(self, "grid_idx", None) or (0, 0, 0)), where)
            return store(self, ptrs, value, mask, *rest)

        builder_cls.create_masked_store = create_masked_store
