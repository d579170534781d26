"""The one JSON envelope of every ``--json`` output, the command-line errors and the exit codes.

Every command run with ``--json`` prints exactly one JSON object on stdout, whatever happens:

    {"schema_version": 1, "command": "run", "exit_code": 0, "data": {...}}          the command's result
    {"schema_version": 1, "command": "run", "exit_code": 2,
     "error": {"kind": "usage", "message": "no such kernel file: v9.py"}}            no result: why

``data`` is the command's own object (its JSON Schema: ``ktui schema COMMAND``, ``docs/json.md``); a result that is
a failure of the kernel (a rung failed: exit code 1) is still ``data``. ``error`` is there instead when the command
has no result to give: ``usage`` (exit 2: bad arguments, not a workspace), ``environment`` (exit 3: a worker could
not start: no GPU for ``--device cuda``, torch missing), ``failed`` (exit 1: ``ktui diff`` could not make a
version's dumps) or ``interrupted`` (ctrl+c: 130, a signal: 128 + its number). The one-line message goes to stderr
too, as without ``--json``. Floats that are not finite are written ``"nan"``, ``"inf"``, ``"-inf"``
(``ktui.protocol.json_safe``): the output is strict JSON.

``schema_version`` changes when a key is removed or renamed or changes its type; keys are added without a change
(read a ktui's output with that ktui's ``ktui schema``).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import math
from typing import Any, Literal, NoReturn, NotRequired, TypedDict

SCHEMA_VERSION = 1
"""The version of every ``--json`` envelope and of the data in it (see the module's docstring)."""

OK = 0
FAILED = 1
USAGE = 2
ENVIRONMENT = 3
INTERRUPTED = 130
"""ctrl+c; a signal that stops a command exits 128 + its number (SIGTERM 143, SIGHUP 129)."""

ErrorKind = Literal["usage", "environment", "failed", "interrupted"]

EXIT_CODES: dict[int, str] = {
    OK: "ok: every rung ok or skipped (the command's own meaning: see each command)",
    FAILED: "a failure of what was checked: a rung failed, a verdict changed, a version's dumps could not be made",
    USAGE: "usage: bad arguments, not a workspace, no such file or session (error kind `usage`)",
    ENVIRONMENT: "environment: a worker could not start: no GPU for `--device cuda`, torch missing (kind "
    "`environment`)",
    INTERRUPTED: "interrupted by ctrl+c (kind `interrupted`); a signal: 128 + its number (SIGHUP 129, SIGTERM 143)",
}
"""Every exit code of ktui's commands and what it means."""

SIGNAL_EXITS = (129, 143)
"""128 + SIGHUP, 128 + SIGTERM: the signals that stop a command cleanly (``ktui.cli.stop_on_signals``)."""


class EnvelopeError(TypedDict):
    """Why a command gave no result.

    Attributes:
        kind: ``usage`` (exit 2), ``environment`` (exit 3), ``failed`` (exit 1) or ``interrupted`` (130, 128 + a
            signal's number).
        message: the one line also printed on stderr.
    """

    kind: ErrorKind
    message: str


class Envelope(TypedDict):
    """What ``--json`` prints: one object, ``data`` or ``error``.

    Attributes:
        schema_version: the version of this envelope and of its data's schema.
        command: the command that printed it (``run``, ``context search``...).
        exit_code: the process's exit status.
        data: the command's result (its schema: ``ktui schema COMMAND``).
        error: why there is no result.
    """

    schema_version: int
    command: str
    exit_code: int
    data: NotRequired[Any]
    error: NotRequired[EnvelopeError]


class CommandError(Exception):
    """A command ends without a result: printed as one line on stderr (and, with ``--json``, as the envelope's
    ``error``); the process exits with ``exit_code``."""

    kind: ErrorKind = "failed"
    exit_code: int = FAILED


class UsageError(CommandError):
    """Bad command-line input: exit code 2."""

    kind: ErrorKind = "usage"
    exit_code = USAGE


class EnvironmentFailure(CommandError):
    """The machine cannot do what was asked (a worker could not start): exit code 3."""

    kind: ErrorKind = "environment"
    exit_code = ENVIRONMENT


class CommandFailed(CommandError):
    """What was asked could not be made (``ktui diff``: a version's dumps): exit code 1."""


def jsonable(x: Any) -> Any:
    """``x`` as JSON values: a dataclass as ``dataclasses.asdict`` writes it, an ``Enum`` as its value, a tuple as
    a list, a non-finite float as ``"nan"``, ``"inf"`` or ``"-inf"`` (as ``ktui.protocol.json_safe``)."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return jsonable(dataclasses.asdict(x))
    if isinstance(x, enum.Enum):
        return jsonable(x.value)
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    return x


def success(command: str, data: Any, exit_code: int = OK) -> Envelope:
    """The envelope of a result (``data``: made JSON values by ``jsonable``)."""
    return {"schema_version": SCHEMA_VERSION, "command": command, "exit_code": exit_code, "data": jsonable(data)}


def failure(command: str, kind: ErrorKind, message: str, exit_code: int) -> Envelope:
    """The envelope of a command that gave no result."""
    return {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "exit_code": exit_code,
        "error": {"kind": kind, "message": message},
    }


def dumps(envelope: Envelope) -> str:
    """The envelope as printed: indented by two spaces, keys in their order (envelope first, then ``data``), ASCII
    (``✓`` as ``\\u2713``: any terminal and pipe reads it; ``jq`` shows it as it is)."""
    return json.dumps(envelope, indent=2, allow_nan=False)


def emit(command: str, data: Any, exit_code: int = OK) -> int:
    """Print ``data``'s envelope on stdout; returns ``exit_code``."""
    print(dumps(success(command, data, exit_code)), flush=True)
    return exit_code


class ArgumentParser(argparse.ArgumentParser):
    """``argparse``'s parser whose errors are ``UsageError`` (one line, exit 2, an envelope with ``--json``)
    instead of a usage dump and ``sys.exit(2)``."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")
