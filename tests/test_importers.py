"""The KernelBench and GPU MODE importers, ``ktui export gpumode|kernelbench`` and ``ktui eval`` (issue 14).

Every fixture problem is written here, in the upstream formats (no upstream file is copied): a KernelBench level-1
elementwise op, a KernelBench ``nn.Linear`` model, a level-4-style Hugging Face file, and a GPU MODE problem set
(``utils.py``, ``task.py``, ``task.yml``, a ``reference.py`` that names ``device="cuda"``, ``solutions/``). The
ladder runs on the CPU on the shared worker pool.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ktui.cli import main
from ktui.core.store import ResultStore
from ktui.core.workspace import Workspace
from ktui.importers import evaluate, gpumode, kernelbench
from ktui.importers.common import ImporterError, read_meta

KB_SCALE = '''\
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = 2 x + 1, elementwise."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2.0 + 1.0


batch_size = 4096
dim = 8192


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
'''

KB_LINEAR = '''\
import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x W^T + b)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.fc(x))


batch_size = 128
in_features = 256
out_features = 64
input_shape = (in_features,)


def get_inputs():
    return [torch.randn(batch_size, *input_shape)]


def get_init_inputs():
    return [in_features, out_features]
'''

KB_HF = """\
import torch
from transformers import AutoModelForCausalLM

model_name = "gpt2"


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = AutoModelForCausalLM.from_pretrained(model_name)

    def forward(self, x):
        return self.model(x).logits


def get_inputs():
    return [torch.randint(0, 100, (1, 8))]


def get_init_inputs():
    return []
"""

SCALE_TRITON = """\
import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, cols, s0, s1, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + (offs // cols) * s0 + (offs % cols) * s1, mask=mask)
    tl.store(out_ptr + offs, x * 2.0 + 1.0, mask=mask)


def custom_kernel(data):
    (x,), _, _ = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 256),)](x, out, n, max(x.shape[1], 1), x.stride(0), x.stride(1), BLOCK=256)
    return out
"""

SCALE_WRONG = SCALE_TRITON.replace("x * 2.0 + 1.0", "x * 2.0")

LINEAR_MODELNEW = """\
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(torch.addmm(self.fc.bias, x, self.fc.weight.t()))
"""

LINEAR_WRONG = """\
import torch


def custom_kernel(data):
    (x,), _, state = data
    return torch.relu(x @ state["fc.weight"].t())  # the bias left out
"""

LINEAR_TORCH = """\
import torch


def custom_kernel(data):
    (x,), _, state = data
    return torch.relu(x @ state["fc.weight"].t() + state["fc.bias"])
"""

GM_UTILS = """\
import torch


def verbose_allclose(received, expected, rtol=1e-05, atol=1e-08):
    if received.shape != expected.shape:
        return ["SIZE MISMATCH"]
    bad = (received - expected).abs() > atol + rtol * expected.abs()
    return [f"Number of mismatched elements: {int(bad.sum())}"] if bad.any() else []


def make_match_reference(reference, **kwargs):
    def wrapped(data, output):
        reasons = verbose_allclose(output, reference(data), **kwargs)
        return (not reasons), " ".join(reasons)
    return wrapped


class DeterministicContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
"""

GM_TASK = """\
from typing import TypedDict, TypeVar
import torch


input_t = TypeVar("input_t", bound=tuple[torch.Tensor, torch.Tensor])
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    size: int
    seed: int
"""

GM_REFERENCE = """\
from utils import make_match_reference, DeterministicContext
import torch
from task import input_t, output_t


def ref_kernel(data: input_t) -> output_t:
    with DeterministicContext():
        x, out = data
        out[...] = torch.sigmoid(x) * x
        return out


def generate_input(size: int, seed: int) -> input_t:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    x = torch.randn(size, device="cuda", dtype=torch.float32, generator=gen).contiguous()
    out = torch.empty(size, device="cuda", dtype=torch.float32)
    return x, out


check_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-4)
"""

GM_YAML = """\
files:
  - {"name": "submission.py", "source": "@SUBMISSION@"}
  - {"name": "task.py", "source": "task.py"}
  - {"name": "utils.py", "source": "../utils.py"}
  - {"name": "reference.py", "source": "reference.py"}
lang: "py"
tests:
  - {"size": 127, "seed": 4242}
  - {"size": 129, "seed": 5236}
  - {"size": 1025, "seed": 1001}
benchmarks:
  - {"size": 1048576, "seed": 31232}
ranking_by: "geom"
"""

GM_CORRECT = """\
#!POPCORN leaderboard silu_py
import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride, mask=mask)
    tl.store(out_ptr + offs, x * tl.sigmoid(x), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x, out = data
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 256),)](x, out, n, x.stride(0), BLOCK=256)
    return out
"""

GM_EMPTY = """\
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    _, out = data
    return out
"""


GM_COMPILED = """\
import torch
from task import input_t, output_t


def _silu(data: input_t) -> output_t:
    x, out = data
    out[...] = torch.sigmoid(x) * x
    return out


# as GPU MODE's vectorsum solution does (its own mode there: reduce-overhead); dynamo's import is what matters here
custom_kernel = torch.compile(_silu, backend="eager")
"""

# pmpp_v2 prefixsum's shape: ref_kernel returns float64 beside a float32 output buffer, and the checker compares
# values only (``a - b`` promotes), with a tolerance that grows with the size
GM_SCAN_REFERENCE = """\
from utils import make_match_reference, DeterministicContext
import torch
from task import input_t, output_t


def ref_kernel(data: input_t) -> output_t:
    with DeterministicContext():
        x, out = data
        return torch.cumsum(x.to(torch.float64), dim=0)


def generate_input(size: int, seed: int) -> input_t:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    x = torch.randn(size, device="cuda", dtype=torch.float32, generator=gen).contiguous()
    y = torch.empty(size, device="cuda", dtype=torch.float32).contiguous()
    return x, y


def check_implementation(data: input_t, output: output_t):
    scale = data[0].numel() ** 0.5
    return make_match_reference(ref_kernel, rtol=1e-5 * scale, atol=1e-5 * scale)(data, output)
"""

GM_SCAN_TORCH = """\
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, out = data
    out[...] = torch.cumsum(x, dim=0)
    return out
"""

GM_SCAN_WRONG = GM_SCAN_TORCH.replace("torch.cumsum(x, dim=0)", "torch.cumsum(x, dim=0) * 1.01")


def write_kb(root: Path) -> Path:
    level = root / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "1_Scale_add.py").write_text(KB_SCALE)
    (level / "2_Linear_relu.py").write_text(KB_LINEAR)
    hf = root / "KernelBench" / "level4"
    hf.mkdir()
    (hf / "1_gpt2_bs1.py").write_text(KB_HF)
    return root


def write_gm(root: Path) -> Path:
    folder = root / "problems" / "toy" / "silu_py"
    (folder / "solutions" / "correct").mkdir(parents=True)
    (folder / "solutions" / "wrong").mkdir()
    (root / "problems" / "toy" / "utils.py").write_text(GM_UTILS)
    (folder / "task.py").write_text(GM_TASK)
    (folder / "reference.py").write_text(GM_REFERENCE)
    (folder / "task.yml").write_text(GM_YAML)
    (folder / "solutions" / "correct" / "triton.py").write_text(GM_CORRECT)
    (folder / "solutions" / "wrong" / "empty.py").write_text(GM_EMPTY)
    return folder


def write_gm_scan(root: Path) -> Path:
    """The toy set's scan problem (``GM_SCAN_REFERENCE``), a right and a wrong solution."""
    folder = root / "problems" / "toy" / "scan_py"
    (folder / "solutions" / "correct").mkdir(parents=True)
    (folder / "solutions" / "wrong").mkdir()
    (root / "problems" / "toy" / "utils.py").write_text(GM_UTILS)
    (folder / "task.py").write_text(GM_TASK)
    (folder / "reference.py").write_text(GM_SCAN_REFERENCE)
    (folder / "task.yml").write_text(GM_YAML.replace("1048576", "4096"))
    (folder / "solutions" / "correct" / "torch.py").write_text(GM_SCAN_TORCH)
    (folder / "solutions" / "wrong" / "scaled.py").write_text(GM_SCAN_WRONG)
    return folder


def new_ws(path: Path) -> Path:
    (path / "references").mkdir(parents=True)
    (path / "kernels").mkdir()
    return path


def cli(argv: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


# -- parsing (no worker, no child) --------------------------------------------------------------------------------
def test_kernelbench_parse_finds_the_sizes_and_derives_the_specs(tmp_path):
    clone = write_kb(tmp_path / "kb")
    lin = kernelbench.parse(clone / "KernelBench" / "level1" / "2_Linear_relu.py")
    assert (lin.level, lin.pid, lin.name) == (1, 2, "kb1_2_linear_relu")
    # in_features shapes the input (through input_shape), out_features is a constructor size >= 16
    assert lin.sizes == {"batch_size": 128, "in_features": 256, "out_features": 64}
    assert lin.derived == [("input_shape", "(in_features,)")]
    tests, bench = kernelbench.specs(lin)
    assert bench == [{"batch_size": 128, "in_features": 256, "out_features": 64}]
    # the official shape scaled down to <= 2**14 input elements, aspect kept (the largest size halved first)
    assert tests[0] == {"batch_size": 128, "in_features": 128, "out_features": 64}
    assert kernelbench.elements(lin, tests[0]) == 128 * 128
    assert {"batch_size": 1, "in_features": 1, "out_features": 1} in tests
    assert {"batch_size": 2, "in_features": 129, "out_features": 16} in tests  # the innermost size's tail
    # a literal shape tuple becomes one field per element, the tuple rebuilt from them
    (clone / "KernelBench" / "level1" / "3_Cumsum.py").write_text(
        KB_SCALE.replace("dim = 8192", "input_shape = (8192,)\ndim = 1")
        .replace("torch.randn(batch_size, dim)", "torch.randn(batch_size, *input_shape)")
        .replace("x * 2.0 + 1.0", "torch.cumsum(x, dim=1)")
    )
    cum = kernelbench.parse(clone / "KernelBench" / "level1" / "3_Cumsum.py")
    assert cum.sizes == {"batch_size": 4096, "input_shape_0": 8192}  # dim = 1 is no size: it stays as written
    assert cum.derived == [("input_shape", "(input_shape_0,)")] and "input_shape_0" in cum.inner
    assert kernelbench.specs(cum)[0][0] == {"batch_size": 128, "input_shape_0": 128}
    assert not cum.native_only and "input_distributions" not in kernelbench.render(cum, [{}], [{}], False)
    (clone / "KernelBench" / "level1" / "4_Loss.py").write_text(
        KB_SCALE.replace("return [x]", "return [x, torch.randint(0, dim, (batch_size,))]")
    )
    loss = kernelbench.parse(clone / "KernelBench" / "level1" / "4_Loss.py")
    assert loss.native_only and "input_distributions = ['native']" in kernelbench.render(loss, [{}], [{}], False)
    scale = kernelbench.parse(clone / "KernelBench" / "level1" / "1_Scale_add.py")
    assert scale.sizes == {"batch_size": 4096, "dim": 8192} and scale.inner == {"dim"}


def test_kernelbench_level4_and_hugging_face_files_are_refused(tmp_path, capsys):
    clone = write_kb(tmp_path / "kb")
    with pytest.raises(ImporterError, match="level 4 problems are Hugging Face models"):
        kernelbench.parse(clone / "KernelBench" / "level4" / "1_gpt2_bs1.py")
    ws = new_ws(tmp_path / "ws")
    code, _, err = cli(["import", "kernelbench", str(clone), "--level", "4", "--all", "--workspace", str(ws)], capsys)
    assert code == 2 and "Hugging Face models" in err and "needs the network" in err
    assert list((ws / "references").iterdir()) == []


def test_modelnew_adapter_needs_a_modelnew_and_names_mismatched_weights(tmp_path):
    with pytest.raises(ImporterError, match="defines no class ModelNew"):
        kernelbench.adapt_modelnew(LINEAR_WRONG, "x.py")
    text = kernelbench.adapt_modelnew(LINEAR_MODELNEW, "new.py")
    assert text.count("class ModelNew") == 1 and "def custom_kernel(data):" in text
    # the export of an adapted version is the ModelNew source again
    assert kernelbench.export("", text, "v1.py") == LINEAR_MODELNEW
    # the source scan names ModelNew's own torch compute (torch.addmm on line 10 of the version), never ktui's
    # adapter's functional_call (new-user trial 20, L11); an adapter changed by the version is scanned as its code
    from ktui.core.inspect.scan import scan_source

    texts = [f.message() for f in scan_source(text)]
    assert any("addmm" in t for t in texts) and not any("functional_call" in t for t in texts), texts
    edited = text.replace(
        "        return _ktui_torch.func.functional_call",
        "        _ktui_torch.relu(inputs[0])\n        return _ktui_torch.func.functional_call",
    )
    assert any("relu" in f.message() and f.line > 12 for f in scan_source(edited)), [
        f.message() for f in scan_source(edited)
    ]
    # in the candidate: Model's weights go to ModelNew by name; a ModelNew with other names fails naming both
    import torch

    renamed = kernelbench.adapt_modelnew(LINEAR_MODELNEW.replace("self.fc", "self.proj"), "renamed.py")
    ns: dict = {}
    exec(compile(renamed, "renamed.py", "exec"), ns)
    x, w, b = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5)
    with pytest.raises(ValueError, match=r"ModelNew has parameters or buffers \['proj.bias', 'proj.weight'\]"):
        ns["custom_kernel"](((x,), (4, 5), {"fc.weight": w, "fc.bias": b}))
    ns = {}
    exec(compile(text, "new.py", "exec"), ns)
    out = ns["custom_kernel"](((x,), (4, 5), {"fc.weight": w, "fc.bias": b}))
    assert torch.equal(out, torch.relu(torch.addmm(b, x, w.t())))  # Model's weights, not ModelNew's own draw


def test_gpumode_device_literals_are_rewritten_in_place(tmp_path):
    text, left = gpumode.rewrite_devices(
        'a = torch.randn(3, device="cuda")  # keep me\nb = a.cuda()\nc = a.to("cuda:0")\nd = "cuda"\n'
        'e = torch.device("cuda")\n',
        "DEV",
    )
    assert text == (
        'a = torch.randn(3, device=DEV)  # keep me\nb = a.to(DEV)\nc = a.to(DEV)\nd = "cuda"\ne = torch.device(DEV)\n'
    )
    assert left == ["line 4"]  # (new-user trial 21 F11: a helper's torch.device("cuda") was left, and said so)
    p = gpumode.parse(write_gm(tmp_path / "gm"))
    assert p.outputs == [1] and p.seeded and p.params == ["size"]
    # x is made .contiguous() and out is an output buffer (a torch.empty needs none: new-user trial 20 M3):
    # upstream's contract, contiguous_only
    assert p.contiguous
    tree = ast.parse(GM_REFERENCE.replace("generator=gen).contiguous()", "generator=gen)"))
    gen = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "generate_input")
    assert not gpumode.all_contiguous(gen, skip={1})  # an input not made .contiguous(): ktui's layout cases stay


# -- import, the ladder and ktui eval -----------------------------------------------------------------------------
def test_kernelbench_import_run_and_eval_table(tmp_path, capsys, session_for):
    clone = write_kb(tmp_path / "kb")
    ws_root = new_ws(tmp_path / "ws")
    code, out, _ = cli(
        ["import", "kernelbench", str(clone), "--level", "1", "--problems", "1,2", "--workspace", str(ws_root)]
        + ["--allow-torch"],
        capsys,
    )
    assert code == 0, out
    assert "created references/kb1_1_scale_add.py" in out and "created references/kb1_2_linear_relu.py" in out
    assert "  next: write kernels/kb1_1_scale_add/v1.py with custom_kernel(data)" in out  # (new-user trial 20 L10)
    ref = ws_root / "references" / "kb1_2_linear_relu.py"
    meta = read_meta(ref)
    assert meta is not None and meta["format"] == "kernelbench" and meta["official"]["in_features"] == 256
    assert meta["kernelbench_tolerance"]["float32"] == 1e-4
    assert "def bytes_moved(" in ref.read_text()  # the meta device ran the model: the roofline is known
    assert "tolerance =" not in ref.read_text()  # ktui's default policy, stricter than KernelBench's 1e-4
    kdir = ws_root / "kernels"
    (kdir / "kb1_1_scale_add").mkdir()
    (kdir / "kb1_1_scale_add" / "v1.py").write_text(SCALE_TRITON)
    (kdir / "kb1_1_scale_add" / "v2.py").write_text(SCALE_WRONG)
    (tmp_path / "new.py").write_text(LINEAR_MODELNEW)
    code, out, _ = cli(
        ["import", "modelnew", str(tmp_path / "new.py"), "--problem", "kb1_2_linear_relu", "--workspace", str(ws_root)],
        capsys,
    )
    assert code == 0 and "kernels/kb1_2_linear_relu/v1.py" in out
    (kdir / "kb1_2_linear_relu" / "v2.py").write_text(LINEAR_WRONG)

    ws = Workspace(ws_root)
    started = []

    def start():
        started.append(session_for(ws, seed=5))
        return started[-1]

    lines: list[str] = []
    table = evaluate.evaluate(ws, [], start, "cpu", all_versions=True, say=lines.append)
    rows = {f"{r.problem}/{r.version}": r for r in table.rows}
    assert rows["kb1_1_scale_add/v1"].ok and rows["kb1_1_scale_add/v1"].verdict == "✓ ok"
    assert rows["kb1_2_linear_relu/v1"].ok, rows["kb1_2_linear_relu/v1"].reason  # the ModelNew, by the adapter
    for bad in ("kb1_1_scale_add/v2", "kb1_2_linear_relu/v2"):
        assert not rows[bad].ok and rows[bad].verdict == "✗ correctness", rows[bad]
        assert "elements outside atol=1e-05 rtol=1e-05 or 8x float32's own error" in rows[bad].reason
    assert (table.correct, len(table.rows), table.timed, table.fast_p, table.geomean_speedup) == (
        2,
        4,
        False,
        None,
        None,
    )
    text = "\n".join(evaluate.render(table))
    assert "correct: 2/4  device: cpu" in text and "not timed on the CPU" in text
    assert any(line.startswith("[1/4] kb1_1_scale_add/v1: running") for line in lines)
    # each version's line names its seed, so a failing case replays on it or on another version (new-user trial 32, F1)
    ended = [line for line in lines if line.startswith("[") and "running" not in line]
    assert ended and all(re.search(r"\[seed (\d+): ktui eval --seed \1 draws these cases again\]$", e) for e in ended)
    # resumable: a second eval reuses every stored result and starts no session
    again = evaluate.evaluate(ws, [], lambda: pytest.fail("nothing should run"), "cpu", all_versions=True)
    assert [r.cached for r in again.rows] == [True] * 4
    assert [r.verdict for r in again.rows] == [r.verdict for r in table.rows]
    # the best version of each problem (no --all-versions): the one that passed
    best = evaluate.evaluate(ws, [], lambda: pytest.fail("nothing should run"), "cpu")
    assert [f"{r.problem}/{r.version}" for r in best.rows] == ["kb1_1_scale_add/v1", "kb1_2_linear_relu/v1"]
    # timed figures: fast_p and the geometric mean over the correct rows only
    timed = evaluate.summarize(
        [
            evaluate.Row("a", "v1", "✓ 2.00x", True, True, 2.0, 50.0, "", False, "", "cuda"),
            evaluate.Row("b", "v1", "✓ 0.50x", True, True, 0.5, None, "", False, "", "cuda"),
            evaluate.Row("c", "v1", "✗ benchmark", False, True, None, None, "", False, "impossible", "cuda"),
        ],
        p=1.0,
        device="cuda",
        timed=True,
    )
    assert timed.fast_p == pytest.approx(1 / 3) and timed.geomean_speedup == pytest.approx(1.0)


def test_kernelbench_export_runs_as_kernelbench_runs_modelnew(tmp_path, capsys):
    """The exported ModelNew, driven the way KernelBench's eval drives it (seed, Model, seed, ModelNew, inputs,
    allclose), in a child process with the Triton interpreter."""
    clone = write_kb(tmp_path / "kb")
    ws_root = new_ws(tmp_path / "ws")
    written, failed = kernelbench.import_files(
        kernelbench.select(clone / "KernelBench" / "level1", None), ws_root, check=False
    )
    assert [w.problem for w in written] == ["kb1_1_scale_add", "kb1_2_linear_relu"] and failed == []
    for problem, source in (("kb1_1_scale_add", SCALE_TRITON), ("kb1_2_linear_relu", LINEAR_TORCH)):
        (ws_root / "kernels" / problem).mkdir()
        (ws_root / "kernels" / problem / "v1.py").write_text(source)
    out = tmp_path / "new_linear.py"
    code, _, _ = cli(
        ["export", "kernelbench", "kb1_2_linear_relu", "v1", "--workspace", str(ws_root), "--out", str(out)], capsys
    )
    assert code == 0
    code, scale_text, _ = cli(["export", "kernelbench", "kb1_1_scale_add", "v1", "--workspace", str(ws_root)], capsys)
    assert code == 0 and "class ModelNew" in scale_text
    (tmp_path / "new_scale.py").write_text(scale_text)
    (tmp_path / "ref_scale.py").write_text(KB_SCALE.replace("4096", "3").replace("8192", "300"))
    (tmp_path / "ref_linear.py").write_text(KB_LINEAR.replace("128", "5"))
    drive = textwrap.dedent(
        """
        import importlib.util, sys, torch
        def load(path, name):
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
        for ref_path, new_path in (("ref_scale.py", "new_scale.py"), ("ref_linear.py", "new_linear.py")):
            ref, new = load(ref_path, "ref"), load(new_path, "new")
            torch.manual_seed(42)
            init = ref.get_init_inputs()
            torch.manual_seed(42)
            model = ref.Model(*init)
            torch.manual_seed(42)
            model_new = new.ModelNew(*init)
            torch.manual_seed(7)
            inputs = ref.get_inputs()
            with torch.no_grad():
                print(torch.allclose(model(*inputs), model_new(*inputs), atol=1e-4, rtol=1e-4))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", drive],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(os.environ, TRITON_INTERPRET="1"),
        timeout=300,
    )
    assert done.stdout.split() == ["True", "True"], done.stderr[-2000:]
    # a problem of another origin is refused
    code, _, err = cli(["export", "gpumode", "kb1_1_scale_add", "v1", "--workspace", str(ws_root)], capsys)
    assert code == 2 and "was not imported from gpumode (it comes from kernelbench)" in err
    # new-user trial 26, F24: and says what export is for
    assert "writes the submission of a problem `ktui import gpumode` brought in" in err, err


def test_gpumode_import_runs_solutions_and_exports_them_back(tmp_path, capsys, session_for):
    folder = write_gm(tmp_path / "gm")
    ws_root = new_ws(tmp_path / "ws")
    code, out, _ = cli(["import", "gpumode", str(folder), "--workspace", str(ws_root)], capsys)
    assert code == 0, out
    assert "created references/gm_toy_silu_py.py" in out
    assert "version kernels/gm_toy_silu_py/v1.py" in out and "version kernels/gm_toy_silu_py/v2.py" in out
    ref_text = (ws_root / "references" / "gm_toy_silu_py.py").read_text()
    assert "gen = torch.Generator(device=_ktui_device())" in ref_text
    assert "tests = [{'size': 127}, {'size': 129}, {'size': 1025}]" in ref_text  # task.yml's seeds left out
    assert "outputs = (1,)" in ref_text
    assert "fuzz = {'size': (1, 2050)}" in ref_text  # 2x the largest test: a size may be a square's side
    meta = read_meta(ws_root / "references" / "gm_toy_silu_py.py")
    assert meta is not None and meta["seeds"]["tests"] == [4242, 5236, 1001] and meta["ranking_by"] == "geom"
    v1 = (ws_root / "kernels" / "gm_toy_silu_py" / "v1.py").read_text()
    assert v1.startswith("# ktui-import: gpumode solution=solutions/correct/triton.py expected=correct\n#!POPCORN")
    # export round trip: the submission is the upstream solution again
    code, sub, _ = cli(["export", "gpumode", "gm_toy_silu_py", "v1", "--workspace", str(ws_root)], capsys)
    assert code == 0 and sub == GM_CORRECT.replace(
        "#!POPCORN leaderboard silu_py\n",
        "#!POPCORN leaderboard silu_py\nimport torch as _ktui_torch  # noqa: E402,F401\n",
    )
    code, sub2, _ = cli(
        ["export", "gpumode", "gm_toy_silu_py", "kernels/gm_toy_silu_py/v2.py", "--workspace", str(ws_root)], capsys
    )
    assert code == 0 and sub2 == "import torch as _ktui_torch  # noqa: E402,F401\n" + GM_EMPTY

    ws = Workspace(ws_root)
    table = evaluate.evaluate(
        ws, ["gm_toy_silu_py"], lambda: session_for(ws, seed=3, stop_when_wrong=True), "cpu", all_versions=True
    )
    good, empty = table.rows
    assert (good.version, good.expected, good.ok, good.verdict) == ("v1", "correct", True, "✓ ok")
    assert (empty.version, empty.expected, empty.ok, empty.verdict) == ("v2", "wrong", False, "✗ correctness")
    assert "unwritten" in empty.reason
    # the problem's own check_implementation ran in the judge beside ktui's verdict, and agrees with it
    assert (good.upstream, good.differs) == ("pass", "")
    assert empty.upstream == "fail" and empty.differs == ""
    assert empty.upstream_message.startswith("Number of mismatched elements: ")  # the fixture's own words
    stored = ResultStore(ws).load("gm_toy_silu_py", "v1")
    up = stored.rung("correctness").figures["upstream"]
    assert up["verdict"] == "pass" and up["checked"] == up["passed"] > 0 and up["failed"] == 0
    assert "upstream check_implementation: pass on" in stored.rung("correctness").summary
    text = "\n".join(evaluate.render(table))
    assert "upstream's correct/wrong labels agreed with ktui's verdict on 2/2" in text
    assert "upstream check_implementation agreed with ktui's verdict on 2/2" in text
    # CPU: every timed column says why it is empty
    assert "needs a GPU" in text.splitlines()[2] and "vs compile" in text.splitlines()[0]
    # eval's ladders stop at a wrong verdict (LadderOptions.stop_when_wrong, as `ktui eval` sets it): the wrong
    # version has no rung after correctness, the right one has them all, and both results stand for a second eval
    wrong = ResultStore(ws).load("gm_toy_silu_py", "v2")
    assert [r.name for r in wrong.rungs][-1] == "correctness" and wrong.rung("dumps") is None
    assert stored.rung("dumps") is not None
    again = evaluate.evaluate(
        ws, ["gm_toy_silu_py"], lambda: pytest.fail("nothing should run"), "cpu", all_versions=True
    )
    assert [(r.version, r.verdict) for r in again.rows] == [("v1", "✓ ok"), ("v2", "✗ correctness")]


def test_eval_counts_a_problem_without_a_version_as_not_correct(tmp_path):
    clone = write_kb(tmp_path / "kb")
    ws_root = new_ws(tmp_path / "ws")
    kernelbench.import_files(kernelbench.select(clone / "KernelBench" / "level1", [1]), ws_root, check=False)
    ws = Workspace(ws_root)
    table = evaluate.evaluate(ws, ["kb1_1_scale_add"], lambda: pytest.fail("nothing to run"), "cuda")
    (row,) = table.rows
    assert (row.version, row.verdict, row.ok) == ("-", "· no version", False)
    assert (table.correct, table.fast_p, table.geomean_speedup) == (0, 0.0, None)
    with pytest.raises(ValueError, match="no problem nosuch"):
        evaluate.evaluate(ws, ["nosuch"], lambda: pytest.fail("nothing to run"), "cpu")


def test_gpumode_import_says_a_correct_solution_in_torch_alone_fails_as_no_kernel(tmp_path, capsys):
    """New-user trial 21 F11: the first imported problem showed its "correct" solution red ("times torch, not a
    kernel") with nothing at import saying why; the import says it, and --allow-torch is the way to judge it."""
    folder = write_gm_scan(tmp_path / "gm")
    code, out, _ = cli(["import", "gpumode", str(folder), "--workspace", str(new_ws(tmp_path / "ws"))], capsys)
    assert code == 0, out
    assert "solutions/correct/torch.py (v1) computes in torch alone (no Triton or CuTeDSL import)" in out, out
    assert out.count("computes in torch alone") == 1, out  # the wrong solution is no such surprise
    code, out, _ = cli(
        ["import", "gpumode", str(folder), "--workspace", str(new_ws(tmp_path / "ws2")), "--allow-torch"], capsys
    )
    assert code == 0 and "computes in torch alone" not in out, out


def test_gpumode_dtype_of_the_reference_named_beside_what_upstream_says(tmp_path, capsys, session_for):
    """pmpp_v2 prefixsum's case: ref_kernel returns float64, every solution fills and returns the float32 buffer, and
    upstream's checker compares values only. ktui keeps judging the dtype (a float64 result is what the reference
    returns), and says at import, in the rung and in the table what differs and that upstream passes it; a solution
    that is wrong in value fails both."""
    folder = write_gm_scan(tmp_path / "gm")
    ws_root = new_ws(tmp_path / "ws")
    code, out, _ = cli(["import", "gpumode", str(folder), "--workspace", str(ws_root), "--allow-torch"], capsys)
    assert code == 0, out
    assert (
        "note: ref_kernel returns a float64 tensor of shape (127,) where the output buffer data[1] is a float32 "
        "tensor of shape (127,): ktui judges the dtype and shape ref_kernel returns" in out
    )
    ws = Workspace(ws_root)
    table = evaluate.evaluate(ws, [], lambda: session_for(ws, seed=11), "cpu", all_versions=True)
    right, wrong = table.rows
    assert (right.ok, right.verdict, right.upstream) == (False, "✗ correctness", "pass")
    assert right.differs == "upstream: pass, ktui: fail (dtype)"
    assert "out has dtype float32, expected float64" in right.reason
    summary = ResultStore(ws).load("gm_toy_scan_py", "v1").rung("correctness").summary
    assert "upstream: pass, ktui: fail (dtype): out is float32 where the reference returns float64: upstream's " in (
        summary
    )
    assert "compares values only (it passes this float32 output), ktui judges dtypes too" in summary
    assert (wrong.ok, wrong.upstream, wrong.differs) == (False, "fail", "")  # wrong in value: both fail it
    assert wrong.upstream_message.startswith("Number of mismatched elements: ")
    text = "\n".join(evaluate.render(table))
    assert "upstream check_implementation agreed with ktui's verdict on 1/2" in text
    assert "gm_toy_scan_py/v1: upstream: pass, ktui: fail (dtype)" in text


def test_gpumode_torch_compile_solution_is_not_taken_for_tampering(tmp_path, capsys, session_for):
    """An honest torch.compile solution (GPU MODE vectorsum's kind) passes: dynamo's import rewraps
    torch.manual_seed, which the candidate settled before its baseline (``integrity.settle_torch``)."""
    folder = write_gm(tmp_path / "gm")
    (folder / "solutions" / "correct" / "compiled.py").write_text(GM_COMPILED)
    ws_root = new_ws(tmp_path / "ws")
    code, out, _ = cli(["import", "gpumode", str(folder), "--workspace", str(ws_root), "--allow-torch"], capsys)
    assert code == 0 and "version kernels/gm_toy_silu_py/v1.py" in out  # compiled.py sorts first
    ws = Workspace(ws_root)
    session = session_for(ws, seed=4, distributions=False, layouts=False)
    result = session.run(ws.versions("gm_toy_silu_py")[0])
    assert result.rung("run").figures["tampered"] == [], result.rung("run").summary
    assert result.ok, [(r.name, r.summary) for r in result.rungs]
    assert result.rung("correctness").figures["upstream"]["verdict"] == "pass"


def _store_verdict(ws: Workspace, version: str, verdict: str, speedup: float | None = None, device: str = "cpu"):
    """Store a fresh result of ``vector_add/<version>`` (its files' hashes): ``verdict`` ``ok`` (correctness passed;
    with ``speedup``, a timed benchmark), ``needs_gpu`` (run, correctness and benchmark skipped, as a CuTeDSL version
    on the CPU) or ``failed`` (correctness failed)."""
    from ktui.core.results import LadderResult, RungResult, Status
    from ktui.core.store import sha256

    skip = RungResult("run", Status.SKIPPED, summary="needs a GPU: CuTeDSL kernel compiled for sm_90a")
    rungs = [RungResult("compile", Status.OK)]
    if verdict == "needs_gpu":
        rungs += [skip, RungResult("correctness", Status.SKIPPED), RungResult("benchmark", Status.SKIPPED)]
    else:
        rungs += [RungResult("run", Status.OK)]
        rungs += [RungResult("correctness", Status.OK if verdict == "ok" else Status.FAILED, summary="spec (129,)")]
        specs = [{"speedup": speedup, "eager_median_us": 1.0, "compiled_median_us": 1.0}] if speedup else []
        bench = Status.OK if speedup else Status.SKIPPED
        rungs += [RungResult("benchmark", bench, figures={"specs": specs})]
    rungs += [RungResult("dumps", Status.OK)]
    k = ws.versions("vector_add")[[v.version for v in ws.versions("vector_add")].index(version)]
    res = LadderResult("vector_add", version, f"kernels/vector_add/{version}.py", {"type": device}, rungs)
    res.source_sha256 = sha256(k.path.read_bytes())
    res.reference_sha256 = sha256(ws.reference_path("vector_add").read_bytes())
    res.started_at = float(version[1:])
    ResultStore(ws).save(res)
    return res


def test_eval_best_version_is_a_verified_one_never_one_that_needs_a_gpu(make_ws, capsys):
    """On the CPU v1 and v2 passed correctness and v3 (CuTeDSL) was only compiled ("◌ needs a GPU"): the best
    version is v2 (the newest verified), not v3; v3 is chosen only when nothing was verified. A needs-GPU row is
    neither correct nor failed: ``correct`` leaves it out, ``needs_gpu`` counts it, and the exit code is 0."""
    from ktui.agent.agent import best_version as agent_best
    from ktui.core import report

    ws = make_ws(["vector_add"])
    assert [v.version for v in ws.versions("vector_add")] == ["v1", "v2", "v3"]
    store = ResultStore(ws)
    only_v3 = _store_verdict(ws, "v3", "needs_gpu")
    assert only_v3.ok and not only_v3.verified and only_v3.needs_gpu
    assert evaluate.best_version(ws, "vector_add", store, "cpu").version == "v3"  # nothing verified: v3
    results = {"vector_add/v1": _store_verdict(ws, "v1", "ok"), "vector_add/v2": _store_verdict(ws, "v2", "ok")}
    results["vector_add/v3"] = only_v3
    assert evaluate.best_version(ws, "vector_add", store, "cpu").version == "v2"
    assert agent_best(ws, "vector_add", results).version == "v2"
    assert [r.version for r in report.rank([only_v3, results["vector_add/v1"]])] == ["v1", "v3"]
    table = evaluate.evaluate(ws, [], lambda: pytest.fail("nothing should run"), "cpu")
    assert [(r.version, r.correct, r.needs_gpu, r.cached) for r in table.rows] == [("v2", True, False, True)]
    every = evaluate.evaluate(ws, [], lambda: pytest.fail("nothing should run"), "cpu", all_versions=True)
    assert [(r.version, r.ok, r.correct, r.needs_gpu) for r in every.rows] == [
        ("v1", True, True, False),
        ("v2", True, True, False),
        ("v3", True, False, True),
    ]
    assert (every.correct, every.to_json()["needs_gpu"], every.to_json()["total"]) == (2, 1, 3)
    assert "correct: 2/3 (1 not run here: it needs a GPU)  device: cpu" in evaluate.render(every)
    import json

    code, out, _ = cli(["eval", "--workspace", str(ws.root), "--device", "cpu", "--all-versions", "--json"], capsys)
    data = json.loads(out)
    assert (code, data["exit_code"], data["data"]["correct"], data["data"]["needs_gpu"]) == (0, 0, 2, 1)
    # the header comes first, before the stored results' lines (new-user trial 33, F5)
    code, out, _ = cli(["eval", "--workspace", str(ws.root), "--device", "cpu", "--all-versions"], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("ktui eval: every problem in ") and " on cpu " in lines[0], lines[:3]
    assert lines[1] == "[1/3] vector_add/v1: ✓ ok (stored result)", lines[:3]
    # on a GPU the fastest verified version wins, a slower newer one does not
    _store_verdict(ws, "v1", "ok", speedup=2.0, device="cuda")
    _store_verdict(ws, "v2", "ok", speedup=1.5, device="cuda")
    _store_verdict(ws, "v3", "failed", device="cuda")
    assert evaluate.best_version(ws, "vector_add", store, "cuda").version == "v1"


def test_export_takes_a_problem_version_name_too(tmp_path, capsys):
    folder = write_gm(tmp_path / "gm")
    ws_root = new_ws(tmp_path / "ws")
    code, out, _ = cli(["import", "gpumode", str(folder), "--workspace", str(ws_root), "--no-check"], capsys)
    assert code == 0, out
    base = ["--workspace", str(ws_root)]
    code, by_args, _ = cli(["export", "gpumode", "gm_toy_silu_py", "v1", *base], capsys)
    assert code == 0 and "#!POPCORN leaderboard silu_py" in by_args
    code, by_name, _ = cli(["export", "gpumode", "gm_toy_silu_py/v1", *base], capsys)
    assert (code, by_name) == (0, by_args)
    code, _, err = cli(["export", "gpumode", "gm_toy_silu_py/v9", *base], capsys)
    assert code == 2 and "no such kernel file: gm_toy_silu_py/v9 (nor a version: gm_toy_silu_py has v1, v2" in err
    code, _, err = cli(["export", "gpumode", "gm_toy_silu_py", "v9", *base], capsys)
    assert code == 2 and "no version v9 of gm_toy_silu_py (kernels/gm_toy_silu_py/v9.py; versions: v1, v2)" in err
    code, _, err = cli(["export", "gpumode", "gm_toy_silu_py", *base], capsys)
    assert code == 2 and "gm_toy_silu_py is a problem: name one of its versions, e.g. gm_toy_silu_py/v2" in err
    code, by_file, _ = cli(["export", "gpumode", str(ws_root / "kernels/gm_toy_silu_py/v1.py"), *base], capsys)
    assert (code, by_file) == (0, by_args)
    other = new_ws(tmp_path / "other")
    code, _, err = cli(
        ["export", "gpumode", str(ws_root / "kernels/gm_toy_silu_py/v1.py"), "--workspace", str(other)], capsys
    )
    assert code == 2 and f"is in the workspace {ws_root.resolve()}, not in {other.resolve()} (--workspace)" in err


def test_an_upstream_files_error_names_that_file_and_its_line():
    """New-user trial 20 L10: "the generated reference does not load: TypeError: Bound must be a type." named neither
    task.py nor the line."""

    from ktui.importers.probe import run_job

    text = (
        "import torch\n# ==== GPU MODE mine/utils.py, verbatim but for device literals ====\nx = 1\n"
        "# ==== GPU MODE mine/task.py, verbatim but for device literals ====\nimport typing\n"
        "T = typing.TypeVar('T', bound=(torch.Tensor, torch.Tensor))\n"
    )
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "gm_mine_x.py"
        path.write_text(text)
        answer = run_job({"path": str(path), "call": "ref_kernel", "specs": []}, 0)
    assert isinstance(answer, str) and answer.endswith("(at gm_mine_x.py:6)"), answer
    assert gpumode.upstream_place(answer, text).endswith("(at task.py:2)")


def test_the_eval_tables_note_is_cut_at_a_word():
    """New-user trial 20 L12: the note column ran to ~200 characters, cut mid-token."""
    from ktui.importers.evaluate import NOTE_WIDTH, short_note

    long = "spec=(33, 1025) seed=7 layout=transposed: 12 of 33825 elements outside atol=1e-05 rtol=1e-05 or 8x " * 2
    cut = short_note(long)
    assert len(cut) <= NOTE_WIDTH and cut.endswith(" …") and long.startswith(cut[:-2])
    assert long[len(cut) - 2] == " "  # at a word boundary
    assert short_note("short note") == "short note"


def test_eval_takes_timeout_as_run_does(tmp_path, capsys):
    """New-user trial 26, F13: ``ktui eval --timeout 300`` was a usage error while ``ktui run`` takes it; it is the
    same option now, with the same checks (a limit of 0 names the problem)."""
    ws_root = new_ws(tmp_path / "ws")
    code, out, err = cli(["eval", "--workspace", str(ws_root), "--timeout", "0"], capsys)
    assert code == 2 and "--timeout" in (out + err) and "positive" in (out + err), (out, err)
    code, out, err = cli(["eval", "--workspace", str(ws_root), "--timeout", "nosuch=3"], capsys)
    assert code == 2 and "nosuch" in (out + err), (out, err)
    from ktui.importers.cli import eval_parser

    assert eval_parser().parse_args(["--timeout", "run=90"]).timeout == "run=90"
