"""SASS: disassemble a cubin, read its instructions, count them, find the red flags, map them to source lines, and
diff two versions. Pure Python around NVIDIA's ``nvdisasm`` and ``cuobjdump`` (the triton wheel carries both, in
``triton/backends/nvidia/bin``; CUDA installs have them in ``$CUDA_HOME/bin``). No torch: runs in ktui's process.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ToolMissing(RuntimeError):
    """``nvdisasm`` or ``cuobjdump`` is not installed where ktui looks."""


def find_tool(name: str) -> str:
    """The path of ``nvdisasm``/``cuobjdump``: the triton wheel's copy, then ``$CUDA_HOME/bin``,
    ``/usr/local/cuda/bin``, then ``PATH``.

    Raises:
        ToolMissing: none of them has it.
    """
    spec = importlib.util.find_spec("triton")
    candidates = []
    if spec and spec.origin:
        candidates.append(Path(spec.origin).parent / "backends" / "nvidia" / "bin" / name)
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home:
            candidates.append(Path(home) / "bin" / name)
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which(name)
    if found:
        return found
    raise ToolMissing(f"{name} not found (looked in the triton wheel, $CUDA_HOME/bin, /usr/local/cuda/bin, PATH)")


_LINE_INFO = re.compile(r'^\s*//## File "(?P<file>[^"]+)", line (?P<line>\d+)')
_INSTR = re.compile(r"^\s*/\*(?P<addr>[0-9a-f]{4,})\*/\s+(?P<body>[^;]*;)")
_FUNC = re.compile(r"^\.text\.(?P<name>[\w$.]+):")
_PRED = re.compile(r"^(?P<pred>@!?U?P[T0-9]+)\s+")


@dataclass
class Instr:
    addr: int
    opcode: str  # with modifiers: LDG.E.128.CONSTANT
    operands: str
    pred: str = ""
    file: str | None = None
    line: int | None = None

    @property
    def base(self) -> str:
        """The opcode without modifiers: ``LDG``."""
        return self.opcode.split(".")[0]

    def text(self) -> str:
        return f"{self.pred + ' ' if self.pred else ''}{self.opcode} {self.operands}".strip()


@dataclass
class Function:
    name: str
    instrs: list[Instr] = field(default_factory=list)


def disassemble(cubin: Path) -> str:
    """``nvdisasm --print-line-info`` of a cubin: the text sections only (no data sections).

    Raises:
        ToolMissing, subprocess.CalledProcessError: nvdisasm is missing or rejects the file.
    """
    out = subprocess.run(
        [find_tool("nvdisasm"), "--print-line-info", str(cubin)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    start = out.find("//--------------------- .text.")
    return out[start:] if start >= 0 else out


def parse(sass: str) -> list[Function]:
    """Functions and their instructions, each with the source file and line of its line info when present."""
    funcs: list[Function] = []
    file, line = None, None
    for raw in sass.splitlines():
        if raw.startswith(".text."):
            m = _FUNC.match(raw.strip())
            if m:
                funcs.append(Function(m.group("name")))
                file, line = None, None
            continue
        if "//##" in raw:
            m = _LINE_INFO.match(raw)
            if m:
                file, line = m.group("file"), int(m.group("line"))
            continue
        if "/*" not in raw:
            continue
        m = _INSTR.match(raw)
        if m and funcs:
            body = m.group("body").rstrip(";").strip()
            pred = ""
            pm = _PRED.match(body)
            if pm:
                pred, body = pm.group("pred"), body[pm.end() :]
            parts = body.split(None, 1)
            if not parts:
                continue
            funcs[-1].instrs.append(
                Instr(int(m.group("addr"), 16), parts[0], parts[1] if len(parts) > 1 else "", pred, file, line)
            )
    return funcs


def _width(opcode: str) -> int:
    mods = opcode.split(".")[1:]
    for m in mods:
        if m in ("128", "64", "32"):
            return int(m)
        if m in ("U8", "S8"):
            return 8
        if m in ("U16", "S16"):
            return 16
    return 32


TENSOR = ("HGMMA", "QGMMA", "IGMMA", "BGMMA", "HMMA", "IMMA", "DMMA", "BMMA")
# packed half-precision arithmetic (two fp16 or bf16 values a register): counted apart, by type (new-user trial 34,
# F12: a variance summed in bf16 showed as FADD 12 -> 0 and no row for the HADD2.BF16_V2 that replaced them)
PACKED = ("HADD2", "HMUL2", "HFMA2", "HMNMX2")


def instruction_mix(instrs: list[Instr]) -> dict[str, int]:
    """Counts by family: tensor-core ops (HGMMA wgmma, HMMA mma.sync...), FFMA/FMUL/FADD/MUFU, packed fp16 and bf16
    arithmetic (``HADD2``, ``HFMA2.BF16``...), float64 (DFMA/DMUL/DADD), global loads and stores
    by width (``LDG.128``), shared and local memory (LDS/STS/LDSM, LDL/STL: local traffic is usually spills),
    async copies (LDGSTS, UTMALDG TMA), barriers, shuffles, and ``total``."""
    c: Counter[str] = Counter()
    for ins in instrs:
        b = ins.base
        if b in ("LDG", "STG"):
            c[f"{b}.{_width(ins.opcode)}"] += 1
        elif b in PACKED:  # fp16 pairs, or bf16 ones (``HADD2.BF16_V2``): arithmetic in half precision
            c[f"{b}.BF16" if ".BF16" in ins.opcode else b] += 1
        elif b in TENSOR or b in (
            "FFMA",
            "FMUL",
            "FADD",
            "DFMA",
            "DMUL",
            "DADD",
            "MUFU",
            "LDS",
            "STS",
            "LDSM",
            "LDL",
            "STL",
            "LDGSTS",
            "UTMALDG",
            "UTMASTG",
            "SHFL",
            "BAR",
            "ATOMG",
            "RED",
            "WARPSYNC",
            "SYNCS",
        ):
            c[b] += 1
    c["total"] = len(instrs)
    return dict(sorted(c.items()))


def resource_usage(cubin: Path) -> dict[str, dict[str, int]]:
    """``cuobjdump -res-usage``: per function, registers per thread (REG), stack frame, shared and local memory
    bytes."""
    out = subprocess.run(
        [find_tool("cuobjdump"), "-res-usage", str(cubin)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    res: dict[str, dict[str, int]] = {}
    name = None
    for ln in out.splitlines():
        m = re.match(r"\s*Function (\S+):", ln)
        if m:
            name = m.group(1)
            continue
        if name and "REG:" in ln:
            vals = dict(re.findall(r"(\w+):(\d+)", ln))
            res[name] = {
                "registers": int(vals.get("REG", 0)),
                "stack": int(vals.get("STACK", 0)),
                "shared": int(vals.get("SHARED", 0)),
                "local": int(vals.get("LOCAL", 0)),
            }
            name = None
    return res


def red_flags(mix: dict[str, int], resources: dict[str, int], uses_dot: bool, arch: str = "sm_90a") -> list[str]:
    """The usual warnings: spills (local memory), a matrix kernel without wgmma on Hopper (HMMA is the older
    mma.sync path, FFMA no tensor cores at all), and narrow global loads where 128-bit ones would fit."""
    flags = []
    spill_ops = mix.get("LDL", 0) + mix.get("STL", 0)
    stack, local = resources.get("stack", 0), resources.get("local", 0)
    if local or spill_ops:
        # cuobjdump's LOCAL is 0 for spills, which live in the stack frame; LDL/STL also serve a local array (a
        # dynamically indexed one, libdevice's sin/cos range reduction: 32 B), which no tile change removes
        # (new-user trial 22 F10: "0 bytes of local memory, registers overflowing" on a kernel with no spill)
        frame = f"{stack} B stack frame" + (f", {local} B local memory" if local else "")
        flags.append(
            f"local memory: {frame} per thread, {spill_ops} LDL/STL instructions (register spills, or a local "
            "array: a dynamically indexed one, libdevice's sin/cos range reduction; ptxas -v counts the spill bytes; "
            "spills ask for smaller tiles or fewer live values)"
        )
    if uses_dot and arch.startswith("sm_90"):
        if not any(mix.get(k) for k in ("HGMMA", "QGMMA", "IGMMA")):
            if mix.get("HMMA"):
                flags.append(
                    "no HGMMA on sm_90: the matmul uses HMMA (mma.sync, the pre-Hopper path); wgmma needs "
                    "tiles of at least 64 rows per warpgroup, 4+ warps and operands in shared memory"
                )
            elif mix.get("FFMA"):
                flags.append("no tensor-core instruction: the matmul runs on FFMA (CUDA cores only)")
    loads = {k: v for k, v in mix.items() if k.startswith("LDG.")}
    if loads and not loads.get("LDG.128") and not loads.get("LDG.64") and loads.get("LDG.32", 0) >= 2:
        flags.append(
            f"global loads are 32-bit only ({loads.get('LDG.32')} LDG.32): 128-bit loads (LDG.128) fit when "
            "each thread reads 16 contiguous, 16-byte aligned bytes (4 fp32, 8 bf16/fp16 or 16 int8 elements)"
        )
    return flags


_IMPRECISE = re.compile(r"maxNumImpreciseAcc = (\d+)")


def ttgir_flags(ttgir: str, interpreted: bool) -> list[str]:
    """Warnings read off Triton's TTGIR: an fp8 ``tl.dot`` whose fp32 accumulator is promoted only every
    ``maxNumImpreciseAcc`` products (Triton's default on sm_90 is 2**30, ``max_num_imprecise_acc_default`` in
    ``backends/nvidia/compiler.py``: never promoted) accumulates in the fp8 wgmma's reduced precision (DeepSeek-V3's
    report: about 14 bits kept). ``interpreted``: the correctness verdict came from the Triton interpreter, which
    sums such a dot in exact float32, so it does not show that error (red team round 15, M2)."""
    widths = sorted({int(m) for m in _IMPRECISE.findall(ttgir)} - {0})
    if not widths:
        return []
    how = (
        "never promoted to full float32 (Triton's default on sm_90)"
        if widths[-1] >= 1 << 30
        else f"promoted to full float32 every {widths[-1]} products"
    )
    text = (
        f"an fp8 tl.dot accumulates in reduced precision: its accumulator is {how} (maxNumImpreciseAcc in the "
        "TTGIR); pass max_num_imprecise_acc=0, or a K-chunk such as 128, to promote it"
    )
    if interpreted:
        text += "; the CPU interpreter sums it in exact float32, so this correctness verdict does not show that error"
    return [text]


_REG = re.compile(r"\b(U?R|U?P|B)\d+\b")
_HEX_TARGET = re.compile(r"`?\(\.L_x_\d+\)`?")
_DIGITS = re.compile(r"\d+")


def normalize(ins: Instr) -> str:
    """An instruction without what changes between compiles for no reason: register numbers (R12 -> R, UR4 -> UR,
    P0 -> P; RZ and PT stay), branch-target labels. Addresses and encodings are already gone."""
    ops = _REG.sub(r"\1", ins.operands)
    if "(.L_x_" in ops:
        ops = _HEX_TARGET.sub("(.L)", ops)
    if ins.pred:
        return f"{_DIGITS.sub('', ins.pred)} {ins.opcode} {ops}".rstrip()
    return f"{ins.opcode} {ops}".rstrip()


_PRED_DIGITS = re.compile(r"^(@!?U?P)\d+", re.MULTILINE)
_BODY = re.compile(r"^\.text\.([\w$.]+):$|/\*[0-9a-f]{4,}\*/\s+([^;\n]*?)\s*;", re.MULTILINE)


def normalized_text_lines(sass_text: str) -> list[str]:
    """``normalized_lines(parse(sass_text))`` straight from the text, with a few regular expressions over the
    whole listing (no per-instruction Python): what ``ktui diff`` and the Diff tab use on large listings."""
    parts = []
    for name, body in _BODY.findall(sass_text):
        parts.append(f"== {name}" if name else body)
    text = _REG.sub(r"\1", "\n".join(parts))
    text = _PRED_DIGITS.sub(r"\1", text)
    if "(.L_x_" in text:
        text = _HEX_TARGET.sub("(.L)", text)
    return text.split("\n") if text else []


def normalized_lines(funcs: list[Function]) -> list[str]:
    """``normalize`` for every instruction, function by function (``== name`` lines between), done as a few
    substitutions over the whole listing: 50,000 instructions in well under a second."""
    raw = []
    for f in funcs:
        raw.append(f"== {f.name}")
        raw.extend(i.text() for i in f.instrs)
    text = _REG.sub(r"\1", "\n".join(raw))
    text = _PRED_DIGITS.sub(r"\1", text)
    if "(.L_x_" in text:
        text = _HEX_TARGET.sub("(.L)", text)
    return text.split("\n")


def unified_diff(a: list[str], b: list[str], name_a: str, name_b: str, context: int = 2) -> list[str]:
    """The unified diff of two normalized listings, with GNU diff (Myers' O(ND) algorithm: 50,000-line listings
    in a fraction of a second). difflib is the fallback where ``diff`` is missing; its "popular line" heuristic
    must stay off for SASS, where a few normalized lines repeat thousands of times."""
    tool = shutil.which("diff")
    if tool:
        with tempfile.TemporaryDirectory(prefix="ktui-diff-") as d:
            fa, fb = Path(d) / "a", Path(d) / "b"
            fa.write_text("\n".join(a) + "\n")
            fb.write_text("\n".join(b) + "\n")
            run = subprocess.run(
                [tool, f"-U{context}", "--label", name_a, "--label", name_b, str(fa), str(fb)],
                capture_output=True,
                text=True,
            )
            if run.returncode in (0, 1):
                return run.stdout.splitlines()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out = [f"--- {name_a}", f"+++ {name_b}"]
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [" " + x for x in a[a1:a2]]
            else:
                out += ["-" + x for x in a[a1:a2]] + ["+" + x for x in b[b1:b2]]
    return out if len(out) > 2 else []


def side_by_side(diff: list[str], width: int = 60) -> list[str]:
    """A unified diff's changes in two columns: ``|`` changed, ``<`` only in A, ``>`` only in B."""
    out: list[str] = []
    minus: list[str] = []
    plus: list[str] = []

    def flush() -> None:
        for k in range(max(len(minus), len(plus))):
            la = minus[k] if k < len(minus) else ""
            rb = plus[k] if k < len(plus) else ""
            mark = "|" if la and rb else ("<" if la else ">")
            out.append(f"{la[:width]:<{width}} {mark} {rb[:width]}")
        minus.clear()
        plus.clear()

    for ln in diff:
        if ln.startswith(("---", "+++")):
            continue
        if ln.startswith("@@"):
            flush()
            out.append(ln)
        elif ln.startswith("-"):
            minus.append(ln[1:])
        elif ln.startswith("+"):
            plus.append(ln[1:])
        else:
            flush()
    flush()
    return out


def mix_delta(a: dict[str, int], b: dict[str, int]) -> list[dict[str, Any]]:
    """Rows ``{family, a, b, delta}`` for every family in either mix, changed ones first, ``total`` last (a new
    user read the unchanged rows after it as outside the table)."""
    rows = [
        {"family": k, "a": a.get(k, 0), "b": b.get(k, 0), "delta": b.get(k, 0) - a.get(k, 0)}
        for k in sorted(set(a) | set(b))
    ]
    return sorted(rows, key=lambda r: (r["family"] == "total", r["delta"] == 0, r["family"]))


def line_map(funcs: list[Function], source: str) -> dict[str, Any]:
    """Source line <-> SASS: ``{"lines": {python_line: [instruction index...]}, "instrs": [python_line or None]}``
    over the instructions of all functions in order, for line info that names ``source`` (the same path, the same
    file name, or a snapshot of the same content)."""
    lines: dict[int, list[int]] = {}
    per_instr: list[int | None] = []
    name = Path(source).name
    # ktui's snapshots are named <version>-<sha12>.py: a cubin that Triton's cache compiled from another snapshot of
    # the same content names that file, with the same lines.
    content = name.rsplit("-", 1)[-1] if "-" in name else None
    i = 0
    for f in funcs:
        for ins in f.instrs:
            other = Path(ins.file).name if ins.file else ""
            hit = ins.file is not None and (
                ins.file == source or other == name or (content is not None and other.endswith("-" + content))
            )
            per_instr.append(ins.line if hit else None)
            if hit and ins.line is not None:
                lines.setdefault(ins.line, []).append(i)
            i += 1
    return {"lines": {str(k): v for k, v in sorted(lines.items())}, "instrs": per_instr}


def analyze(cubin: Path, uses_dot: bool, source_name: str | None = None, arch: str = "sm_90a") -> dict[str, Any]:
    """Disassemble and summarize a cubin: ``sass`` text, functions, ``mix``, ``resources`` (of its first
    function), ``warnings``, and the source ``line_map`` when ``source_name`` is given."""
    text = disassemble(cubin)
    funcs = parse(text)
    instrs = [i for f in funcs for i in f.instrs]
    res_all = resource_usage(cubin)
    res = next(iter(res_all.values()), {})
    mix = instruction_mix(instrs)
    out = {
        "sass": text,
        "functions": [f.name for f in funcs],
        "mix": mix,
        "resources": res,
        "warnings": red_flags(mix, res, uses_dot, arch),
    }
    if source_name:
        out["line_map"] = line_map(funcs, source_name)
    return out
