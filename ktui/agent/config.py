"""Which model the agent uses and how: from a ``--model`` flag, the environment, ``ktui.toml`` or pyproject.toml.

Precedence, highest first: the ``--model`` flag; ``KTUI_MODEL`` (and ``KTUI_API_BASE``); ``[agent]`` in the
workspace's ``ktui.toml``; ``[tool.ktui.agent]`` in its ``pyproject.toml``. API keys are never read from or written
to any file: litellm takes them from the provider's usual environment variable (``ANTHROPIC_API_KEY``,
``OPENAI_API_KEY``...), or from the variable that ``api_key_env`` names.

    # ktui.toml
    [agent]
    model = "anthropic/claude-sonnet-4-5"   # any litellm model name: openai/..., ollama/..., hosted_vllm/...
    api_base = "http://localhost:11434"     # optional: a custom endpoint
    max_rounds = 3                           # automatic ladder-result rounds after the human's message
    approve = "ask"                          # "ask": every write waits for y/n; "auto": writes apply at once
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

SETUP_HINT = (
    "No model configured: pass --model or set KTUI_MODEL (e.g. anthropic/claude-sonnet-4-5, "
    "openai/gpt-4.1, ollama/qwen2.5-coder), with the provider's API key in its usual environment "
    'variable; or add [agent] model = "..." to ktui.toml ([tool.ktui.agent] in pyproject.toml).'
)


class ConfigError(ValueError):
    """A configuration file or value is malformed; the message names the file and the field."""


@dataclass
class AgentConfig:
    """Settings of the agent, one docstring per field."""

    model: str | None = None
    """A litellm model name (``provider/model``); None: no chat, everything else works."""
    api_base: str | None = None
    """A custom endpoint for the model (a local server, a proxy)."""
    api_key_env: str | None = None
    """The environment variable holding the API key, when not the provider's usual one."""
    max_rounds: int = 3
    """How many times ladder results go back to the model automatically after one human message."""
    approve: str = "ask"
    """``ask``: each write shows its diff and waits for y/n; ``auto``: writes apply at once."""
    temperature: float | None = None
    """Sampling temperature; None: the provider's default."""
    max_tokens: int = 8192
    """The longest reply, in tokens."""
    context_tokens: int | None = None
    """The model's context window in tokens; None: litellm's model info, or 32,768 when it does not know."""
    timeout_s: float = 120.0
    """Seconds to wait for a reply to start and between streamed pieces."""
    retries: int = 3
    """Retries after a rate limit, a server error, a timeout or a dropped connection (with backoff)."""
    source: str = "defaults"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def configured(self) -> bool:
        return bool(self.model)

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None


_FIELDS = {f.name for f in fields(AgentConfig)} - {"source", "extra"}


def _from_table(table: dict[str, Any], where: str) -> dict[str, Any]:
    if "api_key" in table:
        raise ConfigError(f"{where}: API keys are read from the environment only (name the variable with api_key_env)")
    unknown = set(table) - _FIELDS
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s) {sorted(unknown)}; known: {sorted(_FIELDS)}")
    if table.get("approve", "ask") not in ("ask", "auto"):
        raise ConfigError(f'{where}: approve must be "ask" or "auto", not {table["approve"]!r}')
    return dict(table)


def load_config(workspace_root: Path, model: str | None = None) -> AgentConfig:
    """The agent settings for a workspace (see the module docstring for the precedence).

    Raises:
        ConfigError: a malformed ``ktui.toml`` or ``pyproject.toml`` section, with the file and field named.
    """
    cfg = AgentConfig()
    root = Path(workspace_root)
    for path, keys, where in (
        (root / "pyproject.toml", ("tool", "ktui", "agent"), "[tool.ktui.agent]"),
        (root / "ktui.toml", ("agent",), "[agent]"),
    ):
        if not path.is_file():
            continue
        try:
            table: Any = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: {exc}") from None
        for key in keys:
            table = table.get(key, {}) if isinstance(table, dict) else {}
        if table:
            cfg = replace(cfg, **_from_table(table, f"{path} {where}"), source=str(path))
    if os.environ.get("KTUI_MODEL"):
        cfg = replace(cfg, model=os.environ["KTUI_MODEL"], source="KTUI_MODEL")
    if os.environ.get("KTUI_API_BASE"):
        cfg = replace(cfg, api_base=os.environ["KTUI_API_BASE"])
    if model:
        cfg = replace(cfg, model=model, source="--model")
    if cfg.max_rounds < 0:
        raise ConfigError(f"max_rounds must be 0 or more, not {cfg.max_rounds}")
    return cfg
