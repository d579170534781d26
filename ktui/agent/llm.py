"""The model client: litellm, imported lazily and offline, streaming, with failures mapped to one line each.

litellm fetches its model cost map from the network when imported unless ``LITELLM_LOCAL_MODEL_COST_MAP`` is set
(seen here: 7 s of retries on a machine without internet); ktui sets it before the import. The import itself takes
seconds, so ``preload()`` can run it on a background thread while the screen comes up.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ktui.agent.config import AgentConfig

_LOCK = threading.Lock()
_LITELLM: Any = None


def litellm() -> Any:
    """The litellm module, imported once with its bundled cost map and its chatter switched off."""
    global _LITELLM
    with _LOCK:
        if _LITELLM is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_LOG", "ERROR")
            import litellm as _l

            _l.suppress_debug_info = True
            _l.drop_params = True
            _LITELLM = _l
    return _LITELLM


def preload() -> None:
    """Import litellm now (on a background thread: ``threading.Thread(target=preload).start()``)."""
    litellm()


# The one environment variable litellm reads the key from, per provider prefix of a model name (litellm's
# ``validate_environment`` for these providers; new-user trial 20 L4: importing litellm to ask took 10.5 s).
PROVIDER_KEYS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "xai": "XAI_API_KEY",
}


def missing_key(config: AgentConfig) -> str:
    """Why ``config``'s model cannot be called for want of an API key (litellm's ``validate_environment``, or the
    ``api_key_env`` the settings name), as a line to show before the first message; '' when the key is there, the
    model needs none (a local server) or litellm cannot tell (new-user trial 19: the missing key was said 15-40 s
    after the first message, ``ktui agent`` having started its workers first)."""
    if not config.model:
        return ""
    if config.api_key_env:
        if os.environ.get(config.api_key_env):
            return ""
        return f"the model {config.model} reads its key from {config.api_key_env} (api_key_env), which is not set"
    provider = config.model.split("/", 1)[0] if "/" in config.model else ""
    key = PROVIDER_KEYS.get(provider)
    if key is not None and not config.api_base:  # known without importing litellm (10 s on a loaded machine)
        if os.environ.get(key):
            return ""
        return (
            f"the model {config.model} needs {key} in the environment, which is not set: export it "
            "(or name another variable with api_key_env under [agent] in ktui.toml)"
        )
    try:
        env = litellm().validate_environment(model=config.model, api_base=config.api_base)
    except Exception:  # an unknown provider: the first request says what is wrong
        return ""
    # keys and tokens only: litellm also lists OLLAMA_API_BASE for ollama, which serves on localhost without it
    missing = [str(k) for k in env.get("missing_keys") or [] if "KEY" in str(k) or "TOKEN" in str(k)]
    if env.get("keys_in_environment", True) or not missing:
        return ""
    return (
        f"the model {config.model} needs {', '.join(missing)} in the environment, which is not set: export it "
        "(or name another variable with api_key_env under [agent] in ktui.toml)"
    )


class LLMError(Exception):
    """A request failed. ``retry``: whether trying again can help; ``wait_s``: how long the server asked to wait."""

    def __init__(self, kind: str, message: str, retry: bool, wait_s: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retry = retry
        self.wait_s = wait_s


class Cancelled(Exception):
    """The human stopped the reply (Esc)."""


def classify(exc: BaseException) -> LLMError:
    """Map a litellm/openai/httpx exception to an ``LLMError`` with a one-line message for the chat."""
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    text = str(exc).split("\n")[0]
    for prefix in ("litellm.", "OpenAIException - "):
        text = text.replace(prefix, "")
    if len(text) > 600:
        text = text[:600].rsplit(" ", 1)[0] + " ..."
    wait = None
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        retry_after = headers.get("retry-after")
        if retry_after is not None:
            wait = float(retry_after)
    except (TypeError, ValueError):
        wait = None
    lowered = text.lower()
    if (
        name == "AuthenticationError"
        or status == 401
        or "credentials" in lowered
        or "api key" in lowered
        or "api_key" in lowered
    ):
        return LLMError("auth", f"authentication failed: {text} (set the provider's API key in the environment)", False)
    if name == "RateLimitError" or status == 429:
        return LLMError("rate-limit", f"rate limited (429): {text}", True, wait)
    if name in ("Timeout", "APITimeoutError", "ReadTimeout") or "timed out" in text.lower():
        return LLMError("timeout", f"the model did not answer in time: {text}", True)
    if "connection refused" in lowered or "errno 111" in lowered or "name or service not known" in lowered:
        # never connected: no server at the address (an Ollama not started), not a dropped connection (new-user
        # trial 26, F16); retried, as a server being started answers a moment later
        return LLMError(
            "connection",
            f"cannot connect to the model's server: {text} (is it running, at the address the model's api_base or "
            "the provider's default gives?)",
            True,
        )
    if (
        name in ("APIConnectionError", "MidStreamFallbackError", "RemoteProtocolError")
        or "connection" in text.lower()
        or "stream ended" in text.lower()
    ):
        return LLMError("connection", f"connection dropped: {text}", True)
    if (isinstance(status, int) and status >= 500) or name in (
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
    ):
        return LLMError("server", f"server error ({status or name}): {text}", True, wait)
    if name == "NotFoundError" or status == 404:
        return LLMError("not-found", f"model or endpoint not found: {text}", False)
    if name in ("ContextWindowExceededError",):
        return LLMError("context", f"the conversation is longer than the model's context: {text}", False)
    return LLMError("error", f"{name}: {text}", False)


@dataclass
class Turn:
    """One assistant reply: its text, its tool calls (``id``, ``name``, raw ``arguments``), and its cost."""

    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None

    def message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in self.tool_calls
            ]
        return msg


def context_window(config: AgentConfig) -> int:
    """The model's input window in tokens: the config's, litellm's model info, else 32,768."""
    if config.context_tokens:
        return config.context_tokens
    try:
        info = litellm().get_model_info(config.model)
        return int(info.get("max_input_tokens") or info.get("max_tokens") or 32768)
    except Exception:
        return 32768


def stream_turn(
    config: AgentConfig,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    on_delta: Callable[[str], None],
    cancel: threading.Event,
) -> Turn:
    """One streamed completion. Calls ``on_delta`` with each piece of text as it arrives.

    Raises:
        LLMError: the request failed (see ``classify``); nothing is retried here.
        Cancelled: ``cancel`` was set while the reply streamed.
    """
    lm = litellm()
    kwargs: dict[str, Any] = dict(
        model=config.model,
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
        timeout=config.timeout_s,
        num_retries=0,
        max_retries=0,
        max_tokens=config.max_tokens,
    )
    if tools:
        kwargs["tools"] = tools
    if config.api_base:
        kwargs["api_base"] = config.api_base
    if config.api_key():
        kwargs["api_key"] = config.api_key()
    if config.temperature is not None:
        kwargs["temperature"] = config.temperature
    chunks = []
    try:
        stream = lm.completion(**kwargs)
        for chunk in stream:
            if cancel.is_set():
                close = getattr(stream, "close", None) or getattr(
                    getattr(stream, "completion_stream", None), "close", None
                )
                if close:
                    try:
                        close()
                    except Exception:
                        pass
                raise Cancelled()
            chunks.append(chunk)
            choices = getattr(chunk, "choices", None) or []
            delta = getattr(choices[0], "delta", None) if choices else None
            text = getattr(delta, "content", None) if delta is not None else None
            if text:
                on_delta(text)
    except (Cancelled, LLMError):
        raise
    except Exception as exc:
        raise classify(exc) from exc
    full = lm.stream_chunk_builder(chunks, messages=messages)
    if full is None:
        return Turn()
    msg = full.choices[0].message
    calls = [
        {"id": c.id or f"call_{i}", "name": c.function.name or "", "arguments": c.function.arguments or ""}
        for i, c in enumerate(getattr(msg, "tool_calls", None) or [])
    ]
    usage = getattr(full, "usage", None)
    turn = Turn(
        content=msg.content or "",
        tool_calls=calls,
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )
    try:
        turn.cost_usd = float(lm.completion_cost(completion_response=full))
    except Exception:
        turn.cost_usd = None
    return turn


def backoff_s(attempt: int, error: LLMError) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): the server's retry-after when it gave one (at most
    60 s), else 1, 2, 4... seconds (at most 30)."""
    if error.wait_s is not None:
        return max(0.0, min(error.wait_s, 60.0))
    return min(2.0 ** (attempt - 1), 30.0)


def parse_arguments(raw: str) -> dict[str, Any]:
    """A tool call's JSON arguments. Raises ValueError with a message for the model when they are not a JSON
    object."""
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"the arguments are not valid JSON ({exc.msg} at character {exc.pos}); send a JSON object"
        ) from None
    if not isinstance(value, dict):
        raise ValueError("the arguments must be a JSON object")
    return value


def sleep_unless_cancelled(seconds: float, cancel: threading.Event) -> None:
    """Wait ``seconds``; raise ``Cancelled`` as soon as ``cancel`` is set."""
    if cancel.wait(seconds):
        raise Cancelled()
    time.sleep(0)
