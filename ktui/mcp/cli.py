"""``ktui mcp [WORKSPACE] [--http] [--port N]``: serve a workspace over MCP (stdio, or streamable HTTP on 127.0.0.1).

stdout is the MCP stream under stdio: everything for the human (the session's id, warnings) goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ktui.core.envelope import ArgumentParser

DEFAULT_PORT = 8765
"""The streamable HTTP port when ``--port`` is not given (any free one will do; ``/mcp`` is the endpoint)."""


class McpUsageError(Exception):
    """Bad command-line input for ``ktui mcp`` (one line; ``ktui.cli`` exits 2 with it)."""


def parser() -> argparse.ArgumentParser:
    """``ktui mcp``'s arguments."""
    p = ArgumentParser(
        prog="ktui mcp",
        description="Serve a workspace to other agents (Claude Code, Codex, Gemini CLI...) as a Model Context "
        "Protocol server: tools to list problems and verdicts, read and write versions, run the ladder (with "
        "progress and cancel), diff, profile and search the context; the problem format and the checks' rules as "
        "resources. stdio by default; --http serves streamable HTTP on 127.0.0.1 (endpoint /mcp).",
        epilog="exit codes: 0 the client closed the stream, 2 usage, 3 environment",
    )
    p.add_argument("workspace", nargs="?", default=".", help="the workspace (default: this folder)")
    p.add_argument("--http", action="store_true", help="streamable HTTP on 127.0.0.1 instead of stdio")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the HTTP port (default {DEFAULT_PORT})")
    p.add_argument(
        "--device",
        default="auto",
        choices=("auto", "cpu", "cuda"),
        help="where kernels run: cuda when a GPU is usable (auto), or cpu (Triton interpreter)",
    )
    p.add_argument("--seeds", type=int, default=2, help="seeds per test spec for correctness (default 2)")
    p.add_argument(
        "--timeout",
        default=None,
        metavar="SECONDS|RUNG=SECONDS,...",
        help="time limit of each worker call, as `ktui run --timeout` (default: ktui.toml [ladder], else derived)",
    )
    p.add_argument("--no-record", action="store_true", help="do not record this session under sessions/")
    return p


def cli(argv: Sequence[str]) -> int:
    """Run ``ktui mcp`` until the client closes the stream (stdio) or the server is stopped (HTTP).

    Raises:
        McpUsageError: no such workspace, a bad ``--seeds``/``--port``/``--timeout``.
    """
    args = parser().parse_args(list(argv))
    from ktui.core.timeouts import TimeoutConfigError, load_policy, parse_timeout_arg
    from ktui.core.workspace import Workspace, WorkspaceError

    if args.seeds < 1:
        raise McpUsageError("--seeds must be at least 1")
    if not 0 < args.port < 65536:
        raise McpUsageError(f"--port {args.port} is not a TCP port")
    try:
        ws = Workspace(args.workspace)
    except WorkspaceError as exc:
        raise McpUsageError(str(exc)) from None
    try:
        policy = load_policy(ws.root, parse_timeout_arg(args.timeout) if args.timeout is not None else None)
    except TimeoutConfigError as exc:
        raise McpUsageError(str(exc)) from None
    from ktui.mcp.server import McpWorkbench, build_server

    def log(line: str) -> None:
        try:
            print(line, file=sys.stderr, flush=True)
        except OSError:
            pass

    bench = McpWorkbench(
        ws, args.device, seeds=args.seeds, timeouts=policy, record=not args.no_record, argv=list(argv), log=log
    )
    server = build_server(bench)
    bench.start()
    end = "error"
    try:
        if args.http:
            log(f"ktui: MCP over streamable HTTP at http://127.0.0.1:{args.port}/mcp")
            server.run("streamable-http", host="127.0.0.1", port=args.port)
        else:
            server.run("stdio")
        end = "done"
    except KeyboardInterrupt:
        end = "stopped by ctrl+c"
        raise
    except BaseException as exc:
        signum = getattr(exc, "signum", None)
        end = f"stopped by signal {signum}" if signum is not None else f"error: {type(exc).__name__}: {exc}"
        raise
    finally:
        bench.stop(end)
    return 0
