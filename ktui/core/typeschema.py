"""JSON Schema (draft 2020-12) from Python types: the ``--json`` outputs are documented from the types that make them.

``SchemaBuilder.of(tp)`` turns a type into a schema: a ``TypedDict`` or a dataclass becomes an object (its keys,
the required ones, nothing else: ``additionalProperties`` false) kept once under ``$defs`` by its class name and
referenced as ``{"$ref": "#/$defs/Name"}``; ``list``/``tuple`` an array, ``dict`` an object, ``X | None`` a union,
``Literal`` and ``Enum`` an ``enum``, ``Any`` anything. A ``float`` is ``number`` or ``string``: ktui writes
non-finite floats as ``"nan"``, ``"inf"``, ``"-inf"`` (``ktui.protocol.json_safe``), strict JSON having no NaN.

Each object's ``description`` is its class docstring before its ``Attributes:`` section; each key's is its entry
in that section (Google style: ``name: text``, ``a, b: text``, continued on deeper-indented lines), else the
comment at the end of the key's line in the class body (``calls: int  # cases executed``).
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

Schema = dict[str, Any]

_SIMPLE: dict[Any, str] = {str: "string", int: "integer", bool: "boolean", type(None): "null"}


def is_typeddict(tp: Any) -> bool:
    """``tp`` is a ``TypedDict`` class (``typing``'s or ``typing_extensions``')."""
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def fields_of(tp: type) -> tuple[dict[str, Any], set[str]]:
    """The keys of a ``TypedDict`` or dataclass with their types, and the required ones (a dataclass's fields are
    all written: all required).

    Raises:
        TypeError: ``tp`` is neither.
    """
    hints = typing.get_type_hints(tp)
    if is_typeddict(tp):
        # ``__required_keys__`` misses ``NotRequired[...]`` written as a string (``from __future__ import
        # annotations``, Python 3.11): the evaluated hints say it.
        extras = typing.get_type_hints(tp, include_extras=True)
        required = set(getattr(tp, "__required_keys__", set()))
        for key, hint in extras.items():
            origin = typing.get_origin(hint)
            if origin is typing.NotRequired:
                required.discard(key)
            elif origin is typing.Required:
                required.add(key)
        return hints, required
    if _is_dataclass_type(tp):
        names = [f.name for f in dataclasses.fields(tp)]
        return {n: hints[n] for n in names}, set(names)
    raise TypeError(f"{tp!r} is neither a TypedDict nor a dataclass")


def describe(tp: type) -> tuple[str, dict[str, str]]:
    """The class's description (its docstring up to ``Attributes:``, one paragraph per blank line) and each key's
    (``Attributes:`` entries, else the trailing ``# comment`` of the key's line)."""
    doc = inspect.getdoc(tp) or ""
    if is_typeddict(tp) and doc.startswith(("dict() -> new empty dictionary", "dict(")):
        doc = ""  # a TypedDict without a docstring inherits dict's
    head, _, rest = doc.partition("\nAttributes:\n")
    fields = _attributes(rest) if rest else {}
    for name, text in _trailing_comments(tp).items():
        fields.setdefault(name, text)
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", head.strip()) if p.strip()]
    return "\n\n".join(paragraphs), fields


def _attributes(section: str) -> dict[str, str]:
    """``name: text`` entries of a Google-style section (continuation lines indented deeper), up to its end."""
    out: dict[str, str] = {}
    names: list[str] = []
    base: int | None = None
    for line in section.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if base is None:
            base = indent
        if indent < base:
            break
        m = re.match(r"^([A-Za-z_][\w]*(?:\s*,\s*[A-Za-z_][\w]*)*):\s*(.*)$", line.strip()) if indent == base else None
        if m:
            names = [n.strip() for n in m.group(1).split(",")]
            for n in names:
                out[n] = m.group(2).strip()
        elif names:
            for n in names:
                out[n] = f"{out[n]} {line.strip()}".strip()
    return out


def _trailing_comments(tp: type) -> dict[str, str]:
    try:
        lines, _ = inspect.getsourcelines(tp)
    except (OSError, TypeError):
        return {}
    out: dict[str, str] = {}
    for line in lines[1:]:
        m = re.match(r"^    ([A-Za-z_]\w*): [^#]*#\s*(.+)$", line.rstrip())
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


class SchemaBuilder:
    """Builds schemas that share one ``$defs``.

    Args:
        overrides: a schema function for some classes (called with the builder), used instead of the generic one:
            the rung results of ``ktui run``, whose figures sit beside the rung's own fields.
    """

    def __init__(self, overrides: Mapping[type, Callable[[SchemaBuilder], Schema]] | None = None):
        self.defs: dict[str, Schema] = {}
        self._owner: dict[str, type] = {}
        self.overrides = dict(overrides or {})

    def ref(self, tp: type, make: Callable[[], Schema] | None = None, name: str | None = None) -> Schema:
        """``{"$ref": "#/$defs/<name>"}`` (``name`` defaults to ``tp``'s), defining it first: with ``make``, else
        the override of ``tp``, else the generic object schema.

        Raises:
            ValueError: another class of the same name is already defined.
        """
        name = name or tp.__name__
        owner = self._owner.get(name)
        if owner is not None and owner is not tp:
            raise ValueError(f"two types named {name}: {owner.__module__} and {tp.__module__}")
        if owner is None:
            self._owner[name] = tp
            self.defs[name] = {}  # placeholder: a recursive type refers to itself
            if make is not None:
                self.defs[name] = make()
            elif tp in self.overrides:
                self.defs[name] = self.overrides[tp](self)
            else:
                self.defs[name] = self.object(tp)
        return {"$ref": f"#/$defs/{name}"}

    def object(self, tp: type, closed: bool = True, required: bool = True) -> Schema:
        """The object schema of a ``TypedDict`` or dataclass: ``closed`` (``additionalProperties`` false) and with
        its ``required`` keys, unless told otherwise (a part of an ``allOf``)."""
        hints, req = fields_of(tp)
        text, notes = describe(tp)
        props: dict[str, Schema] = {}
        for key, hint in hints.items():
            s = self.of(hint)
            if notes.get(key):
                s = {**s, "description": notes[key]} if "$ref" not in s else {"description": notes[key], **s}
            props[key] = s
        out: Schema = {"type": "object"}
        if text:
            out["description"] = text
        out["properties"] = props
        if required:
            out["required"] = [k for k in hints if k in req]
        if closed:
            out["additionalProperties"] = False
        return out

    def of(self, tp: Any) -> Schema:
        """The schema of ``tp`` (see the module's docstring); an unknown type is anything (``{}``)."""
        origin = typing.get_origin(tp)
        if tp is Any or tp is object:
            return {}
        if origin is typing.Annotated:
            return self.of(typing.get_args(tp)[0])
        if origin in (typing.NotRequired, typing.Required):
            return self.of(typing.get_args(tp)[0])
        if is_typeddict(tp) or _is_dataclass_type(tp):
            return self.ref(tp)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return {"enum": [m.value for m in tp]}
        if origin is typing.Literal:
            return {"enum": list(typing.get_args(tp))}
        if origin in (list, tuple, set, frozenset) or tp in (list, tuple):
            args = typing.get_args(tp)
            if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
                return {"type": "array", "prefixItems": [self.of(a) for a in args], "items": False}
            item = self.of(args[0]) if args else {}
            return {"type": "array", "items": item} if item else {"type": "array"}
        if origin is dict or tp is dict:
            args = typing.get_args(tp)
            value = self.of(args[1]) if len(args) == 2 else {}
            return {"type": "object", "additionalProperties": value} if value else {"type": "object"}
        if origin in (typing.Union, types.UnionType):
            return _union([self.of(a) for a in typing.get_args(tp)])
        if tp is float:
            return {"type": ["number", "string"]}  # non-finite floats travel as strings (json_safe)
        if tp in _SIMPLE:
            return {"type": _SIMPLE[tp]}
        return {}


def _union(parts: list[Schema]) -> Schema:
    """``anyOf`` of ``parts``, or one ``type`` list when every part is only a ``type``."""
    if any(p == {} for p in parts):
        return {}
    if all(set(p) == {"type"} for p in parts):
        names: list[str] = []
        for p in parts:
            for t in p["type"] if isinstance(p["type"], list) else [p["type"]]:
                if t not in names:
                    names.append(t)
        return {"type": names if len(names) > 1 else names[0]}
    return {"anyOf": parts}
