"""Reading a ``--json`` output as a consumer does: one envelope (``ktui.core.envelope``), checked against the
command's JSON Schema (``ktui schema COMMAND``) with the ``jsonschema`` package (installed with ``mcp``)."""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

from ktui.schemas import command_schema


@functools.cache
def validator(command: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(command_schema(command))


def envelope(stdout: str, command: str) -> dict[str, Any]:
    """The one JSON object ``stdout`` holds, valid against ``command``'s schema (else the assertion names the first
    violation and where)."""
    env = json.loads(stdout)
    err = best_match(validator(command).iter_errors(env))
    assert err is None, f"{command} --json: {err.message} at {list(err.absolute_path)}"
    assert env["schema_version"] == 1 and env["command"] == command
    return env


def data_of(stdout: str, command: str, exit_code: int = 0) -> dict[str, Any]:
    """The envelope's ``data`` (checked: the schema, the command and ``exit_code``)."""
    env = envelope(stdout, command)
    assert "error" not in env, env["error"]
    assert env["exit_code"] == exit_code, env["exit_code"]
    return env["data"]


def error_of(stdout: str, command: str, exit_code: int, kind: str) -> str:
    """The envelope's error message (checked: the schema, the command, ``exit_code`` and ``kind``)."""
    env = envelope(stdout, command)
    assert "data" not in env
    assert (env["exit_code"], env["error"]["kind"]) == (exit_code, kind), env
    return env["error"]["message"]
