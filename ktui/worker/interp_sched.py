"""A launch's programs interleaved at their synchronization points, under the Triton interpreter.

Triton's interpreter runs a grid's programs one after another in program-id order, each to its end
(``GridExecutor``). On a GPU they run at once, and where programs meet through atomics that order matters: a
persistent kernel taking work from an atomic counter gets all of it in program 0 on the CPU (it drains the queue
before program 1 starts), so a read-modify-write two programs would race on never meets a second program (red team
round 31, #6: an embedding backward adding rows with a plain load and store passed every rung); a grid-wide barrier
(an arrival counter and a spin) waits for ever in program 0; a last-block reduction always finds every partial
stored.

Here every program runs in its own greenlet and pauses just before each atomic read-modify-write,
compare-and-swap and volatile load, and at a small plain load it repeats (a flag polled: ``pause``, called by
``interp_races``'s wrappers): the next program runs until its own next such point, round-robin over the launch's
live programs, as programs running at once reach their atomics in some interleaved order. A program with none runs
to its end in one go, as before. The programs start in program-id order, or, on every other launch or so
(``reversed_order``: the Thue-Morse sequence over the launches counted from each case's index, ``order_from``), in
reverse: a program reading what a later one overwrites (an in-place shift split along its window: red team round
31, #3), or reading what an earlier one stored with nothing ordering the two, then reads it in the other order, as a
GPU may run them. And on half the launches (``shuffled_order``: the next bit of the launch's count) the programs run
by random priorities seeded by that count, not round-robin, one of them dropping to the lowest at a pause now and then
(``Grid._by_priority``, PCT's way). In lock-step every program reaches its next atomic before any reaches the one
after, the most forgiving order there is: a last ticket-holder read partials whose programs had taken their tickets
and not stored them yet, which lock-step never shows (red team round 32, #1), and an in-place shift with an atomic
max between its loads and stores had every load before every store (round 32b, #1). A read of an unordered write
gets the value before it in the forward round-robin launches, what ran before it in the reversed ones, and each lane
either way in the shuffled ones (``interp_races``). What a program does between two of its synchronization points
runs without a switch: ``interp_races`` judges which accesses the kernel's own atomics order (happens-before) and
which race.

Waits end: a program spinning on a flag another program sets pauses at each read and the setter runs. A wait no
program can end (every program spins) is found by ``interp_waits``'s repeated-read watch, per program.
"""

from __future__ import annotations

import heapq
import inspect
import random
from collections import deque
from types import FunctionType
from typing import Any

_GRIDS: list[Grid] = []  # the launches under way (a stack: one at a time in practice)


class Grid:
    """The live programs of one launch: greenlets paused at a synchronization point, in the order they paused."""

    def __init__(self, builder: Any, reverse: bool = False, shuffle: int | None = None) -> None:
        self.builder = builder
        # resume the paused programs in a random order from this seed (``shuffled_order``), else round-robin
        self.rng = random.Random(shuffle) if shuffle is not None else None
        self.live: deque[tuple[Any, tuple[int, int, int]]] = deque()
        self.programs: set[Any] = set()  # this launch's program greenlets (``pause`` switches only from these)
        self.pending: list[tuple[tuple[int, int, int], dict[str, Any]]] = []  # programs the loop set, not started
        self.reverse = reverse  # start them from the last
        self.stale: set[tuple[int, int, int]] = set()  # programs that read a value stored unordered (``note_stale``)

    def resume(self, g: Any, idx: tuple[int, int, int]) -> None:
        """Run program ``idx`` (greenlet ``g``) until it pauses or ends; an exception it raises propagates."""
        self.builder.set_grid_idx(*idx)
        g.switch()
        if not g.dead:
            self.live.append((g, idx))
        else:
            self.programs.discard(g)

    def _next(self) -> tuple[Any, tuple[int, int, int]]:
        """The next live program to resume, round-robin, passing over those blocked in a wait
        (``interp_waits.blocked``: their repeated read's memory not written since); when every one is, the next."""
        from ktui.worker import interp_waits

        for _ in range(len(self.live)):
            g, idx = self.live[0]
            if not interp_waits.blocked(idx):
                return self.live.popleft()
            self.live.rotate(-1)
        return self._waiting(self.live)

    def _waiting(self, live: deque[tuple[Any, tuple[int, int, int]]]) -> tuple[Any, tuple[int, int, int]]:
        """When every live program waits: the first (of ``live``, which it is taken from) that read a flag another
        program stored with nothing ordering the two (its wait cannot end: ``interp_races.PlainWait`` names it), else
        the first."""
        for _ in range(len(live) if self.stale else 0):
            if live[0][1] in self.stale:
                break
            live.rotate(-1)
        return live.popleft()

    def start(self, fn: Any, args: dict[str, Any]) -> None:
        """Take the program the interpreter's loop set (``builder.grid_idx``), to run as ``fn(**args)``; at the
        grid's last program, start every one in a greenlet (in program-id order, or in reverse when the launch is
        ``reverse``), each run until it pauses or ends, then run the paused ones round-robin to their end (or, in a
        shuffled launch, every one by priority: ``_by_priority``)."""
        import greenlet

        from ktui.worker import interp_waits

        idx = tuple(self.builder.grid_idx)
        self.pending.append((idx, args))
        last = tuple(d - 1 for d in self.builder.grid_dim)
        if idx != last:
            return
        pending, self.pending = self.pending, []
        try:
            if self.rng is not None:
                self._by_priority(fn, pending)
            else:  # every program to its first pause, then round-robin
                for i, a in reversed(pending) if self.reverse else pending:
                    g = greenlet.greenlet(lambda a=a: fn(**a))
                    self.programs.add(g)
                    interp_waits.started(i)
                    self.resume(g, i)
                while self.live:
                    self.resume(*self._next())
            self.builder.set_grid_idx(*idx)
        except BaseException:
            self.live.clear()
            self.programs.clear()
            raise

    def _by_priority(self, fn: Any, pending: list[tuple[tuple[int, int, int], dict[str, Any]]]) -> None:
        """Run a shuffled launch's programs by random priority, PCT's way (probabilistic concurrency testing,
        Burckhardt et al., ASPLOS 2010): each program draws a priority from ``rng``; the highest one not blocked in a
        wait (started or not) runs to its next pause, and at each pause drops below every other with probability
        ``DEMOTE``. A program runs ahead of the others for a stretch, and one is held back at some point while the
        rest run on: a program that took its ticket and had not stored yet when the last ticket-holder read (red team
        round 32, #1), which an even random walk over the live programs seldom showed."""
        import greenlet

        from ktui.worker import interp_waits

        assert self.rng is not None
        rng = self.rng
        todo = dict(pending)  # not started: index -> arguments
        started: dict[tuple[int, int, int], Any] = {}  # paused: index -> greenlet
        prio = {i: rng.random() for i, _ in pending}
        heap = [(-p, i) for i, p in prio.items()]
        heapq.heapify(heap)
        floor = 0.0  # below every priority drawn ([0, 1))
        while heap:
            held = []  # the blocked ones passed over
            pick = None
            while heap:
                entry = heapq.heappop(heap)
                if entry[1] in todo or not interp_waits.blocked(entry[1]):
                    pick = entry[1]
                    break
                held.append(entry)
            if pick is None:  # every one waits: the stale reader first, else the highest
                live = deque((e, e[1]) for e in held)
                pick = self._waiting(live)[1]
                held = [e for e, _ in live]
            for entry in held:
                heapq.heappush(heap, entry)
            if pick in todo:
                g = greenlet.greenlet(lambda a=todo.pop(pick): fn(**a))
                self.programs.add(g)
                interp_waits.started(pick)
            else:
                g = started.pop(pick)
            self.builder.set_grid_idx(*pick)
            g.switch()
            if g.dead:
                self.programs.discard(g)
                continue
            started[pick] = g
            if rng.random() < DEMOTE:
                floor -= 1.0
                prio[pick] = floor
            heapq.heappush(heap, (-prio[pick], pick))


DEMOTE = 0.25  # the chance a program of a shuffled launch drops to the lowest priority at a pause (``_by_priority``)


_ORDER = [0]  # launches counted since ``order_from``: which run their programs in reverse (``reversed_order``)


def order_from(n: int) -> None:
    """Count launches from ``n`` (a case's index: its launches' program orders are the same on a replay)."""
    _ORDER[0] = n


def next_reversed() -> bool:
    """Whether the next launch runs its programs in reverse."""
    return reversed_order(_ORDER[0])


def reversed_order(n: int) -> bool:
    """Whether launch ``n`` runs its programs in reverse: the parity of its bits (the Thue-Morse sequence), so a
    call of any fixed number of launches gets each of its launches in both orders over the calls."""
    return bin(n).count("1") % 2 == 1


def shuffled_order(n: int) -> int | None:
    """The seed launch ``n`` resumes its paused programs in a random order from, or None (round-robin): the second
    bit of ``n``, so over four launches in a row each start order (``reversed_order``) meets both."""
    return n if (n >> 1) & 1 else None


def next_shuffled_seed() -> int | None:
    """The seed the next launch resumes its programs in a random order from (``shuffled_order``), or None."""
    return shuffled_order(_ORDER[0])


def note_stale(idx: tuple[int, int, int]) -> None:
    """Program ``idx`` of the launch under way read a value another program stored with nothing ordering the two
    (``interp_races.Launch.read``): when every live program waits, it is resumed first."""
    if _GRIDS:
        _GRIDS[-1].stale.add(idx)


def pause() -> None:
    """Called by a program just before an atomic, a compare-and-swap or a volatile load, or after a small plain load
    it repeated (a flag polled): let the launch's other live programs each run to their next such point first. A
    no-op outside a launch's program."""
    if not _GRIDS:
        return
    import greenlet

    g = greenlet.getcurrent()
    if g in _GRIDS[-1].programs and g.parent is not None:
        g.parent.switch()


def _trampoline(fn: Any, grid: Grid) -> Any:
    """A function with ``fn``'s parameters and globals (the interpreter inspects both: ``getcallargs``, and its
    ``triton.language`` patching reads ``__globals__``) whose call starts the program in ``grid``."""
    sig = inspect.signature(fn)
    empty = inspect.Parameter.empty
    params = [p.replace(annotation=empty, default=empty) for p in sig.parameters.values()]
    text = str(sig.replace(parameters=params, return_annotation=empty))  # "(a_ptr, n, BLOCK)", kinds kept
    pairs = ", ".join(f"{p.name!r}: {p.name}" for p in params)
    src = f"def make(_start):\n    def trampoline{text}:\n        _start({{{pairs}}})\n    return trampoline\n"
    scope: dict[str, Any] = {}
    exec(compile(src, f"<ktui trampoline of {fn.__name__}>", "exec"), scope)  # (parameter names only)
    made = scope["make"](lambda args: grid.start(fn, args))
    out = FunctionType(made.__code__, fn.__globals__, fn.__name__, fn.__defaults__, made.__closure__)
    out.__kwdefaults__ = fn.__kwdefaults__
    return out


def install(builder: Any, executor_cls: Any) -> None:
    """Run each launch of ``executor_cls`` (``GridExecutor``) through a ``Grid`` (``builder``: the interpreter's
    ``interpreter_builder``, which holds the grid index)."""
    call = executor_cls.__call__

    def launched(self: Any, *args: Any, **kwargs: Any) -> Any:
        from ktui.worker import interp_waits

        fn = self.fn
        named = {k: v for k, v in kwargs.items() if isinstance(v, (bool, int, str))}  # (constexprs given by name)
        interp_waits.new_launch(getattr(fn, "__name__", "the kernel"), named)
        grid = Grid(builder, reverse=reversed_order(_ORDER[0]), shuffle=shuffled_order(_ORDER[0]))
        _ORDER[0] += 1
        self.fn = _trampoline(fn, grid)
        _GRIDS.append(grid)
        try:
            return call(self, *args, **kwargs)
        finally:
            _GRIDS.pop()
            self.fn = fn

    executor_cls.__call__ = launched
