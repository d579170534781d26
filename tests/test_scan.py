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
