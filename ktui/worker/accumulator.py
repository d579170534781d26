"""The verdict's accumulator: what ``ktui.worker.metrics`` needs of an output, folded in chunk by chunk.

``Sums.add`` takes one chunk of the flattened output and reference (float64, on the judge's device) and keeps running
sums (squared error, dot products, norms, the reference's peak), counts (NaN, inf, unwritten, outside the tolerance,
flushed to zero), the worst element and the range of the bad ones, so that memory stays bounded for outputs of any
size; ``ktui.worker.metrics`` turns the sums into figures and applies the tolerance's rules.
"""

from __future__ import annotations

import math

import torch

from ktui.worker.tolerance import Tolerance

FLOAT32_U = 2.0**-24  # float32's unit roundoff (IEEE 754 binary32, 24-bit significand): x the median |ref|, the
# off rule's floor where the truth is 0


def to_float(x: torch.Tensor | float) -> float:
    """A number, or a one-element tensor's value, as a Python float."""
    return float(x.item()) if isinstance(x, torch.Tensor) else float(x)


class Sums:
    """What the verdict needs of an output, accumulated chunk by chunk (flat indices, float64 on the device)."""

    def __init__(
        self,
        tol: Tolerance,
        tiny: float,
        keep_mask: bool,
        rms_ref: float = 0.0,
        gross_slack: torch.Tensor | None = None,
        typical_ref: float = 0.0,
        elem_slack: torch.Tensor | None = None,
    ):
        self.tol, self.tiny, self.keep_mask = tol, tiny, keep_mask
        self.rms_ref = rms_ref  # the reference's RMS over its finite elements (the gross bound's floor)
        self.typical_ref = typical_ref  # the median |ref| (the off rule's floor where the truth is 0)
        # flat, float64: per element what the gross bound grows by (an ill-conditioned truth: ``worker.conditioning``)
        self.gross_slack = gross_slack
        # and what the off and firm bounds grow by: the truth's move at the compute precision (float32's u), where
        # an honest kernel's arithmetic lands, not the output's (a bf16 u would cover an fp16 accumulator)
        self.elem_slack = elem_slack
        self.slacked = 0  # elements past a plain bound (off or gross) that the slack let through
        self.gross, self.gross_ratio, self.gross_ratio_i = 0, 0.0, 0  # psnr mode: elements grossly off, worst ratio
        self.firm = 0  # psnr mode: elements off by more than elem_ulps u max(|ref|, rms(ref)) (``max_firm_frac``)
        self.first_firm: int | None = None
        self.last_firm: int | None = None
        self.firm_mask: torch.Tensor | None = None
        self.first_gross: int | None = None
        self.last_gross: int | None = None
        self.gross_mask: torch.Tensor | None = None
        self.sq = self.dot = self.no2 = self.nr2 = self.peak = 0.0
        self.nan_o = self.inf_o = self.nan_r = self.nonfinite = self.unwritten = self.outside = self.flushed = 0
        self.max_bad, self.max_bad_i, self.nan_d = 0.0, 0, False
        self.rel, self.any_nz, self.nonfinite_at_zero = 0.0, False, False
        self.ratio, self.ratio_i, self.flushed_max = 0.0, 0, 0.0
        self.off, self.l1, self.l1_ref = 0, 0.0, 0.0  # psnr mode: elements off by > elem_ulps u |ref|; L1 sums
        # psnr mode, elementwise: which way the erring elements' errors point, in ulps of the output dtype at the
        # truth (``metrics.rounding_lean``): toward zero or away (|out| below or above |ref|), down or up
        self.erring, self.toward, self.away, self.down, self.up = 0, 0, 0, 0, 0
        self.toward_ulps, self.down_ulps = 0.0, 0.0  # the sums of sign(ref) d / ulp and of d / ulp
        self.first_off: int | None = None
        self.last_off: int | None = None
        self.off_mask: torch.Tensor | None = None
        self.first_nonfinite: int | None = None
        self.first_unwritten: int | None = None
        self.first_bad: int | None = None
        self.last_bad: int | None = None
        self.bad_mask: torch.Tensor | None = None  # the whole bad mask, when one chunk held the whole output

    def add(self, s: int, o: torch.Tensor, r: torch.Tensor, unwritten: torch.Tensor | None) -> None:
        """Fold in elements ``s ..`` of the output ``o`` and reference ``r`` (float64, flat, same device)."""
        tol = self.tol
        if unwritten is not None:
            # an element holding the reference's own value is right, whatever wrote it: integer poison bytes are
            # ordinary values of 1- and 2-byte ints (0x5A is 90 in int8), and the decoy fill shows an unwritten one
            unwritten = unwritten.to(o.device) & ~(o == r)
            if bool(unwritten.any()):  # counted below; the figures are the written elements' (not NaN everywhere)
                o = torch.where(unwritten, r, o)
        nan_o, nan_r = torch.isnan(o), torch.isnan(r)
        same = (nan_o & nan_r) | (torch.isinf(o) & torch.isinf(r) & (torch.sign(o) == torch.sign(r)))
        d = torch.where(same, torch.zeros_like(o), o - r)
        ad = d.abs()
        nonfinite = ~torch.isfinite(ad)
        oc, rc = torch.where(same, torch.zeros_like(o), o), torch.where(same, torch.zeros_like(r), r)
        self.nan_o += int(nan_o.sum())
        self.inf_o += int(torch.isinf(o).sum())
        self.nan_r += int(nan_r.sum())
        n_nonfinite = int(nonfinite.sum())
        self.nonfinite += n_nonfinite
        if n_nonfinite and self.first_nonfinite is None:
            self.first_nonfinite = s + int(torch.nonzero(nonfinite)[0])
        self.nan_d |= bool(torch.isnan(ad).any())
        badness = torch.where(nonfinite, torch.full_like(ad, math.inf), ad)  # non-finite counts as the largest
        i = int(torch.argmax(badness))
        if to_float(badness[i]) > self.max_bad or s == 0:
            self.max_bad, self.max_bad_i = to_float(badness[i]), s + i
        ar = r.abs()
        scale = pair_magnitude(r) if tol.pairs else ar  # what an element's allowance scales with
        nz = (ar > 0) & torch.isfinite(ar)
        if bool(nz.any()):
            rel = to_float((ad[nz] / ar[nz]).max())  # NaN propagates
            self.rel = math.nan if math.isnan(rel) or math.isnan(self.rel) else max(self.rel, rel)
            self.any_nz = True
        self.nonfinite_at_zero |= bool(nonfinite[~nz].any())
        self.sq += to_float((d * d).sum())
        self.dot += to_float(torch.dot(oc, rc))
        self.no2 += to_float(torch.dot(oc, oc))
        self.nr2 += to_float(torch.dot(rc, rc))
        fr = r[torch.isfinite(r)]
        if fr.numel():
            self.peak = max(self.peak, to_float(fr.abs().max()))
        bad = nonfinite.clone()
        if unwritten is not None:
            n_unwritten = int(unwritten.sum())
            if n_unwritten and self.first_unwritten is None:
                self.first_unwritten = s + int(torch.nonzero(unwritten)[0])
            self.unwritten += n_unwritten
            bad |= unwritten
        if tol.mode == "exact":
            neq = ~(same | (o == r))
            self.outside += int(neq.sum())
            bad |= neq
        elif tol.mode == "allclose":
            # the fixed allowance, or the native-precision reference's error times the stated factor if larger
            fixed = tol.elementwise(scale, self.tiny).clamp_min(tol.native_atol)
            allowance = torch.where(same, torch.ones_like(r), fixed).clamp_min(1e-300)
            inside = same | (ad <= allowance)
            self.outside += int((~inside).sum())
            bad |= ~inside
            ratio = torch.where(inside, ad / allowance, torch.full_like(ad, math.inf))
            j = int(torch.argmax(ratio))
            if to_float(ratio[j]) > self.ratio:
                self.ratio, self.ratio_i = to_float(ratio[j]), s + j
        else:  # psnr: small values flushed to zero, which whole-tensor figures cannot see
            # where the truth is ill-conditioned, each bound grows by this (``worker.conditioning``); the elements it
            # let through (past a plain bound, within the grown ones) are counted in ``slacked``
            slack = self.gross_slack[s : s + r.numel()].to(r.device) if self.gross_slack is not None else None
            eslack = self.elem_slack[s : s + r.numel()].to(r.device) if self.elem_slack is not None else None
            slacked = off = gross = firm = torch.zeros_like(r, dtype=torch.bool)
            flushed = (o == 0) & (ar >= self.tiny) & torch.isfinite(r)
            if eslack is not None:  # a zero the ill-conditioned truth allows is no flushed value
                flushed &= ad > eslack
            n_flushed = int(flushed.sum())
            if n_flushed:
                self.flushed += n_flushed
                self.flushed_max = max(self.flushed_max, to_float(ar[flushed].max()))
            if tol.unit_roundoff > 0:  # elementwise, scaled to the dtype (cases.md mass-loss)
                fin = torch.isfinite(r) & ~nonfinite
                # where the float64 truth is 0, an element within float32's unit roundoff of the output's typical
                # magnitude (the median |ref|) is not off: a GELU's truth is 0 below x = -8.3 (1 + erf cancels)
                # where an honest erfc gives -4e-23. Only there: a floor on every element let a bf16 kernel that
                # zeroes |x| < 1e-3 through once the extreme family's max/8 values had set the scale (round 17b)
                lim = tol.elementwise(scale, self.tiny)
                lim = torch.where(ar == 0, lim.clamp_min(FLOAT32_U * self.typical_ref), lim)
                beyond = ad  # the error past what an ill-conditioned truth allows (``worker.conditioning``)
                if eslack is not None:
                    plain_off = fin & (ad > lim)
                    lim = lim + eslack
                    beyond = (ad - eslack).clamp_min(0.0)
                off = fin & (ad > lim)
                if eslack is not None:
                    slacked |= plain_off & ~off
                n_off = int(off.sum())
                self.off += n_off
                self.l1 += to_float(torch.where(fin, beyond, torch.zeros_like(ad)).sum())
                self.l1_ref += to_float(torch.where(fin, ar, torch.zeros_like(ar)).sum())
                self._lean(d, r, ar, fin)
                if n_off:
                    idx = torch.nonzero(off)[:, 0]
                    self.first_off = s + int(idx[0]) if self.first_off is None else self.first_off
                    self.last_off = s + int(idx[-1])
                if self.keep_mask:
                    self.off_mask = off
            gross_lim = tol.gross_allowance(ar, self.rms_ref, self.tiny)
            if gross_lim is not None:  # no element grossly off (``tolerance.gross_allowance``)
                fin = torch.isfinite(r) & ~nonfinite
                if slack is not None:
                    plain = gross_lim
                    gross_lim = plain + slack
                    slacked |= fin & (ad > plain) & (ad <= gross_lim)
                ratio = torch.where(fin, ad / gross_lim, torch.zeros_like(ad))
                j = int(torch.argmax(ratio))
                if to_float(ratio[j]) > self.gross_ratio:
                    self.gross_ratio, self.gross_ratio_i = to_float(ratio[j]), s + j
                gross = ratio > 1
                firm_lim = tol.firm_allowance(ar, self.rms_ref, self.tiny)
                if firm_lim is not None:
                    firm = fin & (ad > (firm_lim + eslack if eslack is not None else firm_lim))
                    if eslack is not None:
                        slacked |= fin & (ad > firm_lim) & ~firm
                    n_firm = int(firm.sum())
                    self.firm += n_firm
                    if n_firm:
                        idx = torch.nonzero(firm)[:, 0]
                        self.first_firm = s + int(idx[0]) if self.first_firm is None else self.first_firm
                        self.last_firm = s + int(idx[-1])
                    if self.keep_mask:
                        self.firm_mask = firm
                n_gross = int(gross.sum())
                self.gross += n_gross
                if n_gross:
                    idx = torch.nonzero(gross)[:, 0]
                    self.first_gross = s + int(idx[0]) if self.first_gross is None else self.first_gross
                    self.last_gross = s + int(idx[-1])
                if self.keep_mask:
                    self.gross_mask = gross
            if slack is not None or eslack is not None:  # let through: past a plain bound, within every grown one
                self.slacked += int((slacked & ~off & ~gross & ~firm).sum())
        if self.keep_mask:
            self.bad_mask = bad
        if bool(bad.any()):
            idx = torch.nonzero(bad)[:, 0]
            self.first_bad = s + int(idx[0]) if self.first_bad is None else self.first_bad
            self.last_bad = s + int(idx[-1])

    def _lean(self, d: torch.Tensor, r: torch.Tensor, ar: torch.Tensor, fin: torch.Tensor) -> None:
        """Count the direction of each erring element's error ``d`` (float64, flat) where the truth ``r`` is finite
        and at least ``tiny``, in units of the output dtype's ulp at the truth: ``2**e u`` for ``|r| = m 2**e``,
        ``0.5 <= m < 1`` (``u`` the unit roundoff, so one ulp of bf16 at 1.0 is ``2**-7``)."""
        erring = fin & (ar >= self.tiny) & (d != 0)
        n = int(erring.sum())
        if not n:
            return
        re = r[erring]
        _, e = torch.frexp(re)
        ulps = d[erring] / torch.ldexp(torch.full_like(re, self.tol.unit_roundoff), e)
        mag = ulps * torch.sign(re)
        self.erring += n
        self.toward += int((mag < 0).sum())
        self.away += int((mag > 0).sum())
        self.down += int((ulps < 0).sum())
        self.up += int((ulps > 0).sum())
        self.toward_ulps -= to_float(mag.sum())
        self.down_ulps -= to_float(ulps.sum())


def pair_magnitude(r: torch.Tensor) -> torch.Tensor:
    """Per element of ``r`` (flat float64, a complex tensor's interleaved (real, imaginary) parts), the magnitude |z|
    of the complex number it is a part of; ``|r|`` when ``r`` has an odd length (no pairs)."""
    if r.numel() % 2:
        return r.abs()
    mag: torch.Tensor = torch.linalg.vector_norm(r.reshape(-1, 2), dim=1).repeat_interleave(2)
    return mag


def poisoned_chunk(raw: torch.Tensor) -> torch.Tensor:
    """The elements of a chunk of a candidate's output that still hold the poison pattern (never written)."""
    from ktui.worker.tensors import poisoned_mask

    return poisoned_mask(raw.cpu().contiguous())
