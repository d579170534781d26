"""Guard bands: canary bytes before and after every buffer a checked call can write (cases.md oob).

A store masked with ``offs <= n`` writes one element past its output: on the GPU that lands in whatever the
allocator put next (silently), under the Triton interpreter it can corrupt the heap (``free(): invalid pointer``).
While ktui checks a call, every buffer it hands the kernel, and every buffer the kernel allocates with
``torch.empty*`` (``allocation.poisoned_allocations``), sits inside a larger allocation::

    [ GUARD_BYTES of canary | the tensor's storage | GUARD_BYTES of canary ]

The canary is random bytes drawn per call (a kernel cannot know it). After the call every band is compared with
what was written (plain tensor compares: the same on the CPU and on a GPU); a changed canary is a write out of
bounds, reported as ``wrote 1 element past the end of out (element 129 of 129, float32)``.

The band is not visible in the tensor a kernel gets (red team round 10, W2: a kernel right only while its
``torch.empty`` output sat inside a band): its storage is a storage of its own that starts at the payload and is
exactly as long (``torch.from_dlpack`` of the payload's bytes: a zero-copy alias on the CPU and on CUDA that keeps
the larger allocation alive), so ``storage_offset()``, ``untyped_storage().nbytes()`` and
``untyped_storage().data_ptr()`` read as for a plain allocation of that tensor, and its shape and strides are the
same as without guards. ``GUARD_BYTES`` is a multiple of 128 B, so the alignment (what Triton specializes on) is
unchanged. What still differs: the storage does not own its memory, so ``untyped_storage().resizable()`` is False
(a ``resize_`` past its size grows it all the same: ``ktui.worker.allocation`` moves the tensor to a new allocation,
guarded and poisoned inside a checked call, as torch's resize moves a plain storage); reading the bytes around a
tensor shows the canaries. A kernel that tells
a checked call that way gains nothing: timed calls, and on the CPU the verified stretch (``ktui.worker.timed``), run
unguarded and are verified in full. Reads out of bounds change no canary: under the interpreter
``ktui.worker.interp_bounds`` checks every access instead.
"""

from __future__ import annotations

import secrets
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils.dlpack

from ktui.worker.allocation import GUARDED_STORAGES, ORIGINALS
from ktui.worker.tensors import dataclass_fields, with_fields

GUARD_BYTES = 4096  # per side: a multiple of every element size (<= 16 B) and of the 128 B alignment of allocations
_EMPTY: Callable[..., torch.Tensor] = ORIGINALS[
    "empty"
]  # torch's allocator itself, not the wrapper ``allocation.install`` puts in its place
# payload storage address -> (the payload tensor, its [lo, hi) addresses): which storages are guarded ones
_PAYLOADS: dict[int, tuple[weakref.ref[torch.Tensor], int, int]] = {}


def payload_of(storage: torch.UntypedStorage) -> tuple[int, int] | None:
    """The addresses ``[lo, hi)`` of the payload when ``storage`` is the storage of a live guarded allocation (the
    payload's own: it starts at ``lo`` and ends at ``hi``), else None."""
    entry = _PAYLOADS.get(storage.data_ptr())
    if entry is None:
        return None
    payload = entry[0]()
    if payload is None or payload.untyped_storage().data_ptr() != storage.data_ptr():
        return None
    return entry[1], entry[2]


def alias_of(buf: torch.Tensor, start: int, nbytes: int) -> torch.Tensor:
    """Bytes ``[start, start + nbytes)`` of the uint8 tensor ``buf`` as a tensor with a storage of its own: its
    ``untyped_storage()`` starts at ``buf.data_ptr() + start`` and is ``nbytes`` long, its storage offset is 0, and
    it shares the memory (no copy; on the CPU and on CUDA alike) and keeps ``buf``'s allocation alive for as long as
    it or a view of it lives. Made by a DLPack round trip (``Tensor.__dlpack__`` then ``torch.from_dlpack`` of the
    capsule: the DLPack standard's zero-copy exchange, which builds a new storage on the data pointer it is given)."""
    return torch.utils.dlpack.from_dlpack(buf[start : start + nbytes].__dlpack__())


@dataclass
class Band:
    """One guarded allocation: ``buf`` (uint8) is canary, payload (``nbytes``), canary."""

    name: str
    buf: torch.Tensor
    payload: torch.Tensor  # uint8, the bytes between the canaries with a storage of their own (``alias_of``)
    nbytes: int  # bytes of the guarded storage, between the two canaries
    elsize: int  # bytes per element of the first tensor placed in it (offsets are counted in its elements)
    offset: int  # that tensor's storage offset, in elements (offsets are reported from its first element)
    dtype: str
    allocated: bool  # made by the kernel's torch.empty*, not an input ktui built
    # An input whose views do not cover its storage (a padded, offset or every-other-element layout): the storage's
    # bytes as ktui built them, and the (shape, stride, storage offset, element size) of each view handed out, so
    # that a write into the bytes between or around the views (its padding) is seen (``padding_violations``).
    original: torch.Tensor | None = None
    views: list[tuple[tuple[int, ...], tuple[int, ...], int, int]] | None = None


class Guards:
    """The guard bands of one checked call.

    ``wrap_input`` copies a tensor ktui built into a guarded allocation; ``wrap_new`` gives a fresh allocation of
    the kernel's the same treatment; ``violations`` lists the canaries that changed. Tensors that are subclasses,
    need grad, are not strided, are empty or are on the meta device pass through unguarded.
    """

    def __init__(self) -> None:
        self.bands: list[Band] = []
        self._pattern: dict[str, torch.Tensor] = {}  # device -> 2 * GUARD_BYTES random bytes
        self._by_storage: dict[int, tuple[torch.Tensor, Band]] = {}  # input storage ptr -> its guarded copy
        self._busy = False

    def _canary(self, device: torch.device) -> torch.Tensor:
        key = str(device)
        if key not in self._pattern:
            raw = torch.frombuffer(bytearray(secrets.token_bytes(2 * GUARD_BYTES)), dtype=torch.uint8)
            self._pattern[key] = raw.to(device)
        return self._pattern[key]

    @staticmethod
    def guardable(t: Any) -> bool:
        """Whether ``t`` can be moved into a guarded allocation (a plain, strided, non-empty tensor)."""
        return (
            type(t) is torch.Tensor
            and t.layout == torch.strided
            and t.numel() > 0
            and not t.requires_grad
            and t.device.type != "meta"
        )

    def _place(self, t: torch.Tensor, name: str, allocated: bool, copy: bool) -> torch.Tensor:
        storage = t.untyped_storage()
        nbytes = storage.nbytes()
        self._busy = True
        try:
            buf = _EMPTY(2 * GUARD_BYTES + nbytes, dtype=torch.uint8, device=t.device)
        finally:
            self._busy = False
        pat = self._canary(t.device)
        buf[:GUARD_BYTES].copy_(pat[:GUARD_BYTES])
        buf[GUARD_BYTES + nbytes :].copy_(pat[GUARD_BYTES:])
        payload = alias_of(buf, GUARD_BYTES, nbytes)
        if copy:
            src = _EMPTY(0, dtype=torch.uint8, device=t.device).set_(storage)
            payload.copy_(src)
        dtype = str(t.dtype).removeprefix("torch.")
        band = Band(name, buf, payload, nbytes, t.element_size(), int(t.storage_offset()), dtype, allocated)
        self.bands.append(band)
        lo = payload.untyped_storage().data_ptr()
        _PAYLOADS[lo] = (weakref.ref(payload), lo, lo + nbytes)
        GUARDED_STORAGES[lo] = nbytes  # not resizable: ``allocation`` grows it as torch grows a plain one
        # the view's storage is the payload's own: storage offset, storage size and addresses as without guards
        view = _EMPTY(0, dtype=t.dtype, device=t.device)
        view.set_(payload.untyped_storage(), t.storage_offset(), t.shape, t.stride())
        if copy:
            self._by_storage[storage.data_ptr()] = (payload, band)
            self._note_view(band, src, t)
        return view

    @staticmethod
    def _note_view(band: Band, storage_bytes: torch.Tensor | None, t: torch.Tensor) -> None:
        """Remember ``t``'s view of the band's input storage when the views may leave bytes of it uncovered."""
        if band.views is None:
            if t.storage_offset() == 0 and _dense(t) and t.numel() * t.element_size() == band.nbytes:
                return  # the view is the whole storage: the inputs-after check sees every byte
            band.views = []
            band.original = storage_bytes
        band.views.append(_view_of(t))

    def wrap_input(self, t: torch.Tensor, name: str) -> torch.Tensor:
        """``t``'s values, in the same layout, inside a guarded allocation (tensors sharing storage keep sharing)."""
        if not self.guardable(t):
            return t
        seen = self._by_storage.get(t.untyped_storage().data_ptr())
        if seen is not None:
            view = _EMPTY(0, dtype=t.dtype, device=t.device)
            band = seen[1]
            if band.views is not None:  # another view of a storage its views do not cover: this one covers more
                band.views.append(_view_of(t))
            return view.set_(seen[0].untyped_storage(), t.storage_offset(), t.shape, t.stride())
        return self._place(t, name, allocated=False, copy=True)

    def wrap_new(self, t: Any) -> Any:
        """A fresh allocation of the kernel's (``torch.empty*``), moved into a guarded one (contents undefined, as
        for ``torch.empty``); anything else, or a call made while guarding, passes through."""
        if self._busy or not self.guardable(t):
            return t
        return self._place(t, f"a torch.empty buffer of {tuple(t.shape)} the kernel allocated", True, copy=False)

    def wrap_data(self, data: Any, prefix: str = "in") -> Any:
        """Every tensor of ``data`` (nested tuples, named tuples, lists, dicts) through ``wrap_input``, named by its
        path as ``tensors.flatten`` names it (``in[0]``, ``in['x']``)."""
        return _map(data, prefix, self.wrap_input)

    def name_outputs(self, out: Any, prefix: str = "out") -> None:
        """Name the kernel's allocations after the output leaves that live in them (``out``, ``out[1]``)."""
        from ktui.worker.tensors import NestingError, flatten, is_plain_tensor

        try:
            leaves = flatten(out, prefix)
        except NestingError:
            return  # the case fails on it when its outputs are saved (the message names the case)
        by_ptr = {b.payload.untyped_storage().data_ptr(): b for b in self.bands if b.allocated}
        for path, leaf in leaves:
            # a subclass is never read (its methods are the kernel's code: ktui refuses it unread)
            if is_plain_tensor(leaf) and leaf.layout == torch.strided:
                band = by_ptr.get(leaf.untyped_storage().data_ptr())
                if band is not None:
                    band.name = path

    def violations(self) -> list[str]:
        """One line per changed canary: ``wrote 3 elements past the end of out (elements 129..131 of 129,
        float32)`` or ``... before the start of in[0] (elements -2..-1)``. The device must be synchronized."""
        found = []
        for b in self.bands:
            pat = self._canary(b.buf.device)
            for side, band, ref in (
                ("before the start of", b.buf[:GUARD_BYTES], pat[:GUARD_BYTES]),
                ("past the end of", b.buf[GUARD_BYTES + b.nbytes :], pat[GUARD_BYTES:]),
            ):
                if torch.equal(band, ref):
                    continue
                changed = (band != ref).nonzero().flatten().cpu()
                if side == "before the start of":
                    slots = sorted({(int(i) - GUARD_BYTES) // b.elsize - b.offset for i in changed})
                else:
                    slots = sorted({(b.nbytes + int(i)) // b.elsize - b.offset for i in changed})
                n = len(slots)
                total = b.nbytes // b.elsize - b.offset
                where = f"element {slots[0]}" if n == 1 else f"elements {slots[0]}..{slots[-1]}"
                found.append(
                    f"wrote {n} element{'s' if n != 1 else ''} {side} {b.name} ({where} of {total}, {b.dtype})"
                )
            found.extend(_padding_violation(b))
        return found

    def close(self) -> None:
        """Forget the bands: their buffers may be freed and the addresses reused by other allocations."""
        for b in self.bands:
            _PAYLOADS.pop(b.payload.untyped_storage().data_ptr(), None)
        self.bands.clear()
        self._by_storage.clear()


def _view_of(t: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...], int, int]:
    """(shape, stride, storage offset, element size): what ``Band.views`` keeps of a view."""
    return tuple(t.shape), tuple(t.stride()), int(t.storage_offset()), t.element_size()


def _dense(t: torch.Tensor) -> bool:
    """``t``'s elements fill a block of memory once each (contiguous in some order of its dimensions)."""
    expect = 1
    for size, stride in sorted(zip(t.shape, t.stride()), key=lambda d: d[1]):
        if size == 1:
            continue
        if stride != expect:
            return False
        expect *= size
    return True


def _padding_violation(b: Band) -> list[str]:
    """``wrote 2 elements of in[0]'s storage outside its view (storage elements 8..9 of 12, float32: the padding
    of its layout)`` when bytes of an input's storage that no view handed to the kernel covers changed during the
    call (cases.md oob: a store past a row's end lands in the next row's padding, inside the storage, where no
    canary is); [] otherwise. The coverage is each view's elements, by index, so overlapping and expanded views
    count once."""
    if b.views is None or b.original is None:
        return []
    payload = b.buf[GUARD_BYTES : GUARD_BYTES + b.nbytes]
    changed = payload != b.original
    if not bool(changed.any()):
        return []
    dev = payload.device
    sizes = {size for *_, size in b.views}
    unit = sizes.pop() if len(sizes) == 1 and b.nbytes % b.elsize == 0 else 1  # elements, or bytes when mixed
    covered = torch.zeros(b.nbytes // unit, dtype=torch.bool, device=dev)
    for shape, stride, offset, size in b.views:
        index = torch.as_strided(torch.arange(b.nbytes // size, device=dev), shape, stride, offset).reshape(-1)
        if unit == 1:
            index = (index.unsqueeze(1) * size + torch.arange(size, device=dev)).reshape(-1)
        covered[index] = True
    if unit > 1:
        changed = changed.view(-1, unit).any(dim=1)
    outside = (changed & ~covered).nonzero().flatten().cpu() * unit
    if outside.numel() == 0:
        return []
    slots = sorted({int(i) // b.elsize for i in outside})
    n, total = len(slots), b.nbytes // b.elsize
    where = f"storage element {slots[0]}" if n == 1 else f"storage elements {slots[0]}..{slots[-1]}"
    return [
        f"wrote {n} element{'s' if n != 1 else ''} of {b.name}'s storage outside its view ({where} of {total}, "
        f"{b.dtype}: the padding of its layout, which the kernel was not given)"
    ]


def _map(data: Any, path: str, fn: Callable[[torch.Tensor, str], torch.Tensor]) -> Any:
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_map(v, f"{path}[{i}]", fn) for i, v in enumerate(data)))
    if isinstance(data, (tuple, list)):
        out = [_map(v, f"{path}[{i}]", fn) for i, v in enumerate(data)]
        return tuple(out) if isinstance(data, tuple) else out
    if isinstance(data, dict):
        return {k: _map(v, f"{path}[{k!r}]", fn) for k, v in data.items()}
    if isinstance(data, torch.Tensor):
        return fn(data, path)
    fields = dataclass_fields(data)
    if fields is not None:
        return with_fields(data, {k: _map(v, f"{path}.{k}", fn) for k, v in fields})
    return data
