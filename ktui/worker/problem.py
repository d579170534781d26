"""A problem's reference module, as the workers see it.

The module (``references/<problem>.py``) defines, with GPU MODE's names:

- ``generate_input(seed, **spec)``: the input data (tensors, scalars, a tuple or dict of them). ktui calls it under
  ``torch.device(<device>)`` after ``torch.manual_seed(seed)``, so tensors made without ``device=`` land on the
  device under test and the same seed gives the same data in every process;
- ``ref_kernel(data)``: the expected output; ktui runs it in float64 (floating inputs upcast) unless the module sets
  ``reference_float64 = False``;
- ``tests``: specs (dicts of keyword arguments to ``generate_input``) checked for correctness;
- ``benchmarks``: specs timed by the benchmark rung;
- optionally ``tolerance`` (see ``ktui.worker.tolerance``), ``flops(spec)`` and ``bytes_moved(spec)`` (for TFLOP/s,
  GB/s and the roofline), and ``outputs``: indices (tuple data) or keys (dict data) of output buffers inside
  ``data`` that ktui fills with NaN before each call;
- optionally ``input_distributions`` (default all of ``ktui.worker.cases.DISTRIBUTIONS``; ``["native"]`` when the
  op needs the inputs exactly as generated, e.g. probabilities or sorted keys), ``contiguous_only = True`` (skip the
  transposed/padded/offset/expanded layout cases) and ``allow_nan = True`` (NaN is a valid reference result);
- optionally ``fuzz`` (``False``, or ``{field: (lo, hi)}``) and ``valid_spec(spec)``: bounds on the fuzzed specs
  drawn around the tests every run (``ktui.worker.fuzz``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from ktui.protocol import ProblemInfo, ReferenceSource
from ktui.worker.errors import ProblemError, snapshot_missing
from ktui.worker.special import SPECIAL
from ktui.worker.tensors import dtype_name, flatten

DISTRIBUTIONS = ("native", "normal", "uniform", "heavy", "shifted", "constant", *SPECIAL)

REQUIRED = ("generate_input", "ref_kernel", "tests")


def read_snapshot(path: Path, what: str) -> bytes:
    """The bytes of the snapshot ``path`` of ``what`` (``the reference``...).

    Raises:
        SnapshotMissing: the file is gone (deleted under ``.ktui/snapshots/`` during the run).
    """
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise snapshot_missing(what) from None


def load_module(path: Path, name: str, search_dir: Path | None = None, what: str = "the source") -> ModuleType:
    """Import ``path`` as a fresh module called ``name`` (replacing any earlier module of that name).

    ``search_dir`` (the folder the file was snapshotted from) is put on ``sys.path`` while the module runs, so a
    kernel can import helper modules that sit beside it.

    Raises:
        SnapshotMissing: ``path`` (a snapshot of ``what``) does not exist.
    """
    if not path.exists():
        raise snapshot_missing(what)
    sys.modules.pop(name, None)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProblemError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    extra = str(search_dir) if search_dir else None
    if extra:
        sys.path.insert(0, extra)
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        if extra and extra in sys.path:
            sys.path.remove(extra)
    return mod


def spec_label(spec: dict[str, Any]) -> str:
    """``(1, 129)`` or ``(4, 129, bf16)``: the spec's values in order, dtype names shortened."""
    short = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64"}
    vals = [short.get(v, v) if isinstance(v, str) else v for v in spec.values()]
    return "(" + ", ".join(str(v) for v in vals) + ("," if len(vals) == 1 else "") + ")"


class Problem:
    """A loaded reference module. ``name`` is the problem name, ``sha`` the source hash it was loaded from."""

    def __init__(self, path: Path, name: str, sha: str, search_dir: Path | None = None):
        self.path = Path(path)
        self.name = name
        self.sha = sha
        actual = hashlib.sha256(read_snapshot(self.path, "the reference")).hexdigest()
        if actual != sha:
            raise ProblemError(
                f"the snapshot of references/{name}.py changed after ktui took it (sha256 "
                f"{actual[:12]}, expected {sha[:12]}): something wrote to {self.path}"
            )
        self.module = load_module(self.path, f"ktui_reference_{name}_{sha[:12]}", search_dir, "the reference")
        missing = [a for a in REQUIRED if not hasattr(self.module, a)]
        if missing:
            raise ProblemError(f"references/{name}.py does not define {', '.join(missing)}")
        self.tests: list[dict[str, Any]] = self._specs("tests")
        self.benchmarks: list[dict[str, Any]] = self._specs("benchmarks") if hasattr(self.module, "benchmarks") else []
        self.tolerance: dict[str, Any] = dict(getattr(self.module, "tolerance", {}) or {})
        self.float64 = bool(getattr(self.module, "reference_float64", True))
        self.outputs = tuple(getattr(self.module, "outputs", ()) or ())
        self.distributions = list(getattr(self.module, "input_distributions", None) or DISTRIBUTIONS)
        unknown = [d for d in self.distributions if d not in DISTRIBUTIONS]
        if unknown:
            raise ProblemError(f"references/{name}.py: unknown input_distributions {unknown}; known: {DISTRIBUTIONS}")
        self.contiguous_only = bool(getattr(self.module, "contiguous_only", False))
        self.allow_nan = bool(getattr(self.module, "allow_nan", False))
        self._flops: Callable[..., Any] | None = getattr(self.module, "flops", None)
        self._bytes: Callable[..., Any] | None = getattr(self.module, "bytes_moved", None)

    def _specs(self, attr: str) -> list[dict[str, Any]]:
        specs = getattr(self.module, attr)
        if not isinstance(specs, (list, tuple)) or not all(isinstance(s, dict) for s in specs):
            raise ProblemError(f"references/{self.name}.py: {attr} must be a list of dicts of generate_input arguments")
        if attr == "tests" and not specs:
            raise ProblemError(f"references/{self.name}.py: tests is empty")
        return [dict(s) for s in specs]

    def describe(self) -> ProblemInfo:
        """What the module declares (the ``describe`` reply): specs, their labels, outputs, distributions."""
        return {
            "tests": self.tests,
            "benchmarks": self.benchmarks,
            "labels": [spec_label(s) for s in self.tests],
            "benchmark_labels": [spec_label(s) for s in self.benchmarks],
            "has_flops": self._flops is not None,
            "has_bytes": self._bytes is not None,
            "outputs": list(self.outputs),
            "distributions": self.distributions,
            "contiguous_only": self.contiguous_only,
        }

    # -- data --------------------------------------------------------------------------------------------------
    def generate(self, seed: int, spec: dict[str, Any], device: str) -> Any:
        """``generate_input(seed, **spec)`` on ``device``, with the global RNGs seeded by ``seed`` first.

        Raises:
            ProblemError: generate_input raised (the message names the spec and seed).
        """
        torch.manual_seed(seed)
        try:
            with torch.device(device):
                data = self.module.generate_input(seed, **spec)
        except Exception as exc:
            raise ProblemError(f"generate_input(seed={seed}, **{spec}) raised {type(exc).__name__}: {exc}") from exc
        return data

    def output_buffers(self, data: Any) -> list[torch.Tensor]:
        """The tensors inside ``data`` that the module declared as output buffers (``outputs``)."""
        bufs = []
        for key in self.outputs:
            try:
                t = data[key]
            except (KeyError, IndexError, TypeError):
                raise ProblemError(
                    f"references/{self.name}.py: outputs names {key!r}, which data does not have"
                ) from None
            if not isinstance(t, torch.Tensor):
                raise ProblemError(f"references/{self.name}.py: outputs entry {key!r} is not a tensor")
            bufs.append(t)
        return bufs

    def reference(self, data: Any) -> tuple[Any, str]:
        """The reference output, in float64 where the op allows it.

        Returns ``(output, precision)`` where precision is ``float64`` or ``native`` (with the reason appended when
        float64 was tried and raised). Inputs are cloned first: the reference never writes the caller's data.
        """
        if self.float64 and _has_float(data):
            try:
                return self.module.ref_kernel(_map(data, _upcast)), "float64"
            except Exception as exc:
                note = f"native (float64 raised {type(exc).__name__}: {str(exc).splitlines()[0][:120]})"
                return self.module.ref_kernel(_map(data, _clone)), note
        return self.module.ref_kernel(_map(data, _clone)), "native"

    def reference_native(self, data: Any) -> Any:
        """``ref_kernel`` on a copy of ``data`` at its own precision (the expected dtypes and shapes)."""
        return self.module.ref_kernel(_map(data, _clone))

    def flops(self, spec: dict[str, Any]) -> float | None:
        """The module's ``flops(**spec)`` (floating-point operations of one call), or None when it has none."""
        return float(self._flops(**spec)) if self._flops else None

    def bytes_moved(self, spec: dict[str, Any]) -> float | None:
        """The module's ``bytes_moved(**spec)`` (bytes one call must read and write), or None when it has none."""
        return float(self._bytes(**spec)) if self._bytes else None


def policy_dtype(data: Any, expected: Any) -> str:
    """The lowest-precision floating dtype among the inputs and the expected output (by machine epsilon), or the
    output's dtype when nothing is floating: the dtype whose tolerance applies."""
    dts = [leaf.dtype for _, leaf in flatten(data) + flatten(expected) if isinstance(leaf, torch.Tensor)]
    floats = [dt for dt in dts if dt.is_floating_point]
    if floats:
        return dtype_name(max(floats, key=lambda dt: torch.finfo(dt).eps))
    return dtype_name(dts[-1]) if dts else "float64"


def _has_float(data: Any) -> bool:
    return any(isinstance(x, torch.Tensor) and x.is_floating_point() for _, x in flatten(data))


def _clone(x: Any) -> Any:
    return x.clone() if isinstance(x, torch.Tensor) else x


def _upcast(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(torch.float64) if x.is_floating_point() else x.clone()
    return x


def _map(obj: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(obj, tuple):
        return tuple(_map(v, fn) for v in obj)
    if isinstance(obj, list):
        return [_map(v, fn) for v in obj]
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return fn(obj)


def clone_data(data: Any) -> Any:
    """A deep copy of every tensor in ``data`` (same structure)."""
    return _map(data, _clone)


def inputs_only(problem: Problem, data: Any) -> Any:
    """``data`` without the declared output buffers (what must not change during a call)."""
    if not problem.outputs:
        return data
    if isinstance(data, dict):
        return {k: v for k, v in data.items() if k not in problem.outputs}
    if isinstance(data, (tuple, list)):
        n = len(data)
        drop = {k % n for k in problem.outputs if isinstance(k, int)}
        return tuple(v for i, v in enumerate(data) if i not in drop)
    return data


class ProblemCache:
    """Loaded reference modules by source hash: a request names the snapshot it wants, and an edited reference
    (a new hash) is imported fresh while the old one stays valid for runs already under way."""

    def __init__(self) -> None:
        self._by_sha: dict[str, Problem] = {}

    def get(self, ref: ReferenceSource) -> Problem:
        """The problem of the reference snapshot ``ref`` (``protocol.ReferenceSource``), loaded once per sha."""
        p = self._by_sha.get(ref["sha"])
        if p is None:
            if len(self._by_sha) > 16:
                self._by_sha.clear()
            search = Path(ref["search_dir"]) if ref.get("search_dir") else None
            p = self._by_sha[ref["sha"]] = Problem(Path(ref["path"]), ref["problem"], ref["sha"], search)
        return p
