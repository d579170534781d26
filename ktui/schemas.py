"""The JSON Schema of every ``--json`` output, made from the types that produce it, and ``ktui schema``.

    ktui schema                      one schema that every envelope of every command validates against
    ktui schema run                  the envelope of one command (``context search``: two words)
    ktui schema --markdown           docs/json.md: the envelope, the exit codes and every type, as tables
    ktui schema --list               the commands, one a line

Each command's ``data`` is a ``TypedDict`` (or dataclass) beside the code that fills it: ``LadderJson`` in
``ktui.core.results`` (``ktui run``; its rungs' figures are ``ktui.core.figures``'), ``DiffJson`` in
``ktui.core.inspect.diff``, ``StatusJson`` in ``ktui.core.status``, ``SessionsJson`` in ``ktui.sessions.catalog``,
``EvalJson`` in ``ktui.importers.evaluate``, ``RerunJson`` in ``ktui.sessions.rerun`` and the ``context`` ones in
``ktui.context.cli``. mypy checks that the code builds those types; ``ktui.core.typeschema`` turns them into JSON
Schema (draft 2020-12), descriptions from their docstrings; ``tests/test_envelope.py`` validates every command's
real output against its schema and fails when ``docs/json.md`` is not what ``ktui schema --markdown`` prints.

Not enveloped: ``ktui export --format json`` writes a document in its own format (an ATIF trajectory, with its own
``schema_version``), ``ktui schema`` prints schemas, and ``ktui mcp`` speaks MCP (its tools publish their own
``outputSchema``; ``diff_versions`` returns ``ktui diff``'s data).
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ktui.context.cli import ListJson, ReindexJson, SearchJson
from ktui.core import envelope
from ktui.core.figures import rung_schema
from ktui.core.inspect.diff import DiffJson
from ktui.core.results import LadderJson, RungJson
from ktui.core.status import StatusJson
from ktui.core.typeschema import JSON_SCHEMA_DIALECT, Schema, SchemaBuilder
from ktui.importers.evaluate import EvalJson
from ktui.sessions.catalog import SessionsJson
from ktui.sessions.rerun import RerunJson

INTERRUPTED_CODES = (envelope.INTERRUPTED, *envelope.SIGNAL_EXITS)


@dataclass(frozen=True)
class CommandSchema:
    """One command that prints ``--json``.

    Attributes:
        name: the envelope's ``command`` (``run``, ``context search``).
        usage: how to ask for it.
        what: what its data is, one sentence.
        data: the type of its ``data``.
        data_codes: the exit codes that come with ``data``, and what each means.
        error_codes: those that come with ``error`` (besides an interruption: 130, 129, 143), and what they mean.
    """

    name: str
    usage: str
    what: str
    data: type
    data_codes: dict[int, str]
    error_codes: dict[int, str]

    @property
    def title(self) -> str:
        return "".join(w.capitalize() for w in self.name.split()) + "Envelope"


USAGE = {envelope.USAGE: "usage: bad arguments, not a workspace, no such file"}
ENVIRONMENT = {
    envelope.ENVIRONMENT: "environment: a worker could not start (no GPU for `--device cuda`, torch missing)"
}

COMMANDS: tuple[CommandSchema, ...] = (
    CommandSchema(
        "run",
        "ktui run KERNEL_FILE --json",
        "The rung ladder on one version: what identifies the run and every rung with its figures.",
        LadderJson,
        {envelope.OK: "every rung ok or skipped", envelope.FAILED: "a rung failed"},
        {**USAGE, **ENVIRONMENT},
    ),
    CommandSchema(
        "diff",
        "ktui diff A B --json",
        "What the compiler made of two versions: resources, instruction mix, the normalized diff of a stage.",
        DiffJson,
        {envelope.OK: "compared"},
        {
            envelope.FAILED: "a version's dumps could not be made (its compile or dumps rung failed), or it has no "
            "text of the stage",
            **USAGE,
            **ENVIRONMENT,
        },
    ),
    CommandSchema(
        "status",
        "ktui status [WORKSPACE] --json",
        "Every version's stored verdict, speedup and staleness. Runs nothing.",
        StatusJson,
        {envelope.OK: "read"},
        USAGE,
    ),
    CommandSchema(
        "sessions",
        "ktui sessions [--workspace W] --json",
        "The recorded sessions of the workspace. Runs nothing.",
        SessionsJson,
        {envelope.OK: "read"},
        USAGE,
    ),
    CommandSchema(
        "eval",
        "ktui eval [PROBLEMS...] --json",
        "The ladder over a problem set: one row per version, fast_p and the geometric mean speedup.",
        EvalJson,
        {
            envelope.OK: "no row failed (a row that needs a GPU, on a machine without one, is neither failed nor "
            "correct: `needs_gpu` counts it)",
            envelope.FAILED: "a row failed or has no result",
        },
        {**USAGE, **ENVIRONMENT},
    ),
    CommandSchema(
        "replay",
        "ktui replay SESSION --rerun --json",
        "Every version a recorded session ran, through today's ladder, beside what was recorded.",
        RerunJson,
        {envelope.OK: "no verdict changed", envelope.FAILED: "a verdict changed, or a version could not be re-run"},
        {**USAGE, **ENVIRONMENT},
    ),
    CommandSchema(
        "context list",
        "ktui context list --json",
        "Every source of the context index.",
        ListJson,
        {envelope.OK: "listed"},
        {envelope.USAGE: "usage: bad arguments, not a workspace, the index failed"},
    ),
    CommandSchema(
        "context reindex",
        "ktui context reindex --json",
        "What bringing the context index in step did.",
        ReindexJson,
        {envelope.OK: "updated"},
        {envelope.USAGE: "usage: bad arguments, not a workspace, the index failed"},
    ),
    CommandSchema(
        "context search",
        'ktui context search "QUERY" --json',
        "The context index's ranked hits for a query (none is not an error).",
        SearchJson,
        {envelope.OK: "searched"},
        {envelope.USAGE: "usage: bad arguments, not a workspace, the index failed"},
    ),
)
BY_NAME: dict[str, CommandSchema] = {c.name: c for c in COMMANDS}


def builder() -> SchemaBuilder:
    """A builder that knows ``ktui run``'s rungs (their figures beside their fields: ``figures.rung_schema``)."""
    overrides: dict[type, Callable[[SchemaBuilder], Schema]] = {RungJson: rung_schema}
    return SchemaBuilder(overrides)


def _envelope(b: SchemaBuilder, c: CommandSchema) -> Schema:
    """The schema of ``c``'s envelope: its data, or its error (``oneOf``)."""
    head = {
        "schema_version": {"const": envelope.SCHEMA_VERSION},
        "command": {"const": c.name},
    }
    error_codes = sorted({*c.error_codes, *INTERRUPTED_CODES})
    return {
        "description": f"`{c.usage}`: {c.what}",
        "oneOf": [
            {
                "type": "object",
                "properties": {**head, "exit_code": {"enum": sorted(c.data_codes)}, "data": b.of(c.data)},
                "required": ["schema_version", "command", "exit_code", "data"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {
                    **head,
                    "exit_code": {"enum": error_codes},
                    "error": b.of(envelope.EnvelopeError),
                },
                "required": ["schema_version", "command", "exit_code", "error"],
                "additionalProperties": False,
            },
        ],
    }


def command_schema(name: str) -> Schema:
    """The JSON Schema of command ``name``'s envelope, with the ``$defs`` it needs.

    Raises:
        KeyError: no command of that name prints ``--json``.
    """
    c = BY_NAME[name]
    b = builder()
    body = _envelope(b, c)
    return {"$schema": JSON_SCHEMA_DIALECT, "title": f"ktui {c.name} --json", **body, "$defs": b.defs}


def full_schema() -> Schema:
    """One schema for every envelope of every command (``oneOf`` their envelopes, under ``$defs``)."""
    b = builder()
    for c in COMMANDS:
        b.ref(c.data, functools.partial(_envelope, b, c), name=c.title)
    b.ref(envelope.Envelope, functools.partial(_unknown_command, b), name="UnknownCommandEnvelope")
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": "ktui --json",
        "description": _envelope_text(),
        "oneOf": [{"$ref": f"#/$defs/{c.title}"} for c in COMMANDS] + [{"$ref": "#/$defs/UnknownCommandEnvelope"}],
        "$defs": b.defs,
    }


def _unknown_command(b: SchemaBuilder) -> Schema:
    """A usage error before the command was known (``ktui context --json``: no subcommand): ``command`` is what
    was typed."""
    return {
        "description": "A usage error before the command was known (`ktui context --json`, no subcommand): "
        "`command` is what was typed.",
        "type": "object",
        "properties": {
            "schema_version": {"const": envelope.SCHEMA_VERSION},
            "command": {"type": "string", "not": {"enum": [c.name for c in COMMANDS]}},
            "exit_code": {"enum": sorted({envelope.USAGE, *INTERRUPTED_CODES})},
            "error": b.of(envelope.EnvelopeError),
        },
        "required": ["schema_version", "command", "exit_code", "error"],
        "additionalProperties": False,
    }


def _envelope_text() -> str:
    doc = envelope.__doc__ or ""
    return " ".join(doc.split("\n\n")[0].split())


# -- docs/json.md ------------------------------------------------------------------------------------------------
def markdown() -> str:
    """``docs/json.md``: the envelope, the exit codes, each command and every type of their data, as tables."""
    b = builder()
    for c in COMMANDS:
        b.of(c.data)
    env = builder()
    env.of(envelope.Envelope)
    out = [
        "# ktui's JSON output",
        "",
        "<!-- Generated by `ktui schema --markdown` from the types in ktui/ (ktui/schemas.py); do not edit: "
        "tests/test_envelope.py fails when this file is not what it prints. -->",
        "",
        "Every command run with `--json` prints exactly one JSON object on stdout, whatever happens: its result "
        "(`data`) or why it has none (`error`). Progress and notes go to stderr. `ktui schema COMMAND` prints the "
        "JSON Schema (draft 2020-12) of a command's envelope, `ktui schema` one schema for them all.",
        "",
        "```json",
        json.dumps(_example_ok(), indent=2),
        json.dumps(envelope.failure("run", "usage", "no such kernel file: kernels/softmax/v9.py", 2), indent=2),
        "```",
        "",
        "- A result that is a failure of the kernel (a rung failed: exit code 1) is still `data`; `error` is for a "
        "command that gave no result.",
        '- Numbers that are not finite are the strings `"nan"`, `"inf"`, `"-inf"` (the output is strict JSON): '
        "every `number` below may be one.",
        "- `schema_version` changes when a key is removed or renamed or changes its type; keys are added without a "
        "change, so validate a ktui's output against that ktui's `ktui schema`.",
        "- Not enveloped: `ktui export --format json` (an ATIF trajectory, its own `schema_version`), `ktui schema` "
        "(schemas) and `ktui mcp` (MCP: its tools publish their own `outputSchema`; `diff_versions` returns "
        "`ktui diff`'s data).",
        "",
        "## The envelope",
        "",
        *_table(env.defs["Envelope"]),
        "",
        *_def_section(env, "EnvelopeError", level=3),
        "## Exit codes",
        "",
        "| code | meaning |",
        "| --- | --- |",
        *[f"| {code} | {_cell(text)} |" for code, text in envelope.EXIT_CODES.items()],
        "",
        "## Commands",
        "",
        "| command | data | exit codes with `data` | exit codes with `error` |",
        "| --- | --- | --- | --- |",
    ]
    for c in COMMANDS:
        data_codes = "; ".join(f"{k} {v}" for k, v in c.data_codes.items())
        error_codes = "; ".join(f"{k} {v}" for k, v in c.error_codes.items())
        out.append(
            f"| `{c.usage}` | {_link(c.data.__name__)} | {_cell(data_codes)} | "
            f"{_cell(error_codes)}; 130, 129, 143 interrupted |"
        )
    out += ["", "## Types", "", "A key in *italics* may be absent.", ""]
    for name in b.defs:
        out += _def_section(b, name, level=3)
    return "\n".join(out).rstrip() + "\n"


def _example_ok() -> dict[str, Any]:
    return {
        "schema_version": envelope.SCHEMA_VERSION,
        "command": "status",
        "exit_code": 0,
        "data": {"workspace": "/home/me/kernels-ws", "problems": ["..."]},
    }


def _def_section(b: SchemaBuilder, name: str, level: int) -> list[str]:
    s = b.defs[name]
    out = [f"{'#' * level} {name}", ""]
    if s.get("description"):
        out += [s["description"], ""]
    if "oneOf" in s:
        out += ["One of (told apart by `name` and `status`):", ""]
        for v in s["oneOf"]:
            consts = ", ".join(f"`{k}` = {json.dumps(p['const'])}" for k, p in v.get("properties", {}).items())
            parts = " and ".join(_text(p) for p in v.get("allOf", []))
            req = ", ".join(f"`{k}`" for k in v.get("required", []))
            out.append(f"- {consts}: {parts}" + (f", with {req}" if req else "") + "; no other key")
        out.append("")
    elif s.get("type") == "object" and "properties" in s:
        if "required" not in s and s.get("additionalProperties") is not False:
            out += ["The keys of a rung's figures: which ones each status has is in [RungJson](#rungjson).", ""]
        out += [*_table(s), ""]
    return out


def _table(s: Schema) -> list[str]:
    req = set(s.get("required", ()))
    closed = s.get("additionalProperties") is False
    rows = ["| key | type | description |", "| --- | --- | --- |"]
    for key, p in s["properties"].items():
        shown = f"`{key}`" if key in req or not closed and not req else f"*`{key}`*"
        rows.append(f"| {shown} | {_text(p)} | {_cell(p.get('description', ''))} |")
    return rows


def _link(name: str) -> str:
    return f"[{name}](#{name.lower()})"


def _text(s: Schema) -> str:
    """A schema as a type for a table cell."""
    if "$ref" in s:
        return _link(s["$ref"].rsplit("/", 1)[-1])
    if "const" in s:
        return f"`{json.dumps(s['const'])}`"
    if "enum" in s:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in s["enum"])
    if "anyOf" in s:
        return " or ".join(_text(p) for p in s["anyOf"])
    t = s.get("type")
    if isinstance(t, list):
        names = [n for n in t if not (n == "string" and "number" in t)]  # floats: "nan", "inf" (see above)
        return " or ".join(names)
    if t == "array":
        if "prefixItems" in s:
            return "[" + ", ".join(_text(p) for p in s["prefixItems"]) + "]"
        return f"array of {_text(s['items'])}" if s.get("items") else "array"
    if t == "object":
        extra = s.get("additionalProperties")
        return f"object of {_text(extra)}" if isinstance(extra, dict) and extra else "object"
    if t:
        return str(t)
    return "any"


def _cell(text: str) -> str:
    return re.sub(r"\s+", " ", text).replace("|", "\\|").strip()


# -- ktui schema -------------------------------------------------------------------------------------------------
def parser() -> envelope.ArgumentParser:
    names = ", ".join(c.name for c in COMMANDS)
    p = envelope.ArgumentParser(
        prog="ktui schema",
        description="The JSON Schema (draft 2020-12) of the envelope that `--json` prints: of one command's, or "
        f"one schema for them all. Commands: {names}.",
        epilog="exit codes: 0 printed, 2 usage (no such command)",
    )
    p.add_argument("command", nargs="*", metavar="COMMAND", help="a command (`run`, `context search`...)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--markdown", action="store_true", help="docs/json.md: every schema as tables")
    how.add_argument("--list", action="store_true", help="the commands that print --json, one a line")
    return p


def cli(argv: list[str]) -> int:
    """``ktui schema [COMMAND] [--markdown | --list]``.

    Raises:
        UsageError: an unknown command, or a command with ``--markdown``/``--list``.
    """
    args = parser().parse_args(argv)
    name = " ".join(args.command)
    if name and (args.markdown or args.list):
        raise envelope.UsageError("--markdown and --list take no COMMAND")
    if args.list:
        print("\n".join(c.name for c in COMMANDS))
    elif args.markdown:
        sys.stdout.write(markdown())
    elif name:
        if name not in BY_NAME:
            known = ", ".join(c.name for c in COMMANDS)
            raise envelope.UsageError(f"no command {name!r} prints --json; commands: {known}")
        print(json.dumps(command_schema(name), indent=2))
    else:
        print(json.dumps(full_schema(), indent=2))
    return 0
