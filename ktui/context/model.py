"""What every chunker returns: ``Chunk`` (a piece of a file with its line range) and ``Symbol`` (a name it defines),
and ``ChunkError`` for a file its chunker cannot parse. Shared by ``chunk.py`` and the C++ chunkers (``cpp.py``,
``cpp_scan.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_CHUNK_LINES = 160  # a window of a long definition: long enough for a function, short enough to read as a hit


class ChunkError(Exception):
    """The file could not be parsed by its chunker; the message is one line (the index reports it)."""


@dataclass
class Symbol:
    """A name a chunk defines: ``name`` as written (``local_tile``, ``TiledCopy.retile``, ``cp.async.bulk``),
    ``key`` the lower-case lookup key (the last component for methods and qualified C++ names), ``kind`` one of
    function, class, method, struct, alias, variable, macro, instruction, kernel, heading."""

    name: str
    key: str
    kind: str


@dataclass
class Chunk:
    """One piece of a file.

    Attributes:
        start, end: 1-based inclusive line range in the file.
        kind: code, docs, ptx or dumps (what ``--kind`` filters on).
        symbol: the main name the chunk defines, or "" (module code, a window).
        sym_kind: the symbol's kind (see ``Symbol``), or "".
        anchor: a document's section fragment id (HTML, Markdown, RST) or ``cell-N`` (notebooks), else "".
        head: the signature line or heading (weighted above the body in ranking).
        text: the chunk's text. When ``mapped`` its lines are the file's lines ``start..end``; HTML and notebook
            chunks hold extracted text (``mapped`` False) and are cited by ``start`` and ``anchor``.
        symbols: every name the chunk defines (the symbol table's rows).
    """

    start: int
    end: int
    kind: str
    text: str
    symbol: str = ""
    sym_kind: str = ""
    anchor: str = ""
    head: str = ""
    mapped: bool = True
    symbols: list[Symbol] = field(default_factory=list)


def lines_text(lines: list[str], start: int, end: int) -> str:
    """Lines ``start..end`` (1-based, inclusive) of ``lines`` joined."""
    return "\n".join(lines[start - 1 : end])
