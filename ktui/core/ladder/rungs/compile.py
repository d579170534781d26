"""The ``compile`` rung: describe the problem, plan the cases, and compile every launch of one dry call.

The judge describes the reference (specs, labels, distributions) and then prepares the reference outputs of every
case in the background, while the compiler worker (the candidate itself on a GPU; a separate worker that compiles
for sm_90a on the CPU) imports the version and calls ``custom_kernel`` once with nothing launched. The source is
also scanned for what a kernel must not do (``ktui.core.inspect.scan``: by name and by data flow). The dry call
runs one spec: the launches that only other sizes or layouts dispatch are compiled after the calls, by the run rung
(``rungs.run.compile_seen``), from the launches the calls made.

Figures: ``languages``, ``launches`` (kernel, signature, constexprs, ``num_warps``, ``num_stages``, ``target``),
``import_s``, ``compile_s`` (seconds), ``autotune_configs``, ``scan`` (kind, line, text). A failure here stops the
ladder. It also leaves ``ctx.uses_dot`` for the correctness rung (the TF32 flag is raised only for kernels with a
dot).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ktui.core.figures import CompileFigures, ScanFinding
from ktui.core.inspect.scan import TORCH_COMPUTE_KINDS, scan_source
from ktui.core.ladder.cases import autotune_cases, first_sweep, make_cases
from ktui.core.ladder.context import RunContext, RungFailed, times_torch_message
from ktui.core.results import ErrorInfo, RungResult, Status
from ktui.core.workers.client import RunCancelled
from ktui.protocol import Case, CompileReply, DescribeRequest, Launch, PrepareReply, PrepareRequest, spec_size

if TYPE_CHECKING:
    pass


def run(ctx: RunContext) -> RungResult:
    """Describe, plan, start the judge's prepare, compile. Raises ``WorkerError`` (the runner reports it)."""
    t = ctx.options.timeouts
    # With fuzzing on, the judge draws this run's fuzzed specs from the run's seed (``--seed`` replays them).
    src = ctx.sources()
    request: DescribeRequest = {"kernel": src["kernel"], "reference": src["reference"]}
    if ctx.options.fuzz:
        request["fuzz_seed"] = ctx.seed
    desc = ctx.judge.describe(request, timeout_s=t["compile"])
    ctx.problem = desc
    cases = ctx.cases = make_cases(desc, ctx.options, ctx.seed)
    # The judge prepares the references while the candidate compiles: the first sweep's first (the run starts as
    # soon as they are in), then the others in chunks, behind which the first verdict's comparison can get ahead.
    assert ctx.background is not None and ctx.kernel_snap is not None
    ctx.prepare, ctx.prepare_rest = prepare_in_chunks(ctx, list(cases))
    findings = scan_source(ctx.kernel_snap.read_text(errors="replace"))
    res = ctx.compiler.compile({**ctx.sources(), "seed": ctx.seed}, timeout_s=t["compile"])
    ctx.uses_dot = uses_dot(res.get("launches", []))
    ctx.compile_s = res.get("compile_s")
    result = compile_result(
        res, [f.message() for f in findings], [{"kind": f.kind, "line": f.line, "text": f.text} for f in findings]
    )
    unlaunched = res.get("unlaunched_right")
    if unlaunched and not desc.get("allow_torch"):
        message = times_torch_message(
            f"on spec={unlaunched} the dry call (every Triton and CuTeDSL launch compiled, none run) already "
            "returned the reference's output, so the launches compute nothing the version returns",
            [f.message() for f in findings if f.kind in TORCH_COMPUTE_KINDS],
        )
        raise RungFailed(ErrorInfo("TimesTorch", message), figures=result.figures, summary=message)
    fed = res.get("fed_answer")
    if fed and not desc.get("allow_torch"):
        message = times_torch_message(
            f"{fed} (the dry call: every Triton launch compiled, none run)",
            [f.message() for f in findings if f.kind in TORCH_COMPUTE_KINDS],
        )
        raise RungFailed(ErrorInfo("TimesTorch", message), figures=result.figures, summary=message)
    configs = int(res.get("autotune_configs") or 0)
    # every autotune config checked alone, each kernel's apart from the others', and the autotuner's own choice
    cases += autotune_cases(desc, configs, ctx.seed)
    return result


PREPARE_CHUNK = 16  # cases per prepare call after the first sweep: how long the first verdict may wait behind one
PREPARE_CHUNK_SIZE = 1 << 22  # and spec elements per call (16 cases of 2**18: softmax's largest test spec is 2**17)


def prepare_in_chunks(ctx: RunContext, cases: list[Case]) -> tuple[Future[PrepareReply], list[Future[PrepareReply]]]:
    """Queue the judge's prepare of ``cases`` on ``ctx.background``: one call for the first sweep
    (``first_sweep``; every case when there is none) and one per ``PREPARE_CHUNK`` of the others, each appending to
    what the judge keeps. Returns the first call's Future and the chunks'."""
    assert ctx.background is not None
    t = ctx.options.timeouts["correctness"]
    on_prepared = ctx.progress("correctness", "reference outputs")
    n = first_sweep(cases) or len(cases)

    def call(part: list[Case], append: bool) -> Callable[[], PrepareReply]:
        request: PrepareRequest = {**ctx.sources(), "cases": part, "append": append}

        def prepare() -> PrepareReply:
            if ctx.pool.stopping:  # cancelled, or ktui stops: the chunks still queued send nothing
                raise RunCancelled("the run was stopped: the references were not prepared")
            return ctx.judge.prepare(request, timeout_s=t, on_progress=on_prepared)

        return prepare

    head = ctx.background.submit(call(cases[:n], False))
    tests = ctx.problem["tests"] if ctx.problem is not None else []
    rest = [ctx.background.submit(call(part, True)) for part in prepare_chunks(cases[n:], tests)]
    return head, rest


def prepare_chunks(cases: list[Case], tests: list[dict[str, Any]]) -> list[list[Case]]:
    """``cases`` (in order) cut into prepare calls of at most ``PREPARE_CHUNK`` cases and at most
    ``PREPARE_CHUNK_SIZE`` spec elements (``protocol.spec_size`` of the case's spec: its own ``spec`` for a fuzzed
    case, else ``tests[spec_index]``); a case larger than that is a call of its own. The first verdict's comparison
    waits for at most the call under way: on the H200, a call of 16 cases that held 2**25-element fuzzed ones kept
    it waiting 8 s (vector_add/v2: first verdict at 9.3 s, measured 2026-12-01)."""
    chunks: list[list[Case]] = []
    part: list[Case] = []
    size = 0
    for c in cases:
        spec = c.get("spec") or (tests[c["spec_index"]] if 0 <= c.get("spec_index", -1) < len(tests) else {})
        n = spec_size(spec)
        if part and (len(part) >= PREPARE_CHUNK or size + n > PREPARE_CHUNK_SIZE):
            chunks.append(part)
            part, size = [], 0
        part.append(c)
        size += n
    if part:
        chunks.append(part)
    return chunks


def uses_dot(launches: Sequence[Launch]) -> bool | None:
    """Whether a launch multiplies matrices (its Triton IR has a ``tt.dot``: the compiler's ``dot`` flag): True when
    one does, False when every launch's IR was read and none does, None when that is not known (no launches: torch
    or CuTeDSL code, whose matmuls ktui does not see here)."""
    if any(rec.get("dot") for rec in launches):
        return True
    if launches and all(rec.get("dot") is False for rec in launches):
        return False
    return None


def compile_result(res: CompileReply, scan_warnings: list[str], scan: list[ScanFinding]) -> RungResult:
    """Fold the compiler's reply into the rung: ``langs: kernel(w=W,s=S), ...`` plus ``[sm_90a]`` when a launch was
    compiled for it and the autotune config count when there are several."""
    configs = int(res.get("autotune_configs") or 0)
    launches = res.get("launches", [])
    names = []
    for rec in launches:
        label = rec.get("kernel", "?")
        if rec.get("num_warps") is not None:
            label += f"(w={rec['num_warps']},s={rec.get('num_stages')})"
        if label not in names:
            names.append(label)
    langs = "+".join(res.get("languages", [])) or "host"
    targets = sorted({rec.get("target", "") for rec in launches})
    summary = f"{langs}: {', '.join(names) or 'no launches'}"
    if any("sm_90a" in x for x in targets):
        summary += " [sm_90a]"
    if configs > 1:
        summary += f" autotune: {configs} configs"
    figures: CompileFigures = {
        "languages": res.get("languages", []),
        "launches": launches,
        "import_s": res.get("import_s"),
        "compile_s": res.get("compile_s"),
        "autotune_configs": configs,
        "scan": scan,
    }
    warnings = scan_warnings + res.get("warnings", [])
    return RungResult("compile", Status.OK, summary=summary, figures=dict(figures), warnings=warnings)
