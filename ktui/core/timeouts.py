"""Time limits of the rungs: fixed ones from ``--timeout`` and ``ktui.toml``, else defaults scaled to the work.

Every worker call a rung makes has a time limit, ``LadderOptions.timeouts[key]`` in seconds, one per *limit key*:
``compile``, ``run``, ``correctness``, ``benchmark`` (the ``dumps`` rung uses compile's, ``profile`` benchmark's:
``LIMIT_OF``). A call that finishes nothing for its limit (each case or spec the worker reports done starts it
again; ``ktui.core.workers.client.IDLE_STEPS_CAP`` limits in all) kills its worker and fails the rung
(``WorkerTimeout``), so a kernel that hangs is reported when its limit runs out, and a loaded machine that keeps
finishing cases is not taken for a hang.

Where each key's limit comes from, first match wins:

1. ``--timeout`` of ``ktui run``: ``--timeout 30`` (every key) or ``--timeout compile=20,run=90``;
2. ``ktui.toml``: ``[ladder.timeouts]`` (``[tool.ktui.ladder.timeouts]`` in ``pyproject.toml``), seconds per key;
3. ``LadderOptions(timeouts=...)`` set by the caller (scripts and tests): every key fixed;
4. derived from the work: ``max(FLOOR_S[key], factor * basis)``, ``factor`` = ``FACTOR`` (5, or
   ``[ladder] timeout_factor``), where *basis* is the longest of

   - the seconds the same rung took in the previous results of this problem on this device (the version's own
     last stored result and the newest stored result of another version; rungs that passed only), and
   - the seconds the judge took for the reference's share of the rung in the problem's last run
     (``REFERENCE_METHODS``, kept in ``.ktui/timings.json``);

5. a problem never run on this device: ``FIRST_RUN_S`` (240 / 120 / 300 / 600 s), whatever other problems took.
   Another problem's seconds say nothing about this one's: borrowing the largest made a new elementwise problem
   wait 810 s (5 x a CPU matmul's 162 s run) to call a hang one; borrowing a small one would kill an honest first
   run of a heavy problem. Its own first run then sets its limits.

So after one run, a ``while True`` in ``custom_kernel`` is reported after ``FLOOR_S["compile"]`` (30 s), not 240 s;
on a first run, after 240 s of compile or 120 s of a run rung without a finished case.
Each limit is a ``Limit``: a float that says where it came from, which the timeout message quotes.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ktui.core.results import LadderResult, Status
from ktui.core.store import ResultStore, atomic_write
from ktui.core.workers.client import IDLE_STEPS_CAP
from ktui.core.workspace import KernelRef, Workspace

LIMIT_KEYS: tuple[str, ...] = ("compile", "run", "correctness", "benchmark")
"""The keys of ``LadderOptions.timeouts``: every worker call of a rung is limited by one of them."""

LIMIT_OF: dict[str, str] = {
    "compile": "compile",
    "run": "run",
    "correctness": "correctness",
    "benchmark": "benchmark",
    "dumps": "compile",
    "profile": "benchmark",
    "trace": "benchmark",
}
"""The limit key each rung's calls use (``ktui.core.ladder.rungs``: dumps reads compile's, profile benchmark's)."""

RUNGS_OF: dict[str, tuple[str, ...]] = {
    key: tuple(rung for rung, k in LIMIT_OF.items() if k == key) for key in LIMIT_KEYS
}
"""The rungs whose seconds scale each key's derived limit."""

REFERENCE_METHODS: dict[str, tuple[str, ...]] = {
    "compile": ("describe",),
    "run": ("prepare",),
    "correctness": ("prepare", "compare"),
    "benchmark": ("time_reference", "roofline", "check_timed"),
}
"""The judge's calls that do the reference's share of each key's work (``prepare`` runs the reference on every case
the candidate runs, under the correctness limit, while compile and run climb)."""

FACTOR = 5.0
"""A rung may take this many times what it took last time before it counts as hung: more seeds or cases, a cold
Triton cache, a CPU shared with other work (the CPU examples' rungs vary by up to 3x between runs on 2 busy
cores)."""

STEP_FIGURES: dict[str, str] = {"run": "longest_step_s"}
"""The figure that holds the longest step of a key's rungs (``ktui.core.ladder.rungs.run.StepTimer``): where a
previous result has it, the key's limit scales it, and the whole rung's seconds bound the call in all
(``Limit.total``)."""

FLOOR_S: dict[str, float] = {"compile": 30.0, "run": 30.0, "correctness": 60.0, "benchmark": 120.0}
"""The smallest derived limit per key, in seconds. compile: a version's first compile has a cold Triton cache and
may add autotune configs (measured on the CPU, 2 cores at load 10: the compile rung of ``kernels/matmul/v2.py`` cold
6.2 s, of a 2-config autotuned vector add 9.9 s, against 1.4 s warm); run, correctness and benchmark calls carry
more cases and the reference's float64 work."""

FIRST_RUN_S: dict[str, float] = {"compile": 240.0, "run": 120.0, "correctness": 300.0, "benchmark": 600.0}
"""The limits of a problem's first run on a device (the fixed limits ktui used before it derived them): a first
CuTeDSL compile or a large autotune sweep on a GPU fits, and as every limit is on time without progress (a finished
case starts it again), so does a long run of many cases (the CPU matmul's 162 s run rung: about 1 s a case)."""

TIMINGS_FILE = "timings.json"


class TimeoutConfigError(ValueError):
    """A malformed ``--timeout`` or ``[ladder]`` setting; the message names the file or flag and the field."""


class Limit(float):
    """A time limit in seconds that remembers where it came from (``why``), for the message of a call past it; and,
    where it was derived from one step's seconds, the most a call may take in all (``total``, seconds; 0: the
    worker client's ``IDLE_STEPS_CAP`` times the limit)."""

    why: str
    total: float

    def __new__(cls, seconds: float, why: str = "", total: float = 0.0) -> Limit:
        obj = super().__new__(cls, seconds)
        obj.why = why
        obj.total = total
        return obj

    def __reduce__(self) -> tuple[Any, ...]:  # copy and deepcopy keep ``why`` and ``total``
        return (Limit, (float(self), self.why, self.total))


LAUNCH_COMPILE_FLOOR_S = 120.0
"""The least a derived compile limit allows the run rung's launch compiles, seconds: they compile launches of other
sizes than the compile rung's one dry call (new-user trial 19: a fuzzed spec's BLOCK=65536 launch took over 30 s
to compile for sm_90a on a loaded 2-core machine, against a limit of 5 x the dry call's 5.8 s, and an honest
version failed its run rung at random)."""


def launch_compile_limit(limit: float) -> float:
    """The limit of the run rung's launch compiles given the compile ``limit``: a derived one (``TimeoutPolicy``)
    raised to ``LAUNCH_COMPILE_FLOOR_S``, saying so; one set by ``--timeout``, ``ktui.toml`` or the caller as it is."""
    why = getattr(limit, "why", "")
    if not why.startswith(("derived", "the floor of a derived")) or limit >= LAUNCH_COMPILE_FLOOR_S:
        return limit
    return Limit(
        LAUNCH_COMPILE_FLOOR_S,
        f"the floor of the launch compiles (the compile rung's limit, {float(limit):.0f} s, {why.split(';')[0]}, is "
        f"for its one dry call; other sizes compile longer); set it with {hint('compile')}",
    )


def at_least_compiles(limit: float, compile_s: float | None) -> float:
    """The run rung's ``limit``, where it was derived from one step's seconds (``Limit.total`` set), raised to
    ``FACTOR`` times the seconds this version's dry call took to compile (``compile_s``; None: unknown): a case of a
    new version may compile its launches for another size (Triton's JIT on a GPU), as long as its dry call did, in one
    step. Any other limit as it is."""
    total = getattr(limit, "total", 0.0)
    if not total or compile_s is None or FACTOR * compile_s <= limit:
        return limit
    need = FACTOR * compile_s
    return Limit(
        need,
        f"{FACTOR:g} x {compile_s:.2f} s, this version's compile in its dry call (a case may compile as long), "
        f"more than {getattr(limit, 'why', '').split(';')[0]}; set it with {hint('run')}",
        total=max(total, IDLE_STEPS_CAP * need),
    )


class DefaultLimits(dict[str, float]):
    """The timeouts a ``LadderOptions`` carries when its caller set none (``FIRST_RUN_S``): a ``Session`` replaces
    them with its ``TimeoutPolicy``'s limits for each run; a bare ``Ladder`` uses them as they are."""


def default_limits() -> dict[str, float]:
    """``LadderOptions.timeouts``' default: ``FIRST_RUN_S`` marked as not set by anyone (``DefaultLimits``)."""
    return DefaultLimits(FIRST_RUN_S)


def hint(key: str) -> str:
    """How to set ``key``'s limit, for messages."""
    return f"--timeout {key}=SECONDS, or {key} = SECONDS under [ladder.timeouts] in ktui.toml"


def parse_timeout_arg(text: str) -> dict[str, float]:
    """``--timeout``'s value: ``30`` (every key, seconds) or ``compile=20,run=90``.

    Raises:
        TimeoutConfigError: not a positive number, or an unknown key.
    """
    text = text.strip()
    if "=" not in text:
        seconds = _seconds(text, "--timeout")
        return dict.fromkeys(LIMIT_KEYS, seconds)
    out: dict[str, float] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, _, value = part.partition("=")
        out[_key(key.strip(), "--timeout")] = _seconds(value.strip(), f"--timeout {key.strip()}")
    if not out:
        raise TimeoutConfigError("--timeout names no limit: use SECONDS or RUNG=SECONDS[,RUNG=SECONDS]")
    return out


def _key(key: str, where: str) -> str:
    if key in LIMIT_KEYS:
        return key
    if key in LIMIT_OF:
        raise TimeoutConfigError(
            f"{where}: the {key} rung has no limit of its own: it uses {LIMIT_OF[key]}'s "
            f"(limits: {', '.join(LIMIT_KEYS)})"
        )
    raise TimeoutConfigError(f"{where}: unknown rung {key!r} (limits: {', '.join(LIMIT_KEYS)})")


def _seconds(value: Any, where: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise TimeoutConfigError(f"{where}: {value!r} is not a number of seconds") from None
    if isinstance(value, bool) or not seconds > 0 or seconds == float("inf"):
        raise TimeoutConfigError(f"{where}: a limit is a positive number of seconds, not {value!r}")
    return seconds


@dataclass(frozen=True)
class TimeoutPolicy:
    """How a session sets the time limits of each run (see the module docstring for the order).

    Attributes:
        fixed: limits set by ``--timeout`` or ``ktui.toml``, per key (each a ``Limit`` naming its source).
        factor: the derived limit's multiple of the rung's previous seconds.
        floors: the smallest derived limit per key, seconds.
        first_run: the limits of a problem's first run on this device, seconds.
    """

    fixed: Mapping[str, Limit] = field(default_factory=dict)
    factor: float = FACTOR
    floors: Mapping[str, float] = field(default_factory=lambda: dict(FLOOR_S))
    first_run: Mapping[str, float] = field(default_factory=lambda: dict(FIRST_RUN_S))
    # where ``load_policy`` read it (the workspace root, the --timeout on top, the files' stamps): ``reloaded``
    root: Path | None = None
    cli: Mapping[str, float] | None = None
    stamp: tuple[Any, ...] = ()

    def reloaded(self) -> tuple[TimeoutPolicy, Literal["info", "warning"], str]:
        """This policy read again from its files when ``ktui.toml`` or ``pyproject.toml`` changed since it was read
        (new-user trial 22, F17: a compile limit added to ktui.toml while the TUI was open did not apply until a
        restart), with a notice's level and message; (itself, 'info', '') when they did not, or it was not read from
        files. A file that no longer reads keeps the old limits, and the warning says why."""
        if self.root is None:
            return self, "info", ""
        stamp = config_stamp(self.root)
        if stamp == self.stamp:
            return self, "info", ""
        try:
            policy = load_policy(self.root, self.cli)
        except TimeoutConfigError as exc:
            return replace(self, stamp=stamp), "warning", f"{exc}; the time limits read before stay"
        return policy, "info", "ktui.toml or pyproject.toml changed: their [ladder] time limits apply from this run on"

    def limits(
        self,
        ws: Workspace,
        kernel: KernelRef,
        device: str,
        store: ResultStore | None = None,
        explicit: Mapping[str, float] | None = None,
    ) -> dict[str, float]:
        """The limit of each key for the next run of ``kernel`` on ``device`` (``cpu``/``cuda``), seconds.

        Args:
            explicit: the caller's ``LadderOptions.timeouts`` when it set them (every key fixed; ``fixed`` wins).
        """
        out: dict[str, float] = {}
        history: _History | None = None
        for key in LIMIT_KEYS:
            if key in self.fixed:
                out[key] = self.fixed[key]
                continue
            if explicit is not None and key in explicit:
                out[key] = Limit(explicit[key], "set by the caller's LadderOptions")
                continue
            if history is None:
                history = _History(ws, kernel, device, store or ResultStore(ws))
            out[key] = self._derive(key, history)
        return out

    def _derive(self, key: str, history: _History) -> Limit:
        floor = self.floors.get(key, FLOOR_S[key])
        basis = history.basis(key)
        if basis is None:
            first = self.first_run.get(key, FIRST_RUN_S[key])
            why = f"ktui's default for a first run of {history.kernel.problem} on this device"
            return Limit(first, f"{why}; set it with {hint(key)}")
        seconds, what = basis
        step = history.step_basis(key)
        if step is not None:
            # on time without progress: one step's seconds scale it; the call in all keeps the bound the whole
            # rung's seconds gave (``IDLE_STEPS_CAP`` times the limit derived from them)
            total = IDLE_STEPS_CAP * max(floor, self.factor * seconds)
            seconds, what = step
            derived = self.factor * seconds
            if derived <= floor:
                why = f"the floor of a derived limit ({self.factor:g} x {seconds:.2f} s, {what}, is less)"
                return Limit(floor, f"{why}; set it with {hint(key)}", total=total)
            why = f"derived: {self.factor:g} x {seconds:.2f} s, {what}; set it with {hint(key)}"
            return Limit(derived, why, total=total)
        derived = self.factor * seconds
        if derived <= floor:
            why = f"the floor of a derived limit ({self.factor:g} x {seconds:.2f} s, {what}, is less)"
            return Limit(floor, f"{why}; set it with {hint(key)}")
        return Limit(derived, f"derived: {self.factor:g} x {seconds:.2f} s, {what}; set it with {hint(key)}")


def load_policy(root: Path, cli: Mapping[str, float] | None = None) -> TimeoutPolicy:
    """The timeout policy of the workspace at ``root``: ``[ladder]`` of its ``ktui.toml`` (else
    ``[tool.ktui.ladder]`` of its ``pyproject.toml``), with ``cli`` (``parse_timeout_arg``) on top.

        # ktui.toml
        [ladder]
        timeout_factor = 5          # a derived limit is this many times the rung's previous seconds
        [ladder.timeouts]           # fixed limits, seconds: these keys are not derived
        compile = 30
        run = 120

    Raises:
        TimeoutConfigError: unreadable TOML, an unknown key, or a limit that is not a positive number.
    """
    fixed: dict[str, Limit] = {}
    factor = FACTOR
    stamp = config_stamp(root)  # before the reads: an edit during them is read again next time
    for path, keys, where in (
        (root / "pyproject.toml", ("tool", "ktui", "ladder"), "[tool.ktui.ladder]"),
        (root / "ktui.toml", ("ladder",), "[ladder]"),
    ):
        if not path.is_file():
            continue
        try:
            table: Any = tomllib.loads(path.read_text())
        except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as exc:
            raise TimeoutConfigError(f"{path}: {exc}") from None
        for k in keys:
            table = table.get(k, {}) if isinstance(table, dict) else {}
        if not isinstance(table, dict) or not table:
            continue
        fixed, factor = {}, FACTOR  # ktui.toml, read last, replaces pyproject.toml's section
        for name, value in table.items():
            if name == "timeout_factor":
                factor = _seconds(value, f"{path.name} {where} timeout_factor")
                if factor < 1:
                    raise TimeoutConfigError(f"{path.name} {where}: timeout_factor must be 1 or more, not {value!r}")
            elif name == "timeouts":
                if not isinstance(value, dict):
                    raise TimeoutConfigError(f"{path.name} {where}: timeouts must be a table of rung = seconds")
                for key, secs in value.items():
                    k = _key(key, f"{path.name} {where[:-1]}.timeouts]")
                    fixed[k] = Limit(
                        _seconds(secs, f"{path.name} {where[:-1]}.timeouts] {key}"),
                        f"set in {path.name} {where[:-1]}.timeouts]",
                    )
    for key, secs in (cli or {}).items():
        fixed[_key(key, "--timeout")] = Limit(secs, "set by --timeout")
    return TimeoutPolicy(fixed=fixed, factor=factor, root=root, cli=dict(cli or {}), stamp=stamp)


def config_stamp(root: Path) -> tuple[Any, ...]:
    """The modification time (ns) and size of ``root``'s ``pyproject.toml`` and ``ktui.toml`` (None where absent):
    what changes when either is edited."""
    out: list[Any] = []
    for name in ("pyproject.toml", "ktui.toml"):
        try:
            st = (root / name).stat()
            out.append((st.st_mtime_ns, st.st_size))
        except OSError:
            out.append(None)
    return tuple(out)


# -- what earlier runs took ----------------------------------------------------------------------------------
class ReferenceTimes:
    """The seconds the judge took for each key's reference work in each problem's last run, per device:
    ``.ktui/timings.json`` = ``{device: {problem: {key: seconds}}}`` (written atomically; unreadable: empty)."""

    def __init__(self, workspace: Workspace):
        self.path = workspace.state_dir / TIMINGS_FILE

    def all(self) -> dict[str, dict[str, dict[str, float]]]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, device: str, problem: str) -> dict[str, float]:
        """The problem's reference seconds per key on ``device`` ({} when none were recorded)."""
        got = self.all().get(device, {}).get(problem, {})
        return {k: float(v) for k, v in got.items() if k in LIMIT_KEYS and isinstance(v, int | float)}

    def record(self, device: str, problem: str, calls: Iterable[tuple[str, float]]) -> dict[str, float]:
        """Keep the keys that the judge's ``calls`` (method, seconds) of one run measured; returns them. The
        other keys keep their earlier seconds."""
        calls = list(calls)
        seen = {
            key: max(s for m, s in calls if m in methods)
            for key, methods in REFERENCE_METHODS.items()
            if any(m in methods for m, _ in calls)
        }
        if not seen:
            return {}
        data = self.all()
        data.setdefault(device, {}).setdefault(problem, {}).update(seen)
        try:
            atomic_write(self.path, json.dumps(data, indent=1).encode())
        except OSError:
            pass  # a read-only workspace: limits are derived from the results alone
        return seen


def rung_seconds(result: LadderResult, key: str) -> tuple[float, str] | None:
    """The longest passing rung of ``result`` that ``key`` limits: (seconds, rung name), or None."""
    best: tuple[float, str] | None = None
    for r in result.rungs:
        if r.name in RUNGS_OF[key] and r.status is Status.OK and r.seconds > 0:
            if best is None or r.seconds > best[0]:
                best = (r.seconds, r.name)
    return best


class _History:
    """What earlier runs of ``kernel``'s problem took on ``device`` (never another problem's: see the module's
    docstring)."""

    def __init__(self, ws: Workspace, kernel: KernelRef, device: str, store: ResultStore):
        self.ws, self.kernel, self.device, self.store = ws, kernel, device, store
        self._mine = self._previous(kernel.problem, own=kernel.version)
        self._ref = ReferenceTimes(ws).get(device, kernel.problem)

    def _results(self, problem: str) -> list[LadderResult]:
        out = []
        for k in self.ws.versions(problem):
            r = self.store.load(problem, k.version)
            if r is not None and r.device.get("type") == self.device:
                out.append(r)
        return out

    def _previous(self, problem: str, own: str | None = None) -> list[LadderResult]:
        """The version's own stored result and the newest other version's (of ``problem``, on this device)."""
        results = self._results(problem)
        mine = [r for r in results if r.version == own]
        others = sorted((r for r in results if r.version != own), key=lambda r: r.started_at)
        return mine + others[-1:]

    def basis(self, key: str) -> tuple[float, str] | None:
        """The seconds a derived limit of ``key`` scales, and what they are, or None when the problem never ran
        this key's rungs on this device."""
        best: tuple[float, str] | None = None
        for r in self._mine:
            got = rung_seconds(r, key)
            if got is not None and (best is None or got[0] > best[0]):
                best = (got[0], f"the {got[1]} rung of {r.key}")
        if key in self._ref and (best is None or self._ref[key] > best[0]):
            best = (self._ref[key], f"the reference's {'/'.join(REFERENCE_METHODS[key])} of this problem")
        return best

    def step_basis(self, key: str) -> tuple[float, str] | None:
        """The longest step (``STEP_FIGURES``) of ``key``'s passing rungs in the previous results, and what it was;
        None when the key has no step figure or no result recorded it (results stored before it was)."""
        figure = STEP_FIGURES.get(key)
        best: tuple[float, str] | None = None
        for r in self._mine if figure else ():
            for rung in r.rungs:
                got = rung.figures.get(figure or "") if rung.status is Status.OK else None
                if rung.name in RUNGS_OF[key] and isinstance(got, int | float) and (best is None or got > best[0]):
                    best = (float(got), f"the longest step (a case) of the {rung.name} rung of {r.key}")
        return best
