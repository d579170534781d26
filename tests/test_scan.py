"""The static scan: what it reports for the habits cases.md warns about, and that honest kernels stay quiet."""

from __future__ import annotations

import pytest

from ktui.core.inspect.scan import scan_source

from .conftest import ROOT

SOURCE = """
import threading
import time
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

time.perf_counter = lambda: 0.0
torch.cuda.Event.elapsed_time = lambda self, end: 1e-3


@triton.jit
def k(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) + 1)


def custom_kernel(data):
    a, b = data
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        out = torch.empty_like(a)
    try:
        k[(1,)](out)
    except Exception:
        return torch.softmax(a, dim=-1)
    setattr(torch, "allclose", lambda *x, **y: True)
    return F.relu(a @ b) + torch.matmul(a, b)
"""


def kinds(findings):
    return [(f.kind, f.line) for f in findings]


def test_every_habit_is_found_with_its_line():
    found = scan_source(SOURCE)
    text = [f.message() for f in found]
    assert ("thread", 2) in kinds(found)
    assert ("monkeypatch", 9) in kinds(found) and ("monkeypatch", 10) in kinds(found)
    assert any(f.kind == "stream" and f.line == 20 and "torch.cuda.Stream" in f.text for f in found)
    assert any(f.kind == "stream" and f.line == 21 for f in found)
    assert any(f.kind == "fallback" and "torch.softmax" in f.text for f in found)
    assert any(f.kind == "monkeypatch" and "setattr(torch" in f.text for f in found)
    assert "falls back to torch for F.relu (line 28)" in text
    assert "falls back to torch for torch.matmul (line 28)" in text
    assert "falls back to torch for the @ operator (line 28)" in text
    # allocations are not compute, device code is not scanned
    assert not any("empty_like" in t for t in text)
    assert not any(f.line in (15, 16) for f in found)


@pytest.mark.parametrize("path", sorted((ROOT / "kernels").glob("*/*.py")))
def test_the_examples_are_clean(path):
    assert scan_source(path.read_text()) == []


def test_a_module_that_does_not_parse_gives_no_findings():
    assert scan_source("def custom_kernel(:\n") == []


HIDDEN = """
import math
import importlib
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    tl.store(x_ptr, tl.sum(tl.load(x_ptr + tl.arange(0, 16)), axis=0))


def custom_kernel(data):
    x, y = data
    a = x.softmax(-1)
    b = x[:3].float().sum()
    c = math.exp(1.0) + float(np.sum([1]))
    d = getattr(torch, "matmul")(x, y)
    e = getattr(torch, "empty_like")(x)
    m = importlib.import_module("torch")
    eval("1 + 1")
    return torch.empty(triton.cdiv(x.numel(), 2), device=x.device).view(-1).contiguous()
"""


def test_fallbacks_that_avoid_the_torch_name_are_still_reported():
    got = {(f.kind, f.line, f.text) for f in scan_source(HIDDEN)}
    assert got == {
        ("dynamic", 3, "imports importlib: modules loaded by name hide what the kernel calls"),
        ("torch-op", 17, "falls back to torch for the tensor method .softmax()"),
        ("torch-op", 18, "falls back to torch for the tensor method .sum()"),
        ("torch-op", 20, "falls back to torch for getattr(torch, 'matmul')"),
        ("dynamic", 22, "calls importlib.import_module: code built at run time escapes this scan"),
        ("dynamic", 23, "calls eval: code built at run time escapes this scan"),
    }


def test_torch_imported_by_name_and_reaching_the_reference_are_reported():
    src = (
        "import sys\n"
        "import references.softmax\n"
        "from torch.nn.functional import softmax as row_normalize\n"
        "from torch import empty, matmul\n"
        "import torch\n"
        "def custom_kernel(x):\n"
        "    m = [v for k, v in sys.modules.items() if k.startswith('ktui_reference_')][0]\n"
        "    f = vars(torch)['softmax']\n"
        "    g = torch.__dict__['exp']\n"
        "    return row_normalize(x, dim=-1), empty(3)\n"
    )
    got = {(f.kind, f.line, f.text) for f in scan_source(src)}
    assert got == {
        ("monkeypatch", 2, "imports references.softmax: a kernel has no business with ktui or the reference"),
        ("torch-op", 3, "falls back to torch for torch.nn.functional.softmax (imported as row_normalize)"),
        ("torch-op", 4, "falls back to torch for torch.matmul (imported as matmul)"),
        ("introspection", 7, "reads sys.modules: can reach the reference module or ktui's"),
        ("torch-op", 8, "reads vars(torch): torch functions looked up by name"),
        ("torch-op", 9, "reads torch.__dict__: torch functions looked up by name"),
    }


# -- data flow (ktui.core.inspect.flow) ---------------------------------------------------------------------------
NEW_KINDS = {"torch-alias", "torch-operator", "frame-walk", "loaded-modules", "stream-alias", "patch-alias"}
TORCH_KINDS = {"torch-op", "fallback", "torch-alias", "torch-operator"}


def flow(src: str) -> set[tuple[str, int, str]]:
    return {(f.kind, f.line, f.text) for f in scan_source(src) if f.kind in NEW_KINDS}


def test_torch_reached_through_aliases_operators_and_operator_is_followed_to_the_return_value():
    src = (
        "import functools\n"  # 1
        "import operator\n"
        "import torch\n"
        "from operator import mul as times\n"
        "_f = torch.softmax\n"  # 5
        "t = torch\n"
        "ops = [torch.exp, torch.log]\n"
        "def _helper(u, v):\n"
        "    return u - v\n"
        "def custom_kernel(data):\n"  # 10
        "    a, b = data\n"
        "    n = a.shape[0] * 2 + a.numel() // 3\n"
        "    out = torch.empty_like(a)\n"
        "    g = a.softmax\n"
        "    if n > 100:\n"  # 15
        "        return _f(a, -1)\n"
        "    if n > 50:\n"
        "        return t.nn.functional.relu(a)\n"
        "    if n > 40:\n"
        "        return operator.add(a, b), times(a, b)\n"  # 20
        "    if n > 30:\n"
        "        return functools.reduce(operator.mul, data)\n"
        "    if n > 20:\n"
        "        return _helper(a, b)\n"
        "    if n > 10:\n"  # 25
        "        out.copy_(-a)\n"
        "        return out\n"
        "    if n > 5:\n"
        "        return ops[0](a), g(-1), sum(data)\n"
        "    out += a\n"  # 30
        "    return out\n"
    )
    assert flow(src) == {
        ("torch-alias", 16, "falls back to torch for torch.softmax through _f"),
        ("torch-operator", 20, "computes operator.add(a, b) in torch: operator.add on tensors"),
        ("torch-operator", 20, "computes times(a, b) in torch: operator.mul (as times) on tensors"),
        ("torch-operator", 22, "computes functools.reduce(operator.mul, data) in torch: operator.mul on tensors"),
        ("torch-operator", 9, "computes u - v in torch: the - operator on tensors"),
        ("torch-operator", 26, "computes -a in torch: the unary - on a tensor"),
        ("torch-alias", 29, "falls back to torch for torch.exp through ops[0]"),
        ("torch-alias", 29, "falls back to torch for torch.log through ops[0]"),  # either, as far as a scan knows
        ("torch-alias", 29, "falls back to torch for the tensor method .softmax() through g"),
        ("torch-operator", 29, "computes sum(data) in torch: sum() on tensors"),
        ("torch-operator", 30, "computes out += a in torch: the + operator on tensors"),
    }
    # t.nn.functional.relu(a) ends in a tensor method's name: the name rules report that line (as .relu())
    assert ("torch-op", 18) in kinds(scan_source(src))


def test_host_arithmetic_on_sizes_and_torch_not_returned_are_not_flagged():
    src = (
        "import torch, triton\n"
        "_alloc = torch.empty\n"
        "def _grid(n, block):\n"
        "    return (n + block - 1) // block\n"
        "def custom_kernel(data):\n"
        "    x, y, alpha = data\n"
        "    rows, cols = x.shape\n"
        "    scale = alpha * 2.0\n"
        "    assert x.shape == y.shape and x.dtype == torch.float32 and x.stride(-1) == 1\n"
        "    out = _alloc((rows, cols), device=x.device)\n"
        "    blocks = _grid(rows * cols, 128) if cols > 1 else 1\n"
        "    k[(blocks,)](x, y, out, scale, rows * cols, x.stride(0) * 2)\n"
        "    return out.view(rows, cols)[:, :cols]\n"
    )
    assert flow(src) == set()


def test_loaded_modules_frames_streams_and_patches_under_other_names_are_reported():
    src = (
        "import sys as _s\n"  # 1
        "from gc import get_referrers as refs_of\n"
        "import time as clock\n"
        "import inspect\n"
        "import torch\n"  # 5
        "from sys import modules\n"
        "from traceback import extract_stack as stack_now\n"
        "from torch.cuda import Stream, stream\n"
        "T = torch.Tensor\n"
        "def custom_kernel(x):\n"  # 10
        "    m = vars(_s)['modules']\n"
        "    r = getattr(_s, 'modules')\n"
        "    objs = refs_of(x)\n"
        "    frames = stack_now()\n"
        "    caller = inspect.currentframe().f_back.f_locals, frames[0].f_back, x.__traceback__.tb_frame\n"  # 15
        "    side = Stream()\n"
        "    with stream(side):\n"
        "        pass\n"
        "    clock.perf_counter = lambda: 0.0\n"
        "    T.__sub__ = lambda a, b: a\n"  # 20
        "    setattr(clock, 'time', lambda: 0.0)\n"
        "    m['ktui.worker.tensors'].hash_data = None\n"
        "    vars(clock)['monotonic'] = None\n"
        "    return x\n"
    )
    loaded = "can call the reference module or ktui's"
    patch = "patching torch, time, triton or ktui fools later checks"
    frames = "a kernel that looks at its callers can tell a check from real use"
    stream = "work on another stream escapes events on the current one"
    assert flow(src) == {
        ("loaded-modules", 6, f"reaches sys.modules through from sys import modules: {loaded}"),
        ("loaded-modules", 11, f"reaches sys.modules through vars(_s)['modules']: {loaded}"),
        ("loaded-modules", 12, f"reaches sys.modules through getattr(_s, 'modules'): {loaded}"),
        ("loaded-modules", 13, f"reaches every live object through gc.get_referrers (as refs_of): {loaded}"),
        ("frame-walk", 14, f"walks the call stack with traceback.extract_stack (as stack_now): {frames}"),
        ("stream-alias", 16, f"calls torch.cuda.Stream (as Stream): {stream}"),
        ("stream-alias", 17, f"calls torch.cuda.stream (as stream): {stream}"),
        ("patch-alias", 19, f"assigns time.perf_counter through clock: {patch}"),
        ("patch-alias", 20, f"assigns torch.Tensor.__sub__ through T: {patch}"),
        ("patch-alias", 21, f"patches time.time through clock: {patch}"),
        (
            "patch-alias",
            22,
            f"assigns the loaded module ktui.worker.tensors.hash_data through m['ktui.worker.tensors']: {patch}",
        ),
        ("patch-alias", 23, f"patches time.monotonic through vars(clock)['monotonic']: {patch}"),
    }
    # inspect.currentframe() is the name rules' (introspection, line 15): that line is reported once, by them
    assert ("introspection", 15) in kinds(scan_source(src))
    walk = "def custom_kernel(x):\n    f = g()\n    return f.f_back.f_locals, x.__traceback__.tb_frame\n"
    assert flow(walk) == {
        ("frame-walk", 3, f"reads a frame's f_back: {frames}"),
        ("frame-walk", 3, f"reads a frame's f_locals: {frames}"),
        ("frame-walk", 3, f"reads a frame's tb_frame: {frames}"),
    }


def test_what_the_name_rules_report_is_not_reported_again():
    src = (
        "import sys, time, torch\n"
        "def custom_kernel(x):\n"
        "    time.perf_counter = lambda: 0.0\n"
        "    m = sys.modules\n"
        "    s = torch.cuda.Stream()\n"
        "    f = sys._getframe(1)\n"
        "    return torch.softmax(x, -1) + x.exp()\n"
    )
    found = scan_source(src)
    assert not [f for f in found if f.kind in NEW_KINDS]
    assert {f.kind for f in found} == {"monkeypatch", "introspection", "stream", "torch-op"}


def _case_kernels():
    return sorted((ROOT / "tests" / "cases" / "kernels").glob("*.py"))


@pytest.mark.parametrize("path", [p for p in _case_kernels() if "_bad" not in p.stem], ids=lambda p: p.stem)
def test_honest_twins_have_no_data_flow_findings(path):
    """No false alarms: the honest twins (every case kernel not named ``*_bad``) have no finding of the data-flow
    kinds, except torch compute in a twin that is written in torch by design (the name rules already find it)."""
    found = scan_source(path.read_text())
    written_in_torch = any(f.kind in {"torch-op", "fallback"} for f in found)
    allowed = {"torch-alias", "torch-operator"} if written_in_torch else set()
    assert [f.message() for f in found if f.kind in NEW_KINDS - allowed] == []


def test_the_bad_cases_of_hidden_torch_are_each_found():
    expected = {
        "torch_operator_bad": "torch-operator",
        "operator_module_bad": "torch-operator",
        "torch_alias_bad": "torch-alias",
        "loaded_reference_bad": "loaded-modules",
        "stack_walk_bad": "frame-walk",
        "stream_alias_bad": "stream-alias",
        "patch_alias_bad": "patch-alias",
    }
    for stem, kind in expected.items():
        found = scan_source((ROOT / "tests" / "cases" / "kernels" / f"{stem}.py").read_text())
        assert kind in {f.kind for f in found}, stem


def test_the_region_markers_are_the_one_part_of_ktui_a_kernel_may_import():
    """``ktui.trace`` (its Triton and CuTeDSL markers) compiles to nothing outside the trace rung: importing it is
    not tampering. The tracer's state and the rest of ktui stay flagged, however they are imported."""
    src = (
        "import ktui.trace.triton as kt\n"
        "import ktui.trace.cute\n"
        "from ktui.trace import triton, cute\n"
        "from ktui.trace.triton import region, begin\n"
        "from ktui.trace import state\n"
        "import ktui.trace.state\n"
        "from ktui.trace.ptx import marker\n"
        "import ktui\n"
    )
    got = {(f.kind, f.line) for f in scan_source(src)}
    assert got == {("monkeypatch", 5), ("monkeypatch", 6), ("monkeypatch", 7), ("monkeypatch", 8)}
    for example in ("matmul/v2", "softmax/v1", "vector_add/v3"):
        found = [f for f in scan_source((ROOT / "kernels" / f"{example}.py").read_text()) if "ktui" in f.text]
        assert found == [], example


def test_a_dtype_looked_up_by_name_is_no_torch_compute():
    """New-user trial 19: ``dtype=getattr(torch, dtype)`` was reported as a torch fallback on every run."""
    src = (
        "import torch\n"
        "def custom_kernel(x, dtype):\n"
        "    out = torch.empty(3, dtype=getattr(torch, dtype))\n"
        "    y = x.to(getattr(torch, dtype))\n"
        "    return getattr(torch, 'mat' + 'mul')(y, out)\n"
    )
    assert [(f.kind, f.line, f.text) for f in scan_source(src)] == [
        ("torch-op", 5, "falls back to torch for getattr(torch, '?')")
    ]


def test_a_torch_op_on_a_number_made_a_tensor_says_what_it_likely_is():
    """New-user trial 22, F3: ``float(torch.log2(torch.tensor(base, dtype=torch.float64)))``, a host-side number,
    read "falls back to torch for torch.log2" as if the kernel computed in torch; the warning stays (a name does not
    say number or tensor) and says what it likely is and what to use."""
    src = (
        "import torch\n"
        "def custom_kernel(data):\n"
        "    x, base = data\n"
        "    scale = float(torch.log2(torch.tensor(base, dtype=torch.float64)))\n"
        "    return torch.exp(x) * scale\n"
    )
    texts = {f.line: f.text for f in scan_source(src) if f.kind == "torch-op"}
    assert texts == {
        4: "falls back to torch for torch.log2 on tensor(base): if that is a Python number, `math` computes it on the "
        "host without torch",
        5: "falls back to torch for torch.exp",
    }


def test_a_call_of_an_operator_the_module_registers_is_its_own_kernel_not_torch():
    """Red team round 23, F7: a Triton kernel registered with ``torch.library.triton_op("rt23lib::axpy", ...)`` and
    called as ``torch.ops.rt23lib.axpy`` (PyTorch's documented route) was warned about as "falls back to torch"; an
    operator of a namespace the module does not register still is."""
    src = (ROOT / "tests" / "cases" / "kernels" / "rt23_triton_op_good.py").read_text()
    assert [f for f in scan_source(src) if f.kind.startswith("torch")] == []
    other = src.replace('"rt23lib::axpy"', '"otherlib::axpy"')
    assert [(f.kind, f.text) for f in scan_source(other) if f.kind.startswith("torch")] == [
        ("torch-op", "falls back to torch for torch.ops.rt23lib.axpy")
    ]
