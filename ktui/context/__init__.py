"""The context directory: chunk reference material by meaning, index it in SQLite FTS5, search it with citations.

- ``chunk.py``: one chunker per kind of file (Python by ``def``/``class``, C++/CUDA headers by top-level declaration,
  Markdown/RST by heading, HTML by heading section (the PTX ISA by instruction), PTX/SASS dumps by kernel).
- ``index.py``: the sources (``context/<name>``, the workspace's references, kernels and dumps, the installed
  ``triton`` and ``cutlass`` packages), the SQLite index (``.ktui/context.sqlite``), incremental updates and search.
- ``cli.py``: ``ktui context add | add-docs | list | remove | reindex | search``.

Part of ktui's own process: nothing here imports Textual, torch or triton (the installed packages are read from disk).
"""
