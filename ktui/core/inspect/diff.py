"""What the compiler made of two versions, compared: resources, instruction mix and the normalized SASS diff.

Pure comparison: it reads the dumps that two ``LadderResult``s point at and never runs anything. The front end
gets those results first (``ktui diff`` from the store or a ``Session(watch=False).result_for(kernel,
rungs=("dumps",))``, the TUI's Diff tab from its states); :func:`has_current_dumps` says whether a stored result will
do. :func:`compare_results` returns a :class:`DiffResult`; :func:`render` makes the terminal text and
``DiffResult.to_json`` the ``ktui diff --json`` object.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from typing_extensions import TypedDict  # pydantic (``ktui mcp``'s outputs) refuses typing's below Python 3.12

from ktui.core.inspect import irlines, sass
from ktui.core.results import LadderResult, Status
from ktui.core.store import sha256
from ktui.core.workspace import KernelRef, Workspace
from ktui.protocol import spec_label

RESOURCES = ("registers", "local", "stack", "shared", "dynamic_shared")


class DiffError(RuntimeError):
    """A version has no dumps to compare; the message says which and what to do."""


class KernelDumpsJson(TypedDict):
    """One compiled kernel of a side.

    Attributes:
        kernel: the kernel's name (``softmax_kernel``).
        language: ``triton`` or ``cutedsl``.
        resources: registers, local, stack, shared, dynamic_shared (bytes, or registers per thread) as
            ``cuobjdump`` reports them.
        mix: instruction counts by family (``HGMMA``, ``LDG.128``, ``LDL``...).
        warnings: the kernel's red flags (spills, scalar loads...).
        files: the dumped stages (``sass``, ``ptx``, ``linemap``...) -> file, relative to the workspace.
    """

    kernel: str | None
    language: str | None
    resources: dict[str, int]
    mix: dict[str, int]
    warnings: list[str]
    files: dict[str, str]


class DiffSideJson(TypedDict):
    """One side (A or B) of a comparison.

    Attributes:
        kernel: the version, ``problem/version``.
        file: its source file, relative to the workspace.
        sha256: the hash of the source the dumps were made from.
        arch: the architecture compiled for (``sm_90a``).
        spec: the spec whose launch the dumps compiled (the first benchmark spec, else the largest test spec), or
            null when the result does not say.
        kernels: every kernel of the timed launch.
        ncu: the profile rung's per-kernel Nsight Compute figures when it passed on this source, else null.
    """

    kernel: str
    file: str
    sha256: str
    arch: str | None
    spec: dict[str, Any] | None
    kernels: list[KernelDumpsJson]
    ncu: list[dict[str, Any]] | None


class ResourceDeltaJson(TypedDict):
    """A resource of A and B: ``resource`` (registers, local, stack, shared, dynamic_shared), of the kernel that
    uses the most of it on each side (``DiffSide.peak``), and ``delta`` = b - a."""

    resource: str
    a: int
    b: int
    delta: int


class MixDeltaJson(TypedDict):
    """An instruction family's count in A and B (``family``: ``LDG.128``, ``HGMMA``...) and ``delta`` = b - a."""

    family: str
    a: int
    b: int
    delta: int


class LinesJson(TypedDict):
    """How many normalized lines of the stage each side has."""

    a: int
    b: int


class DiffJson(TypedDict):
    """Two versions compared (``ktui diff --json``'s data; ``ktui mcp``'s ``diff_versions`` returns the same).

    Attributes:
        a: the first side.
        b: the second side.
        resources: registers, local, stack, shared and dynamic_shared of A and B.
        mix_delta: every instruction family of either side, the changed ones first.
        diff: the unified diff of the normalized text of ``stage`` (``---``/``+++`` headers named by the files).
        lines: how many normalized lines each side has.
        changed: how many lines the diff adds or removes.
        stage: the stage compared: ``sass`` (default), ``ptx``, ``ttgir``, ``ttir`` or ``llir``.
        notes: which autotune config of a kernel compiled in several was compared (``compare_sides``).
    """

    a: DiffSideJson
    b: DiffSideJson
    resources: list[ResourceDeltaJson]
    mix_delta: list[MixDeltaJson]
    diff: list[str]
    lines: LinesJson
    changed: int
    stage: str
    notes: list[str]


@dataclass(frozen=True)
class KernelDumps:
    """One compiled kernel of a version, as its dumps rung recorded it.

    Attributes:
        kernel: the kernel's name (``softmax_kernel``).
        language: ``triton`` or ``cutedsl``.
        resources: registers, local, stack, shared and dynamic_shared, per thread or per block as ``cuobjdump``
            reports them.
        mix: instruction counts by family (``HGMMA``, ``LDG.128``, ``LDL``...).
        warnings: the red flags of this kernel (spills, scalar loads...).
        files: the dumped stages (``sass``, ``ptx``, ``linemap``...), relative to the workspace.
    """

    kernel: str | None
    language: str | None
    resources: dict[str, int] = field(default_factory=dict)
    mix: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    num_warps: int | None = None
    num_stages: int | None = None
    constexprs: dict[str, Any] | None = None  # the launch's constexpr arguments (``{"BLOCK_N": 64}``)

    def config(self) -> str:
        """``BLOCK_N=64, BLOCK_K=64, num_warps=4, num_stages=3``: the compiled configuration (an autotune
        config's), '' when nothing was recorded."""
        parts = [f"{k}={v}" for k, v in self.constexprs.items()] if isinstance(self.constexprs, dict) else []
        parts += [f"{k}={v}" for k, v in (("num_warps", self.num_warps), ("num_stages", self.num_stages)) if v]
        return ", ".join(parts)

    def to_json(self) -> KernelDumpsJson:
        return {
            "kernel": self.kernel,
            "language": self.language,
            "resources": self.resources,
            "mix": self.mix,
            "warnings": self.warnings,
            "files": self.files,
        }


@dataclass(frozen=True)
class DiffSide:
    """One side (A or B) of a comparison.

    Attributes:
        kernel: the version, ``problem/version``.
        file: its source file, relative to the workspace.
        sha256: the hash of the source the dumps were made from.
        arch: the architecture the dumps were compiled for (``sm_90a``).
        kernels: every kernel of the timed launch.
        spec: the spec whose launch the dumps compiled (``dumps`` figure ``spec``), None when not recorded.
        ncu: the profile rung's per-kernel figures when it passed on this result, else None.
        normalized: the normalized SASS lines of all kernels (registers, addresses and encodings removed), or of
            the stage named by ``stage`` (``ktui.core.inspect.irlines.normalized_lines``): what the diff compares;
            not in the JSON.
        stage: the stage compared: ``sass`` (default), ``ptx``, ``ttgir``, ``ttir`` or ``llir``.
    """

    kernel: str
    file: str
    sha256: str
    arch: str | None
    kernels: list[KernelDumps]
    ncu: list[dict[str, Any]] | None = None
    spec: dict[str, Any] | None = None
    normalized: list[str] = field(default_factory=list, repr=False)
    stage: str = "sass"
    kernel_lines: list[list[str]] = field(default_factory=list, repr=False)  # ``normalized``, kernel by kernel

    def peak(self, resource: str) -> int:
        """``resource`` of the kernel that uses the most of it (0 without kernels): each is a kernel's own (registers
        per thread, bytes per block), never a sum (new-user trial 23, F20: two kernels of 48 and 40 registers read
        "registers 88")."""
        return max((k.resources.get(resource, 0) for k in self.kernels), default=0)

    def total_mix(self) -> dict[str, int]:
        """The instruction mix summed over the kernels."""
        out: dict[str, int] = {}
        for k in self.kernels:
            for fam, n in k.mix.items():
                out[fam] = out.get(fam, 0) + n
        return out

    def to_json(self) -> DiffSideJson:
        return {
            "kernel": self.kernel,
            "file": self.file,
            "sha256": self.sha256,
            "arch": self.arch,
            "spec": self.spec,
            "kernels": [k.to_json() for k in self.kernels],
            "ncu": self.ncu,
        }


@dataclass(frozen=True)
class Delta:
    """One row of a before/after table.

    Attributes:
        name: the resource (``registers``) or the instruction family (``LDG.128``).
        a: the figure of A.
        b: the figure of B.
    """

    name: str
    a: int
    b: int

    @property
    def delta(self) -> int:
        """``b - a``."""
        return self.b - self.a


@dataclass(frozen=True)
class DiffResult:
    """Two versions compared.

    Attributes:
        a: the first side.
        b: the second side.
        resources: registers, local, stack, shared and dynamic_shared of A and B (each side's largest kernel's).
        mix_delta: every instruction family of either side, the changed ones first.
        diff: the unified diff of the normalized SASS (``---``/``+++`` headers named by the files).
    """

    a: DiffSide
    b: DiffSide
    resources: list[Delta]
    mix_delta: list[Delta]
    diff: list[str]
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> int:
        """How many normalized SASS lines were added or removed."""
        return sum(1 for ln in self.diff if ln[:1] in "+-" and not ln.startswith(("+++", "---")))

    def to_json(self) -> DiffJson:
        """The ``ktui diff --json`` data (``DiffJson``)."""
        return {
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "resources": [{"resource": r.name, "a": r.a, "b": r.b, "delta": r.delta} for r in self.resources],
            "mix_delta": [{"family": r.name, "a": r.a, "b": r.b, "delta": r.delta} for r in self.mix_delta],
            "diff": self.diff,
            "lines": {"a": len(self.a.normalized), "b": len(self.b.normalized)},
            "changed": self.changed,
            "stage": self.a.stage,
            "notes": self.notes,
        }


def has_current_dumps(ws: Workspace, k: KernelRef, res: LadderResult | None, stage: str = "sass") -> bool:
    """True when ``res`` ran on ``k``'s current source, its dumps rung passed and its files of ``stage`` (SASS by
    default) are still there (then the comparison can use it without running anything)."""
    rung = res.rung("dumps") if res else None
    if res is None or rung is None or rung.status is not Status.OK:
        return False
    if res.source_sha256 != sha256(k.path.read_bytes()):
        return False
    return all(
        (ws.root / kk["files"][stage]).exists()
        for kk in rung.figures.get("kernels", [])
        if stage in kk.get("files", {})
    )


def side(ws: Workspace, k: KernelRef, res: LadderResult, stage: str = "sass") -> DiffSide:
    """One side of a comparison from ``res``'s dumps (reads the files of ``stage``: SASS by default, else one of
    ``ktui.core.inspect.irlines.STAGES``, normalized by ``irlines.normalized_lines``).

    Raises:
        DiffError: ``res`` has no dumps rung that passed, or none of its kernels has ``stage``.
        OSError: a file cannot be read.
    """
    rung = res.rung("dumps")
    if rung is None or rung.status is not Status.OK:
        failed = res.failed_rung
        if failed is not None and failed.name != "dumps":  # it ran, and stopped before the dumps rung
            raise DiffError(
                f"{k.key} has no dumps: its ladder stopped at {failed.name} (FAILED), before the dumps rung; fix it, "
                "or compare with another version (b pins the selected one as the baseline)"
            )
        raise DiffError(f"{k.key} has no dumps yet: run its ladder (the dumps rung writes them)")
    kernels, per_kernel = [], []
    for kk in rung.figures.get("kernels", []):
        files = kk.get("files", {})
        kernels.append(
            KernelDumps(
                kernel=kk.get("kernel"),
                language=kk.get("language"),
                resources=kk.get("resources", {}),
                mix=kk.get("mix", {}),
                warnings=kk.get("warnings", []),
                files=files,
                num_warps=kk.get("num_warps"),
                num_stages=kk.get("num_stages"),
                constexprs=kk.get("constexprs"),
            )
        )
        own: list[str] = []
        if stage == "sass" and files.get("sass"):
            own = sass.normalized_text_lines((ws.root / files["sass"]).read_text())
        elif stage != "sass" and stage in irlines.STAGES and files.get(stage):
            own = [f"== {kk.get('kernel')}", *irlines.normalized_lines(stage, (ws.root / files[stage]).read_text())]
        per_kernel.append(own)
    lines = [ln for own in per_kernel for ln in own]
    if stage != "sass" and (stage not in irlines.STAGES or not any(stage in kk.files for kk in kernels)):
        raise DiffError(f"{k.key} has no {stage} text in its dumps (stages: {', '.join(_stages(kernels)) or 'none'})")
    prof = res.rung("profile")
    return DiffSide(
        kernel=k.key,
        file=str(k.path.relative_to(ws.root)),
        sha256=res.source_sha256,
        arch=rung.figures.get("arch"),
        spec=rung.figures.get("spec") if isinstance(rung.figures.get("spec"), dict) else None,
        kernels=kernels,
        ncu=prof.figures.get("kernels") if prof and prof.status is Status.OK else None,
        normalized=lines,
        stage=stage,
        kernel_lines=per_kernel,
    )


def _stages(kernels: list[KernelDumps]) -> list[str]:
    return [s for s in irlines.STAGES if any(s in kk.files for kk in kernels)]


def one_config(s: DiffSide, other: DiffSide, pick: int | None, name: str) -> tuple[DiffSide, list[str]]:
    """``s`` with one compiled config per kernel name, and a note per name compiled in several (an autotuned
    kernel: the dumps rung compiles each config): the config ``pick`` (an index into that kernel's configs), else
    the one whose ``KernelDumps.config`` equals a config of the same kernel on the ``other`` side, else the first.
    ``ktui diff`` on an autotuned version summed its four configs' instructions against one kernel (new-user trial
    28, F3).

    Raises:
        DiffError: ``pick`` is no index of a kernel's configs (new-user trial 29, F12: it was clipped, silently).
    """
    groups: dict[str | None, list[int]] = {}
    for i, kk in enumerate(s.kernels):
        groups.setdefault(kk.kernel, []).append(i)
    if all(len(ix) == 1 for ix in groups.values()):
        return s, []
    keep: set[int] = set()
    notes = []
    theirs = {kk.config() for kk in other.kernels}
    for kname, ix in groups.items():
        if len(ix) == 1:
            keep.add(ix[0])
            continue
        if pick is not None:
            if not 0 <= pick < len(ix):  # (clipped before: --config 7 of 4 compared the last, silently: trial 29 F12)
                raise DiffError(
                    f"--config {pick}: {name}'s {kname} has {len(ix)} autotune configs compiled, 0 to {len(ix) - 1}"
                )
            chosen = ix[pick]
        else:
            chosen = next((i for i in ix if s.kernels[i].config() and s.kernels[i].config() in theirs), ix[0])
        keep.add(chosen)
        notes.append(
            f"{name} {kname}: {len(ix)} autotune configs compiled; compared config {ix.index(chosen)} "
            f"({s.kernels[chosen].config() or 'not recorded'}); `ktui diff --config N` compares another"
        )
    order = sorted(keep)
    lines = s.kernel_lines if len(s.kernel_lines) == len(s.kernels) else [[] for _ in s.kernels]
    kept = replace(
        s,
        kernels=[s.kernels[i] for i in order],
        kernel_lines=[lines[i] for i in order],
        normalized=[ln for i in order for ln in lines[i]] if s.kernel_lines else s.normalized,
    )
    return kept, notes


def compare_sides(a: DiffSide, b: DiffSide, config: int | None = None) -> DiffResult:
    """Compare two sides already read, one config per autotuned kernel (``one_config``; ``config`` picks it)."""
    a, notes_a = one_config(a, b, config, "A")
    b, notes_b = one_config(b, a, config, "B")
    mix = [Delta(r["family"], r["a"], r["b"]) for r in sass.mix_delta(a.total_mix(), b.total_mix())]
    return DiffResult(
        a=a,
        b=b,
        resources=[Delta(f, a.peak(f), b.peak(f)) for f in RESOURCES],
        mix_delta=mix,
        diff=sass.unified_diff(a.normalized, b.normalized, a.file, b.file),
        notes=notes_a + notes_b,
    )


def compare_results(
    items: list[tuple[Workspace, KernelRef, LadderResult]], stage: str = "sass", config: int | None = None
) -> DiffResult:
    """Compare two versions from their results: ``[(ws, kernel, result) of A, (ws, kernel, result) of B]``, by
    the normalized text of ``stage`` (SASS by default; ``ptx``, ``ttgir``, ``ttir``, ``llir``); of an autotuned
    kernel, the config ``config`` (an index) or the one matching the other side's (``one_config``).

    Raises:
        DiffError: a result has no dumps rung that passed, or no file of ``stage``.
        OSError: a file cannot be read.
    """
    (wa, ka, ra), (wb, kb, rb) = items
    return compare_sides(side(wa, ka, ra, stage), side(wb, kb, rb, stage), config)


def render(result: DiffResult, side_by_side: bool = False, width: int = 60) -> str:
    """The comparison as text for a terminal: both files, the resources table, the instruction-mix table, each
    side's warnings, and the normalized SASS diff (unified, or in two columns)."""
    a, b = result.a, result.b
    out = [f"A: {a.file} ({a.sha256[:12]})  B: {b.file} ({b.sha256[:12]})  [{a.arch}]"]
    # which launch (new-user trial 21 F18: a kernel with fp32 and bf16 launches; and two problems diffed silently)
    specs = [f"{side}: spec={spec_label(x.spec)}" for side, x in (("A", a), ("B", b)) if x.spec]
    if specs:
        same = a.spec == b.spec
        out.append(f"the launch of spec={spec_label(a.spec)} on both" if same and a.spec else "; ".join(specs))
    out += [f"note: {n}" for n in result.notes]
    pa, pb = a.kernel.split("/")[0], b.kernel.split("/")[0]
    if pa != pb:
        out.append(f"note: A and B are versions of two problems ({pa}, {pb}): their kernels compute different ops")
    out.append("")
    many = len(a.kernels) > 1 or len(b.kernels) > 1
    out.append(f"{'resource':<16}{'A':>10}{'B':>10}{'delta':>10}" + ("   (the largest kernel's)" if many else ""))
    for r in result.resources:
        out.append(f"{r.name:<16}{r.a:>10}{r.b:>10}{r.delta:>+10}")
    for s, name in ((a, "A"), (b, "B")):  # several kernels: each one's own
        if many:
            for kk in s.kernels:
                own = ", ".join(f"{f} {kk.resources.get(f, 0)}" for f in RESOURCES if kk.resources.get(f, 0))
                out.append(f"  {name} {kk.kernel}: {own or 'no resources recorded'}")
    out.append("")
    out.append(f"{'instructions':<16}{'A':>10}{'B':>10}{'delta':>10}")
    for r in result.mix_delta:
        out.append(f"{r.name:<16}{r.a:>10}{r.b:>10}{r.delta:>+10}")
    for s, name in ((a, "A"), (b, "B")):
        for kk in s.kernels:
            for w in kk.warnings:
                out.append(f"warning {name} {kk.kernel}: {w}")
    out.append("")
    counts = f"{len(a.normalized)} lines in A, {len(b.normalized)} in B, {result.changed} changed"
    out.append(f"normalized {a.stage.upper()}: {counts}")
    if side_by_side:
        out += sass.side_by_side(result.diff, width)
    else:
        out += result.diff
    return "\n".join(out)
