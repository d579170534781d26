"""ktui's own process: the workspace, the rung ladder, results, events, the scheduler and the watcher.

Nothing here imports torch, triton, Textual or litellm (``pyproject.toml`` [tool.importlinter]); the code that runs
inside the worker processes is ``ktui.worker``, and the two sides speak ``ktui.protocol``.
"""
