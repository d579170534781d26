"""The workspace: a folder with ``references/<problem>.py`` and ``kernels/<problem>/<version>.py``.

Nothing here imports torch: the workspace is read by ktui's own process, the worker imports the modules.
"""

from __future__ import annotations

import ast
import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

REFERENCES = "references"
KERNELS = "kernels"
STATE = ".ktui"

_VERSION_RE = re.compile(r"^v(\d+)$")


class WorkspaceError(Exception):
    """A path is not part of a ktui workspace, or a problem or version does not exist. The message is one line."""


@dataclass(frozen=True, order=True)
class KernelRef:
    """One candidate version: ``kernels/<problem>/<version>.py`` inside ``root``."""

    problem: str
    version: str
    root: Path

    @property
    def path(self) -> Path:
        return self.root / KERNELS / self.problem / f"{self.version}.py"

    @property
    def key(self) -> str:
        """``problem/version``: the name used on screen, in events and in stored results."""
        return f"{self.problem}/{self.version}"


def version_sort_key(name: str) -> tuple[int, int, str]:
    """Sort ``v2`` before ``v10``; names that are not ``vN`` come after, alphabetically."""
    m = _VERSION_RE.match(name)
    return (0, int(m.group(1)), "") if m else (1, 0, name)


class Workspace:
    """A ktui workspace rooted at ``root``.

    Raises:
        WorkspaceError: ``root`` has no ``references/`` or no ``kernels/`` folder.
    """

    def __init__(self, root: Path | str):
        root = Path(root).resolve()
        missing = [d for d in (REFERENCES, KERNELS) if not (root / d).is_dir()]
        if missing:
            raise WorkspaceError(
                f"{root} is not a ktui workspace: it has no {' and no '.join(d + '/' for d in missing)} folder"
            )
        self.root = root

    # -- discovery ---------------------------------------------------------------------------------------------
    @classmethod
    def find(cls, start: Path | str) -> Workspace:
        """The nearest folder at or above ``start`` that holds both ``references/`` and ``kernels/``.

        Raises:
            WorkspaceError: no such folder above ``start``.
        """
        p = Path(start).resolve()
        for d in [p, *p.parents] if p.is_dir() else list(p.parents):
            if (d / REFERENCES).is_dir() and (d / KERNELS).is_dir():
                return cls(d)
        raise WorkspaceError(f"no ktui workspace (a folder with references/ and kernels/) above {start}")

    @classmethod
    def at(cls, arg: str) -> Workspace:
        """The workspace a command's workspace argument names: the folder itself, or for the default ``.`` the
        nearest workspace at or above the current folder, as ``ktui run`` finds it (new-user trial 25, F4: ``ktui
        status`` from ``kernels/<problem>/`` said "not a ktui workspace").

        Raises:
            WorkspaceError: the folder is not a workspace (for ``.``: none at or above it).
        """
        if arg == ".":
            try:
                return cls.find(".")
            except WorkspaceError:
                pass
        return cls(arg)

    @property
    def state_dir(self) -> Path:
        """``.ktui/`` inside the workspace: snapshots, logs and cached results (git-ignored)."""
        return self.root / STATE

    def problems(self) -> list[str]:
        """Problem names: every ``references/<name>.py`` (files starting with ``_`` are helpers, not problems)."""
        return sorted(p.stem for p in (self.root / REFERENCES).glob("*.py") if not p.name.startswith("_"))

    def reference_path(self, problem: str) -> Path:
        return self.root / REFERENCES / f"{problem}.py"

    def versions(self, problem: str) -> list[KernelRef]:
        """The problem's versions in order (``v1``, ``v2``, ..., ``v10``), or [] when it has no kernel folder. A
        ``.py`` file there that is a helper (``is_helper``) is no version."""
        d = self.root / KERNELS / problem
        if not d.is_dir():
            return []
        names = [p.stem for p in d.glob("*.py") if not is_helper(p)]
        return [KernelRef(problem, n, self.root) for n in sorted(names, key=version_sort_key)]

    def helpers_of(self, kernel: KernelRef) -> dict[str, str]:
        """The helper modules of ``kernel``'s folder it imports, directly or through another helper, by module
        name, each with the sha256 of its source ('' when it cannot be read): what its verdict depends on besides
        its own file and the reference (new-user trial 25, F2: a helper broken after the run left ``✓ ok``, not
        stale). Read from the source with ``ast`` (no code runs); {} when it imports none or does not parse. A
        folder of versions alone is answered from its listing, no source parsed: staleness asks this of every
        version on every file event."""
        folder = kernel.path.parent
        helpers = {p.stem: p for p in folder.glob("*.py") if p != kernel.path and is_helper(p)}
        seen: dict[str, str] = {}
        todo = [kernel.path] if helpers else []
        while todo:
            names = _imported_modules(todo.pop())
            for name in sorted(names):
                path = helpers.get(name)
                if name in seen or path is None:
                    continue
                try:
                    seen[name] = hashlib.sha256(path.read_bytes()).hexdigest()
                except OSError:
                    seen[name] = ""
                todo.append(path)
        return dict(sorted(seen.items()))

    def all_versions(self) -> list[KernelRef]:
        return [k for p in self.problems() for k in self.versions(p)]

    def kernel(self, path: Path | str) -> KernelRef:
        """The version a kernel file belongs to.

        Raises:
            WorkspaceError: the file is not ``kernels/<problem>/<version>.py`` here, or its problem has no reference.
        """
        p = Path(path).resolve()
        try:
            rel = p.relative_to(self.root / KERNELS)
        except ValueError:
            raise WorkspaceError(f"{path} is not under {self.root / KERNELS}") from None
        if len(rel.parts) != 2 or p.suffix != ".py":
            raise WorkspaceError(f"{path} is not a kernel file: expected kernels/<problem>/<version>.py")
        problem = rel.parts[0]
        if not self.reference_path(problem).is_file():
            known = ", ".join(self.problems()) or "none"
            raise WorkspaceError(
                f"unknown problem {problem!r}: there is no references/{problem}.py (problems: {known})"
            )
        return KernelRef(problem, p.stem, self.root)

    def classify(self, path: Path | str) -> tuple[str, str | None] | None:
        """What a changed file means: ``(problem, version)`` for a kernel or a helper module of a kernel folder
        (``is_helper`` tells them apart: a helper's save runs the versions that import it), ``(problem, None)`` for a
        reference, ``None`` for anything else (not a ``.py`` file, ``references/_*.py``, outside the workspace)."""
        p = Path(path)
        if p.suffix != ".py":
            return None
        try:
            rel = p.resolve().relative_to(self.root)
        except ValueError:
            return None
        parts = rel.parts
        if len(parts) == 2 and parts[0] == REFERENCES and not p.name.startswith("_"):
            return (p.stem, None)
        if len(parts) == 3 and parts[0] == KERNELS:
            return (parts[1], p.stem)
        return None

    # -- changes -------------------------------------------------------------------------------------------------
    def next_version_name(self, problem: str) -> str:
        """The first free ``vN`` after the highest existing one."""
        nums = [int(m.group(1)) for k in self.versions(problem) if (m := _VERSION_RE.match(k.version))]
        return f"v{max(nums, default=0) + 1}"

    def new_version(self, source: KernelRef) -> KernelRef:
        """Copy ``source`` to the next free ``vN.py`` of its problem and return the new version."""
        target = KernelRef(source.problem, self.next_version_name(source.problem), self.root)
        tmp = target.path.with_suffix(".py.tmp")
        shutil.copyfile(source.path, tmp)
        tmp.replace(target.path)
        return target


def is_helper(path: Path) -> bool:
    """Whether ``kernels/<problem>/<name>.py`` is a helper module the versions import, not a version: its name
    starts with ``_``, or it is not named like a version (``v3``, ``v3_tiled``) and its source never mentions
    ``custom_kernel`` (new-user trial 25, F3: a ``common.py`` of tile heuristics was listed, counted among the
    failed versions and run on every save). An unreadable file counts as a version (its run says why)."""
    if path.name.startswith("_"):
        return True
    if re.match(r"^v\d", path.stem):
        return False
    try:
        return "custom_kernel" not in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _imported_modules(path: Path) -> set[str]:
    """The top-level module names ``path``'s source imports (``import a.b`` and ``from a import b`` give ``a``;
    a relative ``from . import b`` gives ``b``); empty when it cannot be read or parsed."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.module:
                names.add(node.module.split(".")[0])
            elif node.level:
                names.update(a.name for a in node.names)
    return names


def _listed(names: list[str], cap: int = 12) -> str:
    return ", ".join(names[:cap]) + (f" and {len(names) - cap} more" if len(names) > cap else "") if names else "none"


def resolve_kernel(spec: str, cwd: Path | str = ".") -> tuple[Workspace, KernelRef]:
    """The version ``spec`` names, as every command that takes a kernel accepts it: a kernel file (any path to
    ``kernels/<problem>/<version>.py``) or a ``problem/version`` name (``softmax/v2``, also ``softmax/v2.py``) of
    the workspace at or above ``cwd``. A file wins over a name.

    Raises:
        WorkspaceError: a folder; a problem's name without a version (naming its versions); neither a file nor a
            version: ``no such kernel file: X (...)``, naming the versions of its problem (or every version) in the
            workspace it would be in, when there is one.
    """
    p = Path(spec)
    if p.is_dir():
        raise WorkspaceError(f"{spec} is a folder: name a version file, e.g. {p / 'v1.py'}, or problem/version")
    if p.is_file():
        ws = Workspace.find(p)
        return ws, ws.kernel(p)
    named = len(p.parts) == 2 and p.suffix in ("", ".py") and not p.is_absolute()
    bare = len(p.parts) == 1 and not p.suffix  # perhaps a problem's name, without its version
    try:  # a name is looked up from the current folder; a path, from where it points
        ws = Workspace.find(Path(cwd) if named or bare else Path(cwd) / p)
    except WorkspaceError:
        raise WorkspaceError(f"no such kernel file: {spec}") from None
    if bare and p.name in ws.problems():
        versions = [k.version for k in ws.versions(p.name)]
        example = f"e.g. {p.name}/{versions[-1]} " if versions else ""
        raise WorkspaceError(
            f"{spec} is a problem: name one of its versions, {example}({p.name} has {_listed(versions)})"
        )
    problem, version = (p.parts[-2], p.stem) if len(p.parts) >= 2 else ("", "")
    if problem in ws.problems():
        versions = [k.version for k in ws.versions(problem)]
        if named and version in versions:
            return ws, KernelRef(problem, version, ws.root)
        have = f"{problem} has {_listed(versions)}"
    else:
        have = f"versions in {ws.root}: {_listed([k.key for k in ws.all_versions()])}"
    raise WorkspaceError(
        f"no such kernel file: {spec} (nor a version: {have}; give kernels/<problem>/<version>.py or problem/version)"
    )
