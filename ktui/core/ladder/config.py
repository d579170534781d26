"""The on-request rungs' settings from ``ktui.toml`` (``[tool.ktui.*]`` of ``pyproject.toml`` too): ``[profile]``
(what Nsight Compute collects) and ``[trace]`` (which tracer, how big a buffer).

    [profile]
    set = "full"                          # an ncu section set (ncu --list-sets); default: ktui's sections only
    sections = ["SourceCounters"]         # added to ktui's own (ktui.core.inspect.ncu.SECTIONS)
    metrics = ["smsp__inst_executed.sum"] # added to ktui's own
    args = ["--import-source", "yes"]     # any other ncu arguments, as a list

    [trace]
    tracer = "ktui"                       # or "proton" (Triton's own intra-kernel profiler; Triton kernels only)
    buffer_mib = 64                       # per traced kernel; a bigger grid is sampled to fit
    reps = 30                             # timed calls of each of the untraced and the traced build

``--ncu-args "..."`` and ``--tracer`` of ``ktui run`` go on top (``LadderOptions``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRACERS = ("ktui", "proton")


class ConfigError(ValueError):
    """A setting of ``[profile]`` or ``[trace]`` that ktui cannot use (the message names the file and key)."""


@dataclass(frozen=True)
class ProfileConfig:
    """What the profile rung asks of ncu besides ktui's own sections and metrics."""

    set: str | None = None
    sections: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    args: tuple[str, ...] = ()


# 64 MiB: 2**17 warps (a power of two that fits beside the header: capacity_warps_log2); the softmax example's 8,192
# CTAs of 16 warps (2**17) outran 32 MiB (2**16) on the H200 (2026-12-04) and were sampled every 2nd CTA
DEFAULT_BUFFER_MIB = 64


@dataclass(frozen=True)
class TraceConfig:
    """How the trace rung traces."""

    tracer: str = "ktui"
    buffer_mib: int = DEFAULT_BUFFER_MIB
    reps: int = 30
    source: dict[str, str] = field(default_factory=dict)  # key -> where it was set (for messages)


def _table(root: Path, name: str) -> tuple[dict[str, Any], str]:
    """``[name]`` of ``ktui.toml``, else ``[tool.ktui.name]`` of ``pyproject.toml`` (ktui.toml wins), and where."""
    found: dict[str, Any] = {}
    where = ""
    for path, keys in ((root / "pyproject.toml", ("tool", "ktui", name)), (root / "ktui.toml", (name,))):
        if not path.is_file():
            continue
        try:
            table: Any = tomllib.loads(path.read_text())
        except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path.name}: {exc}") from None
        for k in keys:
            table = table.get(k, {}) if isinstance(table, dict) else {}
        if isinstance(table, dict) and table:
            found, where = table, f"{path.name} [{'.'.join(keys)}]"
    return found, where


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{what} must be a list of strings, not {value!r}")
    return tuple(value)


def load_profile(root: Path) -> ProfileConfig:
    """``[profile]`` of the workspace at ``root``.

    Raises:
        ConfigError: unreadable TOML, an unknown key, or a value of the wrong type.
    """
    table, where = _table(root, "profile")
    unknown = sorted(set(table) - {"set", "sections", "metrics", "args"})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; keys: set, sections, metrics, args")
    ncu_set = table.get("set")
    if ncu_set is not None and (not isinstance(ncu_set, str) or not ncu_set):
        raise ConfigError(f"{where} set must be a section set's name (ncu --list-sets), not {ncu_set!r}")
    return ProfileConfig(
        set=ncu_set,
        sections=_strings(table.get("sections", []), f"{where} sections"),
        metrics=_strings(table.get("metrics", []), f"{where} metrics"),
        args=_strings(table.get("args", []), f"{where} args"),
    )


def load_trace(root: Path, tracer: str | None = None) -> TraceConfig:
    """``[trace]`` of the workspace at ``root``, with ``tracer`` (``--tracer``) on top.

    Raises:
        ConfigError: unreadable TOML, an unknown key or tracer, a buffer or reps out of range.
    """
    table, where = _table(root, "trace")
    unknown = sorted(set(table) - {"tracer", "buffer_mib", "reps"})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; keys: tracer, buffer_mib, reps")
    source = {k: where for k in table}
    chosen = table.get("tracer", "ktui")
    if tracer is not None:
        chosen, source["tracer"] = tracer, "--tracer"
    if chosen not in TRACERS:
        raise ConfigError(f"{source.get('tracer', where)}: unknown tracer {chosen!r}; tracers: {', '.join(TRACERS)}")
    mib = table.get("buffer_mib", DEFAULT_BUFFER_MIB)
    if not isinstance(mib, int) or isinstance(mib, bool) or not 1 <= mib <= 4096:
        raise ConfigError(f"{where} buffer_mib must be a whole number of MiB from 1 to 4096, not {mib!r}")
    reps = table.get("reps", 30)
    if not isinstance(reps, int) or isinstance(reps, bool) or not 3 <= reps <= 10_000:
        raise ConfigError(f"{where} reps must be a whole number from 3 to 10000, not {reps!r}")
    return TraceConfig(tracer=chosen, buffer_mib=mib, reps=reps, source=source)
