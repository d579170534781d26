"""``ktui mcp``: ktui as a Model Context Protocol server, so that other agents run its ladder with the same checks.

``server`` holds the tools and resources (on the official ``mcp`` SDK's ``MCPServer``), ``schema`` their typed
outputs, ``cli`` the command. Like the core, nothing here imports Textual, torch or triton: the workers own torch.
"""
