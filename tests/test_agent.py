"""The agent loop against a scripted model server that speaks the real OpenAI protocol (litellm's own code runs):
streamed replies, kernel writes through tools, ladder results back to the model, refused writes, every failure."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ktui.agent.agent import Agent, estimate_tokens, trim
from ktui.agent.config import AgentConfig, ConfigError, load_config
from ktui.agent.events import AgentNotice, ApprovalRequest, ChatDelta, ChatReplyDone, ChatReplyReset, ToolCall
from ktui.core.events import EventBus
from ktui.core.ladder import Ladder, LadderOptions

from .conftest import ROOT
from .scripted_llm import Call, Drop, Fail, Hang, Reply, ScriptedLLM

V2 = (ROOT / "kernels/vector_add/v2.py").read_text()


class Recorder:
    def __init__(self, bus: EventBus):
        self.events = []
        bus.subscribe(self.events.append)

    def of(self, kind):
        return [e for e in self.events if isinstance(e, kind)]


def make_agent(ws, llm: ScriptedLLM, run_ladder=None, **cfg) -> tuple[Agent, Recorder]:
    os.environ.setdefault("OPENAI_API_KEY", "scripted")
    config = AgentConfig(
        model="openai/scripted",
        api_base=llm.api_base,
        approve=cfg.pop("approve", "auto"),
        timeout_s=cfg.pop("timeout_s", 10.0),
        context_tokens=32768,
        **cfg,
    )
    bus = EventBus()
    rec = Recorder(bus)
    agent = Agent(ws, config, bus, run_ladder=run_ladder or (lambda k: pytest.fail("no ladder expected")))
    return agent, rec


def test_a_streamed_reply_arrives_in_pieces_with_its_usage(make_ws):
    ws = make_ws(["vector_add"])
    text = "A plain vector add is memory-bound: aim for ~4 TB/s on an H200."
    with ScriptedLLM([Reply(text, prompt_tokens=1234, completion_tokens=56)]) as llm:
        agent, rec = make_agent(ws, llm)
        agent.send("how fast can this go?", "vector_add")
    deltas = rec.of(ChatDelta)
    assert len(deltas) > 5 and "".join(d.text for d in deltas) == text
    done = rec.of(ChatReplyDone)[0]
    assert (done.prompt_tokens, done.completion_tokens, done.session_tokens) == (1234, 56, 1290)
    assert done.cost_usd is None  # litellm has no price for a scripted model: shown as n/a, never invented
    sent = llm.requests[0]
    assert sent["stream"] is True
    assert sent["messages"][0]["role"] == "system"
    assert "def ref_kernel" in sent["messages"][0]["content"]  # the problem's reference source
    assert sent["messages"][-1] == {"role": "user", "content": "how fast can this go?"}
    assert {t["function"]["name"] for t in sent["tools"]} == {
        "list_files",
        "read_file",
        "search_context",
        "write_kernel",
        "read_dump",
        "run_ladder",
    }


def test_a_tool_call_writes_a_kernel_and_its_ladder_results_reach_the_model(make_ws, cpu_pool):
    ws = make_ws(["vector_add"])
    ladder = Ladder(ws, cpu_pool, options=LadderOptions(seeds=1))
    script = [
        Reply(
            "Writing v4 with wider blocks.", tool_calls=[Call("write_kernel", {"problem": "vector_add", "source": V2})]
        ),
        Reply("Written; waiting for the ladder."),
        Reply("All rungs ok; stopping here."),
    ]
    with ScriptedLLM(script) as llm:
        agent, rec = make_agent(ws, llm, run_ladder=ladder.run)
        agent.send("make it faster", "vector_add")
    ladder.close()
    assert (ws.root / "kernels/vector_add/v4.py").read_text() == V2
    assert len(llm.requests) == 3
    tool_msg = llm.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["content"].startswith("wrote kernels/vector_add/v4.py")
    results = llm.requests[2]["messages"][-1]
    assert results["role"] == "user"
    assert results["content"].startswith("Ladder results for vector_add/v4")
    assert "[correctness] ok  worst=" in results["content"] and "cpu (interpreter)" in results["content"]
    assert "(automatic round 1 of 3)" in results["content"]
    assert "[dumps] ok  add_kernel:" in results["content"]
    assert [e.state for e in rec.of(ToolCall) if e.name == "write_kernel"] == ["running", "done"]


def test_writes_outside_the_workspace_are_refused(make_ws, tmp_path):
    ws = make_ws(["vector_add"])
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws.root / "references/evil.py").write_text((ROOT / "references/vector_add.py").read_text())
    (ws.root / "kernels/evil").symlink_to(outside, target_is_directory=True)
    script = [
        Reply(
            tool_calls=[
                Call("write_kernel", {"problem": "../../etc", "source": V2}),
                Call("write_kernel", {"problem": "evil", "source": V2}),
                Call("write_kernel", {"problem": "vector_add", "version": "../x", "source": V2}),
                Call("read_file", {"path": "../outside/secret"}),
                Call("read_file", {"path": "kernels/evil/anything.py"}),
            ]
        ),
        Reply("Understood."),
    ]
    with ScriptedLLM(script) as llm:
        agent, rec = make_agent(ws, llm)
        agent.send("write it", "vector_add")
    tool_results = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_results[0].startswith("error: refused: '../../etc' is not a problem name")
    assert tool_results[1].startswith("error: refused: kernels/evil leads outside the workspace")
    assert tool_results[2].startswith("error: refused: '../x' is not a version name")
    assert "outside the workspace" in tool_results[3] and "outside the workspace" in tool_results[4]
    assert list(outside.iterdir()) == []
    assert all(e.state == "error" for e in rec.of(ToolCall) if e.state != "running")


@pytest.mark.parametrize(
    "failure, line",
    [
        (Fail(429, headers={"retry-after": "0"}), "rate limited (429)"),
        (Fail(503), "server error (503"),
        (Drop(), "connection dropped"),
        (Hang(3.0), "did not answer in time"),
    ],
)
def test_transient_failures_say_so_and_are_retried(make_ws, failure, line):
    ws = make_ws(["vector_add"])
    with ScriptedLLM([failure, Reply("recovered")]) as llm:
        agent, rec = make_agent(ws, llm, timeout_s=1.0)
        agent.send("hello", "vector_add")
    notices = [n.text for n in rec.of(AgentNotice)]
    assert any(line in n and "retrying in" in n and "attempt 2 of 4" in n for n in notices), notices
    assert rec.of(ChatReplyDone)[-1].text == "recovered"
    assert len(llm.requests) == 2 and llm.requests[1]["messages"][-1]["content"] == "hello"
    if isinstance(failure, Drop):
        assert rec.of(ChatReplyReset)  # the broken partial reply is withdrawn from the screen


def test_a_failure_that_retrying_cannot_fix_keeps_the_message(make_ws):
    ws = make_ws(["vector_add"])
    with ScriptedLLM([Fail(401, "invalid api key"), Reply("second try works")]) as llm:
        agent, rec = make_agent(ws, llm)
        agent.send("first", "vector_add")
        assert len(llm.requests) == 1
        errors = [n.text for n in rec.of(AgentNotice) if n.level == "error"]
        assert errors and errors[0].startswith("authentication failed")
        agent.send("again", "vector_add")
    assert [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "user"][-2:] == ["first", "again"]


def test_malformed_arguments_and_unknown_tools_go_back_to_the_model(make_ws):
    ws = make_ws(["vector_add"])
    script = [
        Reply(
            tool_calls=[Call("write_kernel", raw='{"problem": "vector_add", "source": "x'), Call("launch_missiles", {})]
        ),
        Reply("Sorry."),
    ]
    with ScriptedLLM(script) as llm:
        agent, rec = make_agent(ws, llm)
        agent.send("go", "vector_add")
    results = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert results[0].startswith("error: the arguments are not valid JSON")
    assert results[1].startswith("error: unknown tool 'launch_missiles'; the tools are: list_files")
    assert not list((ws.root / "kernels/vector_add").glob("v4.py"))


def test_in_ask_mode_a_write_waits_for_the_human(make_ws):
    ws = make_ws(["vector_add"])
    script = [
        Reply(tool_calls=[Call("write_kernel", {"problem": "vector_add", "source": V2})]),
        Reply(tool_calls=[Call("write_kernel", {"problem": "vector_add", "source": V2 + "\n# two\n"})]),
        Reply("ok"),
    ]
    with ScriptedLLM(script) as llm:
        agent, rec = make_agent(ws, llm, approve="ask", max_rounds=0)
        answers = iter([False, True])
        agent.bus.subscribe(
            lambda e: agent.decide(e.request_id, next(answers)) if isinstance(e, ApprovalRequest) else None
        )
        agent.send("two tries", "vector_add")
    requests = rec.of(ApprovalRequest)
    assert len(requests) == 2 and requests[0].path == "kernels/vector_add/v4.py" and requests[0].new_file
    # a new version is diffed against the one it derives from: none read, no result, so the latest (v3)
    assert requests[0].diff.startswith("--- a/kernels/vector_add/v3.py\n+++ b/kernels/vector_add/v4.py")
    assert requests[0].base == "kernels/vector_add/v3.py"
    refused = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"][-1]
    assert refused.startswith("the human refused this write")
    assert (ws.root / "kernels/vector_add/v4.py").read_text().endswith("# two\n")


def test_stop_ends_a_streaming_reply(make_ws):
    ws = make_ws(["vector_add"])
    with ScriptedLLM([Reply("x" * 400, chunk=1, delay_s=0.01)]) as llm:
        agent, rec = make_agent(ws, llm)
        t = threading.Thread(target=agent.send, args=("long answer please", "vector_add"))
        t.start()
        while not rec.of(ChatDelta):
            threading.Event().wait(0.01)
        agent.stop()
        t.join(10)
    assert not t.is_alive()
    assert any(n.text == "stopped" for n in rec.of(AgentNotice))
    assert len("".join(d.text for d in rec.of(ChatDelta))) < 400


def test_trimming_keeps_the_system_prompt_and_the_latest_results():
    system = {"role": "system", "content": "S" * 1000}
    history = []
    for i in range(50):
        history.append({"role": "user", "content": f"message {i} " + "x" * 2000})
        history.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
                ],
            }
        )
        history.append({"role": "tool", "tool_call_id": f"c{i}", "content": "y" * 500})
    history.append({"role": "user", "content": "Ladder results for softmax/v9: ..."})
    out = trim(system, history, budget=5000)
    assert out[0] is system
    assert out[-1]["content"].startswith("Ladder results for softmax/v9")
    assert estimate_tokens(out) <= 5000 + 100
    assert "earlier message groups were dropped" in out[1]["content"]
    tool_ids = {m["tool_call_id"] for m in out if m["role"] == "tool"}
    call_ids = {c["id"] for m in out if m.get("tool_calls") for c in m["tool_calls"]}
    assert tool_ids <= call_ids  # no tool result without its call


def test_config_precedence_and_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("KTUI_MODEL", raising=False)
    (tmp_path / "pyproject.toml").write_text('[tool.ktui.agent]\nmodel = "openai/a"\nmax_rounds = 5\n')
    assert load_config(tmp_path).model == "openai/a" and load_config(tmp_path).max_rounds == 5
    (tmp_path / "ktui.toml").write_text('[agent]\nmodel = "anthropic/b"\n')
    assert load_config(tmp_path).model == "anthropic/b"
    monkeypatch.setenv("KTUI_MODEL", "ollama/c")
    assert load_config(tmp_path).model == "ollama/c"
    assert load_config(tmp_path, model="openai/d").model == "openai/d"
    (tmp_path / "ktui.toml").write_text('[agent]\napi_key = "sk-123"\n')
    with pytest.raises(ConfigError, match="environment only"):
        load_config(tmp_path)
    (tmp_path / "ktui.toml").write_text('[agent]\nmodle = "x"\n')
    with pytest.raises(ConfigError, match="unknown setting"):
        load_config(tmp_path)


def test_ktui_agent_headless_prints_the_transcript(make_ws):
    ws = make_ws(["vector_add"])
    script = [
        Reply("I will write v4.", tool_calls=[Call("write_kernel", {"problem": "vector_add", "source": V2})]),
        Reply("Done."),
        Reply("The ladder passed."),
    ]
    exe = str(Path(sys.executable).with_name("ktui"))
    with ScriptedLLM(script) as llm:
        env = {**os.environ, "OPENAI_API_KEY": "scripted", "KTUI_API_BASE": llm.api_base, "KTUI_FORCE_CPU": "1"}
        env.pop("KTUI_MODEL", None)
        p = subprocess.run(
            [
                exe,
                "agent",
                "vector_add",
                "-m",
                "make it faster",
                "--model",
                "openai/scripted",
                "--yes",
                "--max-rounds",
                "1",
                "--workspace",
                str(ws.root),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert out.startswith("> make it faster\nassistant: I will write v4.\n")
    assert (
        "[write_kernel(kernels/vector_add/v4.py)] done: wrote kernels/vector_add/v4.py" in out
        or "[write_kernel(vector_add/v4)] done: wrote kernels/vector_add/v4.py" in out
    )
    assert "  | Ladder results for vector_add/v4" in out and "  | [correctness] ok" in out
    assert "assistant: The ladder passed." in out
    assert "session" in out and "tokens" in out


def test_ktui_agent_without_a_model_exits_2_with_the_hint(make_ws):
    ws = make_ws(["vector_add"])
    exe = str(Path(sys.executable).with_name("ktui"))
    env = {k: v for k, v in os.environ.items() if k != "KTUI_MODEL"}
    p = subprocess.run(
        [exe, "agent", "vector_add", "-m", "hi", "--workspace", str(ws.root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 2 and "No model configured: pass --model or set KTUI_MODEL" in p.stderr


def test_read_dump_shows_what_the_compiler_made(make_ws, cpu_pool):
    from ktui.core.store import ResultStore

    ws = make_ws(["vector_add"])
    ladder = Ladder(ws, cpu_pool, options=LadderOptions(rungs=("dumps",)), store=ResultStore(ws))
    ladder.run(ws.kernel(ws.root / "kernels/vector_add/v2.py"))
    ladder.close()
    script = [
        Reply(
            tool_calls=[
                Call("read_dump", {"problem": "vector_add", "version": "v2"}),
                Call("read_dump", {"problem": "vector_add", "version": "v2", "stage": "ptx"}),
                Call("read_dump", {"problem": "vector_add", "version": "v1"}),
            ]
        ),
        Reply("I see 128-bit loads."),
    ]
    with ScriptedLLM(script) as llm:
        agent, rec = make_agent(ws, llm)
        agent.send("what did the compiler make of v2?", "vector_add")
    out = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert out[0].startswith("dumps of vector_add/v2 for sm_90a") and "'LDG.128'" in out[0]
    assert "// add_kernel (ptx)" in out[1] and ".target sm_90a" in out[1]
    assert out[2].startswith("error: vector_add/v1 has no dumps yet")


def test_missing_credentials_are_an_authentication_failure_not_a_server_error():
    from ktui.agent.llm import classify

    class InternalServerError(Exception):
        status_code = 500

    err = classify(
        InternalServerError(
            "litellm.InternalServerError: OpenAIException - Missing credentials. Please pass an `api_key`"
        )
    )
    assert err.kind == "auth" and not err.retry
    long = classify(Exception("x " * 500))
    assert str(long).endswith(" ...") and len(str(long)) < 700


def test_the_model_asks_for_a_trace_and_reads_its_summary(make_ws, tmp_path):
    """run_ladder with rungs=["trace"] runs only that rung (with what it needs); the model reads the regions, the
    critical path and the timeline (ktui.core.inside); a bad rung name is the tool's error, nothing runs."""
    from ktui.core.ladder.rungs import trace as trace_rung
    from ktui.core.results import LadderResult, RungResult, Status

    from .test_trace_figures import buffer, two_region_marks
    from .test_trace_rung import write_run

    out = tmp_path / "t"
    out.mkdir()
    (out / "0-k.ktrace").write_bytes(buffer(two_region_marks()))
    doc = write_run(
        out,
        [
            {
                "kernel": "matmul_kernel",
                "language": "triton",
                "regions": ["mainloop", "epilogue"],
                "file": "0-k.ktrace",
                "buffer_bytes": 1 << 20,
                "launches": 1,
            }
        ],
    )
    traced = trace_rung.fold(doc, out, Path("t"), {"m": 4096}, None)
    asked = []

    def run_ladder(k, rungs=None):
        asked.append((k.key, rungs))
        compiled = RungResult("compile", Status.OK, summary="triton: matmul_kernel")
        return LadderResult(
            k.problem,
            k.version,
            f"kernels/{k.problem}/{k.version}.py",
            {"type": "cuda"},
            rungs=[compiled, traced],
            source_sha256="a" * 64,
        )

    ws = make_ws(["matmul"])
    script = [
        Reply(
            tool_calls=[
                Call("run_ladder", {"problem": "matmul", "version": "v2", "rungs": ["trace"]}),
                Call("run_ladder", {"problem": "matmul", "version": "v2", "rungs": ["speed"]}),
            ]
        ),
        Reply("The main loop is 80% of each warp's time."),
    ]
    with ScriptedLLM(script) as llm:
        agent, rec = make_agent(ws, llm, run_ladder=run_ladder)
        agent.send("where does the time go?", "matmul")
    assert asked == [("matmul/v2", ("compile", "trace"))]
    first, second = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert "[trace] ok  matmul_kernel: mainloop 80%" in first
    assert "critical path: SM 0, 2 CTA(s) back to back" in first and "timeline by SM" in first
    assert second.startswith("error: unknown rung(s) speed")
    schema = next(t for t in llm.requests[0]["tools"] if t["function"]["name"] == "run_ladder")
    assert "trace" in schema["function"]["parameters"]["properties"]["rungs"]["items"]["enum"]


def test_a_missing_api_key_is_said_before_any_request(make_ws, monkeypatch):
    """New-user trial 19: the missing key was said 15-40 s after the first message (``ktui agent`` started its
    workers first); a local server's model (no key) is not refused."""
    from ktui.agent.llm import missing_key

    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MY_KEY"):
        monkeypatch.delenv(var, raising=False)
    said = missing_key(AgentConfig(model="anthropic/claude-sonnet-4-5"))
    assert "needs ANTHROPIC_API_KEY in the environment, which is not set" in said
    assert missing_key(AgentConfig(model="ollama/qwen2.5-coder")) == ""  # (litellm lists OLLAMA_API_BASE)
    assert "reads its key from MY_KEY (api_key_env)" in missing_key(AgentConfig(model="openai/x", api_key_env="MY_KEY"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert missing_key(AgentConfig(model="anthropic/claude-sonnet-4-5")) == ""
    ws = make_ws(["vector_add"])
    env = {k: v for k, v in os.environ.items() if k not in ("KTUI_MODEL", "OPENAI_API_KEY")}
    exe = str(Path(sys.executable).with_name("ktui"))
    p = subprocess.run(
        [exe, "agent", "vector_add", "-m", "hi", "--model", "openai/gpt-4.1", "--workspace", str(ws.root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 2 and "needs OPENAI_API_KEY in the environment" in p.stderr, p.stderr
    assert not (ws.root / "sessions").exists() or not any((ws.root / "sessions").iterdir())  # nothing started


def test_the_key_of_a_common_provider_is_checked_without_importing_litellm_and_as_litellm_says(monkeypatch):
    """New-user trial 20 L4: ``ktui agent`` took 10.5 s (litellm's import) to say the key was missing; the providers
    whose key litellm reads from one variable are answered from ``PROVIDER_KEYS``, the same as litellm answers."""
    from ktui.agent import llm

    models = {
        "anthropic": "anthropic/claude-sonnet-4-5",
        "openai": "openai/gpt-4o",
        "deepseek": "deepseek/deepseek-chat",
        "groq": "groq/llama3-8b-8192",
        "mistral": "mistral/mistral-large-latest",
        "xai": "xai/grok-2",
    }
    assert set(models) == set(llm.PROVIDER_KEYS)
    for var in llm.PROVIDER_KEYS.values():
        monkeypatch.delenv(var, raising=False)
    with monkeypatch.context() as mp:
        mp.setattr(llm, "litellm", lambda: (_ for _ in ()).throw(AssertionError("litellm imported")))
        said = {p: llm.missing_key(AgentConfig(model=m)) for p, m in models.items()}
    for provider, model in models.items():
        key = llm.PROVIDER_KEYS[provider]
        assert f"needs {key} in the environment" in said[provider], said[provider]
        assert llm.litellm().validate_environment(model=model)["missing_keys"] == [key]  # litellm agrees


def test_no_server_at_the_address_says_cannot_connect_not_dropped():
    """New-user trial 26, F16: ``--model ollama/...`` with no server read "connection dropped: ... Connection
    refused", though it never connected."""
    from ktui.agent.llm import classify

    class APIConnectionError(Exception):
        pass

    err = classify(APIConnectionError("OllamaException - [Errno 111] Connection refused"))
    assert err.kind == "connection" and err.retry, err
    assert str(err).startswith("cannot connect to the model's server: "), str(err)
    assert "is it running" in str(err) and "dropped" not in str(err)
    dropped = classify(APIConnectionError("peer closed connection without sending complete message body"))
    assert str(dropped).startswith("connection dropped: "), str(dropped)
