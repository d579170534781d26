"""Files ktui keeps in ``.ktui/``: content-addressed source snapshots, the latest result of each version and the
pinned baseline of each problem.

Writes are atomic (a temporary file in the same folder, then ``os.replace``), so a crash mid-write leaves the old
file or the new one, never half of one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ktui.core.results import LadderResult, is_reference_message
from ktui.core.workspace import Workspace


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace`` (fsync'd before the rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Snapshots:
    """Immutable copies of the sources a run uses: ``.ktui/snapshots/<problem>/<stem>-<sha12>.py``.

    The worker imports the snapshot, not the file being edited, so a save during a run cannot mix two versions, and
    every result names the exact source it came from.
    """

    KEEP = 16  # snapshots whose bytes stay in memory (to take them again): the sources of the last few runs

    def __init__(self, workspace: Workspace):
        self.root = workspace.state_dir / "snapshots"
        self._bytes: dict[Path, bytes] = {}  # the content of each recent snapshot, newest last

    def path_for(self, problem: str, version: str, sha: str) -> Path:
        """Where the snapshot of ``version`` (a kernel version, or the problem's name for its reference) with
        content hash ``sha`` (sha256 hex) lives: the one naming rule of snapshots."""
        return self.root / problem / f"{version}-{sha[:12]}.py"

    def take(self, problem: str, source: Path) -> tuple[Path, str]:
        """Snapshot ``source`` now; returns (snapshot path, sha256 of its content).

        Raises:
            OSError: the file cannot be read (deleted between the save and the run, say).
        """
        data = source.read_bytes()
        digest = sha256(data)
        path = self.path_for(problem, source.stem, digest)
        try:
            intact = sha256(path.read_bytes()) == digest
        except OSError:
            intact = False
        if not intact:  # missing, or changed since it was taken (a kernel wrote to it): write it again
            atomic_write(path, data)
            path.chmod(0o444)
        self._bytes.pop(path, None)
        self._bytes[path] = data
        while len(self._bytes) > self.KEEP:
            del self._bytes[next(iter(self._bytes))]
        return path, digest

    def restore(self, path: Path) -> bool:
        """Write the snapshot at ``path`` again from the bytes ``take`` read, when it is missing or no longer holds
        them (something deleted ``.ktui/snapshots`` during a run, or wrote to it). True when it was written again.

        Raises:
            OSError: it cannot be written (the workspace became read-only, say).
        """
        data = self._bytes.get(path)
        if data is None:
            return False
        try:
            if sha256(path.read_bytes()) == sha256(data):
                return False
        except OSError:
            pass
        atomic_write(path, data)
        path.chmod(0o444)
        return True


JUDGED_KEPT = 8  # judged results kept per version, by content (``ResultStore.judged``)


class ResultStore:
    """The latest ``LadderResult`` of each version: ``.ktui/results/<problem>/<version>.json``; and its last one
    with a verdict on the version (``judged``): ``.ktui/results/<problem>/judged/<version>.json``."""

    def __init__(self, workspace: Workspace):
        self.root = workspace.state_dir / "results"

    def path(self, problem: str, version: str) -> Path:
        return self.root / problem / f"{version}.json"

    def judged_path(self, problem: str, version: str) -> Path:
        return self.root / problem / "judged" / f"{version}.json"

    def judged_by_content_path(self, problem: str, version: str, source_sha256: str, reference_sha256: str) -> Path:
        """Where the version's judged result on exactly this content is kept (``save``; ``JUDGED_KEPT`` per
        version)."""
        return self.root / problem / "judged" / version / f"{source_sha256[:16]}-{reference_sha256[:16]}.json"

    def save(self, result: LadderResult) -> None:
        """Store ``result`` as its version's latest; and as its last judged one when it has a verdict on the
        version (``LadderResult.has_verdict``, and no rung failed for the reference)."""
        data = json.dumps(result.to_json(), indent=1).encode()
        atomic_write(self.path(result.problem, result.version), data)
        failed = result.failed_rung
        blames_reference = (
            failed is not None and failed.error is not None and is_reference_message(failed.error.message)
        )
        if result.has_verdict and not blames_reference:
            atomic_write(self.judged_path(result.problem, result.version), data)
            if result.source_sha256 and result.reference_sha256 and result.carried_from is None:  # its own runs
                keyed = self.judged_by_content_path(
                    result.problem, result.version, result.source_sha256, result.reference_sha256
                )
                atomic_write(keyed, data)
                self._prune(keyed.parent)

    def load(self, problem: str, version: str) -> LadderResult | None:
        """The stored result, or None when there is none or it cannot be read (a file from an older ktui)."""
        return self._read(self.path(problem, version))

    def judged(self, problem: str, version: str, content: tuple[str, str] | None = None) -> LadderResult | None:
        """The version's last stored result with a verdict on it (``save``), or None: what a reference error or a
        compile-only run stored after it does not replace it (new-user trial 23, F8; trial 21, F15: a reference
        restored byte for byte after a typo, the version's verdict on that very content ran again). With
        ``content`` (the sha256 of its source and of the reference), its judged result on exactly that content, of
        the last ``JUDGED_KEPT`` it had: a kernel restored after a typo whose failed compile was judged since takes
        its verdict back (new-user trial 25, F7)."""
        if content is None:
            return self._read(self.judged_path(problem, version))
        return self._read(self.judged_by_content_path(problem, version, *content))

    @staticmethod
    def _prune(folder: Path) -> None:
        """Keep the ``JUDGED_KEPT`` newest files of ``folder``."""
        try:
            files = sorted(folder.glob("*.json"), key=lambda f: f.stat().st_mtime, reverse=True)
        except OSError:
            return
        for old in files[JUDGED_KEPT:]:
            try:
                old.unlink()
            except OSError:
                pass

    @staticmethod
    def _read(path: Path) -> LadderResult | None:
        try:
            d: dict[str, Any] = json.loads(path.read_text())
            return LadderResult.from_json(d)
        except (OSError, ValueError, KeyError, TypeError):
            return None


class LastVersion:
    """The version last worked on in this workspace: ``.ktui/last.json`` ({"key": "problem/version"}), written when
    the TUI selects a version and when ``ktui run`` ends; the TUI starts on it (new-user trial 20 L1: it always
    opened on the first problem, not the one just created or run). A missing or unreadable file means none."""

    def __init__(self, workspace: Workspace):
        self.path = workspace.state_dir / "last.json"

    def get(self) -> str | None:
        try:
            key = json.loads(self.path.read_text()).get("key")
        except (OSError, ValueError, AttributeError):
            return None
        return key if isinstance(key, str) else None

    def set(self, key: str) -> None:
        """Remember ``key`` (``problem/version``); a write that fails is let go (nothing depends on it)."""
        if key == self.get():
            return
        try:
            atomic_write(self.path, json.dumps({"key": key}).encode())
        except OSError:
            pass


class Baselines:
    """The version pinned as each problem's baseline: ``.ktui/baseline.json`` ({problem: version}).

    A missing or unreadable file means no baseline; ``pin`` rewrites the file atomically.
    """

    def __init__(self, workspace: Workspace):
        self.path = workspace.state_dir / "baseline.json"

    def all(self) -> dict[str, str]:
        try:
            return dict(json.loads(self.path.read_text()))
        except (OSError, ValueError):
            return {}

    def get(self, problem: str) -> str | None:
        return self.all().get(problem)

    def pin(self, problem: str, version: str) -> None:
        data = self.all()
        data[problem] = version
        atomic_write(self.path, json.dumps(data, indent=1).encode())
