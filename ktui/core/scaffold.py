"""``ktui init PROBLEM``: a new problem from a template that passes its own ladder.

The template is the README's small example, an elementwise ``out = x * alpha``: a reference whose ``tests`` hold the
tails the checks ask for (1, a block size minus and plus one, a prime) in float32 and bfloat16, and a Triton
version that handles strided inputs and every tail (``tests/test_status_init.py`` runs it through ``ktui run`` on the
CPU). The user replaces the op and keeps the shape of the files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ktui.core.store import atomic_write
from ktui.core.workspace import KERNELS, REFERENCES

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a problem name is a Python identifier: it names the kernel function
TAIL_SIZES = (1, 127, 129, 1023, 1025, 4099)  # 1, the block size 1024 and 128 minus and plus one, a prime

REFERENCE_TEMPLATE = '''"""{{problem}}: out = x * alpha, elementwise (a template from `ktui init`: replace
generate_input, ref_kernel, the sizes and bytes_moved with your op's, and keep the tails in `tests`)."""

import torch


def generate_input(seed: int, n: int, dtype: str):
    # ktui calls this after torch.manual_seed(seed), inside `with torch.device(<device>)`:
    # make tensors without device= and they land where the kernel runs.
    return torch.randn(n, dtype=getattr(torch, dtype)), 2.5


def ref_kernel(data):
    x, alpha = data
    return x * alpha  # ktui runs this in float64 (floating inputs upcast) to get the truth


# The tails: 1, a block size minus and plus one (127/129, 1023/1025), a prime (4099). Each runs with two seeds or more,
# every input distribution and (for the largest two) strided layouts; ktui also draws fuzzed sizes around them.
tests = [{"n": n, "dtype": dt} for n in {{sizes}} for dt in ("float32", "bfloat16")]
benchmarks = [{"n": 1 << 26, "dtype": "float32"}]  # timed on a GPU only


def bytes_moved(n, dtype):  # GB/s and the roofline: one read and one write per element
    return 2 * n * torch.empty(0, dtype=getattr(torch, dtype)).element_size()
'''

KERNEL_TEMPLATE = '''"""{{problem}} v1: out = x * alpha in one Triton pass (from `ktui init`: it passes its
own ladder)."""

import torch
import triton
import triton.language as tl


@triton.jit
def {{problem}}_kernel(x_ptr, out_ptr, alpha, n, x_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the tails: the last block is partial
    x = tl.load(x_ptr + offs * x_stride, mask=mask).to(tl.float32)  # strided inputs are checked too
    tl.store(out_ptr + offs, (x * alpha).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    x, alpha = data
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    {{problem}}_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, alpha, x.numel(), x.stride(0), BLOCK=1024)
    return out
'''


class ScaffoldError(Exception):
    """The problem cannot be created: a bad name, or its files exist already. The message is one line."""


@dataclass(frozen=True)
class Scaffold:
    """What ``init_problem`` wrote: the reference and the first version (absolute paths)."""

    reference: Path
    kernel: Path


def render(template: str, problem: str) -> str:
    """``template`` with ``{{problem}}`` and ``{{sizes}}`` filled in."""
    return template.replace("{{problem}}", problem).replace("{{sizes}}", repr(TAIL_SIZES))


def init_problem(root: Path, problem: str) -> Scaffold:
    """Write ``references/<problem>.py`` and ``kernels/<problem>/v1.py`` under ``root`` (making ``references/`` and
    ``kernels/`` when missing, so this also starts a workspace). Nothing existing is overwritten.

    Raises:
        ScaffoldError: ``problem`` is not a Python identifier, or one of the two files exists.
        OSError: the files cannot be written.
    """
    if not NAME.match(problem):
        raise ScaffoldError(f"problem name {problem!r} must be a Python identifier (letters, digits, _)")
    reference = root / REFERENCES / f"{problem}.py"
    kernel = root / KERNELS / problem / "v1.py"
    existing = [p for p in (reference, kernel) if p.exists()]
    if existing:
        names = " and ".join(str(p.relative_to(root)) for p in existing)
        raise ScaffoldError(f"{names} already exist{'s' if len(existing) == 1 else ''}: nothing written")
    (root / KERNELS).mkdir(parents=True, exist_ok=True)
    atomic_write(reference, render(REFERENCE_TEMPLATE, problem).encode())
    atomic_write(kernel, render(KERNEL_TEMPLATE, problem).encode())
    return Scaffold(reference, kernel)
