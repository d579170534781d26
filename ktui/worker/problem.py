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
- optionally ``inplace``: indices or keys of inputs that ``ref_kernel`` reads and writes in place (GPU MODE's
  read-modify-write, ``x += y``): such an input is judged as an output, its contents after the call against the
  reference's after its own call; a write into any other input still fails "input modified";
- optionally ``structured_inputs``: indices or keys of inputs (as ``outputs``) whose values have a structure the
  reference needs (sorted boundaries, CSR row pointers, a permutation, a causal mask): every distribution and the
  near-duplicate case leave them as generated (the layouts still apply; red team round 12 F1). Sorted rows are
  detected and kept sorted without it (``ktui.worker.special.near_duplicate_``);
- optionally ``fuzz`` (``False``, or ``{field: (lo, hi)}``) and ``valid_spec(spec)``: bounds on the fuzzed specs
  drawn around the tests every run (``ktui.worker.fuzz``).
"""

from __future__ import annotations

import enum
import hashlib
import importlib.util
import sys
import traceback
import weakref
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from ktui.protocol import ProblemInfo, ReferenceSource, spec_label
from ktui.protocol.distributions import INPUT_DISTRIBUTIONS
from ktui.worker import global_state
from ktui.worker.errors import ProblemError, snapshot_missing
from ktui.worker.special import SPECIAL
from ktui.worker.tensors import (
    class_name,
    copy_generator,
    dataclass_fields,
    dtype_name,
    flatten,
    instance_attrs,
    key_text,
    unset_fields,
    with_fields,
)

# Every distribution a case may draw, named in the wire's table (the agent's prompt lists the same ones); the
# special values last, as ``special.SPECIAL`` orders them.
DISTRIBUTIONS: tuple[str, ...] = tuple(INPUT_DISTRIBUTIONS)
assert DISTRIBUTIONS[-len(SPECIAL) :] == SPECIAL, (DISTRIBUTIONS, SPECIAL)

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


class GeneratorDevice(torch.overrides.TorchFunctionMode):
    """Random draws through a ``generator=`` of another device than the one ``generate_input`` runs under (pushed
    inside ``torch.device(device)``): the draw runs on the generator's device and its result moves to ``device``.

    ``g = torch.Generator().manual_seed(seed); torch.randint(1, 9, (n,), generator=g)`` is the usual CPU-first
    reference; under ``torch.device("cuda")`` torch makes the tensor on the GPU and raises "Expected a 'cuda' device
    type for generator but found 'cpu'" (found on the H200, 2026-12-04: an honest jagged reference failed every
    version). Here the draw is the CPU's, the same numbers as a CPU run of the same seed, then copied to the GPU.
    An in-place draw (``x.normal_(generator=g)``, ``nn.init.normal_(tensor=w, generator=g)``) fills a copy on the
    generator's device and copies it back. A draw from tensors (``torch.multinomial(p, k, generator=g)``) runs on
    copies of them there; its result comes back to ``device`` only when an input was on it (a reference that kept
    its tensors on the CPU keeps the result there). A call with an explicit ``device=`` is left to torch.
    """

    def __init__(self, device: str):
        super().__init__()
        self.device = torch.device(device)

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        g = kwargs.get("generator")
        if not isinstance(g, torch.Generator) or g.device.type == self.device.type or "device" in kwargs:
            return func(*args, **kwargs)
        there = g.device
        name = getattr(func, "__name__", "")
        rest = {k: v for k, v in kwargs.items() if k != "generator"}
        target = args[0] if args else rest.get("tensor")  # nn.init's draws pass it as tensor=
        if name.endswith("_") and isinstance(target, torch.Tensor):  # an in-place draw into target
            work = target.detach().to(there)
            if args:
                func(work, *_map(args[1:], lambda t: _to(t, there)), **_map(rest, lambda t: _to(t, there)), generator=g)
            else:
                func(**{**_map(rest, lambda t: _to(t, there)), "tensor": work}, generator=g)
            with torch.no_grad():
                target.copy_(work)
            return target
        here = _tensors_on((args, rest), self.device.type)  # inputs on the device: the result goes there too
        moved, moved_kw = _map(args, lambda t: _to(t, there)), _map(rest, lambda t: _to(t, there))
        sized = name in ("rand", "randn", "randint", "randperm") or (
            name == "normal" and not _tensors_on((args, rest), None)
        )
        if sized:  # from sizes: takes device=
            moved_kw["device"] = there
        out = func(*moved, **moved_kw, generator=g)
        return _map(out, lambda t: _to(t, self.device)) if sized or here else out


class Float64Kept(torch.overrides.TorchFunctionMode):
    """Inside the float64 run of ``ref_kernel``: a cast of a float64 tensor to float32 (``x.float()``,
    ``x.to(torch.float32)``, ``x.to(dtype=torch.float32)``, ``x.type(torch.float32)``) keeps float64, and such a cast
    of an integer tensor gives float64.

    ``a.float() @ b.float()`` is how a reference says "compute in float32" for low-precision inputs; in the float64
    run it made the truth a float32 computation too, identical to the native one: the native allowance read 0
    ("where the reference computed in float32 is exact") and an honest fp8 GEMM on the H200 failed at K = 4096 on
    167 of 16.7M elements, off by 1.8e-4 from a float32 result that was itself off from the float64 truth by
    3.8e-5 (2026-12-04). Casts to other dtypes (a quantization to fp16, bf16, fp8 or integers) are the op's own and
    run as written. The kept tensor is a copy (a cast of a low-precision tensor is one: an in-place op on it must
    not reach the input). Reading a float64 tensor's bits (``x.float().view(torch.int32)``, ``amax.view(torch.int32)``
    of upcast inputs) raises ``BitView``: the caller runs the reference again with its casts as written (a
    float32 cast's bits), or natively (the reference reads its inputs' bits: an E8M0 scale's exponent field).
    A float32 tensor a factory makes (``FACTORIES``: ``torch.zeros(..., dtype=torch.float32)``, ``torch.zeros(n)`` at
    the default dtype, ``x.new_zeros``) is made as written, then float64: an accumulator the reference makes for
    ``index_add_`` or ``+=`` holds the truth too.
    """

    def __init__(self, keep_casts: bool = True, replay: list[tuple[str, torch.dtype | None]] | None = None) -> None:
        super().__init__()
        self.keep_casts = keep_casts  # False: casts run as written, a float64 tensor's bits still raise BitView
        # the float64 tensors of this run that the native run has at a lower precision (the upcast inputs, the kept
        # casts, the factories' float32 buffers): id -> (weak reference, that dtype). A random draw into one, or
        # like one, draws at that dtype: float64 takes another sequence from the same generator
        self.made: dict[int, tuple[weakref.ref[torch.Tensor], torch.dtype]] = {}
        self.lowest: torch.dtype | None = None  # the lowest precision among the upcast inputs (``upcast``)
        # the random ops of this run in order, each with the dtype it drew at (``_random``), and those of the native
        # run to draw at (``RandomDraws.drew``), None before it is known
        self.drew: list[tuple[str, torch.dtype | None]] = []
        self.replay = replay

    def __enter__(self) -> Float64Kept:
        # ``torch.finfo(x.dtype)`` reads float64's for an upcast x: an eps or tiny the reference adds (``log(x +
        # finfo(x.dtype).eps)``, a clamp at ``finfo(x.dtype).tiny``) read as float64's made a truth the native run
        # is far from wherever it matters (red team round 35b, #5: with half the elements exact zeros, the native
        # error near every element lent a bf16-saved backward a pass); where the native run's float tensors so far
        # have one dtype, float64's finfo is that dtype's (mixed: unknown which one, float64's as written)
        self._finfo = torch.finfo
        kept = self

        def finfo(dtype: Any = None) -> Any:
            if dtype is torch.float64:
                native = kept.sole_native_dtype()
                if native is not None:
                    return kept._finfo(native)
            return kept._finfo() if dtype is None else kept._finfo(dtype)

        torch.finfo = finfo  # type: ignore[assignment,misc]
        super().__enter__()  # type: ignore[no-untyped-call]
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)  # type: ignore[no-untyped-call]
        torch.finfo = self._finfo  # type: ignore[misc]

    def sole_native_dtype(self) -> torch.dtype | None:
        """The one dtype the native run has for every float64 tensor of this run it has at a lower precision
        (``made``, those still alive), or None when there are none or several."""
        dtypes = {d for ref, d in self.made.values() if ref() is not None}
        return next(iter(dtypes)) if len(dtypes) == 1 else None

    def native_dtype(self, t: Any) -> torch.dtype | None:
        """The dtype the native run has for the float64 tensor ``t`` of this run (``made``), or None."""
        entry = self.made.get(id(t)) if isinstance(t, torch.Tensor) else None
        return entry[1] if entry is not None and entry[0]() is t else None

    def _keep(self, t: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        self.made[id(t)] = (weakref.ref(t), dtype)
        return t

    def upcast(self, x: Any) -> Any:
        """An input of the float64 run: ``x`` as ``_upcast`` makes it, a float tensor's own dtype kept (``made``)."""
        up = _upcast(x)
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float64:
            self._keep(up, x.dtype)
            if self.lowest is None or torch.finfo(x.dtype).bits < torch.finfo(self.lowest).bits:
                self.lowest = x.dtype
        return up

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        first = args[0] if args and isinstance(args[0], torch.Tensor) else None
        name = getattr(func, "__name__", "")
        if self.keep_casts and first is not None and first.dtype == torch.float64 and _to_float32(func, args, kwargs):
            return self._keep(first.clone())
        if self.keep_casts and first is not None and _integer(first) and _to_float32(func, args, kwargs):
            # an integer made float (RoPE's ``pos.float()``): float32 rounds it past 2**24 and its products past
            # float32's precision; the truth computes in float64 (new-user trial 22 F9)
            return self._keep(first.to(torch.float64))
        if name == "rms_norm" and first is not None and first.dtype == torch.float64:
            args, kwargs = self._native_eps(first, args, kwargs)
        if name in RANDOM_OPS:
            return self._random(func, name, first, args, kwargs)
        native = self.native_dtype(first) if self.keep_casts else None
        if self.keep_casts and name in FACTORIES and "out" not in kwargs:
            # a float32 buffer the reference makes (``torch.zeros(V, D, dtype=torch.float32)`` for an
            # ``index_add_``, ``torch.zeros(n)`` at the default dtype): made as written (its values rounded to
            # float32, as the native run's are), then float64, so the truth accumulates in float64 too. Kept
            # float32, an ``index_add_`` of the kept float64 source raised and the truth fell back to the native
            # run: an honest kernel adding in another order was held to 1e-5 of torch's order (an fp32 sum that
            # cancels, one ulp of its partial sum off: 1.2e-4; round 31's work-queue embedding backward)
            made = func(*args, **kwargs)
            if isinstance(made, torch.Tensor) and made.dtype == torch.float32:
                return self._keep(made.to(torch.float64))
            if native is not None and (name.endswith("_like") or name.startswith("new_")) and "dtype" not in kwargs:
                if isinstance(made, torch.Tensor) and made.dtype == torch.float64:  # like a kept tensor: kept too
                    return self._keep(made, native)
            return made
        if first is not None and name == "view" and first.dtype == torch.float64:
            # any float64 tensor's bits (an upcast input's, or one computed from them: ``amax.view(torch.int32)``,
            # red team round 19 F1) are not the bits the native run reads
            if any(isinstance(a, torch.dtype) and a != torch.float64 for a in (*args[1:], *kwargs.values())):
                raise BitView("a float64 tensor's bits are read")
        return func(*args, **kwargs)

    def _random(
        self, func: Any, name: str, first: torch.Tensor | None, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """A random op (``RANDOM_OPS``) of the float64 run, drawn at the dtype the native run draws it at: float64
        takes another sequence from the same generator (seed 0: 0.970, 0.708... against float32's 0.496, 0.768...),
        and a truth of other random numbers fails an honest dropout's keep mask. The n-th random op draws at the
        dtype of the native run's n-th (``replay``, ``RandomDraws``), where it is the same op; else a fill of, a
        ``*_like`` of or an ``out=`` into a tensor the native run has at a lower precision (``made``) draws at that
        one. Each draw is noted (``drew``: op name, dtype drawn)."""
        i = len(self.drew)
        want = self.replay[i] if self.replay is not None and i < len(self.replay) else None
        if want is not None and want[0] == name and want[1] is not None and want[1] != torch.float64:
            self.drew.append(want)
            return self._draw_at(func, name, first, args, kwargs, want[1])
        native = self.native_dtype(first) if self.keep_casts else None
        out_native = self.native_dtype(kwargs.get("out")) if self.keep_casts else None
        if native is not None and name in RANDOM_FILLS:
            # a random fill of such a tensor (dropout's ``torch.empty(x.shape).uniform_(generator=g)``: red team
            # round 34, #1, 50 of 127 elements of an honest keep mask failed)
            self.drew.append((name, native))
            return self._draw_at(func, name, first, args, kwargs, native)
        if native is not None and name in RANDOM_LIKE and kwargs.get("dtype") is None:  # ``torch.rand_like(x)``
            self.drew.append((name, native))
            return self._draw_at(func, name, first, args, kwargs, native)
        if out_native is not None and name in RANDOM_FACTORIES:
            self.drew.append((name, out_native))
            return self._draw_at(func, name, first, args, kwargs, out_native)
        out = func(*args, **kwargs)
        self.drew.append((name, _drawn_dtype(out, first, name)))
        return out

    def _draw_at(
        self,
        func: Any,
        name: str,
        first: torch.Tensor | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        dtype: torch.dtype,
    ) -> Any:
        """``func`` run with its float64 tensors at ``dtype`` (an in-place fill into a copy of ``first`` there, an
        ``out=`` into a buffer there; ``dtype=torch.float64`` asked as ``dtype``), the result widened to float64 and
        noted as the native run's ``dtype`` (``made``)."""

        def narrow(x: Any) -> Any:
            return x.to(dtype) if isinstance(x, torch.Tensor) and x.dtype == torch.float64 else x

        if name.endswith("_") and first is not None:  # in place: ``x.uniform_()``, ``x.bernoulli_(p)``
            drawn = first.to(dtype)
            func(drawn, *[narrow(a) for a in args[1:]], **{k: narrow(v) for k, v in kwargs.items()})
            return first.copy_(drawn)
        out = kwargs.get("out")
        given = {k: (dtype if k == "dtype" and v == torch.float64 else narrow(v)) for k, v in kwargs.items()}
        if isinstance(out, torch.Tensor):
            buffer = given["out"] = torch.empty_like(out, dtype=dtype)
            func(*[narrow(a) for a in args], **given)
            return out.copy_(buffer)
        made = func(*[narrow(a) for a in args], **given)
        if isinstance(made, torch.Tensor) and made.dtype == dtype:
            return self._keep(made.to(torch.float64), dtype)
        return made

    def _native_eps(
        self, first: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``F.rms_norm``'s arguments with ``eps`` left at its default (None: ``torch.finfo(input.dtype).eps``) set
        to the eps of the dtype the native run has for ``first`` (``native_dtype``, else the inputs' lowest
        precision): a float64 input's default is float64's 2.2e-16, and the truth became the norm without an eps,
        which let a kernel dropping the eps pass, 300x off on rows of 1e-6 (red team round 35, #5)."""
        eps = args[3] if len(args) > 3 else kwargs.get("eps")
        native = self.native_dtype(first) or self.lowest
        if eps is not None or native is None:
            return args, kwargs
        return args[:3], {**kwargs, "eps": torch.finfo(native).eps}


# The in-place random fills and the random factories (with ``out=``) that draw into a kept tensor at its native dtype.
RANDOM_FILLS = frozenset(
    {"uniform_", "normal_", "exponential_", "cauchy_", "log_normal_", "geometric_", "random_", "bernoulli_"}
)
RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "bernoulli", "normal", "randperm"})
RANDOM_LIKE = frozenset({"rand_like", "randn_like", "randint_like"})  # drawn at the native dtype of the tensor given
# Every op that draws random numbers, as a torch function mode sees it (composites such as F.dropout are seen whole:
# the ops they call inside run with the mode off).
RANDOM_OPS = RANDOM_FILLS | RANDOM_FACTORIES | RANDOM_LIKE | frozenset(
    {
        "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "multinomial",
        "poisson", "binomial", "rrelu", "gumbel_softmax", "bernoulli", "normal", "uniform", "native_dropout",
    }
)  # fmt: skip


def _drawn_dtype(out: Any, first: torch.Tensor | None, name: str) -> torch.dtype | None:
    """The dtype a random op drew at: the tensor an in-place fill wrote (``first``), else its result's (the first
    tensor of a tuple: ``native_dropout``'s output), None when it made no tensor."""
    if name.endswith("_") and first is not None:
        return first.dtype
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        out = out[0]
    return out.dtype if isinstance(out, torch.Tensor) else None


class RandomDraws(torch.overrides.TorchFunctionMode):
    """Inside a native run of ``ref_kernel``: each random op (``RANDOM_OPS``) in order, with the dtype it drew at
    (``drew``), for the float64 run to draw each at the same (``Float64Kept(replay=...)``)."""

    def __init__(self) -> None:
        super().__init__()
        self.drew: list[tuple[str, torch.dtype | None]] = []

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name in RANDOM_OPS:
            first = args[0] if args and isinstance(args[0], torch.Tensor) else None
            self.drew.append((name, _drawn_dtype(out, first, name)))
        return out


# The factories whose float32 result the float64 run keeps in float64 (``Float64Kept``): torch's and a tensor's.
FACTORIES = frozenset(
    {
        "zeros", "ones", "empty", "full", "tensor", "as_tensor", "arange", "linspace", "logspace", "eye",
        "zeros_like", "ones_like", "empty_like", "full_like", "new_zeros", "new_ones", "new_empty", "new_full",
        "new_tensor", "empty_strided",
    }
)  # fmt: skip


def _integer(t: torch.Tensor) -> bool:
    """An integer tensor (not bool, not floating, not complex)."""
    return not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool


class BitView(Exception):
    """The float64 run met ``view(dtype)`` on a float64 tensor: the reference reads the bits of a float32 (or
    lower-precision) value (a bit trick), which a float64 value does not have."""


def _to_float32(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``func(*args, **kwargs)`` is a cast of ``args[0]`` to float32 and nothing else (on its own device, no
    copy asked for, no memory format)."""
    name = getattr(func, "__name__", "")
    if name == "float":
        return len(args) == 1 and not kwargs
    if name not in ("to", "type"):
        return False
    rest = list(args[1:])
    here = args[0].device
    if rest and isinstance(rest[0], (str, torch.device)) and _same_device(rest[0], here):
        rest = rest[1:]
    dtype = kwargs.get("dtype")
    if rest and isinstance(rest[0], torch.dtype):
        dtype, rest = rest[0], rest[1:]
    if "device" in kwargs and not _same_device(kwargs["device"], here):
        return False
    others = {k for k in kwargs if k not in ("dtype", "device", "non_blocking")}
    return dtype == torch.float32 and not rest and not others


def _same_device(d: Any, here: torch.device) -> bool:
    try:
        d = torch.device(d)
    except (RuntimeError, TypeError):
        return False
    return d.type == here.type and (d.index is None or d.index == here.index)


def _tensors_on(obj: Any, device_type: str | None) -> bool:
    """Whether ``obj`` (nested tuples, lists, dicts) holds a tensor (on ``device_type``, when given)."""
    found: list[bool] = []
    _map(obj, lambda t: found.append(isinstance(t, torch.Tensor) and device_type in (None, t.device.type)))
    return any(found)


def _to(x: Any, device: torch.device) -> Any:
    return x.to(device) if isinstance(x, torch.Tensor) else x


class ReferenceRaised(ProblemError):
    """The reference's own code raised (``generate_input``, ``ref_kernel``, ``flops``, ``bytes_moved`` or the module
    at import): the reference is at fault, not the version. ``traceback_text`` is the reference's frames only.

    The message reads ``reference error (<file>:<line> in <function>): <what> raised <Type>: <message>``; the file
    is the snapshot's path, which the ladder shows as ``references/<problem>.py``.
    """

    def __init__(self, message: str, traceback_text: str):
        super().__init__(message)
        self.traceback_text = traceback_text


def reference_error(exc: BaseException, path: Path, what: str) -> ReferenceRaised:
    """Wrap ``exc``, raised by the reference module at ``path`` while running ``what`` (``ref_kernel``,
    ``generate_input(seed=3, n=129)``, ``the import``), into a ``ReferenceRaised`` naming the reference's innermost
    frame (or, for a ``SyntaxError``, its file and line) and keeping the traceback from its first frame in the
    reference's file (the worker's own frames above it left out)."""
    file, line, func = str(path), 0, ""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if f.filename == str(path)]
    if own:
        line, func = own[-1].lineno or 0, own[-1].name
    elif isinstance(exc, SyntaxError) and exc.filename:
        file, line = exc.filename, exc.lineno or 0
    tb_obj = exc.__traceback__
    while tb_obj is not None and tb_obj.tb_frame.f_code.co_filename != str(path):
        tb_obj = tb_obj.tb_next
    tb = "".join(traceback.format_exception(type(exc), exc, tb_obj))
    where = f"{file}:{line}" + (f" in {func}" if func else "") if line else file
    text = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else ""
    if isinstance(exc, torch.OutOfMemoryError):  # the memory was taken before: by the version's calls, likely
        held = torch.cuda.memory_allocated() / 2**30 if torch.cuda.is_available() else 0.0
        message = (
            f"out of memory: {what} ({where}) could not allocate, with {held:.1f} GiB of the device held by this "
            "process (a version whose calls keep what they allocate fills it; the reference's own inputs are "
            f"rarely this large): {text[:200]}"
        )
        return ReferenceRaised(message, tb[-12000:])
    message = f"reference error ({where}): {what} raised {type(exc).__name__}" + (f": {text}" if text else "")
    return ReferenceRaised(message, tb[-12000:])


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


def seed_rngs(seed: int | None, device: str) -> int:
    """``torch.manual_seed(seed)`` (or, with ``seed`` None, ``torch.seed()``: a fresh 64-bit seed from the OS's
    entropy) for the generators a case can draw from: the CPU's default generator, and every CUDA device's once CUDA
    is in use (``device`` is CUDA, or CUDA is initialized); returns the seed. torch's own calls also seed MPS, XPU
    and MTIA, whose lazy seeding formats a Python stack on every call where those devices are absent: 0.65 ms a call
    (torch 2.13, CPU), 2.8 s of a softmax/v2 ladder on the H200 (py-spy, 2026-12-03), where generation runs before
    every timed call. The values drawn are the same as under ``torch.manual_seed``."""
    gen = torch.default_generator
    if seed is None:
        seed = gen.seed()
    else:
        gen.manual_seed(seed)
    if str(device).startswith("cuda") or torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        torch.cuda.manual_seed_all(seed)
    return seed


_OWN_SEED: list[int] = []  # the worker's own seed, drawn from the OS's entropy at its first generation


def outer_rngs(device: str) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
    """The global RNG states outside generation (the CPU's default generator's, and every CUDA device's once CUDA is
    in use), seeded once per process from the OS's entropy (a 64-bit seed) the first time; for ``restore_rngs``."""
    if not _OWN_SEED:
        _OWN_SEED.append(seed_rngs(None, device))
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None  # type: ignore[no-untyped-call]
    return torch.default_generator.get_state(), cuda


def restore_rngs(outer: tuple[torch.Tensor, list[torch.Tensor] | None], device: str) -> None:
    """Put back the states ``outer_rngs`` returned; CUDA generators first used in between get the process's own seed
    (so ``torch.cuda.initial_seed()`` is the same on every call too)."""
    cpu, cuda = outer
    torch.default_generator.set_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)
    elif torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        torch.cuda.manual_seed_all(_OWN_SEED[0])


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
        try:
            self.module = load_module(self.path, f"ktui_reference_{name}_{sha[:12]}", search_dir, "the reference")
        except Exception as exc:
            if isinstance(exc, ProblemError):
                raise
            raise reference_error(exc, self.path, f"importing references/{name}.py") from exc
        missing = [a for a in REQUIRED if not hasattr(self.module, a)]
        if missing:
            raise ProblemError(f"references/{name}.py does not define {', '.join(missing)}")
        self.tests: list[dict[str, Any]] = self._specs("tests")
        self.benchmarks: list[dict[str, Any]] = self._specs("benchmarks") if hasattr(self.module, "benchmarks") else []
        self.tolerance: dict[str, Any] = dict(getattr(self.module, "tolerance", {}) or {})
        self.float64 = bool(getattr(self.module, "reference_float64", True))
        self.outputs = tuple(getattr(self.module, "outputs", ()) or ())
        self.inplace = tuple(getattr(self.module, "inplace", ()) or ())
        both = [k for k in self.inplace if k in self.outputs]
        if both:
            raise ProblemError(
                f"references/{name}.py: {both[0]!r} is in both outputs and inplace: an output buffer's contents are "
                "the kernel's to write (ktui fills it with NaN first), an in-place input's are read first"
            )
        self.structured = tuple(getattr(self.module, "structured_inputs", ()) or ())
        self.distributions = list(getattr(self.module, "input_distributions", None) or DISTRIBUTIONS)
        unknown = [d for d in self.distributions if d not in DISTRIBUTIONS]
        if unknown:
            raise ProblemError(f"references/{name}.py: unknown input_distributions {unknown}; known: {DISTRIBUTIONS}")
        self.contiguous_only = bool(getattr(self.module, "contiguous_only", False))
        self.allow_nan = bool(getattr(self.module, "allow_nan", False))
        self.grad_paths: frozenset[str] = frozenset()  # the inputs the last generate_input made requiring grad
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
            # a version may compute in torch alone, launching no Triton/CuTeDSL kernel (cases.md hidden-torch)
            "allow_torch": bool(getattr(self.module, "allow_torch", False)),
        }

    # -- data --------------------------------------------------------------------------------------------------
    def generate(self, seed: int, spec: dict[str, Any], device: str) -> Any:
        """``generate_input(seed, **spec)`` on ``device``, with the global RNGs seeded by ``seed`` first and put back
        as they were after (``outer_rngs``): outside generation they hold the worker's own stream, seeded once from
        the OS's entropy, as in a process that seeded once.

        The case seed must not stay in torch's global state, where a kernel could read it (``torch.initial_seed() <
        2**31`` told a ktui call from real use: red team round 5); nor may the global seed change from call to call
        (reseeded from the OS's entropy after every generation, it did: a weight cache trusted while
        ``torch.initial_seed()`` stayed the same repacked its weight before every checked call and served a stale
        one in real use; red team round 19, W2).

        Raises:
            ProblemError: generate_input raised (the message names the spec and seed).
        """
        outer = outer_rngs(device)
        # a setting generate_input changes is put back: the kernel's calls never see it (the generators' states are
        # ``outer``'s, read once)
        settings = global_state.Saved(global_state.snapshot(host_rngs=False), *outer)
        seed_rngs(seed, device)
        try:
            with torch.device(device), GeneratorDevice(device):
                data = self.module.generate_input(seed, **spec)
        except Exception as exc:
            args = ", ".join([f"seed={seed}", *(f"{k}={v!r}" for k, v in spec.items())])
            raise reference_error(exc, self.path, f"generate_input({args})") from exc
        finally:
            restore_rngs(outer, device)
            global_state.settle(settings)
        hidden = opaque_tensors(data)
        if hidden:
            raise ProblemError(f"references/{self.name}.py: generate_input returns {hidden}")
        # Inputs are data: a leaf made with requires_grad=True (as training code makes it) is detached (the same
        # memory), so ktui's refills, swaps and layouts can write it and no kernel sees an autograd graph (red team
        # round 17: the near-duplicate's in-place swap raised on such a leaf, and the version was blamed).
        # The paths of those leaves are kept (``grad_paths``): the ``requires_grad`` cases give them back their
        # requires_grad for the call (``ktui.worker.grad_modes``; red team round 25, #4).
        self.grad_paths = frozenset(
            path for path, x in flatten(data, "in") if isinstance(x, torch.Tensor) and x.requires_grad
        )
        return _map(data, lambda x: x.detach() if isinstance(x, torch.Tensor) and x.requires_grad else x)

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

    def inplace_tensors(self, data: Any) -> dict[Any, torch.Tensor]:
        """The tensors inside ``data`` that the module declared as read and written in place (``inplace``), by key:
        each is an input (refilled, laid out and guarded as one) whose contents after the call are judged as an
        output, against the reference's after its own call.

        Raises:
            ProblemError: an ``inplace`` entry that ``data`` does not have, or that is not a tensor.
        """
        out: dict[Any, torch.Tensor] = {}
        for key in self.inplace:
            try:
                t = data[key]
            except (KeyError, IndexError, TypeError):
                raise ProblemError(
                    f"references/{self.name}.py: inplace names {key!r}, which data does not have"
                ) from None
            if not isinstance(t, torch.Tensor):
                raise ProblemError(f"references/{self.name}.py: inplace entry {key!r} is not a tensor")
            out[key] = t
        return out

    def check_structured(self, data: Any) -> None:
        """That every ``structured_inputs`` entry names an input of ``data`` (an index of tuple data, a key of dict
        data), as ``outputs`` does.

        Raises:
            ProblemError: an entry ``data`` does not have.
        """
        for key in self.structured:
            try:
                data[key]
            except (KeyError, IndexError, TypeError):
                raise ProblemError(
                    f"references/{self.name}.py: structured_inputs names {key!r}, which data does not have"
                ) from None

    def reference(self, data: Any, keep: list[Any] | None = None) -> tuple[Any, str]:
        """The reference output, in float64 where the op allows it; with ``keep`` (a list), the copy of ``data`` it
        ran on is appended to it (its in-place inputs as the reference left them).

        Returns ``(output, precision)`` where precision is ``float64`` or ``native`` (with the reason appended when
        float64 was tried and raised). Inputs are cloned first: the reference never writes the caller's data.
        """
        if self.float64 and _has_float(data):
            try:
                try:
                    out, up = self.run_float64(data)
                except BitView:  # the reference reads a float32 cast's bits: its casts run as written, on inputs
                    up = _map(data, _upcast)  # upcast again (the first run may have written ``up``)
                    with Float64Kept(keep_casts=False):
                        out = self.module.ref_kernel(up)
            except BitView:  # it reads the bits of its inputs (or of values computed from them): native only
                return self.reference_native(data, keep), "native (the reference reads its float inputs' bits)"
            except Exception as exc:
                note = f"native (float64 raised {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:120]})"
                return self.reference_native(data, keep), note
            if keep is not None:
                keep.append(up)
            return out, "float64"
        return self.reference_native(data, keep), "native"

    def run_float64(
        self, data: Any, prepare: Callable[[Any], object] | None = None, call: Callable[[Any], Any] | None = None
    ) -> tuple[Any, Any]:
        """``ref_kernel`` on ``data`` upcast to float64 under ``Float64Kept`` (the float64 truth's run; ``prepare``
        is given the upcast data first: the training ops' gradients make its leaves require grad; ``call`` runs the
        reference on it, ``ref_kernel`` by default); returns (output, the upcast data). Where a random op drew at
        float64 there (``torch.rand(x.shape, dtype=x.dtype, generator=g)``, ``F.dropout(x)``: red team round 35, #1),
        the native run's draws are read (``RandomDraws``) and the run made again drawing each random op at its own
        dtype: float64 takes another sequence from the same generator. The gradients' truth runs here too (round
        35b, #1: without the replay a dropout's float64 gradient used another mask, the native one looked 100% off
        and its allowance let any gradient pass).

        Raises:
            BitView: the reference reads a float64 tensor's bits; and what ``ref_kernel`` raises."""
        run = call if call is not None else self.module.ref_kernel

        def once(replay: list[tuple[str, torch.dtype | None]] | None) -> tuple[Any, Any, Float64Kept]:
            kept = Float64Kept(replay=replay)
            up = _map(data, kept.upcast)
            if prepare is not None:
                prepare(up)
            with kept:
                return run(up), up, kept

        out, up, kept = once(None)
        if any(d == torch.float64 for _, d in kept.drew):
            draws = RandomDraws()
            with draws:
                self.module.ref_kernel(_map(data, _clone))
            if draws.drew != kept.drew:
                out, up, _ = once(draws.drew)
        return out, up

    def reference_native(self, data: Any, keep: list[Any] | None = None) -> Any:
        """``ref_kernel`` on a copy of ``data`` at its own precision (the expected dtypes and shapes); with ``keep``
        (a list), the copy it ran on is appended to it (to see which of its tensors the output is).

        Raises:
            ReferenceRaised: ref_kernel raised (the message names the reference's file, line and function).
        """
        copy = _map(data, _clone)
        if keep is not None:
            keep.append(copy)
        return self._own(f"ref_kernel on {_shapes(data)}", self.module.ref_kernel, copy)

    def _own(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, a function of the reference module; an exception it raises becomes a
        ``ReferenceRaised`` naming ``what`` and the reference's line."""
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise reference_error(exc, self.path, what) from exc

    def flops(self, spec: dict[str, Any]) -> float | None:
        """The module's ``flops(**spec)`` (floating-point operations of one call), or None when it has none."""
        return float(self._own("flops", self._flops, **spec)) if self._flops else None

    def bytes_moved(self, spec: dict[str, Any]) -> float | None:
        """The module's ``bytes_moved(**spec)`` (bytes one call must read and write), or None when it has none."""
        return float(self._own("bytes_moved", self._bytes, **spec)) if self._bytes else None


def policy_dtype(data: Any, expected: Any) -> str:
    """The dtype whose tolerance applies to a case as a whole: the lowest-precision floating dtype (by machine
    epsilon) among the tensors of the expected output, whatever the inputs' precision (an fp32 output computed from
    bf16 inputs is judged by fp32's rules: red team, "an fp32 output from a bf16 input judged by bf16 rules"); the
    output's dtype when none of them is floating (integers compare exactly); with no tensor in ``expected`` (``()``:
    the roofline's use), the lowest among the inputs ``data``; float64 when there is no tensor at all. Each output
    leaf is judged by its own dtype (``output_dtype``): this one names the case and covers numbers."""
    outs = [_part_dtype(leaf.dtype) for _, leaf in flatten(expected) if isinstance(leaf, torch.Tensor)]
    dts = outs or [_part_dtype(leaf.dtype) for _, leaf in flatten(data) if isinstance(leaf, torch.Tensor)]
    floats = [dt for dt in dts if dt.is_floating_point]
    if floats:
        return dtype_name(max(floats, key=lambda dt: torch.finfo(dt).eps))
    return dtype_name(dts[-1]) if dts else "float64"


def output_dtype(leaf: Any, default: str) -> str:
    """The dtype whose tolerance judges one expected output leaf: a floating or complex tensor's own dtype
    (``complex64``: ``tolerance.resolve`` gives it its parts' defaults and the reference's override under either
    name); a Python float or complex number float64's when ``default`` (the case's ``policy_dtype``) is float64,
    else float32's (a number is read off a computation torch ran in float32 at least: red team round 24, F5, a loss
    0.5% off passed under the bf16 inputs' rules; F6, one beside an int64 output was held exact); else ``default``
    (integers and bools, which compare exactly anyway)."""
    if isinstance(leaf, torch.Tensor) and (leaf.is_floating_point() or leaf.is_complex()):
        return dtype_name(leaf.dtype)
    if isinstance(leaf, (float, complex)):
        return "float64" if default == "float64" else "float32"
    return default


_PARTS = {torch.complex32: torch.float16, torch.complex64: torch.float32, torch.complex128: torch.float64}


def _part_dtype(dt: torch.dtype) -> torch.dtype:
    """A complex dtype's real and imaginary parts' dtype; any other dtype itself."""
    return _PARTS.get(dt, dt)


def _shapes(data: Any) -> str:
    """``(float32[129], float32[129])``: the data's tensors as dtype and shape, other leaves by their type (never
    their repr: a reference error message names the inputs without printing them), at most 6 leaves."""
    leaves = flatten(data)
    parts = [
        f"{dtype_name(t.dtype)}[{', '.join(str(d) for d in t.shape)}]"
        if isinstance(t, torch.Tensor)
        else type(t).__name__
        for _, t in leaves[:6]
    ]
    return "(" + ", ".join(parts) + (", ..." if len(leaves) > 6 else "") + ")"


def _has_float(data: Any) -> bool:
    return any(isinstance(x, torch.Tensor) and x.is_floating_point() for _, x in flatten(data))


def _clone(x: Any) -> Any:
    if isinstance(x, torch.Generator):  # each run draws from the state the inputs hold
        return copy_generator(x)
    return x.clone() if isinstance(x, torch.Tensor) else x


def _upcast(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(torch.float64) if x.is_floating_point() else x.clone()
    return _clone(x)


def _map(obj: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(obj, tuple):
        items = [_map(v, fn) for v in obj]
        return type(obj)(*items) if hasattr(type(obj), "_fields") else tuple(items)  # a named tuple stays one
    if isinstance(obj, list):
        return [_map(v, fn) for v in obj]
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    fields = dataclass_fields(obj)
    if fields is not None:
        return with_fields(obj, {k: _map(v, fn) for k, v in fields})
    return fn(obj)


def opaque_tensors(data: Any) -> str:
    """'' when every tensor of ``data`` is a leaf of ``flatten`` and every dataclass in it can be walked, else what
    is wrong where, and what to do, as a phrase that follows ``generate_input returns``:

    - a tensor inside an object that is not a tuple, list, dict, named tuple, dataclass or ``types.SimpleNamespace``
      (a plain class): ``an object of class ns.Config at in[1] holding a tensor in its attribute .w ...``;
    - a Python int or float there (not a bool; an ``enum`` member is a value, not a record): the scalars cases move
      the numbers they reach, and one they cannot reach a kernel may take as a constant (red team round 17: a
      ``cfg.alpha`` that was never moved);
    - a tensor in an attribute of a dataclass that is not one of its fields (set in ``__post_init__``, say): every
      walk over the inputs reaches a dataclass's fields only;
    - a dataclass with a field that holds no value (a ``field(init=False)`` never assigned): ktui reads every field
      of an input (and would otherwise see the record as an opaque object whose ``repr`` raises).

    A tensor no walk reaches would escape every check of the inputs: the guard bands, the poison, the refills and
    the judge's comparison of the inputs after the call."""
    reach = (
        "ktui reaches tensors in tuples, lists, dicts, named tuples, dataclasses and SimpleNamespaces only, and one "
        "it cannot reach it cannot guard or check for writes; put it in one of those"
    )
    moves = (
        "ktui moves the numbers it reaches (the scalars cases: a kernel that takes one as a constant fails) and "
        "cannot reach this one; put it in a tuple, list, dict, named tuple, dataclass or SimpleNamespace"
    )
    for path, node in _nodes(data, "in"):
        unset = unset_fields(node)
        if unset:
            return (
                f"a dataclass of class {class_name(node)} at {path} whose field .{unset[0]} holds no value (a "
                "field(init=False) never assigned?): ktui reads every field of an input; assign it in __post_init__ "
                "or make it a ClassVar"
            )
        fields = dataclass_fields(node)
        if fields is not None:
            names = {k for k, _ in fields}
            for name, value in instance_attrs(node).items():
                if name not in names and _holds_tensor(value):
                    return (
                        f"a dataclass of class {class_name(node)} at {path} holding a tensor in its attribute "
                        f".{name}, which is not one of its fields: every check walks a dataclass's fields only; "
                        "declare it as a field"
                    )
            continue
        if isinstance(node, (tuple, list, dict)) or _plain(node):
            continue
        where = f"an object of class {class_name(node)} at {path}"
        for name, value in instance_attrs(node).items():
            if _holds_tensor(value):
                return f"{where} holding a tensor in its attribute .{name}: {reach}"
        if isinstance(node, enum.Enum):
            continue
        for name, value in instance_attrs(node).items():
            number = _held_number(value)
            if number:
                return f"{where} holding a{'n' * (number == 'int')} {number} in its attribute .{name}: {moves}"
    return ""


def _held_number(value: Any) -> str:
    """'int' or 'float' when ``value`` holds a Python int or float (not a bool) or a NumPy scalar of one, else ''."""
    np = sys.modules.get("numpy")
    for _, leaf in flatten(value):
        if isinstance(leaf, bool) or (np is not None and isinstance(leaf, np.bool_)):
            continue
        if isinstance(leaf, float) or (np is not None and isinstance(leaf, np.floating)):
            return "float"
        if isinstance(leaf, int) or (np is not None and isinstance(leaf, np.integer)):
            return "int"
    return ""


def _plain(x: Any) -> bool:
    return isinstance(x, (torch.Tensor, int, float, complex, str, bytes, type(None), torch.dtype, torch.device))


def _holds_tensor(value: Any) -> bool:
    return any(isinstance(t, torch.Tensor) for _, t in flatten(value))


def _nodes(obj: Any, path: str, depth: int = 0) -> list[tuple[str, Any]]:
    """Every node of ``obj`` with its path (``flatten``'s): the containers ``flatten`` walks (tuples, lists, dicts,
    dataclasses) and the leaves, a container before what it holds; a dataclass with an unset field is a node whose
    fields are not walked (``opaque_tensors`` names it)."""
    out: list[tuple[str, Any]] = [(path, obj)]
    if depth > 64:  # (``flatten`` raises on it: the reference's data nests too deep)
        return out
    cls = type(obj)
    if issubclass(cls, (tuple, list)):
        for i, v in enumerate(tuple.__iter__(obj) if issubclass(cls, tuple) else list.__iter__(obj)):
            out += _nodes(v, f"{path}[{i}]", depth + 1)
    elif issubclass(cls, dict):
        for k, v in dict.items(obj):
            out += _nodes(v, f"{path}[{key_text(k)}]", depth + 1)
    else:
        for k, v in dataclass_fields(obj) or []:
            out += _nodes(v, f"{path}.{k}", depth + 1)
    return out


def clone_data(data: Any) -> Any:
    """A deep copy of every tensor in ``data`` (same structure)."""
    return _map(data, _clone)


def inputs_only(problem: Problem, data: Any) -> Any:
    """``data`` without the declared output buffers and in-place inputs (``outputs``, ``inplace``): what must not
    change during a call. A dict loses those keys; a tuple or list keeps its length with None in their places (so
    ``in[1]`` names the same input in every message), except output buffers at its end, which are dropped."""
    declared = (*problem.outputs, *problem.inplace)
    if not declared:
        return data
    if isinstance(data, dict):
        return {k: v for k, v in data.items() if k not in declared}
    if isinstance(data, (tuple, list)):
        n = len(data)
        drop = {k % n for k in declared if isinstance(k, int)}
        kept = [None if i in drop else v for i, v in enumerate(data)]
        while kept and len(kept) - 1 in drop and kept[-1] is None:  # trailing declared entries: dropped, as before
            kept.pop()
            drop.discard(len(kept))
        return tuple(kept)
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


def trial_device(problem: Problem, device: str) -> str:
    """Where the trials of the integer-changing distributions (``fuzz.INT_DISTS``) and of the int arguments' moves
    (``arguments.argument_moves``) run: on the CPU when the reference runs there (its native inputs of the smallest
    test spec), else on ``device``. On a GPU an index out of range is a device-side assert, which loses the judge's
    CUDA context for good (red team round 12's RoPE reference on the H200: ``intrange`` positions past its cos/sin
    cache, and every case after it failed with "CUDA error: device-side assert triggered"; on the H100, 2026-12-06,
    red team 22's cross-entropy reference with its ``ignore_index`` moved by -1: the labels' padding positions -100
    became a class out of range); on the CPU it is an IndexError, the trial's answer. Cached on the problem."""
    if device == "cpu":
        return device
    cached: str | None = getattr(problem, "_trial_device", None)
    if cached is not None:
        return cached
    from ktui.protocol import spec_size
    from ktui.worker.tensors import flatten

    smallest = min(problem.tests, key=spec_size)
    where = device
    try:
        data = problem.generate(1, smallest, "cpu")
        leaves = [t for _, t in flatten(data) if isinstance(t, torch.Tensor)]
        ints = any(not t.is_floating_point() and not t.is_complex() for t in leaves)
        if ints and all(t.device.type == "cpu" for t in leaves):  # no integers: nothing these trials change
            out = [t for _, t in flatten(problem.reference_native(data)) if isinstance(t, torch.Tensor)]
            if all(t.device.type == "cpu" for t in out):  # a reference that moves its data to the GPU itself
                where = "cpu"  # is not on the CPU, whatever it was asked
    except Exception:
        pass
    setattr(problem, "_trial_device", where)  # noqa: B010 - a cache on the loaded problem
    return where
