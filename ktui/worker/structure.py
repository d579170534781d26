"""The containers of an output: tuple, list, dict and named tuple are not interchangeable.

Leaves travel by path (``out[0]``, ``out['values']``, ``ktui.worker.tensors.flatten``), and a path cannot tell
``{0: values, 1: indices}`` from ``(values, indices)``, a list from a tuple, or two named tuples with other field
names apart. So the candidate also describes every container of its output (``structure``) and the judge compares
that with the reference's (``mismatch``): kinds, lengths, dict keys and field names must be the same; a failure
names the path and both containers. A named tuple (``collections.namedtuple``, ``typing.NamedTuple``, torch's
``return_types``) matches any named tuple with the same field names, whatever its class is called: code that uses
the output reads it by those names.

As in ``flatten``, nothing the kernel defined runs here: containers are recognised by their real type, field names
are read from the classes' own ``__dict__`` (``_fields``, or ``__match_args__`` for torch's struct sequences) and
only taken when they are a tuple of ``str``.
"""

from __future__ import annotations

from typing import Any

from ktui.protocol import Container
from ktui.worker.tensors import MAX_DEPTH, NestingError, class_name, dataclass_fields, key_text


def _fields(cls: type) -> tuple[str, ...] | None:
    """The field names a tuple subclass declares, read without running any of its code (or None)."""
    for c in type.__dict__["__mro__"].__get__(cls, type):
        if c is tuple:
            return None
        ns = type.__dict__["__dict__"].__get__(c, type)
        for name in ("_fields", "__match_args__"):
            v = ns.get(name)
            if type(v) is tuple and all(type(x) is str for x in v):
                return v
    return None


def structure(obj: Any, prefix: str = "out", _depth: int = 0) -> list[Container]:
    """Every container of ``obj`` (outermost first) with its path, kind, class name and keys; leaves are not listed.

    Raises:
        NestingError: more than ``MAX_DEPTH`` levels of containers.
    """
    cls = type(obj)
    record = dataclass_fields(obj)
    if record is not None:  # a dataclass: its class name and field names, as a named tuple's
        if _depth >= MAX_DEPTH:
            raise NestingError(f"the output nests containers more than {MAX_DEPTH} levels deep")
        node0: Container = {
            "path": prefix,
            "kind": "dataclass",
            "name": class_name(obj),
            "keys": [k for k, _ in record],
        }
        return [node0, *(c for k, v in record for c in structure(v, f"{prefix}.{k}", _depth + 1))]
    if not issubclass(cls, (tuple, list, dict)):
        return []
    if _depth >= MAX_DEPTH:
        raise NestingError(f"the output nests tuples, lists or dicts more than {MAX_DEPTH} levels deep")
    name = class_name(obj)
    if issubclass(cls, dict):
        items = [(key_text(k), v) for k, v in dict.items(obj)]
        node: Container = {"path": prefix, "kind": "dict", "name": name, "keys": sorted(k for k, _ in items)}
    else:
        values = list(tuple.__iter__(obj) if issubclass(cls, tuple) else list.__iter__(obj))
        items = [(str(i), v) for i, v in enumerate(values)]
        fields = _fields(cls) if issubclass(cls, tuple) else None
        if fields is not None:
            node = {"path": prefix, "kind": "namedtuple", "name": name, "keys": list(fields)}
        elif issubclass(cls, tuple):
            node = {"path": prefix, "kind": "tuple", "name": name, "keys": [str(len(values))]}
        else:
            node = {"path": prefix, "kind": "list", "name": name, "keys": [str(len(values))]}
    out = [node]
    for key, v in items:
        out += structure(v, f"{prefix}[{key}]", _depth + 1)
    return out


def _shown(c: Container | None) -> str:
    """``a tuple of 2``, ``a list of 3``, ``a dict with keys 'a', 'b'``, ``a named tuple topk(values, indices)``."""
    if c is None:
        return "one value (a tensor or a number)"
    if c["kind"] == "dict":
        return f"a dict with keys {', '.join(c['keys']) or '(none)'}"
    if c["kind"] == "namedtuple":
        return f"a named tuple {c['name'].rsplit('.', 1)[-1]}({', '.join(c['keys'])})"
    if c["kind"] == "dataclass":
        return f"a dataclass {c['name'].rsplit('.', 1)[-1]}({', '.join(c['keys'])})"
    return f"a {c['kind']} of {c['keys'][0]}"


def mismatch(want: list[Container], got: list[Container]) -> str:
    """'' when ``got`` (the candidate's output containers) matches ``want`` (the reference's), else one line naming
    the outermost path where they differ and both containers (a leaf where a container is expected, or the other
    way round, counts as a difference)."""
    by_path = {c["path"]: c for c in got}
    wanted = {c["path"]: c for c in want}
    for path in sorted(set(by_path) | set(wanted), key=lambda p: (p.count("[") + p.count("."), p)):
        w, g = wanted.get(path), by_path.get(path)
        if w is not None and g is not None and w["kind"] == g["kind"] and w["keys"] == g["keys"]:
            continue
        # the return value itself is named as such: ``out`` read as a kernel's own variable (new-user trial 25, F16:
        # "out is a leaf" beside a kernel whose tensor was called out)
        where = "the return value" if path == "out" else path
        return (
            f"the output's structure differs from the reference's: {where} is {_shown(g)} where the reference returns "
            f"{_shown(w)} (tuples, lists, dicts and named tuples are not interchangeable, nor are other lengths, keys "
            "or field names)"
        )
    return ""
