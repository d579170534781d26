"""A wait that can only end on a GPU, found under the Triton interpreter.

The interpreter runs a grid's programs one after another in program-id order (``GridExecutor``: one Python call of
the kernel per program). A program that waits for memory a *later* program writes (a grid-wide barrier: an arrival
counter and a spin until it reaches the grid's size; a flag set by the next tile of a persistent kernel) spins for
ever there, where on a GPU, whose programs of a co-resident grid run at once, it ends at once. The run rung then
timed out and blamed the kernel ("the kernel may hang", red team round 28, #8: an honest one-launch L2 scaling with
an arrival counter and an acquire spin). A wait on an earlier program (decoupled look-back of a scan, a spin lock)
ends under the interpreter too, since the earlier program ran to its end first, and is not touched.

The sign of such a wait: one program repeats the same read of the same addresses and gets the same values, over and
over, with nothing it can do changing them. Every atomic read-modify-write, compare-and-swap and volatile load
(``tl.atomic_*``, ``tl.load(..., volatile=True)``; Triton's ``atomic_poll`` polls with volatile loads) is keyed by
the program, the op, its addresses, its operands and the values it read; ``SPIN_REPEATS`` identical ones in one
program are a wait no program of this interpreter can end, and the version needs a GPU (``capture.NeedsGPU``, its
rungs that call the kernel skipped with the reason), as inline PTX does.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

# Identical reads in one program that make a wait. A loop that repeats one atomic with one result legitimately (an
# atomic max of an all-zero tile into a running maximum, once per tile of a persistent program) repeats it once per
# iteration: a CPU-sized spec runs far fewer iterations per program than this. At the interpreter's ~20-50 us per
# scalar atomic, 20,000 repeats are about a second of a wait that would otherwise run to the rung's time limit.
SPIN_REPEATS = 20_000
KEYS_KEPT = 4_096  # distinct reads remembered per program (a scatter's many addresses do not grow it without bound)


class WaitWatch:
    """The reads of the program now running (``program``) and how often each was repeated."""

    def __init__(self) -> None:
        self.program: tuple[int, ...] | None = None
        self.counts: dict[bytes, int] = {}

    def seen(self, program: tuple[int, ...], kind: str, arrays: tuple[Any, ...], result: Any) -> int:
        """Count one read of kind ``kind`` by ``program`` (operands ``arrays``, values read ``result``, numpy
        arrays); returns how many times this very read was made by this program."""
        if program != self.program:
            self.program, self.counts = program, {}
        h = hashlib.blake2b(kind.encode(), digest_size=16)
        for a in (*arrays, result):
            arr = np.asarray(a)
            h.update(str(arr.dtype).encode() + str(arr.shape).encode())
            h.update(np.ascontiguousarray(arr).tobytes())
        key = h.digest()
        if key not in self.counts and len(self.counts) >= KEYS_KEPT:
            self.counts.clear()
        n = self.counts.get(key, 0) + 1
        self.counts[key] = n
        return n


_WATCH = WaitWatch()


def _needs_gpu(builder: Any, kind: str) -> None:
    from ktui.worker.capture import raise_needs_gpu

    idx = getattr(builder, "grid_idx", None) or (0, 0, 0)
    dims = getattr(builder, "grid_dim", None)
    grid = f" of a grid of {tuple(dims)}" if dims else ""
    raise_needs_gpu(
        f"program {tuple(idx)}{grid} made the same {kind} {SPIN_REPEATS:,} times and read the same values each "
        "time: it waits for memory only another program of its grid can change (a grid-wide barrier, a flag a "
        "later program sets). The Triton interpreter runs a grid's programs one at a time in program-id order, so "
        "that wait never ends on a CPU (run with --device cuda on a GPU machine to check this version)"
    )


def _watched(builder: Any, kind: str, arrays: tuple[Any, ...], result: Any) -> None:
    program = tuple(getattr(builder, "grid_idx", None) or (0, 0, 0))
    if _WATCH.seen(program, kind, arrays, result) >= SPIN_REPEATS:
        _WATCH.counts.clear()
        _needs_gpu(builder, kind)


def install(builder_cls: Any) -> None:
    """Wrap ``create_atomic_rmw``, ``create_atomic_cas`` and ``create_masked_load`` (volatile loads only) of the
    interpreter's builder class ``builder_cls`` with the wait watch (methods it lacks are left alone)."""
    rmw = getattr(builder_cls, "create_atomic_rmw", None)
    if rmw is not None:

        def create_atomic_rmw(self: Any, op: Any, ptr: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
            out = rmw(self, op, ptr, val, mask, sem, scope)
            _watched(self, f"atomic {str(op).split('.')[-1].lower()}", (ptr.data, val.data, mask.data), out.data)
            return out

        builder_cls.create_atomic_rmw = create_atomic_rmw
    cas = getattr(builder_cls, "create_atomic_cas", None)
    if cas is not None:

        def create_atomic_cas(self: Any, ptr: Any, cmp: Any, val: Any, sem: Any, scope: Any) -> Any:
            out = cas(self, ptr, cmp, val, sem, scope)
            _watched(self, "atomic compare-and-swap", (ptr.data, cmp.data, val.data), out.data)
            return out

        builder_cls.create_atomic_cas = create_atomic_cas
    load = getattr(builder_cls, "create_masked_load", None)
    if load is not None:

        def create_masked_load(
            self: Any, ptrs: Any, mask: Any, other: Any, cache_policy: Any, is_volatile: Any, *rest: Any
        ) -> Any:
            out = load(self, ptrs, mask, other, cache_policy, is_volatile, *rest)
            if is_volatile:
                _watched(self, "volatile load", (ptrs.data, mask.data), out.data)
            return out

        builder_cls.create_masked_load = create_masked_load
