"""Tensors crossing process boundaries: flatten nested outputs, save and load raw bytes, hash, poison.

Outputs go from the candidate worker to the judge as raw files (``<case>/<leaf>.bin`` plus a JSON description):
no pickle, so nothing the candidate returns can run code in the judge.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
import types
from pathlib import Path
from typing import Any

import torch

from ktui.protocol import OutputLeaf

# A NaN bit pattern that arithmetic does not produce (it produces the canonical quiet NaN), used to fill output
# buffers before a call: an element still holding it afterwards was never written. One pattern per float width.
POISON_BITS = {2: 0xFFF1, 4: 0xFFF1_F1F1, 8: 0xFFF1_F1F1_F1F1_F1F1}
_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
# Integer outputs are filled with this byte: 0x5A5A... is an unlikely result of integer arithmetic.
INT_POISON_BYTE = 0x5A


# How deep outputs may nest (tuples, lists, dicts): far beyond any real output, far below Python's recursion limit
# (1000), so a 10,000-level nesting or a list that contains itself fails with a message, not a RecursionError.
MAX_DEPTH = 64
PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)  # the only tensor classes ktui reads: a subclass runs its own code
_KEY_TYPES = (str, int, float, bool, type(None))  # dict keys whose repr is the builtin's (no kernel code runs)


class NestingError(ValueError):
    """An output nests tuples, lists or dicts deeper than ``MAX_DEPTH`` levels (or contains itself)."""


def _class_dict(c: type) -> Any:
    return type.__dict__["__dict__"].__get__(c, type)


def _mro(cls: type) -> tuple[type, ...]:
    return type.__dict__["__mro__"].__get__(cls, type)  # type: ignore[no-any-return]


def _own_dict(obj: Any) -> dict[str, Any] | None:
    """The instance's own ``__dict__``, read through the standard descriptor (never a class's ``__dict__``
    property), or None for an instance without one (slots only)."""
    for c in _mro(type(obj)):
        d = _class_dict(c)
        if "__dict__" in d:
            desc = d["__dict__"]
            if isinstance(desc, (types.GetSetDescriptorType, types.MemberDescriptorType)):  # (C types: a member)
                own = desc.__get__(obj, type(obj))
                return own if type(own) is dict else None
            return None
    return None


def _data_descriptor(v: Any) -> bool:
    """A class attribute that takes precedence over the instance's ``__dict__`` (a property, ...)."""
    t = type(v)
    return any("__set__" in _class_dict(c) or "__delete__" in _class_dict(c) for c in _mro(t))


def _static(cls: type, name: str) -> Any:
    return next((_class_dict(c)[name] for c in _mro(cls) if name in _class_dict(c)), None)


def dataclass_fields(obj: Any) -> list[tuple[str, Any]] | None:
    """``[(name, value)]`` of the fields of ``obj`` when its real type is a dataclass (an instance, not the class),
    else None. A reference's typed record (``Config(x=..., scale=...)``) is a container like a named tuple: every
    walk over inputs and outputs (``flatten``, the guards, the refills, the hashes) reaches the tensors in it, so a
    kernel that writes a tensor inside one is caught as it is in a tuple. Values are read from the instance's own
    ``__dict__`` or its slots, never through a descriptor that runs a class's code: a field that is a property (or
    any other descriptor, or unset) makes the object an opaque leaf (the judge refuses it as an output; a
    reference's input of that kind is refused by ``problem.opaque_tensors``). ``ClassVar`` and ``InitVar``
    pseudo-fields are not fields. A ``types.SimpleNamespace`` (that exact class: a config record, ``cfg.alpha``) is
    such a record too, its attributes its fields (red team round 17: a float in one was never moved)."""
    cls = type(obj)
    if cls is types.SimpleNamespace:
        return list((_own_dict(obj) or {}).items())  # (a SimpleNamespace always has a __dict__)
    if isinstance(obj, type) or not dataclasses.is_dataclass(cls):
        return None
    own = _own_dict(obj)
    out = []
    for f in dataclasses.fields(cls):
        static = _static(cls, f.name)
        if isinstance(static, types.MemberDescriptorType):  # a slot
            try:
                out.append((f.name, static.__get__(obj, cls)))
            except AttributeError:
                return None  # an unset slot
        elif own is not None and f.name in own and not _data_descriptor(static):  # as Python's lookup reads it
            out.append((f.name, own[f.name]))
        else:  # a property or another descriptor would run its class's code; or the field is unset
            return None
    return out


def instance_attrs(obj: Any) -> dict[str, Any]:
    """Every attribute ``obj`` holds itself: its own ``__dict__`` and its set slots (of every class of its MRO), read
    through the standard descriptors, never its class's code (a property is not read)."""
    attrs = dict(_own_dict(obj) or {})
    for cls in _mro(type(obj)):
        d = _class_dict(cls)
        slots = d.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            desc = d.get(name)
            if name in ("__dict__", "__weakref__") or not isinstance(desc, types.MemberDescriptorType):
                continue
            try:
                attrs.setdefault(name, desc.__get__(obj, type(obj)))
            except AttributeError:
                pass  # an unset slot
    return attrs


def unset_fields(obj: Any) -> list[str]:
    """The fields of the dataclass instance ``obj`` that hold no value (a ``field(init=False)`` never assigned, a
    slot never set; a property standing for a field is not read), in declaration order; [] for anything else."""
    cls = type(obj)
    if isinstance(obj, type) or not dataclasses.is_dataclass(cls):
        return []
    attrs = instance_attrs(obj)
    unset = []
    for f in dataclasses.fields(cls):
        static = _static(cls, f.name)
        if f.name in attrs or (_data_descriptor(static) and not isinstance(static, types.MemberDescriptorType)):
            continue  # set, or a property standing for the field (not read: the object stays opaque)
        unset.append(f.name)
    return unset


def with_fields(obj: Any, values: dict[str, Any]) -> Any:
    """A shallow copy of the dataclass instance ``obj`` (``dataclass_fields`` gives its fields) with the fields in
    ``values`` replaced, made without running any of its class's code (``object.__new__``, the instance's own
    ``__dict__`` and slots copied; frozen ones too); ``__init__`` and ``__post_init__`` do not run again. A
    ``types.SimpleNamespace`` gives a new one of its attributes, those in ``values`` replaced."""
    cls = type(obj)
    if cls is types.SimpleNamespace:
        return types.SimpleNamespace(**{**dict(_own_dict(obj) or {}), **values})
    new = object.__new__(cls)
    src, dst = _own_dict(obj), _own_dict(new)
    if src is not None and dst is not None:
        dst.update(src)
    for c in _mro(cls):
        for desc in list(_class_dict(c).values()):
            if isinstance(desc, types.MemberDescriptorType):
                try:
                    desc.__set__(new, desc.__get__(obj, cls))
                except AttributeError:
                    pass
    for k, v in values.items():
        desc = _static(cls, k)
        if isinstance(desc, types.MemberDescriptorType):
            desc.__set__(new, v)
        elif dst is not None:
            dst[k] = v
    return new


def class_name(obj: Any) -> str:
    """``module.QualName`` of ``obj``'s class, read from the class's own slots: no attribute lookup that a class (or
    its metaclass) could override runs."""
    cls = type(obj)
    module = type.__dict__["__module__"].__get__(cls, type)
    qual = type.__dict__["__qualname__"].__get__(cls, type)
    return qual if module == "builtins" else f"{module}.{qual}"


def flatten(obj: Any, prefix: str = "out", _depth: int = 0) -> list[tuple[str, Any]]:
    """``[(path, leaf)]`` for nested tuples, lists, dicts and dataclass instances: ``out``, ``out[0]``,
    ``out['key']``, ``out.field``. Leaves are tensors, numbers or anything else (which the judge rejects).

    Containers are walked with the builtin types' own methods (``tuple.__iter__``, ``dict.items``), chosen by the
    object's real type (never ``isinstance``, which a ``__class__`` property fools), so a subclass's overridden
    ``__iter__`` or ``items`` never runs; a dict key that is not a builtin scalar is shown by its class name, never by
    its ``__repr__``.

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
        return [p for i, v in enumerate(tuple.__iter__(obj)) for p in flatten(v, f"{prefix}[{i}]", _depth + 1)]
    if issubclass(cls, list):
        return [p for i, v in enumerate(list.__iter__(obj)) for p in flatten(v, f"{prefix}[{i}]", _depth + 1)]
    if issubclass(cls, dict):
        return [p for k, v in dict.items(obj) for p in flatten(v, f"{prefix}[{key_text(k)}]", _depth + 1)]
    fields = dataclass_fields(obj)
    if fields is not None:
        if _depth >= MAX_DEPTH:
            raise NestingError(f"the data nests containers more than {MAX_DEPTH} levels deep (or contains itself)")
        return [p for k, v in fields for p in flatten(v, f"{prefix}.{k}", _depth + 1)]
    return [(prefix, obj)]


def plain_key(key: Any, _depth: int = 0) -> bool:
    """Whether a dict key is a builtin scalar, or a plain tuple of such keys (``("max", 1)``), by real types: a key
    whose text ``key_text`` builds from builtins alone, never from the key's own ``__repr__``."""
    if type(key) in _KEY_TYPES:
        return True
    return type(key) is tuple and _depth < 4 and all(plain_key(k, _depth + 1) for k in tuple.__iter__(key))


def key_text(key: Any) -> str:
    """A dict key as paths show it: its ``repr`` for a builtin scalar, a plain tuple of such keys as its items'
    texts (``('max', 1)``: red team round 25, #9, where every tuple key was ``<tuple>``, two leaves shared one path
    and an honest version failed "structure differs"), else ``<its class name>`` (never its own ``__repr__``)."""
    if type(key) in _KEY_TYPES:
        return repr(key)
    if plain_key(key):
        items = [key_text(k) for k in tuple.__iter__(key)]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return f"<{class_name(key)}>"


def is_plain_tensor(obj: Any) -> bool:
    """``obj`` is a ``torch.Tensor`` (or ``Parameter``) itself, not a subclass, by its real type."""
    return type(obj) in PLAIN_TENSORS


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``bfloat16``."""
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str) -> torch.dtype:
    """Raises ValueError for a name that is not a torch dtype."""
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"not a torch dtype: {name!r}")
    return dt


def tensor_bytes(t: torch.Tensor) -> bytes:
    """The tensor's elements in row-major order as raw bytes (any dtype, any device, any strides)."""
    return host_buffer(t).tobytes()


def host_buffer(t: torch.Tensor) -> memoryview:
    """The bytes ``tensor_bytes`` returns, as a read-only buffer in host memory without the copy into ``bytes``: a
    view of ``t`` itself when it is a contiguous CPU tensor, else of the one copy that makes it so (a GPU tensor's
    copy to the host, a strided tensor's contiguous clone). For hashing and writing: a 2**25-element fp32 tensor
    costs no 128 MB copy more than it must (measured on the 2-core CPU machine: 0.09 s of 0.26 s in
    ``hash_data`` was that copy)."""
    t = t.detach().resolve_conj().resolve_neg().cpu()
    if t.numel() == 0:
        return memoryview(b"")
    return memoryview(flat_bytes(t).numpy()).toreadonly()  # type: ignore[arg-type]  # an ndarray is a buffer


def flat_bytes(t: torch.Tensor) -> torch.Tensor:
    """The elements of ``t`` (any shape, 0-d included; any strides) as a 1-d uint8 tensor, in row-major order."""
    flat = t.reshape(-1)
    if flat.numel() and flat.stride(0) != 1:  # a lone element with a stride of 2 counts as contiguous in torch
        flat = flat.clone(memory_format=torch.contiguous_format)
    return flat.contiguous().view(torch.uint8)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``a`` and ``b`` hold the same bytes (0-d and empty tensors included): a bitwise compare, NaN payloads too."""
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(flat_bytes(a), flat_bytes(b))


def tensor_from_bytes(data: bytes, dtype: str, shape: list[int]) -> torch.Tensor:
    """The inverse of ``tensor_bytes``: a CPU tensor."""
    dt = dtype_from_name(dtype)
    if not data:
        return torch.empty(shape, dtype=dt)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dt).reshape(shape)


def hash_data(data: Any, digests: list[str] | None = None) -> str:
    """A SHA-256 digest (its first 16 hex chars) of every tensor's dtype, shape and bytes and every scalar in
    ``data``: two processes that generated the same inputs agree on it, and an input written by a kernel changes it.
    It hashes each tensor leaf's ``leaf_digest`` (with its path, dtype and shape), so a caller that already has
    the leaves' digests (``save_inputs``, ``save_outputs``, ``input_facts``: one per leaf of ``flatten(data)``, in
    its order, '' where unknown) passes them as ``digests`` and no byte is hashed twice. SHA-256 rather than
    BLAKE2b: with the CPU's SHA extensions it hashes ~1.7 GB/s against BLAKE2b's ~0.9 GB/s (2**25 fp32 elements:
    0.075 s against 0.15 s, measured on the 2-core CPU machine); hashing a GPU run's large cases is host time on
    the loop's path (issue 11)."""
    return hash_flat(flatten(data, "in"), digests)


def hash_flat(flat: list[tuple[str, Any]], digests: list[str] | None = None) -> str:
    """``hash_data`` of data already flattened (``flatten(data, "in")``): the leaves as they were when flattened,
    whatever the containers hold now (a field the kernel reassigned after its original tensor was written)."""
    h = hashlib.sha256()
    for i, (path, leaf) in enumerate(flat):
        h.update(path.encode())
        if isinstance(leaf, torch.Tensor):
            h.update(f"{dtype_name(leaf.dtype)}{tuple(leaf.shape)}".encode())
            known = digests[i] if digests is not None and i < len(digests) else ""
            h.update((known or leaf_digest(leaf)).encode())
        else:
            h.update(leaf_fingerprint(leaf).encode())
    return h.hexdigest()[:16]


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def leaf_fingerprint(leaf: Any) -> str:
    """What ``hash_flat`` hashes of a non-tensor leaf, the same in every process: its ``repr`` without the object
    addresses a default ``repr`` holds (``<function gelu at 0x7f...>``), a set's items sorted (string hashing is
    randomized per process), and a ``torch.Generator`` by its device and initial seed (its state moves with every
    draw: an honest kernel that draws from it advances it as the reference does). Red team round 23, F1: the
    candidate's and the judge's reprs of one generator differed by its address, and every version failed as "the
    candidate's inputs differ from the judge's"."""
    if isinstance(leaf, torch.Generator):
        return f"torch.Generator(device={leaf.device}, initial_seed={leaf.initial_seed()})"
    if isinstance(leaf, (set, frozenset)):
        return f"{type(leaf).__name__}({sorted(map(leaf_fingerprint, leaf))})"
    return _ADDRESS.sub("", repr(leaf))


def generator_states(flat: list[tuple[str, Any]]) -> dict[str, str]:
    """Per ``torch.Generator`` leaf of ``flat`` (``flatten``'s pairs) a digest of its state (``get_state()``): where a
    call left it. Empty when there is none."""
    return {path: bytes_digest(bytes(g.get_state().numpy())) for path, g in flat if isinstance(g, torch.Generator)}


def copy_generator(g: torch.Generator) -> torch.Generator:
    """A new generator on ``g``'s device in ``g``'s state: each run of the reference, and each candidate call of the
    verified stretch, draws what the first draw from ``g`` would (red team round 23, F8: the judge's float64 and
    native runs of a dropout drew from one generator in turn, and disagreed)."""
    out = torch.Generator(device=g.device)
    out.set_state(g.get_state())
    return out


def leaf_digest(t: torch.Tensor) -> str:
    """``bytes_digest`` of the bytes ``tensor_bytes`` returns for ``t`` (read through ``host_buffer``: no copy more)."""
    return bytes_digest(host_buffer(t))


def poison_(t: torch.Tensor) -> torch.Tensor:
    """Fill ``t`` in place with the poison pattern (NaN with a payload for floats, both parts of complex numbers;
    0x5A bytes for integers and booleans)."""
    if t.is_complex() and not t.is_conj():
        poison_(torch.view_as_real(t))
    elif t.dtype.is_floating_point and t.element_size() in POISON_BITS:
        bits = POISON_BITS[t.element_size()]
        iv = _INT_VIEW[t.element_size()]
        signed = bits - (1 << (8 * t.element_size())) if bits >= 1 << (8 * t.element_size() - 1) else bits
        t.view(iv).fill_(signed)
    elif t.dtype.is_floating_point:  # float8: any NaN encoding; e4m3fn has only 0x7F / 0xFF
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:  # a byte no comparison writes (True is 1, False 0), as the NaN payload for floats
        t.view(torch.uint8).fill_(INT_POISON_BYTE)
    else:
        t.fill_(_int_pattern(t.element_size()))
    return t


def decoy_(t: torch.Tensor, seed: int) -> torch.Tensor:
    """Fill ``t`` in place with values that look like ordinary data (floats ~ N(0, 1), small integers), drawn from
    ``seed``: stale memory as a kernel would see it outside ktui. Cases filled this way show a kernel that behaves
    differently when it finds ktui's poison pattern (cases.md: right only while watched); an element it leaves
    unwritten keeps a wrong value and fails the comparison."""
    if t.numel() == 0 or t.is_meta or t.layout != torch.strided:
        return t
    g = torch.Generator(device=t.device).manual_seed(seed)
    if t.dtype.is_floating_point and t.element_size() >= 2:
        t.normal_(0.0, 1.0, generator=g)
    elif t.dtype.is_floating_point:  # float8: no in-place normal_
        t.copy_(torch.randn(t.shape, generator=g, device=t.device).to(t.dtype))
    elif t.dtype == torch.bool:
        t.random_(0, 2, generator=g)
    elif not t.is_complex():
        t.random_(0, 100, generator=g)
    return t


def _int_pattern(size: int) -> int:
    return int.from_bytes(bytes([INT_POISON_BYTE]) * size, "little", signed=True)


def poisoned_mask(t: torch.Tensor) -> torch.Tensor:
    """Elements of ``t`` (a contiguous CPU tensor) that still hold the poison pattern: never written."""
    size = t.element_size()
    if t.is_complex() and not t.is_conj():
        return poisoned_mask(torch.view_as_real(t)).all(dim=-1)
    if t.dtype.is_floating_point and size in POISON_BITS:
        bits = POISON_BITS[size]
        signed = bits - (1 << (8 * size)) if bits >= 1 << (8 * size - 1) else bits
        return t.contiguous().view(_INT_VIEW[size]) == signed
    if t.dtype == torch.bool:
        return t.contiguous().view(torch.uint8) == INT_POISON_BYTE
    if not t.dtype.is_floating_point and size in _INT_VIEW:
        return t.contiguous().view(_INT_VIEW[size]) == _int_pattern(size)
    return torch.zeros(t.shape, dtype=torch.bool)


OUTPUT_FLAGS = ("inference", "requires_grad", "conj", "neg")
"""What of a returned tensor a caller trips on, beyond its values: an inference tensor (``torch.inference_mode``:
in-place ops and autograd raise on it outside the mode), one that requires grad (an in-place write raises on a leaf
that does, ``.numpy()`` raises), a lazily conjugated or negated view (``.conj()``: ``.numpy()`` raises, and a
kernel reading its memory gets the imaginary parts with the wrong sign)."""


def output_flags(t: torch.Tensor) -> list[str]:
    """The ``OUTPUT_FLAGS`` that hold for ``t``, in that order."""
    held = (t.is_inference(), t.requires_grad, t.is_conj(), t.is_neg())
    return [name for name, on in zip(OUTPUT_FLAGS, held, strict=True) if on]


def save_outputs(
    out: Any, folder: Path, expected: list[OutputLeaf] | None = None, digests: list[str] | None = None
) -> list[OutputLeaf]:
    """Write every leaf of ``out`` under ``folder``; return their descriptions (path, kind, dtype, shape, stride,
    device, file).

    Nothing the kernel defined runs here: a tensor subclass is described by its class name alone (no attribute of
    it is read: its ``__torch_function__`` would run), other leaves by their type name (never their ``repr``),
    numbers through the builtin's own conversion. With ``expected`` (the judge's ``describe`` of the reference's
    output, from ``prepare``) the metadata is checked first: when the structure, a leaf's dtype or its shape differs
    (the case fails on it anyway), no bytes are written, so a wrong-shaped huge output (a stride-0 view of 2^29
    elements) costs nothing; such a leaf says why in ``unsent`` (a leaf of the reference's structure whose bytes are
    at most ``MISMATCH_SLACK`` times the reference's, or ``MISMATCH_FLOOR``, travels all the same: for the problem's
    own checker, ``ktui.worker.upstream``). Leaves marked ``hint`` (borrowed from another
    case of the same spec, whose reference output may differ with the values) only bound the size: bytes are
    withheld only from a tensor over ``HINT_SLACK`` times the hint's bytes and over ``HINT_FLOOR`` bytes (a
    value-dependent output, ``nonzero`` on a distribution where every element qualifies, may be far above the hint:
    the judge decides it from this case's own reference). Without any expectation (a fuzzed spec's case), a
    broadcast view over ``HINT_FLOOR`` bytes that its storage holds less than a ``HINT_SLACK``-th of is not written.
    With ``digests`` (a list), it is filled with each leaf's ``leaf_digest`` of the bytes written ('' for a
    leaf not written), for ``hash_data(out, digests)``.

    Raises:
        NestingError: ``out`` nests deeper than ``MAX_DEPTH``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    leaves: list[OutputLeaf] = []
    flat = flatten(out)
    if digests is not None:
        digests[:] = [""] * len(flat)
    hinted = bool(expected) and all(e.get("hint") for e in expected or [])
    want = {e["path"]: e for e in expected} if expected is not None else None
    same_structure = want is None or hinted or (len(flat) == len(want) and {p for p, _ in flat} == set(want))
    bound = HINT_SLACK * sum(_nbytes(e) for e in expected or []) if hinted else 0
    for i, (path, leaf) in enumerate(flat):
        cls = type(leaf)
        if issubclass(cls, torch.Tensor) and cls not in PLAIN_TENSORS:
            leaves.append({"path": path, "kind": "tensor", "class": class_name(leaf)})
        elif issubclass(cls, torch.Tensor) and (leaf.is_meta or leaf.layout != torch.strided):
            what = "meta tensor (no data)" if leaf.is_meta else f"tensor with layout {leaf.layout}"
            leaves.append({"path": path, "kind": "other", "type": what, "repr": ""})
        elif issubclass(cls, torch.Tensor):
            d: OutputLeaf = {
                "path": path,
                "kind": "tensor",
                "dtype": dtype_name(leaf.dtype),
                "shape": list(leaf.shape),
                "stride": list(leaf.stride()),
                "device": str(leaf.device),
                "class": class_name(leaf),
            }
            flags = output_flags(leaf)
            if flags:  # a caller's in-place ops, autograd or .numpy() trip on them (red team rounds 21 and 21b)
                d["flags"] = flags
            if hinted:
                size = leaf.numel() * leaf.element_size()
                unsent = (
                    f"{size} bytes, over {HINT_SLACK}x what the reference returns for this spec"
                    if size > max(bound, HINT_FLOOR)
                    else ""
                )
            else:
                ref_leaf = want.get(path) if want is not None else None
                unsent = _mismatch(d, ref_leaf, same_structure)
                if (
                    unsent
                    and same_structure
                    and ref_leaf is not None
                    and _nbytes(d) <= max(MISMATCH_SLACK * _nbytes(ref_leaf), MISMATCH_FLOOR)
                ):
                    unsent = ""  # small: the verdict fails on the metadata, the bytes go to the upstream checker
            if not unsent and want is None:  # nothing known of this case's output: a broadcast view is not inflated
                size = leaf.numel() * leaf.element_size()
                held = leaf.untyped_storage().nbytes()
                if size > HINT_FLOOR and held * HINT_SLACK < size:
                    unsent = f"a broadcast view of {leaf.numel()} elements over {held} bytes of storage"
            if unsent:
                d["unsent"] = unsent
            else:
                f = folder / f"{i}.bin"
                buf = host_buffer(leaf)
                f.write_bytes(buf)
                d["file"] = f.name
                if digests is not None:
                    digests[i] = bytes_digest(buf)
            leaves.append(d)
        elif cls is bool or issubclass(cls, (int, float)):
            # the builtin's own conversion: an int or float subclass (numpy.float64, an IntEnum) runs no code of its own
            value = leaf if cls is bool else float.__float__(leaf) if issubclass(cls, float) else int.__int__(leaf)
            leaves.append({"path": path, "kind": "number", "value": value, "type": type(value).__name__})
        else:
            leaves.append({"path": path, "kind": "other", "type": class_name(leaf), "repr": ""})
    return leaves


# save_outputs: an output whose shape or dtype is not the reference's still travels when its bytes are at most this
# many times the reference's, or at most MISMATCH_FLOOR bytes: ktui fails it on its metadata, and a problem's own
# checker (GPU MODE's check_implementation, ``ktui.worker.upstream``) says what upstream would make of it
MISMATCH_SLACK = 4
MISMATCH_FLOOR = 1 << 20
HINT_SLACK = 4  # save_outputs: a borrowed expectation withholds only an output this many times its size
HINT_FLOOR = 256 << 20  # and only one of more bytes than this (the 2**29-element stride-0 view is 2 GiB)


def _nbytes(leaf: OutputLeaf) -> int:
    """The bytes of an expected tensor leaf (0 for numbers and others)."""
    if leaf.get("kind") != "tensor" or "shape" not in leaf or "dtype" not in leaf:
        return 0
    return math.prod(leaf["shape"]) * dtype_from_name(leaf["dtype"]).itemsize


def _mismatch(leaf: OutputLeaf, want: OutputLeaf | None, same_structure: bool) -> str:
    """Why ``leaf``'s bytes need not travel (the judge fails the case on its metadata), or '' to send them."""
    if not same_structure:
        return "the output's structure differs from the reference's"
    if want is None:
        return ""
    shape = want.get("shape", [] if want.get("kind") == "number" else None)
    if shape is not None and list(shape) != leaf["shape"]:
        return f"its shape {tuple(leaf['shape'])} is not the reference's {tuple(shape)}"
    if want.get("dtype") and want["dtype"] != leaf["dtype"]:
        return f"its dtype {leaf['dtype']} is not the reference's {want['dtype']}"
    return ""


def load_output(folder: Path, leaf: OutputLeaf) -> torch.Tensor:
    """The tensor a ``save_outputs`` leaf describes, read back from its file under ``folder``.

    Raises:
        ValueError: the candidate did not send the leaf's bytes (``unsent`` says why).
    """
    if not leaf.get("file"):
        raise ValueError(f"its bytes were not sent: {leaf.get('unsent') or 'no file'}")
    return tensor_from_bytes((folder / leaf["file"]).read_bytes(), leaf["dtype"], leaf["shape"])


_NAMED_VALUES = (str, bytes, type(None))  # other input leaves whose repr is the builtin's (no kernel code runs)


def input_leaf(path: str, leaf: Any) -> OutputLeaf:
    """How one input leaf is described on both sides of the judge's input check (``save_inputs`` in the candidate,
    ``input_facts`` in the judge), without its bytes: a plain strided tensor by dtype, shape and class; a tensor
    subclass by its class name alone (none of its code runs); a bool, int or float by its value (and its repr, which
    the judge compares: a NaN survives the wire as a string); anything else by its class name (and the repr of a
    str, bytes or None)."""
    cls = type(leaf)
    if issubclass(cls, torch.Tensor) and cls not in PLAIN_TENSORS:
        return {"path": path, "kind": "tensor", "class": class_name(leaf)}
    if issubclass(cls, torch.Tensor) and (leaf.is_meta or leaf.layout != torch.strided):
        return {"path": path, "kind": "other", "type": f"tensor ({'meta' if leaf.is_meta else leaf.layout})"}
    if issubclass(cls, torch.Tensor):
        return {
            "path": path,
            "kind": "tensor",
            "dtype": dtype_name(leaf.dtype),
            "shape": list(leaf.shape),
            "device": str(leaf.device),  # the output's device index must be the inputs' (``compare.wrong_device``)
            "class": class_name(leaf),
        }
    if cls in (bool, int, float):
        return {"path": path, "kind": "number", "value": leaf, "type": cls.__name__, "repr": repr(leaf)}
    return {"path": path, "kind": "other", "type": class_name(leaf), "repr": repr(leaf) if cls in _NAMED_VALUES else ""}


def _has_bytes(leaf: OutputLeaf) -> bool:
    return leaf["kind"] == "tensor" and "dtype" in leaf


def save_inputs(inputs: Any, folder: Path, digests: list[str] | None = None) -> list[OutputLeaf]:
    """Write every plain tensor of ``inputs`` (a call's inputs, declared output buffers left out) as the call left
    it, for the judge to compare bit for bit with the inputs it builds itself (``ktui.worker.compare``): ``in<i>.bin``
    under ``folder`` holds its logical values in row-major order whatever its strides (a padded, transposed or
    expanded input as the values it reads as). Returns the leaves (``input_leaf``, with ``file``); with
    ``digests`` (a list), it is filled with each leaf's ``leaf_digest`` of the bytes written ('' for a leaf without
    bytes), for ``hash_data(inputs, digests)``, as ``save_outputs`` fills it.

    Raises:
        NestingError: ``inputs`` nests deeper than ``MAX_DEPTH`` (a kernel put a list into itself).
    """
    return save_input_leaves(flatten(inputs, "in"), folder, digests)


def save_input_leaves(flat: list[tuple[str, Any]], folder: Path, digests: list[str] | None = None) -> list[OutputLeaf]:
    """``save_inputs`` of inputs already flattened (``flatten(inputs, "in")`` before the call): the caller's own
    objects are written, not what the containers hold after the call (a kernel that writes into an input and then
    points the field at a clean copy is seen writing)."""
    folder.mkdir(parents=True, exist_ok=True)
    leaves: list[OutputLeaf] = []
    if digests is not None:
        digests[:] = [""] * len(flat)
    for i, (path, leaf) in enumerate(flat):
        d = input_leaf(path, leaf)
        if _has_bytes(d):
            f = folder / f"in{i}.bin"
            buf = host_buffer(leaf)
            f.write_bytes(buf)
            d["file"] = f.name
            if digests is not None:
                digests[i] = bytes_digest(buf)
        leaves.append(d)
    return leaves


_SCALARS = (int, float, complex, str, bytes, bool, type(None))


def replaced_leaves(before: list[tuple[str, Any]], data: Any) -> list[str]:
    """The paths of ``before`` (``flatten(data, "in")`` before a call) whose leaf ``data`` no longer holds: a tensor
    that is not the same object, a scalar of another type or value, or a path gone or added (a field or an entry
    the call reassigned). Identity and builtin scalars only: nothing the kernel defined runs."""
    try:
        after = dict(flatten(data, "in"))
    except NestingError:
        return ["in (nested into itself)"]
    out = [p for p in after if p not in dict(before)]
    for path, old in before:
        if path not in after:
            out.append(path)
            continue
        new = after[path]
        if new is old:
            continue
        if type(old) in _SCALARS and type(new) is type(old) and new == old:
            continue
        out.append(path)
    return out


Geometry = tuple[int, int, tuple[int, ...], tuple[int, ...], int]


def geometry(flat: list[tuple[str, Any]]) -> dict[str, Geometry]:
    """Per plain tensor leaf of ``flat`` (``flatten(inputs, "in")`` before a call): where its elements live
    (storage address, storage offset in elements, strides, shape, storage bytes), for ``repointed_leaves``."""
    out: dict[str, Geometry] = {}
    for path, leaf in flat:
        if is_plain_tensor(leaf) and leaf.layout == torch.strided and not leaf.is_meta:
            st = leaf.untyped_storage()
            out[path] = (st.data_ptr(), leaf.storage_offset(), tuple(leaf.stride()), tuple(leaf.shape), st.nbytes())
    return out


def repointed_leaves(before: list[tuple[str, Any]], was: dict[str, Geometry]) -> list[str]:
    """The input tensors of ``before`` (the caller's own objects) whose geometry (``geometry``, read before the call:
    ``was``) the call changed, each as ``in[0] (strides (136, 1) -> (129, 1))``: the same object now views other
    memory or the same memory otherwise (``x.set_(x.contiguous())``, ``resize_``, ``as_strided_``, ``x.data = y``,
    an in-place ``t_()``) -- the caller's tensor no longer views its buffer, even where its values read the same
    (red team round 22, F3: a persistent input view re-pointed at a contiguous copy served stale inputs)."""
    now = geometry(before)
    names = ("storage", "offset", "strides", "shape", "storage bytes")
    out = []
    for path, old in was.items():
        new = now.get(path)
        if new is None or new == old:
            continue
        k = next(i for i in range(len(old)) if old[i] != new[i])
        what = "moved to other memory" if k == 0 else f"{names[k]} {old[k]} -> {new[k]}"
        out.append(f"{path} ({what})")
    return out


def bytes_digest(data: bytes | memoryview) -> str:
    """SHA-256 (hex) of raw bytes: how the judge compares an input's bytes with its own (SHA-256: ``hash_data``)."""
    return hashlib.sha256(data).hexdigest()


def input_facts(inputs: Any) -> dict[str, tuple[OutputLeaf, str]]:
    """What the judge knows of a case's inputs before any call: path -> (``input_leaf``, ``bytes_digest`` of the
    bytes ``save_inputs`` would write for it, '' for a leaf without bytes)."""
    out: dict[str, tuple[OutputLeaf, str]] = {}
    for path, leaf in flatten(inputs, "in"):
        d = input_leaf(path, leaf)
        out[path] = (d, leaf_digest(leaf) if _has_bytes(d) else "")
    return out


def describe(obj: Any) -> list[OutputLeaf]:
    """The leaves of ``obj`` as (path, kind, dtype, shape): what the judge expects the candidate to return."""
    out: list[OutputLeaf] = []
    for path, leaf in flatten(obj):
        if isinstance(leaf, torch.Tensor):
            out.append({"path": path, "kind": "tensor", "dtype": dtype_name(leaf.dtype), "shape": list(leaf.shape)})
        else:
            out.append(
                {
                    "path": path,
                    "kind": "number" if isinstance(leaf, (int, float)) else "other",
                    "type": type(leaf).__name__,
                }
            )
    return out


def buffer_leaves(out: Any, buffers: list[torch.Tensor]) -> dict[str, int]:
    """``{output leaf path: j}`` for every tensor leaf of ``out`` that is ``buffers[j]`` itself (the declared output
    buffers of the case's data, ``Problem.output_buffers``) as a view: the same address, dtype, shape and strides,
    so a transposed or expanded view of the buffer, or another view of the allocation, is not the buffer."""
    keys = [
        (b.device, b.data_ptr(), b.dtype, tuple(b.shape), tuple(b.stride()))
        if is_plain_tensor(b) and b.layout == torch.strided and b.numel()
        else None
        for b in buffers
    ]
    found: dict[str, int] = {}
    for path, t in flatten(out):
        if not is_plain_tensor(t) or not t.numel() or t.layout != torch.strided:
            continue
        key = (t.device, t.data_ptr(), t.dtype, tuple(t.shape), tuple(t.stride()))
        if key in keys:
            found[path] = keys.index(key)
    return found


def aliases(out: Any, inputs: Any) -> list[str]:
    """``out[0] aliases in[1]`` for every output tensor whose storage overlaps an input tensor's storage."""
    spans = []
    for path, t in flatten(inputs, "in"):
        if isinstance(t, torch.Tensor) and t.numel():
            s = t.untyped_storage()
            spans.append((path, s.data_ptr(), s.data_ptr() + s.nbytes(), t.device))
    found = []
    for path, t in flatten(out):
        if not is_plain_tensor(t) or not t.numel():  # a subclass is refused unread: its methods are the kernel's
            continue
        s = t.untyped_storage()
        lo, hi = s.data_ptr(), s.data_ptr() + s.nbytes()
        for ipath, ilo, ihi, dev in spans:
            if dev == t.device and lo < ihi and ilo < hi:
                found.append(f"{path} aliases {ipath}")
    return found


def _byte_span(t: torch.Tensor) -> tuple[int, int]:
    """The bytes of its storage a strided tensor's elements lie in, [lo, hi) from the storage's start."""
    es = t.element_size()
    lo = hi = int(t.storage_offset()) * es
    for n, st in zip(t.shape, t.stride(), strict=True):
        reach = (int(n) - 1) * int(st) * es
        lo, hi = lo + min(0, reach), hi + max(0, reach)
    return lo, hi + es


def _share_elements(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors over one storage have an element in common: their byte spans overlap and, where both
    have one element size, some element of ``b`` is one of ``a``'s (marked on a scratch tensor the storage's size:
    ``buf[::2]`` and ``buf[1::2]`` share none); of two element sizes, an overlap of spans counts."""
    (alo, ahi), (blo, bhi) = _byte_span(a), _byte_span(b)
    if ahi <= blo or bhi <= alo:
        return False
    es = a.element_size()
    if b.element_size() != es:
        return True
    marks = torch.zeros(a.untyped_storage().nbytes() // es, dtype=torch.uint8, device=a.device)
    marks.as_strided(a.shape, a.stride(), a.storage_offset()).fill_(1)
    return bool(marks.as_strided(b.shape, b.stride(), b.storage_offset()).any())


def shared_outputs(out: Any) -> list[str]:
    """``out[1] shares memory with out[0]`` for every two output tensors with an element in common (``h_n`` returned
    as ``output[-1:]``): an in-place op on one changes the other (red team round 22, F4). Disjoint views of one
    allocation (``buf[:n]``, ``buf[n:]``) share none. A subclass is left unread (its methods are the kernel's)."""
    seen: list[tuple[str, torch.Tensor]] = []
    found = []
    for path, t in flatten(out):
        if not is_plain_tensor(t) or t.layout != torch.strided or t.is_meta or not t.numel():
            continue
        ptr = t.untyped_storage().data_ptr()
        for other_path, o in seen:
            if o.device == t.device and o.untyped_storage().data_ptr() == ptr and _share_elements(o, t):
                found.append(f"{path} shares memory with {other_path}")
                break
        seen.append((path, t))
    return found


def copy_into(dst: Any, src: Any) -> None:
    """Copy every tensor of ``src`` into the tensor at the same place in ``dst`` (same structure): the fresh inputs
    of a timed call in the buffers the calls hold. A tensor whose shape the seed changes (jagged inputs: a values
    tensor as long as the drawn segments) is resized in place first (``resize_``, contiguous), so the same tensor
    holds the new draw (red team round 15: an honest jagged sum failed the benchmark rung on a size mismatch). The
    values go in through ``.data``: the tensors' version counters do not move, as when a kernel writes them.

    Raises:
        ValueError: a shape changed and the tensor cannot be resized in place (a view, or not resizable); names the
            leaf and both shapes.
    """
    for (path, d), (_, s) in zip(flatten(dst, "in"), flatten(src, "in")):
        if isinstance(d, torch.Generator) and isinstance(s, torch.Generator):  # its state: the fresh draws
            d.set_state(s.get_state())
        if isinstance(d, torch.Tensor) and isinstance(s, torch.Tensor):
            if d.shape != s.shape:
                why = "a view" if d._base is not None else ""
                if not why:
                    try:
                        d.resize_(s.shape)
                    except RuntimeError as exc:
                        why = str(exc)
                if why:
                    raise ValueError(
                        f"the inputs' shapes change with the seed ({path}: {tuple(d.shape)} then {tuple(s.shape)}) "
                        f"and that tensor cannot take the new draw in place ({why}): return a tensor the generator "
                        f"owns (not a view) from generate_input"
                    )
            # written as a Triton kernel or a ``.data`` write writes a tensor in real use: its ``_version`` stays
            # (a cache keyed on (tensor, _version), red team round 18 W3, served stale results in use and passed
            # when every refill bumped the counter)
            d.data.copy_(s)
