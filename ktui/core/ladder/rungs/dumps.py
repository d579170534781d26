"""The ``dumps`` rung: what the compiler made of the launch as timed.

The compiler worker compiles each launch of one call on ``ctx.profile_spec()`` (the first benchmark spec) and keeps
Triton's ttir, ttgir, llir, PTX and cubin (CuTeDSL: PTX, cubin) in ``.ktui/dumps/<problem>/<version>-<sha12>/``;
this process disassembles each cubin (``ktui.core.inspect.sass``: nvdisasm/cuobjdump) and writes the SASS and the
source line map beside it.

Figures: ``dir`` (relative to the workspace), ``spec``, ``arch`` (``device_arch``), ``kernels`` (per launch:
language, kernel, ``num_warps``, ``num_stages``, signature, constexprs, target, ``files`` by stage, ``resources``
(registers, local/shared bytes...), ``mix`` (instruction counts), ``warnings``). A version whose call on that spec
launches no kernel at all fails "times torch, not a kernel" (unless the reference sets ``allow_torch = True``).
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktui.core.inspect import sass
from ktui.core.ladder.context import RunContext, times_torch_message
from ktui.core.results import ErrorInfo, RungResult, Status
from ktui.core.store import atomic_write
from ktui.protocol import DumpsRequest, WaitedLaunch, spec_label, spec_size

if TYPE_CHECKING:
    from ktui.core.workers.pool import WorkerPool


def device_arch(pool: WorkerPool) -> str:
    """``sm_90a`` without a GPU (what ktui compiles for), else the device's ``sm_XY`` (``sm_90a`` on Hopper)."""
    hello = pool.candidate.last_hello or {}
    cap = hello.get("device", {}).get("capability")
    if pool.device != "cuda" or not cap:
        return "sm_90a"
    return f"sm_{cap[0]}{cap[1]}" + ("a" if cap[0] == 9 else "")


def run(ctx: RunContext) -> RungResult:
    """Dump and disassemble every launch of the profiled spec. A missing disassembler is a warning per launch.

    Raises ``WorkerError`` (the runner reports it).
    """
    spec = ctx.profile_spec()
    rel = ctx.state_rel / "dumps" / ctx.kernel.problem / f"{ctx.kernel.version}-{ctx.sha[:12]}"
    folder = ctx.ws.root / rel
    params: DumpsRequest = {
        **ctx.sources(),
        "spec": spec,
        "seed": ctx.seed,
        "dumps_dir": str(folder),
        # on a GPU (where the spec is timed, and inputs are cheap to make) the reference's own inputs: placeholders
        # are fresh zero pages a kernel could tell apart (red team round 7); on the CPU placeholders first
        "real_inputs": ctx.pool.device == "cuda",
        "observed": ctx.observed,
    }
    res = ctx.compiler.dumps(params, timeout_s=ctx.options.timeouts["compile"])
    if not res["launches"] and not params["real_inputs"]:  # placeholders may not launch what real inputs do
        res = ctx.compiler.dumps({**params, "real_inputs": True}, timeout_s=ctx.options.timeouts["compile"])
    if not res["launches"]:
        failed = launched_nothing(ctx)
        if failed is not None:
            return failed
    assert ctx.kernel_snap is not None
    source = ctx.kernel_snap.read_text(errors="replace")
    uses_dot = "tl.dot" in source or "cute.gemm" in source or "mma" in source.lower()
    arch = device_arch(ctx.pool)
    kernels, warnings, parts = [], list(res.get("warnings", [])), []
    for launch in res["launches"]:
        entry: dict[str, Any] = {
            k: launch.get(k)
            for k in ("language", "kernel", "num_warps", "num_stages", "signature", "constexprs", "target")
        }
        entry["files"] = {stage: str(rel / f) for stage, f in launch["files"].items()}
        ttgir = launch["files"].get("ttgir")
        if ttgir and (folder / ttgir).is_file():
            flags = sass.ttgir_flags((folder / ttgir).read_text(errors="replace"), ctx.pool.device != "cuda")
            warnings += [f"{launch.get('kernel')}: {w}" for w in flags]
        cubin = launch["files"].get("cubin")
        if cubin:
            try:
                a = sass.analyze(folder / cubin, uses_dot, source_name=str(ctx.kernel_snap), arch=arch)
            except (sass.ToolMissing, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                warnings.append(f"{launch.get('kernel')}: no SASS ({exc})")
                a = None
            if a is not None:
                base = Path(cubin).with_suffix("")
                (folder / f"{base}.sass").write_text(a["sass"])
                atomic_write(folder / f"{base}.linemap.json", json.dumps(a.get("line_map", {})).encode())
                entry["files"]["sass"] = str(rel / f"{base}.sass")
                entry["files"]["linemap"] = str(rel / f"{base}.linemap.json")
                if launch.get("shared_bytes") is not None:  # Triton's dynamic shared memory
                    a["resources"]["dynamic_shared"] = int(launch["shared_bytes"])
                entry.update(resources=a["resources"], mix=a["mix"], warnings=a["warnings"])
                warnings += [f"{launch.get('kernel')}: {w}" for w in a["warnings"]]
                parts.append(launch_line(launch.get("kernel"), a["resources"], a["mix"]))
        kernels.append(entry)
    summary = "; ".join(parts) or "no kernel compiled"
    warnings += unchecked_kernels(ctx.observed, res["launches"], spec)
    warnings += resident_limits(kernels, res["launches"], arch, ctx.waited_on_later, spec)
    over = launch_limits(kernels, res["launches"], arch)
    if over:
        problem = f"spec={spec_label(spec)}: {over[0]}" + (f" (and {len(over) - 1} more)" if len(over) > 1 else "")
        return RungResult(
            "dumps",
            Status.FAILED,
            summary=problem,
            warnings=warnings + over[1:],
            figures={"dir": str(rel), "spec": spec, "arch": arch, "kernels": kernels},
            error=ErrorInfo("LaunchLimitError", problem),
        )
    return RungResult(
        "dumps",
        Status.OK,
        summary=f"{summary} [{arch}]",
        warnings=warnings,
        figures={"dir": str(rel), "spec": spec, "arch": arch, "kernels": kernels},
    )


def unchecked_kernels(observed: list[Any], launches: list[Any], spec: Any) -> list[str]:
    """A warning per kernel the dumps' spec (the benchmark's) launches that no checked case launched, when the run
    rung ran this ladder (``observed``: its distinct launches): a path taken only past the checked sizes was never
    checked, as a scan's chunked path for more than 8,192 rows under the CPU's capped sizes (red team round 28, #2
    and #4: wrong paths past 8,192 rows and 2**21 elements passed, the dumps rung compiling them unremarked)."""
    if not observed:
        return []
    checked = {o.get("kernel") for o in observed}
    out = []
    for name in dict.fromkeys(launch.get("kernel") for launch in launches):
        if name and name not in checked:
            out.append(
                f"{name} is launched at spec={spec_label(spec)} only: no checked case ran it (a path past the "
                "checked sizes; on the CPU the drawn sizes stay within a budget): check it on a GPU, or add a test "
                "spec that takes it"
            )
    return out


# CUDA's launch limits per compute capability (CUDA C++ Programming Guide, "Technical Specifications per Compute
# Capability"): a grid's x up to 2**31 - 1 blocks, y and z up to 65,535; shared memory per block (opt-in) 227 KiB on
# 9.0, 163 KiB on 8.0 and 8.7, 99 KiB on 8.6 and 8.9 (other archs: the grid only).
GRID_LIMITS = (2**31 - 1, 65_535, 65_535)
SMEM_PER_BLOCK = {"sm_90": 232_448, "sm_80": 166_912, "sm_87": 166_912, "sm_86": 101_376, "sm_89": 101_376}


# What one SM of compute capability 9.0 holds at once (CUDA C++ Programming Guide, "Technical Specifications per
# Compute Capability": 32 resident blocks, 64 resident warps, 64K 32-bit registers, 228 KiB of shared memory of which
# 1 KiB is reserved per block; registers allocated per warp in units of 256, the CUDA Occupancy Calculator's
# granularity), and the SMs of the sm_90 parts ktui targets (H100 SXM and H200: 132).
SMS = {"sm_90": 132}
BLOCKS_PER_SM, WARPS_PER_SM, REGS_PER_SM, REG_UNIT = 32, 64, 65_536, 256
SMEM_PER_SM = {"sm_90": 233_472}
SMEM_RESERVED = 1_024


def shared_bytes(resources: dict[str, Any]) -> int:
    """A compiled kernel's shared memory per block, bytes: its static and dynamic shared memory (``resources`` from
    the SASS: ``shared``, ``dynamic_shared``; 0 where absent)."""
    return int(resources.get("shared", 0)) + int(resources.get("dynamic_shared", 0))


def resident_ctas(entry: dict[str, Any], arch: str) -> tuple[int, int] | None:
    """How many CTAs of the compiled kernel ``entry`` (its ``resources`` from the SASS: registers per thread, static
    and dynamic shared bytes; its ``num_warps``) can be resident at once on one GPU of ``arch``, and per SM: the
    least of the limits ``BLOCKS_PER_SM``, ``WARPS_PER_SM``, ``REGS_PER_SM`` (per warp in units of ``REG_UNIT``) and
    ``SMEM_PER_SM`` (``SMEM_RESERVED`` more per block), times ``SMS``. None for an arch not in the table or a
    kernel without resources (CuTeDSL's, or no SASS)."""
    sms, smem_sm = SMS.get(arch.rstrip("a")), SMEM_PER_SM.get(arch.rstrip("a"))
    r = entry.get("resources")
    if sms is None or smem_sm is None or not r or not r.get("registers"):
        return None
    warps = max(1, int(entry.get("num_warps") or 4))
    per_warp = -(-int(r["registers"]) * 32 // REG_UNIT) * REG_UNIT
    smem = shared_bytes(r)
    per_sm = min(
        BLOCKS_PER_SM,
        WARPS_PER_SM // warps,
        REGS_PER_SM // (per_warp * warps),
        smem_sm // (smem + SMEM_RESERVED) if smem else BLOCKS_PER_SM,
    )
    return sms * per_sm, per_sm


def waited_here(entry: dict[str, Any], waited: list[WaitedLaunch]) -> bool:
    """Whether the compiled launch ``entry`` is one of ``waited``: the same kernel, with the same value of every
    constexpr both name (red team round 33b, #4: a kernel that waits only with FUSED=True was held to the CTAs that
    fit at its FUSED=False launch)."""
    consts = entry.get("constexprs") or {}
    return any(
        w["kernel"] == entry.get("kernel") and all(consts[k] == v for k, v in w["constexprs"].items() if k in consts)
        for w in waited
    )


def resident_limits(
    kernels: list[dict[str, Any]], launches: list[Any], arch: str, waited: list[WaitedLaunch], spec: Any
) -> list[str]:
    """A warning per kernel of ``waited`` (a program of it waited, under the interpreter, for a program that started
    after it began waiting: ``ExecuteReply.waited_on_later``) whose launch in ``launches`` has more CTAs than can be
    resident at once (``resident_ctas``): a grid-wide barrier there waits for ever on a GPU, the resident CTAs
    spinning for CTAs that cannot start (red team round 32b, #4: a one-launch L2 normalization with an arrival
    counter over cdiv(n, 4096) CTAs passed on the CPU). A warning, not a failure: a wait on the previous program by
    program id (a look-back scan) also waits for a program that started later under the interpreter, and on a GPU
    it ends where the CTAs start in id order, as they do in practice though CUDA does not promise it."""
    found: list[str] = []
    said: set[str] = set()
    for entry, launch in zip(kernels, launches, strict=False):
        name = entry.get("kernel") or "kernel"
        grid = launch.get("grid")
        if not waited_here(entry, waited) or name in said or not grid:
            continue
        fit = resident_ctas(entry, arch)
        ctas = math.prod(int(d) for d in grid)
        if fit is None or ctas <= fit[0]:
            continue
        said.add(name)
        r = entry.get("resources") or {}
        smem = shared_bytes(r)
        found.append(
            f"{name} waited, under the interpreter, for a program that started after it began waiting (a grid-wide "
            f"barrier, or a wait on the previous program by id), and its launch at spec={spec_label(spec)} has "
            f"{ctas:,} CTAs where at most {fit[0]:,} can be resident at once on {arch} ({fit[0] // fit[1]} SMs x "
            f"{fit[1]} by its {r.get('registers')} registers, {smem:,} B of shared memory and "
            f"{entry.get('num_warps') or 4} warps): on a GPU a barrier there waits for ever, the resident CTAs "
            "spinning for CTAs that cannot start; cap the grid at the resident count and loop over the tiles (a "
            "persistent kernel), or order the waits by a ticket each program takes as it starts"
        )
    return found


def launch_limits(kernels: list[dict[str, Any]], launches: list[Any], arch: str) -> list[str]:
    """What in ``launches`` (the dumps' compiled launches; ``kernels``, their entries with ``resources`` from the
    SASS) no GPU of ``arch`` (``sm_90a``) can launch: a grid dimension past ``GRID_LIMITS``, or shared memory per
    block (static + dynamic, bytes) past ``SMEM_PER_BLOCK`` for the arch. A kernel over either compiles and runs in
    the interpreter, then fails to launch on the GPU (red team round 11: rows on grid axis 1 at 131,072; tiles
    needing 394,240 B). One message per launch over a limit; an arch not in the table is checked for the grid only.
    """
    found: list[str] = []
    limit = SMEM_PER_BLOCK.get(arch.rstrip("a"))
    for entry, launch in zip(kernels, launches, strict=False):
        name = entry.get("kernel") or "kernel"
        grid = launch.get("grid")
        if grid:
            for axis, (d, most) in enumerate(zip(grid, GRID_LIMITS, strict=False)):
                if d > most:
                    found.append(
                        f"{name} launches a grid of {tuple(grid)}: {d:,} blocks along {'xyz'[axis]}, past CUDA's limit "
                        f"of {most:,} (a launch the GPU refuses; put the large count on x or loop inside the kernel)"
                    )
        r = entry.get("resources") or {}
        smem = shared_bytes(r)
        if limit is not None and smem > limit:
            found.append(
                f"{name} needs {smem:,} B of shared memory per block, past {arch}'s {limit:,} B ({limit // 1024} KiB): "
                "a launch the GPU refuses (out of resources; smaller tiles or fewer stages)"
            )
    return found


def shared_memory_over(launches: list[Any], arch: str) -> list[str]:
    """What in ``launches`` (compiled launches, ``CompiledLaunch``: the run rung's launches of every size and layout
    compiled again for ``arch`` without a GPU) needs more shared memory per block than ``arch`` has
    (``SMEM_PER_BLOCK``): one message per launch, naming its kernel, signature and constexprs. The dumps rung checks
    the first benchmark spec's launches only (``launch_limits``); a launch only a test size or another dtype makes
    (an fp32 GEMM on the bf16 tiles) ran in the interpreter and would not launch on the GPU (red team round 21,
    F2). An arch not in the table: nothing."""
    limit = SMEM_PER_BLOCK.get(arch.rstrip("a"))
    found: list[str] = []
    if limit is None:
        return found
    for launch in launches:
        smem = int(launch.get("shared_bytes") or 0)
        if smem > limit:
            sig = ", ".join(f"{k}: {v}" for k, v in (launch.get("signature") or {}).items())
            consts = ", ".join(f"{k}={v}" for k, v in (launch.get("constexprs") or {}).items())
            found.append(
                f"{launch.get('kernel', 'kernel')}({sig}) with {consts or 'no constexprs'} needs {smem:,} B of "
                f"shared memory per block, past {arch}'s {limit:,} B ({limit // 1024} KiB): it ran in the "
                "interpreter and the GPU refuses to launch it (out of resources; smaller tiles or fewer stages)"
            )
    return found


def launched_nothing(ctx: RunContext) -> RungResult | None:
    """The dumps rung failed for a dry call on the timed spec that launched no Triton or CuTeDSL kernel on the
    reference's own inputs (placeholders first, then real ones: a grid may depend on the values): the
    benchmark would time torch (or Python), not a kernel, at the size it times, even when every test size launches
    one (a version that hands sizes above some threshold to torch). None when the reference allows torch
    (``allow_torch = True``)."""
    desc = ctx.problem_info()
    if desc.get("allow_torch"):
        return None
    if desc["benchmarks"]:
        label = f"{desc['benchmark_labels'][0]}, the first benchmark spec"
    else:
        i = max(range(len(desc["tests"])), key=lambda j: spec_size(desc["tests"][j]))
        label = f"{desc['labels'][i]}, the largest test spec"
    message = times_torch_message(f"custom_kernel launched no Triton or CuTeDSL kernel on spec={label} (the one timed)")
    return RungResult("dumps", Status.FAILED, summary=message, error=ErrorInfo("TimesTorch", message))


def launch_line(kernel: str | None, r: dict[str, Any], m: dict[str, int]) -> str:
    """``name: R regs, L B local, S B smem; HGMMA 4, LDG.128 8, ...``: resources and the notable instruction counts
    (tensor-core ops, global loads and stores, local spills, async copies, TMA), at most five."""
    notable = [
        f"{k} {v}"
        for k, v in m.items()
        if k != "total"
        and v
        and (k in sass.TENSOR or k.startswith(("LDG", "STG")) or k in ("LDL", "STL", "LDGSTS", "UTMALDG"))
    ]
    smem = shared_bytes(r)
    return (
        f"{kernel}: {r.get('registers')} regs, {r.get('local', 0)} B local, "
        f"{smem} B smem; {', '.join(notable[:5]) or 'no memory ops'}"
    )
