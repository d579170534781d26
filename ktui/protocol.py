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
import math
from typing import Any



def encode(msg: dict[str, Any]) -> bytes:
    """One line of strict JSON (NaN/inf become strings, so any JSON reader can read the stream)."""
    return (json.dumps(json_safe(msg), separators=(",", ":")) + "\n").encode()


def decode(line: bytes) -> dict[str, Any]:
    """Raises ValueError on a line that is not a JSON object."""
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise ValueError(f"protocol line is not an object: {line[:80]!r}")
    return obj


def json_safe(x: Any) -> Any:
    """Replace NaN/inf floats by the strings "nan"/"inf"/"-inf" (in nested dicts and lists) for strict JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def json_float(x: Any) -> float:
    """The inverse of the NaN/inf encoding above: a JSON figure back to a float."""
    if isinstance(x, str):
        return float(x)
    return float(x) if x is not None else math.nan


def spec_size(spec: dict) -> int:
    """The product of a spec's integer values: a proxy for its size that needs no input data (the largest test
    spec is the one compiled by the compile rung; layouts run on the two largest)."""
    size = 1
    for v in spec.values():
        if isinstance(v, int) and not isinstance(v, bool):
            size *= max(v, 1)
    return size
