"""ktui's region markers, compiled for sm_90a on the CPU (``tests/trace_compile.py``, one fresh process per build):

- untraced, a marked kernel's SASS is exactly the unmarked kernel's (every example, Triton and CuTeDSL);
- traced, every marker reads the timers where it stands: the first begin before the first load or MMA, the last
  end after the last store, and one globaltimer read per marker, none hoisted out of order or merged;
- under the Triton interpreter (the CPU's candidate) the markers do nothing;
- the marker PTX refuses what it cannot encode.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ktui.core.inspect import sass
from ktui.importers.markers import strip_markers
from ktui.trace import ptx

ROOT = Path(__file__).resolve().parents[1]
HELPER = Path(__file__).resolve().parent / "trace_compile.py"
EXAMPLES = [
    ("matmul", "v1", ["mainloop", "epilogue"]),
    ("matmul", "v2", ["mainloop", "epilogue"]),
    ("softmax", "v1", ["max", "sum", "normalize"]),
    ("softmax", "v2", ["load", "reduce", "store"]),
    ("vector_add", "v1", ["add"]),
    ("vector_add", "v2", ["add"]),
    ("vector_add", "v3", ["add"]),
]
MEMORY = re.compile(r"\b(LDG|LDGSTS|UTMALDG|UTMASTG|HGMMA|HMMA|STG|LDS|STS)\b")


def _opcodes(lines: list[str], idx: list[int]) -> list[str]:
    """The opcodes (with modifiers) of ``lines[i]`` for ``i`` in ``idx``, in order."""
    return [re.sub(r"^@!?U?P\w+\s+", "", lines[i].split("*/", 1)[-1].strip()).split()[0] for i in idx]


def build(tmp: Path, mode: str, problem: str, source: str, name: str) -> tuple[list[str], list[dict]]:
    """Compile ``source`` (a version of ``problem``) with the tracer ``mode``; its kernels' SASS instruction lines
    (line-info comments dropped) and the buffers the markers asked for."""
    src = tmp / name / "v.py"  # the same path for every build: the line info names the same file
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(source)
    out = tmp / name / "out"
    # ROOT first, then what the caller had (PYTHONPATH=/path/to/triton-3.6 site checks another Triton release)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run(
        [sys.executable, str(HELPER), mode, str(ROOT / "references" / f"{problem}.py"), str(src), str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=str(tmp),  # CuTeDSL's --keep-ptx writes its files in the working folder
    )
    assert p.returncode == 0, p.stderr[-3000:]
    lines = []
    for cubin in sorted(out.glob("*.cubin")):
        text = sass.disassemble(cubin)
        lines += [ln.split("/*")[1] for ln in text.splitlines() if re.match(r"\s*/\*[0-9a-f]{4,}\*/", ln)]
    return lines, json.loads((out / "buffers.json").read_text())


@pytest.mark.slow  # ~1.5 min an example: three sm_90a builds in fresh processes
@pytest.mark.parametrize("problem,version,regions", EXAMPLES, ids=[f"{p}/{v}" for p, v, _ in EXAMPLES])
def test_untraced_build_is_the_unmarked_kernel_and_traced_markers_sit_in_order(tmp_path, problem, version, regions):
    marked = (ROOT / "kernels" / problem / f"{version}.py").read_text()
    assert "kt.region" in marked
    plain_src = strip_markers(marked)  # what ktui export hands to a harness without ktui
    assert "kt.region" not in plain_src and plain_src.count("\n") == marked.count("\n")
    off, bufs = build(tmp_path, "off", problem, marked, "marked")
    plain, _ = build(tmp_path, "off", problem, plain_src, "plain")
    assert bufs == []
    assert off and off == plain  # instruction for instruction, addresses included

    on, bufs = build(tmp_path, "on", problem, marked, "traced")
    assert [b["regions"] for b in bufs] == [regions]
    timers = [i for i, ln in enumerate(on) if "SR_GLOBALTIMER" in ln]
    clocks = [i for i, ln in enumerate(on) if "SR_CLOCKLO" in ln]
    assert len(timers) == len(clocks) == 2 * len(regions)  # one read of each per marker: none merged or dropped
    # The markers store with st.global.cs (STG.E.EF: evict-first, so the records do not crowd the kernel's data out
    # of L2), which no example's own code does: that tells their stores from the kernel's.
    assert not any(".EF" in ln for ln in off)
    kernel_ops = [i for i, ln in enumerate(on) if MEMORY.search(ln) and ".EF" not in ln]
    assert _opcodes(on, kernel_ops) == _opcodes(off, [i for i, ln in enumerate(off) if MEMORY.search(ln)])
    assert timers[0] < kernel_ops[0], "the first begin must read the timer before the kernel's first memory op"
    stores = [i for i in kernel_ops if re.search(r"\bSTG\b", on[i])]
    assert timers[-1] > stores[-1], "the last end must read the timer after the kernel's last store"
    if problem == "matmul":  # the main loop's end waits for its last MMA, and comes before the epilogue's stores
        mma = [i for i, ln in enumerate(on) if re.search(r"\b(HGMMA|HMMA|WARPGROUP\.DEPBAR)\b", ln)]
        assert mma[-1] < timers[1] < stores[0], (mma[-1], timers, stores[0])
    assert on != off


def test_markers_do_nothing_under_the_interpreter(monkeypatch):
    """The CPU candidate runs kernels in the Triton interpreter: a marked kernel runs there, and gives its result."""
    code = (
        "import torch, triton, triton.language as tl\n"
        "import ktui.trace.triton as kt\n"
        "@triton.jit\n"
        "def k(x, y, n, B: tl.constexpr):\n"
        "    o = tl.arange(0, B)\n"
        "    with kt.region('a'):\n"
        "        v = tl.load(x + o, mask=o < n)\n"
        "    kt.begin('b')\n"
        "    tl.store(y + o, v * 2, mask=o < n)\n"
        "    kt.end('b')\n"
        "x = torch.arange(5.0); y = torch.zeros(5)\n"
        "k[(1,)](x, y, 5, B=8)\n"
        "print(y.tolist())\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().splitlines()[-1] == "[0.0, 2.0, 4.0, 6.0, 8.0]"


def test_marker_ptx_refuses_what_it_cannot_encode():
    with pytest.raises(ValueError, match="slot 16"):
        ptx.marker(0x7F0000000000, 16, 10)
    with pytest.raises(ValueError, match="aligned"):
        ptx.marker(0x7F0000000008, 0, 10)
    text = ptx.marker(0x7F0000000000, 3, 10)
    assert text.count("%globaltimer") == 1 and "st.global.cs.v4.u32" not in text  # ends carry no header store
    assert "st.global.cs.v4.u32" in ptx.marker(0x7F0000000000, 2, 10)
    assert f"{0x7F0000000000 + 64};" in text and "setp.lt.u64 %kt_p2, %kt_d6, 16384;" in text
