"""Worker integrity: what candidate code patched in its own worker process.

The candidate worker takes a ``fingerprint`` when it starts, before any kernel is imported; ``tampered`` compares the
process with it after the kernel ran. A kernel that patches torch, the clock, CUDA events or ktui's own worker code
(its timing loop, its hashing, its request handlers) to fool a later check is named in the rung's result, and every
rung that worker served fails (``ktui.core.ladder.runner``).

A Python function is fingerprinted by what it runs, not only by its identity: a digest of its code object (bytecode,
constants recursively, names), its defaults and keyword defaults, and its closure (each cell, and what the cell
holds), with its ``id``. So replacing a function, assigning its ``__code__``, ``__defaults__`` or
``__kwdefaults__``, or rebinding a closure cell is seen, though the object in the module is the same one. Builtins
(no ``__code__``) are fingerprinted by their ``id``. Code digests are cached per code object, and the cache holds the
object, so its ``id`` can never be reused by another code object while the worker lives.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from types import CodeType, FunctionType, ModuleType
from typing import Any

_OWN_MODULES = (
    "ktui.worker.timing",
    "ktui.worker.invoke",
    "ktui.worker.candidate",
    "ktui.worker.checked",
    "ktui.worker.timed",
    "ktui.worker.capture",
    "ktui.worker.allocation",
    "ktui.worker.tensors",
    "ktui.worker.cases",
    "ktui.worker.server",
    "ktui.worker.integrity",
    "ktui.worker.errors",
    "ktui.worker.guards",
    "ktui.worker.structure",
    "ktui.worker.problem",
    "ktui.worker.special",
    "ktui.worker.interp_bounds",
    "ktui.worker.interp_bf16",
    "ktui.worker.interp_fixes",
    "ktui.worker.interp_fp8",
    "ktui.worker.interp_libdevice",
    "ktui.worker.artifacts",
    "ktui.protocol",
)
# Standard modules on the way from a call to its reply: the clock, threads, files, hashing, the JSON encoder.
_STD_MODULES = ("time", "builtins", "threading", "os", "hashlib", "json", "json.encoder", "pathlib")
_STD_CLASSES = (("pathlib.Path", "pathlib", "Path"), ("json.JSONEncoder", "json", "JSONEncoder"))
# the modules fingerprinted: names that appear in them are not flagged (a kernel's own helpers), unlike in classes
_OPEN_OWNERS = frozenset(("torch", "torch.cuda", "F", "triton.testing", *_STD_MODULES, *_OWN_MODULES))
_SIMPLE = (int, float, complex, str, bytes, bool, type(None))
_SKIP_ATTRS = ("__dict__", "__doc__", "__module__", "__weakref__")
_CODE_DIGESTS: dict[int, tuple[CodeType, bytes]] = {}  # id(code) -> (the code object, kept alive; its digest)
_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE (CPython 3.10+): a builtin or extension type, attributes fixed
_DEPTH = 3  # closures are followed this deep (a decorator's wrapper holds the wrapped function in a cell)


def _code_digest(code: CodeType) -> bytes:
    """BLAKE2b of a code object: its bytecode, constants (nested code objects recursively), names, variable names,
    flags and argument counts. Cached per code object (kept alive by the cache, so its id stays its own)."""
    hit = _CODE_DIGESTS.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    h = hashlib.blake2b(digest_size=16)
    h.update(code.co_code)
    for c in code.co_consts:
        h.update(_code_digest(c) if isinstance(c, CodeType) else f"{type(c).__name__}:{c!r}".encode())
        h.update(b"\0")
    h.update(
        repr(
            (
                code.co_names,
                code.co_varnames,
                code.co_freevars,
                code.co_cellvars,
                code.co_flags,
                code.co_argcount,
                code.co_kwonlyargcount,
                code.co_posonlyargcount,
            )
        ).encode()
    )
    digest = h.digest()
    _CODE_DIGESTS[id(code)] = (code, digest)
    return digest


def _value_key(v: Any) -> str:
    """A default or a closure's content: its value for builtin scalars, else its identity."""
    return f"{type(v).__name__}:{v!r}" if type(v) in _SIMPLE else f"id:{id(v)}"


# What torch's own ``_disable_dynamo`` wrapper calls instead of the function it wraps, once cached on that function
# (torch/_compile.py): a function's digest covers it, so setting it routes the wrapper elsewhere visibly.
_DYNAMO_CACHE = "__dynamo_disable"
_MISSING = object()


def _function_digest(fn: FunctionType, depth: int = 0) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    h.update(id(fn).to_bytes(8, "little"))
    h.update(_code_digest(fn.__code__))
    h.update(repr([_value_key(v) for v in fn.__defaults__ or ()]).encode())
    h.update(repr(sorted((k, _value_key(v)) for k, v in (fn.__kwdefaults__ or {}).items())).encode())
    cached = fn.__dict__.get(_DYNAMO_CACHE, _MISSING)
    if cached is not _MISSING:
        deep = isinstance(cached, FunctionType) and depth < _DEPTH  # (its closure holds this function again)
        h.update(b"dynamo:" + (_function_digest(cached, depth + 1) if deep else id(cached).to_bytes(8, "little")))
    for cell in fn.__closure__ or ():
        h.update(id(cell).to_bytes(8, "little"))
        try:
            content = cell.cell_contents
        except ValueError:  # an empty cell (a variable not assigned yet)
            h.update(b"empty")
            continue
        if isinstance(content, FunctionType) and depth < _DEPTH:
            h.update(_function_digest(content, depth + 1))
        else:
            h.update(_value_key(content).encode())
    return h.digest()


def digest(obj: Any) -> int:
    """The fingerprint of one attribute: for a Python function (also inside a staticmethod, classmethod or
    property) a 64-bit digest of what it runs (``_function_digest``) and of its identity; for anything else its
    ``id``."""
    if isinstance(obj, (staticmethod, classmethod)):
        inner = obj.__func__
        return int.from_bytes(hashlib.blake2b(id(obj).to_bytes(8, "little") + _bytes_of(inner), digest_size=8).digest())
    if isinstance(obj, property):
        parts = b"".join(_bytes_of(f) for f in (obj.fget, obj.fset, obj.fdel))
        return int.from_bytes(hashlib.blake2b(id(obj).to_bytes(8, "little") + parts, digest_size=8).digest())
    if isinstance(obj, FunctionType):
        return int.from_bytes(_function_digest(obj)[:8])
    return id(obj)


def _bytes_of(obj: Any) -> bytes:
    if isinstance(obj, FunctionType):
        return _function_digest(obj)
    return id(obj).to_bytes(8, "little")


def _entries(own_only: bool = False) -> Iterator[tuple[str, str, Any]]:
    """``(owner, name, object)`` for every callable a candidate could patch to fool later checks (see
    ``fingerprint``): the owner is the module's or the class's name (``torch.Tensor``), the name ``owner.attr``."""
    modules: list[tuple[str, ModuleType]] = []
    classes: list[tuple[str, type]] = []
    if not own_only:
        import torch
        import torch.nn.functional as F

        modules += [("torch", torch), ("torch.cuda", torch.cuda), ("F", F)]
        modules += [(name, sys.modules[name]) for name in _STD_MODULES if name in sys.modules]
        triton_testing = sys.modules.get("triton.testing")
        if triton_testing is not None:
            modules.append(("triton.testing", triton_testing))
        classes += [("torch.Tensor", torch.Tensor), ("torch.cuda.Event", torch.cuda.Event)]
        for prefix, mod_name, attr in _STD_CLASSES:
            mod = sys.modules.get(mod_name)
            if mod is not None:
                classes.append((prefix, getattr(mod, attr)))
    for name in _OWN_MODULES:  # ktui's own worker code: its timing loop, its hashing, its request handlers
        mod = sys.modules.get(name)
        if mod is not None:
            modules.append((name, mod))
            classes += [
                (f"{name}.{k}", v) for k, v in vars(mod).items() if isinstance(v, type) and v.__module__ == name
            ]
    for prefix, mod in modules:
        for k, v in list(vars(mod).items()):
            if callable(v) and not isinstance(v, ModuleType):
                yield prefix, f"{prefix}.{k}", v
    for prefix, cls in classes:
        yield prefix, f"{prefix}.<class>", cls  # the class itself: one with no attribute of its own is still known
        seen: dict[str, Any] = {}
        fixed: dict[str, Any] = {}  # what the immutable bases provide
        for klass in reversed(cls.__mro__):  # the raw attribute that lookup finds: subclasses override bases
            if klass.__flags__ & _IMMUTABLE_TYPE:
                # object, Exception, torch._C.TensorBase...: nothing can be assigned on them, so they are not
                # fingerprinted (a class that shadows one of their attributes shows as a name that appeared)
                attrs = _fixed_attrs(klass)
                fixed.update(attrs)
                for k in seen.keys() & attrs.keys() if seen else ():
                    del seen[k]
                continue
            for k, v in vars(klass).items():
                if k not in _SKIP_ATTRS:
                    seen[k] = v
        for k, v in seen.items():
            if fixed.get(k, _MISSING) is not v:  # assigning a base's own attribute back is no change
                yield prefix, f"{prefix}.{k}", v


_CLASS_INDEX: list[tuple[dict[str, int], dict[str, list[str]]]] = []  # the last baseline and its classes' names


def _classes_of(baseline: dict[str, int]) -> dict[str, list[str]]:
    """The classes a fingerprint walked (its owners other than modules) -> their names in it; kept for the last
    baseline asked (a worker has one)."""
    if _CLASS_INDEX and _CLASS_INDEX[0][0] is baseline:
        return _CLASS_INDEX[0][1]
    index: dict[str, list[str]] = {}
    for name in baseline:
        owner = name.rsplit(".", 1)[0]
        if owner not in _OPEN_OWNERS:
            index.setdefault(owner, []).append(name)
    _CLASS_INDEX[:] = [(baseline, index)]
    return index


_FIXED: dict[int, tuple[type, dict[str, Any]]] = {}  # id(immutable type) -> (the type, kept alive; its attributes)


def _fixed_attrs(klass: type) -> dict[str, Any]:
    """The attributes of an immutable type (they never change: cached per type)."""
    hit = _FIXED.get(id(klass))
    if hit is None or hit[0] is not klass:
        hit = _FIXED[id(klass)] = (klass, dict(vars(klass)))
    return hit[1]


def settle_torch() -> None:
    """Do, before the worker's ``fingerprint``, what torch does to itself lazily the first time a kernel uses
    ``torch.compile``, so that it is part of the baseline and not taken for the kernel's patch: importing
    ``torch._dynamo`` replaces ``torch.manual_seed`` with ``torch._disable_dynamo(torch.manual_seed)``
    (torch/_dynamo/__init__.py, torch 2.x), and the wrapper's first call caches ``torch._dynamo.disable(fn)`` on
    the original function as ``__dynamo_disable`` (torch/_compile.py); both are done here, the global RNG
    reseeded from the OS's entropy after the call (``torch.seed()``, as ``Problem.generate`` leaves it). An honest
    ``torch.compile`` solution failed as "patched torch.manual_seed" without it (GPU MODE pmpp_v2 vectorsum).

    About 0.9 s on a 2-core CPU (the import of torch._dynamo), paid at the candidate worker's start."""
    import torch
    import torch._dynamo  # its import rewraps torch.manual_seed

    torch.manual_seed(0)  # the wrapper's first call caches the disabled function on torch.random.manual_seed
    torch.seed()


def fingerprint(own_only: bool = False) -> dict[str, int]:
    """Name -> ``digest`` of every callable a candidate could patch to fool later checks: the functions of torch,
    torch.cuda, torch.nn.functional, triton.testing, time, builtins, threading, os, hashlib, json, pathlib and
    ktui's own worker modules and protocol (those imported), and every method (inherited ones too) of
    torch.Tensor, torch.cuda.Event, pathlib.Path, json.JSONEncoder and the classes of ktui's modules. With
    ``own_only``, ktui's own modules and classes alone (a few hundred entries: cheap enough to check per case).

    About 3,800 entries; a few milliseconds (the code digests are cached)."""
    return {name: digest(v) for _, name, v in _entries(own_only)}


def tampered(baseline: dict[str, int], own_only: bool = False) -> list[str]:
    """Names whose object, code, defaults or closure changed since ``baseline`` (``fingerprint()`` at worker
    start); for the classes (torch.Tensor, torch.cuda.Event, pathlib.Path, json.JSONEncoder, ktui's own), names that
    appeared or went count too (a patched ``Tensor.__sub__`` shadows the inherited one; a deleted method leaves the
    inherited one). A function reached under several names (``ktui.worker.checked.hash_data`` is
    ``ktui.worker.tensors.hash_data``) is named once, by its own module. With ``own_only``, ktui's own modules and
    classes alone."""
    by_class = _classes_of(baseline)
    changed: dict[str, Any] = {}
    present: set[str] = set()
    walked: set[str] = set()  # the classes this check walked (own_only: ktui's alone)
    for owner, name, v in _entries(own_only):
        present.add(name)
        if name in baseline:
            if baseline[name] != digest(v):
                changed[name] = v
        elif owner in by_class:
            changed[name] = v
        if owner in by_class:
            walked.add(owner)
    # a class attribute deleted (lookup now finds a base's): named too
    gone = [k for owner in walked for k in by_class[owner] if k not in present]
    by_obj: dict[int, list[str]] = {}
    for name, v in changed.items():
        by_obj.setdefault(id(v), []).append(name)
    out = []
    for names in by_obj.values():
        v = changed[names[0]]
        own = [n for n in names if n == f"{getattr(v, '__module__', None)}.{getattr(v, '__qualname__', None)}"]
        out += own or names
    return sorted(out + gone)
