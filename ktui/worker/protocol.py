"""The wire protocol between ktui and its worker processes: one JSON object per line.

ktui -> worker:  ``{"id": 7, "method": "execute", "params": {...}}``
worker -> ktui:  ``{"hello": {...}}`` once when ready (device, versions, start-up seconds);
                 ``{"id": 7, "progress": {...}}`` any number of times;
                 ``{"id": 7, "result": {...}}`` or ``{"id": 7, "error": {"type", "message", "traceback"}}`` once.

The worker moves its own stdout to stderr before any candidate code runs, so a ``print`` in a kernel never corrupts
the channel. Neither side imports torch here.
"""

from __future__ import annotations

import json
from typing import Any

from ktui.results import json_safe


def encode(msg: dict[str, Any]) -> bytes:
    """One line of strict JSON (NaN/inf become strings, so any JSON reader can read the stream)."""
    return (json.dumps(json_safe(msg), separators=(",", ":")) + "\n").encode()


def decode(line: bytes) -> dict[str, Any]:
    """Raises ValueError on a line that is not a JSON object."""
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise ValueError(f"protocol line is not an object: {line[:80]!r}")
    return obj
