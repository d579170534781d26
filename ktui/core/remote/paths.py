"""Local paths as the remote host sees them, and back: the one rule that lets requests name local files.

Requests name ktui's snapshots, the user's folders for imports (``search_dir``) and where outputs and dumps go
(``out_dir``, ``dumps_dir``), all as local absolute paths. On the remote the workspace is mirrored under the work
folder (``<workdir>/ws/<name>-<hash>``: only the files the workers need, sent by content hash), and candidate outputs
go under a scratch folder of the connection on the remote's ``/dev/shm`` (or its temporary folder). ``PathMap``
rewrites every string of a message by prefix, both ways: requests to the remote, replies, progress lines and the
worker's stderr back (so tracebacks and crash messages name the user's files, and ``ctx.user_paths`` finds its
snapshots in them).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

OUT_PREFIX = "ktui-out-"  # ktui.core.ladder.runner names every run's output folder so (``tempfile.mkdtemp``)


def mirror_name(root: Path) -> str:
    """The mirror folder's name of the local workspace ``root``: its name and 12 hex digits of the sha256 of its
    absolute path (two workspaces of one name never share a mirror)."""
    return f"{root.name or 'ws'}-{hashlib.sha256(str(root).encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class PathMap:
    """Prefix pairs (local, remote), tried in order; each prefix ends with ``/`` unless it is a file-name prefix
    (``/dev/shm/ktui-out-``). Remote prefixes must not be prefixes of one another, nor local ones (the mapping is
    then one-to-one).

    Attributes:
        pairs: (local prefix, remote prefix).
    """

    pairs: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    @classmethod
    def for_workspace(cls, root: Path, workdir: str, scratch: str, local_out_roots: Iterable[str]) -> PathMap:
        """The map of one workspace: ``root`` to its mirror under ``workdir``, and each local output root's
        ``ktui-out-*`` folders (``/dev/shm``, the temporary folder) to ``scratch`` on the remote."""
        mirror = str(PurePosixPath(workdir) / "ws" / mirror_name(root))
        pairs = [(str(root).rstrip("/") + "/", mirror + "/")]
        for i, out in enumerate(dict.fromkeys(local_out_roots)):
            pairs.append((str(Path(out) / OUT_PREFIX), str(PurePosixPath(scratch) / f"{i}-{OUT_PREFIX}")))
        return cls(tuple(pairs))

    def to_remote(self, text: str) -> str:
        """``text`` with every local prefix replaced by its remote one (anywhere in the string; also a path equal to
        a prefix without its trailing ``/``)."""
        return self._swap(text, 0, 1)

    def to_local(self, text: str) -> str:
        """``text`` with every remote prefix replaced by its local one."""
        return self._swap(text, 1, 0)

    def _swap(self, text: str, a: int, b: int) -> str:
        for pair in self.pairs:
            src, dst = pair[a], pair[b]
            if src in text:
                text = text.replace(src, dst)
            bare = src.rstrip("/")
            if bare != src and text == bare:
                text = dst.rstrip("/")
        return text

    def remote_path(self, local: Path) -> str | None:
        """Where the local file ``local`` lives on the remote, None when no prefix covers it."""
        s = str(local)
        for lp, _ in self.pairs:
            if s.startswith(lp) or s + "/" == lp:
                return self.to_remote(s)
        return None

    @property
    def mirror(self) -> str:
        """The workspace's mirror folder on the remote (no trailing ``/``)."""
        return self.pairs[0][1].rstrip("/")

    def message_to_remote(self, msg: Any) -> Any:
        """``msg`` (a decoded JSON value) with ``to_remote`` applied to every string in it."""
        return walk_strings(msg, self.to_remote)

    def line_to_local(self, line: bytes) -> bytes:
        """One protocol line (JSON) with ``to_local`` applied to every string in it; a line that names no remote
        prefix is returned as it is (no decoding), and so is one that is not JSON."""
        if not any(rp.encode() in line for _, rp in self.pairs):
            return line
        try:
            obj = json.loads(line)
        except ValueError:
            return self.text_to_local(line)
        return (json.dumps(walk_strings(obj, self.to_local), separators=(",", ":")) + "\n").encode()

    def text_to_local(self, data: bytes) -> bytes:
        """Raw output (the worker's stderr) with every remote prefix replaced by its local one."""
        for lp, rp in self.pairs:
            data = data.replace(rp.encode(), lp.encode())
        return data


def walk_strings(x: Any, fn: Callable[[str], str]) -> Any:
    """A copy of the JSON value ``x`` with ``fn`` applied to every string value (keys are left as they are)."""
    if isinstance(x, str):
        return fn(x)
    if isinstance(x, dict):
        return {k: walk_strings(v, fn) for k, v in x.items()}
    if isinstance(x, list):
        return [walk_strings(v, fn) for v in x]
    return x


def local_out_roots() -> list[str]:
    """The folders ``ktui.core.ladder.runner`` makes output folders in: ``/dev/shm`` and the temporary folder."""
    import tempfile

    return ["/dev/shm", os.path.realpath(tempfile.gettempdir()), tempfile.gettempdir()]
