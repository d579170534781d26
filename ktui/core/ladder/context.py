"""What one ladder run carries from rung to rung: the ``RunContext``, the options, and how a rung fails.

Every rung module (``ktui.core.ladder.rungs``) takes a ``RunContext`` and imports this module, never the runner: the
context holds the workspace, the worker pool, the options, the snapshots of the two sources, and what earlier rungs
left for later ones (the problem's description, the cases, the executed outputs, the judge's background prepare).
Nothing here imports torch.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ktui.core.events import EventBus, FirstVerdict, RungProgress
from ktui.core.ladder.judge_queue import JudgeQueue
from ktui.core.results import DEFAULT_RUNGS, ErrorInfo, RungResult, Status
from ktui.core.timeouts import default_limits
from ktui.core.workers.facades import CandidateClient, JudgeClient
from ktui.core.workspace import KernelRef, Workspace
from ktui.protocol import (
    Case,
    CompareReply,
    DescribeRequest,
    ExecutedCase,
    ExecuteReply,
    ObservedLaunch,
    OnProgress,
    PrepareReply,
    Progress,
    Sources,
    WaitedLaunch,
    spec_size,
)

if TYPE_CHECKING:
    from ktui.core.store import ResultStore
    from ktui.core.workers.pool import WorkerPool
    from ktui.protocol import ProblemInfo  # the judge's ``describe`` reply: tests, labels, benchmarks...

BENCH_SEED = 20261129  # benchmark inputs are fixed so that reference timings can be reused across runs

PROGRESS_INTERVAL_S = 0.1  # at most ~10 RungProgress events a second per rung: a screen cannot show more


@dataclass
class LadderOptions:
    """How a ladder runs. Time limits are per rung, in seconds; ``seed`` None draws fresh seeds for every run."""

    seeds: int = 2
    seed: int | None = None
    rungs: tuple[str, ...] = DEFAULT_RUNGS
    distributions: bool = True  # one extra case per spec for each input distribution the problem allows
    layouts: bool = True  # transposed / padded / offset / expanded inputs on the largest specs (unless contiguous_only)
    repeat: bool = True  # the first case of each spec runs twice on identical inputs (nondeterminism)
    fuzz: bool = True  # a few specs drawn per run around and beyond the tests (``ktui.worker.fuzz``)
    near_duplicates: bool = True  # inputs of an earlier case with a few interior elements swapped (memos)
    baselines: bool = False  # the benchmark also times torch eager and torch.compile of the reference (ktui eval)
    # ktui eval: a failed correctness ends the ladder (a wrong version's timing ranks nothing; on the H200 the
    # benchmark of an import-table version that had failed took 65-122 s of its 80-140 s)
    stop_when_wrong: bool = False
    # seconds per worker call, by limit key (``ktui.core.timeouts``); unset, a Session derives them for each run
    timeouts: dict[str, float] = field(default_factory=default_limits)
    ncu_args: tuple[str, ...] = ()  # ``--ncu-args``: more ncu arguments for the profile rung (after ktui.toml's)
    tracer: str | None = None  # ``--tracer``: the trace rung's tracer (None: ktui.toml [trace] tracer, else ktui)


# The rungs whose verdicts rest on the candidate's worker: it ran them (run, benchmark) or wrote the bytes they judge
# (correctness). When that worker is found tampered with, every one of them fails (``fail_tampered``).
TAMPER_RUNGS = ("run", "correctness", "benchmark")
TAMPERED = "WorkerTampered"  # the error type of a rung failed for it


def patched_names(reply: ExecuteReply) -> list[str]:
    """What the version patched in its worker, from the candidate's ``execute`` reply: the check after the last call
    (``tampered``) and the check of ktui's own code after each case (``ExecutedCase.tampered``), sorted, each once."""
    names = set(reply.get("tampered", []))
    for case in reply["cases"]:
        names.update(case.get("tampered", []))
    return sorted(names)


def tamper_message(patched: Sequence[str]) -> str:
    """Why a rung of ``TAMPER_RUNGS`` fails: the worker that served it was tampered with, naming (up to 8 of) the
    functions patched."""
    names = ", ".join(patched[:8]) + (f" and {len(patched) - 8} more" if len(patched) > 8 else "")
    return (
        f"the candidate's worker was tampered with: this version patched {names} in its worker, so nothing that "
        "process ran or reported can be trusted (every rung it served fails; the worker is replaced before the "
        "next version runs)"
    )


def fail_tampered(rr: RungResult, patched: Sequence[str]) -> RungResult:
    """``rr`` (a rung of ``TAMPER_RUNGS``) failed because its worker was found tampered with (``patched`` non-empty):
    status ``FAILED``, error ``WorkerTampered`` with ``tamper_message``, followed by the rung's own result (its own
    failure, or what it found: a correctness rung keeps the judge's verdict); figures, warnings and seconds kept."""
    if rr.status is Status.FAILED:
        own = f"; on its own {rr.name} failed too: {rr.error.one_line() if rr.error else rr.summary}"
    elif rr.status is Status.OK and rr.name == "correctness":
        own = f"; the judge found every output within tolerance ({rr.summary})" if rr.summary else ""
    elif rr.summary:
        own = f"; {rr.summary}" if rr.status is Status.SKIPPED else f"; its own result: {rr.summary}"
    else:
        own = ""
    message = f"{tamper_message(patched)}{own}"
    return RungResult(
        rr.name,
        Status.FAILED,
        seconds=rr.seconds,
        summary=message,
        figures=rr.figures,
        error=ErrorInfo(TAMPERED, message),
        warnings=rr.warnings,
    )


# The rungs after ``run`` that call the version (or read its calls' outputs): skipped with run's reason when the
# version needs a GPU this machine lacks (``RunContext.needs_gpu``); dumps only compiles, so it still runs.
NEEDS_GPU_RUNGS = frozenset({"correctness", "benchmark", "profile", "trace"})
NEEDS_GPU = "needs a GPU"  # how a skipped rung's summary begins (``report.verdict`` reads it off the run rung)


def times_torch_message(what: str, torch_found: Sequence[str] = ()) -> str:
    """``times torch, not a kernel: <what> (torch: <the first three of torch_found>); a reference whose versions may
    compute in torch sets allow_torch = True``: the one wording of the rule (cases.md hidden-torch) for the rungs
    that apply it (compile's dry call, correctness's launches per spec, dumps' timed spec)."""
    return (
        f"times torch, not a kernel: {what}"
        + (f" (torch: {'; '.join(torch_found[:3])})" if torch_found else "")
        + "; a reference whose versions may compute in torch sets allow_torch = True"
    )


def needs_gpu_skipped(name: str, reason: str) -> RungResult:
    """Rung ``name`` skipped because the version needs a GPU: summary ``needs a GPU: <reason>``, figures
    ``{"reason": "needs a GPU"}`` (``figures.SkippedFigures``)."""
    return RungResult(name, Status.SKIPPED, summary=f"{NEEDS_GPU}: {reason}", figures={"reason": NEEDS_GPU})


def untimed_benchmark() -> RungResult:
    """The benchmark rung of a version whose worker was already found tampered with: not run (a patched worker's
    times mean nothing); ``fail_tampered`` fails it."""
    return RungResult("benchmark", Status.SKIPPED, summary="not timed: the times of a tampered worker mean nothing")


class RungFailed(Exception):
    """Raised by a rung to fail itself with ``info`` (and the ``figures`` and ``summary`` it has so far); the
    runner turns it into a ``FAILED`` ``RungResult``."""

    def __init__(self, info: ErrorInfo, figures: dict[str, Any] | None = None, summary: str = ""):
        super().__init__(info.message)
        self.info = info
        self.figures = figures or {}
        self.summary = summary


class ProgressThrottle:
    """Rate limit for one rung's progress: ``allow(done, total)`` is True at most once per ``interval_s`` seconds,
    and always for the last item (``done >= total``); ``offer`` publishes at once when allowed, and otherwise the
    latest one offered at the end of the interval (a trailing edge: the case that starts right after a burst of
    short ones, and then runs for minutes, is shown, not the one before it). Thread-safe: the judge's prepare reports
    from a background thread."""

    def __init__(self, interval_s: float = PROGRESS_INTERVAL_S, clock: Callable[[], float] = time.monotonic):
        self.interval_s = interval_s
        self._clock = clock
        self._last = -float("inf")
        self._lock = threading.Lock()
        self._pending: Callable[[], None] | None = None
        self._timer: threading.Timer | None = None

    def allow(self, done: int, total: int) -> bool:
        now = self._clock()
        with self._lock:
            if done < total and now - self._last < self.interval_s:
                return False
            self._last = now
            return True

    def offer(self, done: int, total: int, publish: Callable[[], None]) -> None:
        """``publish()`` now when ``allow`` says so (dropping any held one), else hold it as the latest and publish
        it once the interval is over, unless a newer one went out first."""
        go = self.allow(done, total)
        with self._lock:
            if go:
                self._pending = None
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
            else:
                self._pending = publish
                if self._timer is None:
                    wait = max(self.interval_s - (self._clock() - self._last), 0.0)
                    self._timer = threading.Timer(wait, self._flush)
                    self._timer.daemon = True
                    self._timer.start()
        if go:
            publish()

    def _flush(self) -> None:
        with self._lock:
            publish, self._pending, self._timer = self._pending, None, None
            if publish is not None:
                self._last = self._clock()
        if publish is not None:
            publish()


@dataclass
class RunContext:
    """One ladder run of one version.

        Set by the runner before the first rung: ``ws``, ``pool``, ``options``, ``bus``, ``store`` (None: no results
        are read), ``background`` (the judge's queue of background calls, ``JudgeQueue``), ``kernel``, ``run_id``,
        ``seed`` (the first correctness seed), the snapshots and their sha256 (``kernel_snap``/``sha``,
        ``ref_snap``/``ref_sha``) and ``out_dir`` (where candidate outputs travel to the judge).

        Left by the rungs for later ones: ``problem`` (the judge's description, by compile), ``cases`` (the case plan,
        by compile), ``prepare`` and ``prepare_rest`` (the judge's reference outputs of the first sweep and of the other
    cases in chunks, started by compile; run awaits the first, correctness all),
        ``executed`` (the executed cases and their output files, by run), ``tampered`` (what the candidate patched in
        its worker, by run and benchmark: the runner fails every rung of ``TAMPER_RUNGS`` when it is not empty),
        ``uses_dot`` (whether a compiled launch multiplies matrices, by compile), ``first_verdict`` (by run: the judge's
        verdict on the first sweep, ``FirstVerdict``), ``needs_gpu`` (by run: why the
        version's calls need a GPU this machine lacks, a CuTeDSL kernel on the CPU; the runner skips the rungs that
        call it, ``NEEDS_GPU_RUNGS``).
    """

    ws: Workspace
    pool: WorkerPool
    options: LadderOptions
    bus: EventBus
    kernel: KernelRef
    run_id: int
    seed: int
    store: ResultStore | None = None
    background: JudgeQueue | None = None
    kernel_snap: Path | None = None
    ref_snap: Path | None = None
    sha: str = ""
    ref_sha: str = ""
    out_dir: Path | None = None
    problem: ProblemInfo | None = None
    cases: list[Case] | None = None
    executed: list[ExecutedCase] | None = None
    prepare: Future[PrepareReply] | None = None  # the first sweep's references (all cases' without one)
    prepare_rest: list[Future[PrepareReply]] = field(default_factory=list)  # the other cases', in chunks
    tampered: list[str] = field(default_factory=list)
    # by run: every distinct launch the calls made, as the compiler can rebuild it (``dispatched_by``: a spec label)
    observed: list[ObservedLaunch] = field(default_factory=list)
    # kernels a program of which waited for a program that started after it began waiting (the run's, under the
    # interpreter: ``ExecuteReply.waited_on_later``); the dumps rung holds their grids to the resident CTAs
    waited_on_later: list[WaitedLaunch] = field(default_factory=list)
    failed_rungs: list[str] = field(default_factory=list)  # the rungs of this run that failed so far, in order
    uses_dot: bool | None = None  # a compiled launch has a tl.dot (compile; None: not known)
    compile_s: float | None = None  # compile: the seconds its dry call took to compile (None: not known)
    needs_gpu: str = ""  # run: the calls need a GPU this machine lacks (the worker's message); '' when not
    # run: the judge's verdict on the first sweep (``first`` cases), started as soon as they ran; correctness folds it
    first_verdict: Future[FirstVerdict] | None = None
    # run: the judge's comparisons made while the cases ran: (index of the first, the entries judged, the reply)
    streamed: list[tuple[int, list[ExecutedCase], Future[CompareReply]]] = field(default_factory=list)
    t0: float = field(default_factory=time.perf_counter)  # when the run began (``time.perf_counter``)
    _throttles: dict[str, ProgressThrottle] = field(default_factory=dict, repr=False)

    # -- the workers, as typed facades ------------------------------------------------------------------------
    # Made at each use: the pool replaces its candidate-side workers after every ladder.
    @property
    def judge(self) -> JudgeClient:
        """The judge worker (references and verdicts only)."""
        return JudgeClient(self.pool.judge)

    @property
    def candidate(self) -> CandidateClient:
        """The worker that runs this version."""
        return CandidateClient(self.pool.candidate)

    @property
    def compiler(self) -> CandidateClient:
        """The worker that compiles this version for the target (the candidate itself on a GPU; sm_90a without)."""
        return CandidateClient(self.pool.compiler)

    # -- requests ----------------------------------------------------------------------------------------------
    def sources(self) -> Sources:
        """The part of every request that names the two sources: snapshot paths, their sha256 and the user's
        folders for imports. A request is ``{**ctx.sources(), "cases": ...}``, typed by the method it goes to."""
        k = self.kernel
        return {
            "kernel": {
                "name": str(k.path.relative_to(self.ws.root)),
                "path": str(self.kernel_snap),
                "sha": self.sha,
                "search_dir": str(k.path.parent),
            },
            "reference": {
                "problem": k.problem,
                "path": str(self.ref_snap),
                "sha": self.ref_sha,
                "search_dir": str(self.ws.reference_path(k.problem).parent),
            },
        }

    def problem_info(self) -> ProblemInfo:
        """The problem's description: compile's, or the judge's ``describe`` now (default time limit, 60 s)."""
        if self.problem is None:
            src = self.sources()
            request: DescribeRequest = {"kernel": src["kernel"], "reference": src["reference"]}
            self.problem = self.judge.describe(request, timeout_s=self.options.timeouts["compile"])
        return self.problem

    def profile_spec(self) -> dict[str, Any]:
        """The spec whose launch is dumped and profiled: the first benchmark spec (the one timed; its sizes decide
        Triton's specialization), else the largest test spec."""
        desc = self.problem_info()
        if desc["benchmarks"]:
            return desc["benchmarks"][0]
        return max(desc["tests"], key=spec_size)

    # -- the user's view ---------------------------------------------------------------------------------------
    @property
    def state_rel(self) -> Path:
        """The workspace's state folder (``.ktui``), relative to its root: figures name files relative to it."""
        return self.ws.state_dir.relative_to(self.ws.root)

    def user_paths(self, info: ErrorInfo) -> ErrorInfo:
        """``info`` with the user's paths instead of ktui's snapshot paths, in the message and the traceback."""
        return ErrorInfo(info.type, self.user_paths_text(info.message), self.user_paths_text(info.traceback))

    def user_paths_text(self, text: str) -> str:
        """``text`` with each snapshot path replaced by the source's path relative to the workspace (and a bare
        snapshot file name by the source's file name: SyntaxError messages name the file alone)."""
        if not text:
            return text
        for snap, real in (
            (self.kernel_snap, self.kernel.path),
            (self.ref_snap, self.ws.reference_path(self.kernel.problem)),
        ):
            if snap:
                text = text.replace(str(snap), str(real.relative_to(self.ws.root)))
                text = text.replace(snap.name, real.name)
        return text

    # -- progress ----------------------------------------------------------------------------------------------
    def progress(self, rung: str, detail: str = "", limit_s: float = 0.0) -> OnProgress:
        """An ``on_progress`` for a worker call made for ``rung``: publishes ``RungProgress`` on the bus (with the
        case the worker starts, when it names one), at most every ``PROGRESS_INTERVAL_S`` per rung, the latest held
        back published at the interval's end (``ProgressThrottle.offer``), and always the last (``done == total``);
        ``limit_s``: that call's limit without progress where it is not the rung's (the run rung's launch compiles:
        new-user trial 22 F4 read "limit 30 s" while the 120 s of the compiles ran)."""
        throttle = self._throttles.setdefault(rung, ProgressThrottle())
        key, run_id, bus = self.kernel.key, self.run_id, self.bus

        def on_progress(p: Progress) -> None:
            done, total = int(p.get("done", 0)), int(p.get("total", 0))
            case = str(p.get("case") or "")  # the case that starts now; none once a step finished
            ev = RungProgress(
                key=key, run_id=run_id, rung=rung, done=done, total=total, detail=detail, limit_s=limit_s, case=case
            )
            throttle.offer(done, total, functools.partial(bus.publish, ev))

        return on_progress
