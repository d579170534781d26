"""The PTX of one trace marker: read the timers, and let lane 0 of each warp store one record.

One inline-assembly block per marker, the same text for Triton (``tl.inline_asm_elementwise``) and CuTeDSL
(``llvm.inline_asm``). It reads ``%globaltimer`` (ns, one clock for the whole GPU) and ``%clock64`` (the SM's cycle
counter) first, then computes where the record goes from ``%tid``/``%ntid``/``%ctaid``/``%nctaid`` and stores
``{globaltimer, clock64 low 32 bits, %smid}`` with one predicated 16-byte store; CTA 0's warp 0 also writes the
buffer's header. Every register is declared inside the block's braces, so markers never share names; no branch
and no label is used, so the block can be pasted any number of times. The layout is ``ktui.protocol.trace``'s.

Grid sampling: with ``2**k`` warps of room and a launch of ``n`` CTAs of ``w`` warps, CTA ``b`` is recorded when
``b % 2**s == 0``, ``s = max(0, ceil_log2(n) + ceil_log2(w) - k)``, at warp index ``(b >> s) * w + warp``; then
``ceil(n / 2**s) * w <= 2**k`` (``ceil(n / 2**s) <= 2**(ceil_log2(n) - s)`` and ``w <= 2**ceil_log2(w)``), so a record
never lands past the buffer. Reference: PTX ISA, special registers (%globaltimer, %clock64, %smid, %laneid), clz,
st (vector forms).
"""

from __future__ import annotations

from ktui.protocol.trace import HEADER_BYTES, MAGIC, SLOTS, VERSION


def marker(base: int, slot: int, warps_log2: int) -> str:
    """The inline PTX of the marker for record slot ``slot`` of a buffer at device address ``base`` with room for
    ``2**warps_log2`` warps. Its one output operand (``$0``, a 32-bit register, constraint ``=r``) is the low 32 bits
    of the clock it read (callers drop it).

    Raises:
        ValueError: ``slot`` outside ``0..SLOTS-1``, ``base`` not 16-byte aligned, or ``warps_log2`` negative.
    """
    if not 0 <= slot < SLOTS:
        raise ValueError(f"slot {slot} outside 0..{SLOTS - 1}")
    if base <= 0 or base % 16:
        raise ValueError(f"trace buffer address {base:#x} is not a 16-byte aligned device address")
    if warps_log2 < 0:
        raise ValueError(f"warps_log2 must be >= 0, not {warps_log2}")
    cap_records = (1 << warps_log2) * SLOTS
    header = _HEADER.format(base=base, magic=MAGIC, version=VERSION, slots=SLOTS) if slot % 2 == 0 else ""
    return f"""{{
.reg .pred %kt_p<8>;
.reg .b32 %kt_r<32>;
.reg .b64 %kt_d<16>;
mov.u64 %kt_d0, %globaltimer;
mov.u64 %kt_d1, %clock64;
mov.u32 %kt_r0, %laneid;
mov.u32 %kt_r1, %smid;
mov.u32 %kt_r2, %tid.x;
mov.u32 %kt_r3, %tid.y;
mov.u32 %kt_r4, %tid.z;
mov.u32 %kt_r5, %ntid.x;
mov.u32 %kt_r6, %ntid.y;
mov.u32 %kt_r7, %ntid.z;
mad.lo.u32 %kt_r8, %kt_r4, %kt_r6, %kt_r3;
mad.lo.u32 %kt_r8, %kt_r8, %kt_r5, %kt_r2;
shr.u32 %kt_r9, %kt_r8, 5;
mul.lo.u32 %kt_r10, %kt_r5, %kt_r6;
mul.lo.u32 %kt_r10, %kt_r10, %kt_r7;
add.u32 %kt_r10, %kt_r10, 31;
shr.u32 %kt_r10, %kt_r10, 5;
mov.u32 %kt_r11, %ctaid.x;
mov.u32 %kt_r12, %ctaid.y;
mov.u32 %kt_r13, %ctaid.z;
mov.u32 %kt_r14, %nctaid.x;
mov.u32 %kt_r15, %nctaid.y;
mov.u32 %kt_r16, %nctaid.z;
mad.lo.u32 %kt_r17, %kt_r13, %kt_r15, %kt_r12;
cvt.u64.u32 %kt_d2, %kt_r11;
mad.wide.u32 %kt_d2, %kt_r17, %kt_r14, %kt_d2;
mul.lo.u32 %kt_r18, %kt_r15, %kt_r16;
mul.wide.u32 %kt_d3, %kt_r18, %kt_r14;
sub.u64 %kt_d4, %kt_d3, 1;
clz.b64 %kt_r19, %kt_d4;
sub.u32 %kt_r19, 64, %kt_r19;
sub.u32 %kt_r20, %kt_r10, 1;
clz.b32 %kt_r20, %kt_r20;
sub.u32 %kt_r20, 32, %kt_r20;
add.u32 %kt_r21, %kt_r19, %kt_r20;
sub.s32 %kt_r21, %kt_r21, {warps_log2};
max.s32 %kt_r21, %kt_r21, 0;
mov.u64 %kt_d5, 1;
shl.b64 %kt_d5, %kt_d5, %kt_r21;
sub.u64 %kt_d5, %kt_d5, 1;
and.b64 %kt_d5, %kt_d2, %kt_d5;
setp.eq.u64 %kt_p1, %kt_d5, 0;
shr.u64 %kt_d6, %kt_d2, %kt_r21;
cvt.u64.u32 %kt_d7, %kt_r10;
mul.lo.u64 %kt_d6, %kt_d6, %kt_d7;
cvt.u64.u32 %kt_d7, %kt_r9;
add.u64 %kt_d6, %kt_d6, %kt_d7;
mul.lo.u64 %kt_d6, %kt_d6, {SLOTS};
add.u64 %kt_d6, %kt_d6, {slot};
setp.lt.u64 %kt_p2, %kt_d6, {cap_records};
setp.eq.u32 %kt_p0, %kt_r0, 0;
and.pred %kt_p3, %kt_p0, %kt_p1;
and.pred %kt_p3, %kt_p3, %kt_p2;
shl.b64 %kt_d8, %kt_d6, 4;
add.u64 %kt_d8, %kt_d8, {base + HEADER_BYTES};
cvt.u32.u64 %kt_r22, %kt_d1;
mov.b64 %kt_d9, {{%kt_r22, %kt_r1}};
@%kt_p3 st.global.cs.v2.u64 [%kt_d8], {{%kt_d0, %kt_d9}};
{header}mov.u32 $0, %kt_r22;
}}"""


# CTA 0, warp 0, lane 0 writes the header (in begin markers only: half the markers carry it).
_HEADER = """setp.eq.u64 %kt_p4, %kt_d2, 0;
setp.eq.u32 %kt_p5, %kt_r9, 0;
and.pred %kt_p4, %kt_p4, %kt_p5;
and.pred %kt_p4, %kt_p4, %kt_p0;
mov.u64 %kt_d10, {base};
mov.u32 %kt_r23, {magic};
mov.u32 %kt_r24, {version};
mov.u32 %kt_r25, {slots};
@%kt_p4 st.global.cs.v4.u32 [%kt_d10], {{%kt_r23, %kt_r24, %kt_r14, %kt_r15}};
@%kt_p4 st.global.cs.v4.u32 [%kt_d10+16], {{%kt_r16, %kt_r5, %kt_r6, %kt_r7}};
@%kt_p4 st.global.cs.v2.u32 [%kt_d10+32], {{%kt_r21, %kt_r25}};
"""
