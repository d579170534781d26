"""A scripted model server for tests: a real HTTP server on 127.0.0.1 that speaks OpenAI's chat-completions protocol
(JSON and SSE streaming, tool calls, usage), answers from a script, and records every request it receives. litellm
talks to it through its ``openai/`` provider, so litellm's own request, streaming and error code runs in the tests.

A script is a list of steps, one per request:

    Reply("text")                                  streamed in small chunks
    Reply("text", tool_calls=[Call("name", {...})])  text then tool calls (arguments streamed in pieces)
    Reply(tool_calls=[Call("name", raw='{"bad')])    malformed arguments
    Fail(429, headers={"retry-after": "0"})          an HTTP error status
    Drop()                                         the connection closes mid-stream
    Hang(seconds)                                  no answer for a while (a timeout)
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Call:
    name: str
    args: dict[str, Any] | None = None
    raw: str | None = None  # send these exact argument bytes instead of json.dumps(args)


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[Call] = field(default_factory=list)
    prompt_tokens: int = 100
    completion_tokens: int = 20
    chunk: int = 4  # characters per streamed content chunk
    delay_s: float = 0.0  # between chunks


@dataclass
class Fail:
    status: int
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Drop:
    after_text: str = "partial "


@dataclass
class Hang:
    seconds: float


class ScriptedLLM:
    """``with ScriptedLLM([...]) as llm:`` then point a model at ``llm.api_base`` (model ``openai/scripted``)."""

    def __init__(self, script: list[Any]):
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def api_base(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedLLM:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with owner._lock:
                    owner.requests.append(body)
                    step = owner.script.pop(0) if owner.script else Reply("(script exhausted)")
                owner._answer(self, body, step)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    # -- answers -------------------------------------------------------------------------------------------------
    def _answer(self, h: BaseHTTPRequestHandler, body: dict[str, Any], step: Any) -> None:
        if isinstance(step, Hang):
            time.sleep(step.seconds)
            step = Fail(504, "hung")
        if isinstance(step, Fail):
            payload = json.dumps({"error": {"message": step.message, "type": "scripted", "code": step.status}})
            h.send_response(step.status)
            for k, v in step.headers.items():
                h.send_header(k, v)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload.encode())
            return
        stream = bool(body.get("stream"))
        model = body.get("model", "scripted")
        if not stream:
            self._answer_json(h, model, step)
            return
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("cache-control", "no-cache")
        h.send_header("connection", "close")
        h.end_headers()

        def send(obj: dict[str, Any]) -> None:
            h.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
            h.wfile.flush()

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": "chatcmpl-scripted",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        if isinstance(step, Drop):
            send(chunk({"role": "assistant", "content": step.after_text}))
            h.wfile.flush()
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            h.close_connection = True
            return
        send(chunk({"role": "assistant", "content": ""}))
        for i in range(0, len(step.text), step.chunk):
            send(chunk({"content": step.text[i : i + step.chunk]}))
            if step.delay_s:
                time.sleep(step.delay_s)
        for n, call in enumerate(step.tool_calls):
            args = call.raw if call.raw is not None else json.dumps(call.args or {})
            send(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": n,
                                "id": f"call_{len(self.requests)}_{n}",
                                "type": "function",
                                "function": {"name": call.name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
            for i in range(0, len(args), 16):
                send(chunk({"tool_calls": [{"index": n, "function": {"arguments": args[i : i + 16]}}]}))
        send(chunk({}, "tool_calls" if step.tool_calls else "stop"))
        send(
            {
                "id": "chatcmpl-scripted",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": {
                    "prompt_tokens": step.prompt_tokens,
                    "completion_tokens": step.completion_tokens,
                    "total_tokens": step.prompt_tokens + step.completion_tokens,
                },
            }
        )
        h.wfile.write(b"data: [DONE]\n\n")
        h.wfile.flush()
        h.close_connection = True

    @staticmethod
    def _answer_json(h: BaseHTTPRequestHandler, model: str, step: Any) -> None:
        msg: dict[str, Any] = {"role": "assistant", "content": getattr(step, "text", "")}
        calls = getattr(step, "tool_calls", [])
        if calls:
            msg["tool_calls"] = [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.raw or json.dumps(c.args or {})},
                }
                for i, c in enumerate(calls)
            ]
        payload = json.dumps(
            {
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )
        h.send_response(200)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload.encode())
