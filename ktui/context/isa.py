"""From an instruction in a SASS or PTX dump to the PTX ISA section that documents it.

The PTX ISA (NVIDIA's "Parallel Thread Execution ISA", one HTML page, added with ``ktui context add-docs``) has a
section per instruction, headed by its name (``ld``, ``cp.async.bulk.tensor``, ``wgmma.mma_async``). A PTX line
names its instruction directly (``ld.global.v4.f32 ...`` is ``ld``); a SASS line names a machine opcode
(``LDG.E.128``), which ``SASS_TO_PTX`` maps to the PTX instruction that compiles to it. The table follows NVIDIA's
"CUDA Binary Utilities" document, section "Instruction Set Reference" (the Hopper table: each opcode with its
description, e.g. ``LDG: Load from Global Memory``, ``HGMMA: Asynchronous Warpgroup Matrix Multiply-Accumulate``,
``UTMALDG: Tensor Memory Access Unit Load from Global``); opcodes it has no PTX counterpart for (``S2R``,
``BRA``...) are looked up by their own name in the docs.
"""

from __future__ import annotations

import re

SASS_TO_PTX: dict[str, str] = {
    # memory
    "LDG": "ld",
    "STG": "st",
    "LDS": "ld",
    "STS": "st",
    "LDL": "ld",
    "STL": "st",
    "LDC": "ld",
    "LD": "ld",
    "ST": "st",
    "LDSM": "ldmatrix",
    "STSM": "stmatrix",
    "LDGSTS": "cp.async",
    "LDGDEPBAR": "cp.async.commit_group",
    "DEPBAR": "cp.async.wait_group",
    "UTMALDG": "cp.async.bulk.tensor",
    "UTMASTG": "cp.async.bulk.tensor",
    "UTMAPF": "cp.async.bulk.prefetch.tensor",
    "UBLKCP": "cp.async.bulk",
    "UTMACCTL": "fence.proxy.tensormap",
    "RED": "red",
    "ATOM": "atom",
    "ATOMG": "atom",
    "ATOMS": "atom",
    "MEMBAR": "membar",
    "FENCE": "fence",
    "CCTL": "prefetch",
    # matrix
    "HMMA": "mma",
    "IMMA": "mma",
    "DMMA": "mma",
    "HGMMA": "wgmma.mma_async",
    "IGMMA": "wgmma.mma_async",
    "QGMMA": "wgmma.mma_async",
    "BGMMA": "wgmma.mma_async",
    "WARPGROUP": "wgmma.fence",
    # synchronization and warp-level
    "BAR": "bar",
    "SYNCS": "mbarrier",
    "SHFL": "shfl.sync",
    "VOTE": "vote.sync",
    "MATCH": "match.sync",
    "REDUX": "redux.sync",
    "ELECT": "elect.sync",
    "NANOSLEEP": "nanosleep",
    # arithmetic
    "FFMA": "fma",
    "FADD": "add",
    "FMUL": "mul",
    "FMNMX": "max",
    "HFMA2": "fma",
    "HADD2": "add",
    "HMUL2": "mul",
    "DFMA": "fma",
    "DADD": "add",
    "DMUL": "mul",
    "IMAD": "mad",
    "IADD3": "add",
    "IMNMX": "max",
    "LOP3": "lop3",
    "SHF": "shf",
    "PRMT": "prmt",
    "POPC": "popc",
    "FLO": "bfind",
    "BREV": "brev",
    "MUFU": "ex2",
    "F2F": "cvt",
    "F2I": "cvt",
    "I2F": "cvt",
    "F2FP": "cvt",
    "FRND": "cvt",
    "FSETP": "setp",
    "ISETP": "setp",
    "DSETP": "setp",
    "HSETP2": "setp",
    "FSEL": "selp",
    "SEL": "selp",
    "MOV": "mov",
    "EXIT": "exit",
    "RET": "ret",
    "CALL": "call",
}
"""SASS opcode (without its modifiers) -> the PTX instruction whose ISA section documents it, by the section's name
(``LDG`` -> ``ld``: the state space is a qualifier of ``ld``; the source: the module docstring)."""

_MUFU = {"EX2": "ex2", "LG2": "lg2", "RCP": "rcp", "RSQ": "rsqrt", "SQRT": "sqrt", "SIN": "sin", "COS": "cos"}
_PTX_OP = re.compile(r"^\s*(?:@!?%?\w+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)")
_SASS_OP = re.compile(r"^\s*(?:/\*[0-9a-fA-F]+\*/\s*)?(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)")
_PTX_MODIFIERS = {
    # state spaces, types, vector widths, caching and ordering qualifiers: not part of the instruction's name
    "global", "shared", "local", "const", "param", "cta", "cluster", "gpu", "sys", "f16", "f16x2", "bf16", "bf16x2",
    "tf32", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b8", "b16", "b32", "b64", "b128",
    "pred", "v2", "v4", "v8", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "relaxed", "acquire", "release",
    "weak", "volatile", "rn", "rz", "rm", "rp", "rni", "rzi", "ftz", "sat", "approx", "full", "lo", "hi", "wide",
    "aligned", "sync", "uni", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "2d", "3d", "4d", "5d", "1d",
}  # fmt: skip
_PTX_KEEP_TWO = {"cp", "wgmma", "mma", "ldmatrix", "stmatrix", "fence", "mbarrier", "tcgen05", "cvta", "bar", "barrier"}


def isa_query(instruction: str) -> str:
    """The PTX instruction to look up for one line of a dump: a SASS line (``@P0 LDG.E.128 R4, [R2.64] ;`` ->
    ``ld``; ``MUFU.EX2 R3, R2`` -> ``ex2``; an opcode without a PTX counterpart -> its own name, ``S2R``) or
    a PTX line (``ld.global.v4.f32 {...}, [%rd1];`` -> ``ld``; ``cp.async.bulk.tensor.2d.global.shared::cluster``
    -> ``cp.async.bulk.tensor``; ``wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16`` ->
    ``wgmma.mma_async``). '' when the line holds no instruction (a label, a comment, a directive)."""
    text = instruction.strip()
    if not text or text.startswith(("//", ".", "{", "}")) or text.endswith(":"):
        return ""
    m = _SASS_OP.match(text)
    if m and m.group(1).isupper() and len(m.group(1)) >= 2:
        op, mods = m.group(1), [x for x in m.group(2).split(".") if x]
        if op == "MUFU" and mods:
            return _MUFU.get(mods[0], "ex2")
        return SASS_TO_PTX.get(op, op)
    m = _PTX_OP.match(text)
    if not m:
        return ""
    parts = m.group(1).split(".")
    name = [parts[0]]
    for p in parts[1:]:
        if p in _PTX_MODIFIERS or re.fullmatch(r"m\d+n\d+k\d+|shared::\w+|x\d+|\d+", p):
            break
        if parts[0] not in _PTX_KEEP_TWO:
            break
        name.append(p)
    return ".".join(name)
