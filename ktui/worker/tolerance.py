"""The tolerance policy: how close is close enough, by the precision of each output (its own dtype: an fp32 output
computed from bf16 inputs is judged as fp32, ``ktui.worker.problem.output_dtype``).

Full precision (float64, float32): every element must satisfy ``|out - ref| <= atol + rtol * |ref|``, the test of
``torch.testing.assert_close`` / ``numpy.allclose``.

Low precision (bfloat16, float16, float8): elementwise bounds are either too loose or fail on rounding, so the verdict
uses whole-tensor figures: PSNR (dB) and cosine similarity must reach thresholds.

In both, NaN positions must match the reference's exactly and every element must be written. Full precision also
bounds the relative L2 error (``max_rel_l2``: 1e-3 for float32), so an all-zero answer to an output whose values are
all below ``atol`` fails (cases.md zeros-pass) instead of passing elementwise; low precision bounds it too (0.05 for
bfloat16), whatever mode an override picks.

Full precision by default also follows what the computation achieves in the output's own precision (cases.md
honest-fp32). A fixed atol = rtol = 1e-5 fails honest fp32 kernels whose op is ill-conditioned in fp32 (an
IEEE-exact matmul with K = 320 on outputs near zero; a LayerNorm on rows shifted far from zero, where torch's own fp32
``layer_norm`` fails worse): no fp32 program can meet it. So the judge measures the reference computed in the native
precision (``native_err``: the largest |native - float64 truth| of ``ref_kernel`` run on the float32 inputs and on the
same inputs moved one ulp up or down at random, so a lucky rounding of the reference does not set the bar) and each
element may also be off by ``native_factor * native_err``; the relative L2 bound likewise grows to
``native_factor * native_rel_l2`` (never beyond ``MAX_NATIVE_REL_L2``, so an all-zero answer always fails). The
allowance is the larger of the two, never tighter than the fixed one.

``native_factor`` = 8 (``NATIVE_FACTOR``), derived: an honest kernel computes the same math in the same precision in
another order (blocked, tree or sequential sums, FMA contraction), so its error is another sample of the same kind.
Two samples of the largest rounding error over an output of many elements differ by well under 2x (over a few
elements more, which is why the bar is the worse of two native runs); FMA against separate multiply and add changes
it by ~sqrt(2) (one rounding per term instead of two); and summing n terms one after another instead of pairwise
costs sqrt(n / (2 log2 n)) in RMS error (random-walk model: sum_k k u^2 against n log2(n) u^2), 4.4x at n = 320
and 8x at n ~ 1300. So 8 covers a blocked or tree reduction of any length and a purely sequential one up to ~1300
terms. Measured (tests/cases, every input distribution, CPU): the honest IEEE fp32 matmul and two-pass LayerNorm
sit at 0.1x to 1.5x. Arithmetic that is genuinely less precise sits far above it: TF32 operands have 2**13 times
float32's unit roundoff (measured 255x), a bf16 accumulator 2**16 (1,000x to 100,000x), a one-pass variance
E[x^2] - E[x]^2 on rows at mean/std ~ 1000 loses ~mean/std (80x to 4,000x).
A kernel that sums thousands of terms strictly sequentially in fp32 can exceed 8x: block the reduction or declare a
tolerance.

A reference module overrides any field by dtype name::

    tolerance = {"float32": {"atol": 1e-5, "rtol": 1e-5},
                 "bfloat16": {"min_psnr_db": 45.0, "min_cosine": 0.9999}}

An override for a dtype is taken exactly as written: it turns the native-precision allowance off for that dtype
(unless it sets ``native_factor`` itself).

Default thresholds. float32: atol = rtol = 1e-5, about 80 ulp at 1.0 (eps = 2**-23 = 1.2e-7), enough for reductions
of a few thousand terms. PSNR = 20 log10(peak / RMSE): bfloat16 keeps 8 significant bits, so rounding the output alone
gives a relative RMS error of 2**-9 / sqrt(3) = 1.1e-3, a PSNR of at least 59 dB (more when the peak is above the RMS);
40 dB leaves a factor of ~9 for accumulated rounding. float16 keeps 11 bits: 18 dB more, so 58 dB. Cosine similarity:
``1 - cos ~ rel_rms_err**2 / 2``, so 0.9999 allows a relative RMS error of ~1.4e-2 (bf16), 0.99999 ~4.5e-3 (fp16).
Neither sees a uniform scale error (``1.03 * ref`` has cosine 1 and, at bf16, a PSNR near 43 dB), so low precision
also bounds ``scale_err = |<out,ref>/<ref,ref> - 1|`` at about 2.5 units of precision: 0.01 for bfloat16 (eps =
2**-8), 0.002 for float16 (2**-11), 0.1 / 0.2 for float8 e4m3 / e5m2. Rounding to nearest leaves it near 0; even
truncation to the output dtype leaves it below eps / 2.

Low precision is also judged elementwise, scaled to the dtype (cases.md mass-loss), since L2 and peak figures cannot
see small values flushed or lost (a bf16 softmax writing 0 below max/1024 keeps PSNR and cosine). With ``u`` the
unit roundoff of the policy dtype (``unit_roundoff``: 2**-8 bfloat16, 2**-11 float16, 2**-4 / 2**-3 float8 e4m3 /
e5m2; one ulp at |x| is between u |x| and 2u |x|), an element is *off* when ``|out - ref| > ELEM_ULPS * u *
max(|ref|, tiny)`` and, where the float64 truth is exactly 0, by more than ``2**-24 median(|ref|)`` too (torch's
float64 truth can be 0 where the value is not: a GELU's ``1 + erf(x / sqrt 2)`` cancels to 0 below x = -8.3 where an
honest ``erfc`` gives -4e-23; the median, not the RMS, which the extreme family's max/8 values set):
ELEM_ULPS = 8, i.e. 4 to 8 ulp (3.1% relative at bf16). Round-to-nearest output leaves at most
u (half an ulp), truncation (the CPU interpreter) 2u, fp32 accumulation far less except where cancellation makes
|ref| small against the terms summed, which is rare: a K = 320 bf16 dot with an fp32 accumulator is off only where
|ref| < ~3e-4 with terms of ~1, a fraction of ~1e-5. So at most ``max_off_frac`` = 1% of the elements may be off
(flushing below max/1024 puts 60-90% of a softmax row's elements off). And the L1 relative error
``sum |out - ref| / sum |ref|`` must stay within ``max_rel_l1`` = 4u (1.6% bf16): round-to-nearest gives ~u/2 and
truncation ~u on average, while losing a few % of the mass (the flushed values, wherever they sit) goes above it.

Neither the 1% allowance nor the whole-tensor figures bound a *few* elements grossly wrong: 1 to 4 of 65,536 bf16
elements zeroed or of the wrong sign keep PSNR above 40 dB, cosine above 0.9999 and the off fraction far below 1% (red
team round 10: a chunked loop whose mask drops the last element of every 16,384). So low precision also bounds every
element (``gross_ulps``): an element is *grossly* off when ``|out - ref| > min(GROSS_ULPS * u, GROSS_CAP) * max(|ref|,
rms(ref), tiny)``, rms(ref) the root mean square of the reference's finite elements, and one such element fails the
output. GROSS_ULPS = 32 (16 to 32 ulp; 12.5% at bf16, 1.6% at fp16), GROSS_CAP = 0.5 (float8, where 32u is 2 or 4: still
half of the element's scale). Between the two bounds, an element off by more than ELEM_ULPS u max(|ref|, rms(ref)) (8 u:
the off rule's bound at the scale of rms(ref) too, where no cancellation explains it) counts against ``max_firm_frac`` =
MAX_FIRM_FRAC = 0.125% of the elements (red team round 19, W6: a bf16 SiLU rounding one lane in 128 to 3 mantissa bits,
off by 17u on 0.78% of the elements, passed the 1% allowance and the gross bound; past the slack of
``worker.conditioning`` 0.29% of its elements are off by 8 u, 2.3x this bound). Not zero, and the gross bound not 8 u:
an honest bf16 attention that rounds q * scale * log2(e) to bf16 before the dot (the Triton tutorial's pre-scale) puts 2
to 9 of 16,448 elements (up to 0.055%) past 8 u at near-tied scores in 1 of 40 draws, 13 u at most, which the truth's
move under random u-relative input moves (``worker.conditioning``) does not always cover (a gross bound of 8 u failed
it). Derived: an honest kernel's error at an element is its output rounding (at most u |ref| to nearest, 2u truncating)
plus what its arithmetic in a wider precision costs, which against rms(ref) is that precision's unit roundoff times the
op's conditioning (fp32 accumulation: ~1e-7 of the terms' scale); elements whose |ref| is small against rms(ref) through
cancellation are bounded at rms(ref), not at |ref|, which the 8u |ref| test cannot do and why it allows 1%. Measured
(tests/cases and the examples, every input distribution, CPU interpreter; ``ktui/worker/metrics.py`` reports the ratio
as ``gross_ratio``): honest bf16 and fp16 kernels reach 0.016 to 0.06 of the bound at 32 u (2u at most, truncating: a
quarter of the 8 u of the firm rule), while an element zeroed or negated fails wherever |ref| is above 12.5% (zeroed) or
6.3% (negated) of rms(ref) in bf16. Where the float64 truth is a step of the inputs (a rounding, a fake quantization
``round(x / s) * s``), an honest fp32 computation lands a whole step off wherever the truth is within fp32's rounding of
the step: an output that fails the gross bound is judged again with the bound grown at each element by twice how far the
truth moves there when the inputs move by u relative (``ktui.worker.conditioning``; measured on ``round(x / 0.3) * 0.3``
to bf16: 57 of 65,536 elements a step off, all let through, while every zeroed or negated element of a scale, a GELU or
an exp still fails). Where the reference computed in its own precision is itself grossly off (an op ill-conditioned in
that precision), the case is judged against its error element by element instead (``compare.native_fails_too``).

None of these bounds sees which way the errors point. A conversion to the output dtype that truncates (keeping the
high 16 bits of a float32 for bf16, ``rounding="rtz"``) is off by under one ulp everywhere, inside every bound above,
but always toward zero: a sum of its outputs is biased by ~u/2 (red team round 31, #8: -2.1e-3 relative on a bf16 GELU,
17x an honest kernel's), which every reduction downstream inherits. Round to nearest leaves an element's error
anywhere in half an ulp either way, so as many elements err toward zero as away, and down as up. An output with
at least ``LEAN_MIN_ELEMENTS`` = 256 erring elements (where the truth is finite and not tiny), more than
``LEAN_ONE_WAY`` = 97% of them (``max_one_way``) erring the same way (toward zero, away from it, down or up) and a
mean error that way of at least ``LEAN_ULPS`` = 0.25 ulp of the output dtype at the truth (``2**e u`` for ``|ref| =
m 2**e``, ``0.5 <= m < 1``) fails (``metrics.rounding_lean``). Truncation gives 100% and 0.5 ulp (1 ulp where the
truth is itself in the output dtype); an honest kernel ~50%: over 97% of 256 under a fair coin has probability below
1e-60. Rounding a constant to the output dtype (a bf16 scale) shifts every error by at most half an ulp times
``|ref| / 2**e``, which leaves 75-99% one way (measured in tests/test_rounding_lean.py); the
one-way bound is met only where nearly every output sits at the top of its binade, and then the output carries the
same half-ulp bias as a truncation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import Tensor

ELEM_ULPS = 8.0  # low precision: an element is off beyond 8 u |ref| (4 to 8 ulp); derivation in the docstring
MAX_OFF_FRAC = 0.01  # and at most 1% of the elements may be off; the L1 relative error at most 4u
GROSS_ULPS = 32.0  # and none off by more than 32 u max(|ref|, rms(ref)) (derivation in the docstring)
MAX_FIRM_FRAC = 0.00125  # and at most 0.125% off by more than ELEM_ULPS u max(|ref|, rms(ref)) (the docstring)
GROSS_CAP = 0.5  # the gross bound's factor never above 0.5 (float8: 32u is 2 or 4)
LEAN_MIN_ELEMENTS = 256  # the errors' direction is judged on outputs with at least this many erring elements
LEAN_ONE_WAY = 0.97  # and fails when more than this fraction of them err one way (toward zero, away, down or up)
LEAN_ULPS = 0.25  # with a mean error that way of at least this many ulps of the output dtype (derivation: docstring)
LOW_PRECISION = frozenset(
    {"bfloat16", "float16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"}
)


@dataclass(frozen=True)
class Tolerance:
    """Thresholds for one dtype. ``mode`` is ``allclose`` (full precision), ``psnr`` (low precision) or ``exact``."""

    mode: str
    atol: float = 0.0
    rtol: float = 0.0
    min_psnr_db: float = 0.0
    min_cosine: float = 0.0
    max_rel_l2: float = math.inf  # allclose mode: the whole-tensor check that a loose atol cannot fool
    max_scale_err: float = math.inf  # |<out,ref>/<ref,ref> - 1|: a uniform scale error, invisible to cosine
    # psnr mode, elementwise (see the module docstring): off = |d| > elem_ulps * unit_roundoff * max(|ref|, tiny)
    unit_roundoff: float = 0.0  # u of the policy dtype (2**-8 for bfloat16); 0 turns the elementwise check off
    elem_ulps: float = ELEM_ULPS
    max_off_frac: float = math.inf  # the fraction of elements allowed off
    max_rel_l1: float = math.inf  # sum |d| / sum |ref|
    gross_ulps: float = 0.0  # psnr mode: no element off by > min(gross_ulps u, GROSS_CAP) max(|ref|, rms(ref)); 0: off
    max_firm_frac: float = math.inf  # psnr mode: the fraction allowed off by > elem_ulps u max(|ref|, rms(ref))
    # psnr mode: the largest fraction of the erring elements that may err one way with a mean of LEAN_ULPS ulp that
    # way (``metrics.rounding_lean``); 1 turns the rule off (a reference whose op truncates)
    max_one_way: float = LEAN_ONE_WAY
    native_factor: float = 0.0  # allclose: allowed multiple of the native-precision reference's error (0: off)
    # Set per output by the judge (``with_native``), not by a reference: the native reference's own errors.
    native_err: float = 0.0  # max |native - truth| (the worse of the inputs and the inputs one ulp away)
    native_rel_l2: float = 0.0  # its relative L2 error
    native_dtype: str = ""  # the native precision, for messages (``float32``)
    explicit: bool = False  # the reference's ``tolerance`` set it (taken exactly as written), not ktui's default
    # Set by the judge for a complex output judged as its (real, imaginary) pairs: each part's allowance scales with
    # the element's magnitude |z| (``torch.isclose`` on complex numbers: |a - b| <= atol + rtol |b|), not with the
    # part's own size, which cancellation can make tiny against the rounding of the products it is made of.
    pairs: bool = False

    def elementwise(self, abs_ref: Tensor, tiny: float) -> Tensor:
        """The allowance of each element (``abs_ref``: ``|ref|``, float64): ``atol + rtol |ref|`` in allclose mode,
        ``elem_ulps u max(|ref|, tiny)`` in psnr mode (zeros when its elementwise check is off, ``unit_roundoff``
        0), zeros in exact mode. The native-precision allowance (``native_atol``) is the caller's to add."""
        if self.mode == "allclose":
            return self.atol + self.rtol * abs_ref
        if self.mode == "psnr" and self.unit_roundoff > 0:
            return self.elem_ulps * self.unit_roundoff * abs_ref.clamp_min(tiny)
        return abs_ref * 0.0

    def gross_allowance(self, abs_ref: Tensor, rms_ref: float, tiny: float) -> Tensor | None:
        """The largest error each element may have before it is grossly wrong (``abs_ref``: ``|ref|``, float64;
        ``rms_ref``: the root mean square of the reference's finite elements): ``min(gross_ulps u, GROSS_CAP)
        max(|ref|, rms_ref, tiny)`` in psnr mode, None where the bound is off (other modes, ``gross_ulps`` or
        ``unit_roundoff`` 0). Derived in the module docstring."""
        if not self.bounds_gross:
            return None
        return self.gross_factor * abs_ref.clamp_min(max(rms_ref, tiny))

    def firm_allowance(self, abs_ref: Tensor, rms_ref: float, tiny: float) -> Tensor | None:
        """The error past which an element counts against ``max_firm_frac``: ``min(elem_ulps u, GROSS_CAP)
        max(|ref|, rms_ref, tiny)`` in psnr mode (the off rule's bound, at the scale of rms(ref) too, where no
        cancellation explains it), None where the gross bound is off. Derived in the module docstring."""
        if not self.bounds_gross:
            return None
        return self.firm_factor * abs_ref.clamp_min(max(rms_ref, tiny))

    @property
    def bounds_gross(self) -> bool:
        """Whether every element is held to the gross bound (psnr mode with ``gross_ulps`` and ``unit_roundoff``)."""
        return self.mode == "psnr" and self.gross_ulps > 0 and self.unit_roundoff > 0

    @property
    def firm_factor(self) -> float:
        """``min(elem_ulps * unit_roundoff, GROSS_CAP)``: the firm bound as a fraction of max(|ref|, rms(ref))."""
        return min(self.elem_ulps * self.unit_roundoff, GROSS_CAP)

    @property
    def gross_factor(self) -> float:
        """``min(gross_ulps * unit_roundoff, GROSS_CAP)``: the gross bound as a fraction of max(|ref|, rms(ref))."""
        return min(self.gross_ulps * self.unit_roundoff, GROSS_CAP)

    @property
    def native_atol(self) -> float:
        """The elementwise allowance from the native reference: ``native_factor * native_err`` (0 when off)."""
        if self.mode != "allclose" or not self.native_factor or not math.isfinite(self.native_err):
            return 0.0
        return self.native_factor * self.native_err

    @property
    def rel_l2_bound(self) -> float:
        """``max_rel_l2``, raised to ``native_factor * native_rel_l2`` when that is larger, at most
        ``MAX_NATIVE_REL_L2``."""
        if self.mode != "allclose" or not self.native_factor or not math.isfinite(self.native_rel_l2):
            return self.max_rel_l2
        return max(self.max_rel_l2, min(self.native_factor * self.native_rel_l2, MAX_NATIVE_REL_L2))

    def with_native(self, max_abs: float, rel_l2: float, dtype: str) -> Tolerance:
        """This tolerance with the native reference's errors on one output (``max_abs``, ``rel_l2`` against the
        float64 truth; ``dtype`` its precision). Unchanged when the native allowance is off or a figure is not
        finite (a native reference that overflows sets no bar)."""
        if self.mode != "allclose" or not self.native_factor or not (math.isfinite(max_abs) and math.isfinite(rel_l2)):
            return self
        return replace(self, native_err=float(max_abs), native_rel_l2=float(rel_l2), native_dtype=dtype)

    def native_comparison(self, max_abs: float) -> str:
        """``max error 3.1e-04 is 2.1x what the reference computed in float32 gets (1.5e-04); allowed: 8x``, or ''
        when no native error is known."""
        if not (self.native_factor and self.native_dtype):
            return ""
        got = f"{max_abs:.2g}"
        if self.native_err > 0:
            return (
                f"max error {got} is {max_abs / self.native_err:.3g}x what the reference computed in "
                f"{self.native_dtype} gets ({self.native_err:.2g}); allowed: {self.native_factor:g}x"
            )
        return f"max error {got} where the reference computed in {self.native_dtype} is exact"

    def native_warning(self, peak: float) -> str:
        """A warning when the native allowance exceeds 1% of the output's scale ``peak`` (max |ref|): the op is
        ill-conditioned in its own precision and the default tolerance is loose because of it; else ''."""
        if not self.native_atol > 0.01 * peak > 0:
            return ""
        return (
            f"the reference computed in {self.native_dtype} is itself off by up to {self.native_err:.2g} here "
            f"({self.native_err / peak:.2g} of max |ref|): the default tolerance follows it ({self.native_factor:g}x); "
            f"set tolerance = {{{self.native_dtype!r}: ...}} in the reference to judge stricter"
        )

    def describe(self) -> str:
        """The thresholds in one phrase: ``atol=1e-05 rtol=1e-05``, ``psnr_db>=40 cosine>=0.9999``, ``exact``;
        with a native allowance ``atol=1e-05 rtol=1e-05 or 8x float32's own error (1.2e-04)``."""
        if self.mode == "allclose":
            if self.native_atol:
                return (
                    f"atol={self.atol:g} rtol={self.rtol:g} or {self.native_factor:g}x {self.native_dtype}'s own "
                    f"error ({self.native_atol:.2g})"
                )
            return f"atol={self.atol:g} rtol={self.rtol:g}" + (" of |z|" if self.pairs else "")
        if self.mode == "psnr":
            return f"psnr_db>={self.min_psnr_db:g} cosine>={self.min_cosine:g}"
        return "exact"


NATIVE_FACTOR = 8.0  # derived in the module docstring
MAX_NATIVE_REL_L2 = 0.5  # the relative L2 bound never grows past this: an all-zero output (1.0) always fails

DEFAULTS: dict[str, Tolerance] = {
    # float64 follows the native reference too: an output of float32 inputs may be float64 with float32's error
    # (``x.sum().double()``); a float64 op's native reference is the truth (its allowance ~0)
    "float64": Tolerance("allclose", atol=1e-10, rtol=1e-10, max_rel_l2=1e-9, native_factor=NATIVE_FACTOR),
    "float32": Tolerance("allclose", atol=1e-5, rtol=1e-5, max_rel_l2=1e-3, native_factor=NATIVE_FACTOR),
    "bfloat16": Tolerance(
        "psnr",
        min_psnr_db=40.0,
        min_cosine=0.9999,
        max_rel_l2=0.05,
        max_scale_err=0.01,
        unit_roundoff=2.0**-8,
        max_off_frac=MAX_OFF_FRAC,
        max_rel_l1=4 * 2.0**-8,
        gross_ulps=GROSS_ULPS,
        max_firm_frac=MAX_FIRM_FRAC,
    ),
    "float16": Tolerance(
        "psnr",
        min_psnr_db=58.0,
        min_cosine=0.99999,
        max_rel_l2=0.02,
        max_scale_err=0.002,
        unit_roundoff=2.0**-11,
        max_off_frac=MAX_OFF_FRAC,
        max_rel_l1=4 * 2.0**-11,
        gross_ulps=GROSS_ULPS,
        max_firm_frac=MAX_FIRM_FRAC,
    ),
    "float8_e4m3fn": Tolerance(
        "psnr",
        min_psnr_db=25.0,
        min_cosine=0.999,
        max_rel_l2=0.2,
        max_scale_err=0.1,
        unit_roundoff=2.0**-4,
        max_off_frac=MAX_OFF_FRAC,
        max_rel_l1=4 * 2.0**-4,
        gross_ulps=GROSS_ULPS,
        max_firm_frac=MAX_FIRM_FRAC,
    ),
    "float8_e5m2": Tolerance(
        "psnr",
        min_psnr_db=20.0,
        min_cosine=0.998,
        max_rel_l2=0.3,
        max_scale_err=0.2,
        unit_roundoff=2.0**-3,
        max_off_frac=MAX_OFF_FRAC,
        max_rel_l1=4 * 2.0**-3,
        gross_ulps=GROSS_ULPS,
        max_firm_frac=MAX_FIRM_FRAC,
    ),
}
EXACT = Tolerance("exact")
# A complex dtype's parts: a complex output takes its parts' defaults, and a reference's override under the complex
# dtype's own name (``tolerance = {"complex64": {...}}``), else under its parts' (``"float32"``)
COMPLEX_PARTS = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}


def resolve(policy_dtype: str, overrides: dict[str, Any] | None) -> Tolerance:
    """The tolerance for an output of dtype ``policy_dtype`` (a torch dtype name without ``torch.``).

    Integer and bool data compare exactly. A float dtype with no default falls back to float32's or bfloat16's
    thresholds by its precision class. A complex dtype (``complex64``) takes its parts' defaults (``float32``) and
    the reference's override under its own name, else under its parts' dtype.

    Raises:
        ValueError: an override names a field that does not exist, or gives one for the wrong mode.
    """
    if policy_dtype.startswith(("int", "uint", "bool")):
        return EXACT
    part = COMPLEX_PARTS.get(policy_dtype, policy_dtype)  # a complex dtype: its parts' defaults
    base = DEFAULTS.get(part) or (DEFAULTS["bfloat16"] if part in LOW_PRECISION else DEFAULTS["float32"])
    given = overrides or {}
    over = dict(given.get(policy_dtype) or given.get(part) or {})
    if not over:
        return base
    over.setdefault("native_factor", 0.0)  # an override is taken exactly as written
    names = {f.name for f in fields(Tolerance)} - {"mode", "native_err", "native_rel_l2", "native_dtype", "pairs"}
    unknown = set(over) - names
    if unknown:
        key = policy_dtype if policy_dtype in given else part
        raise ValueError(f"tolerance[{key!r}] has unknown field(s) {sorted(unknown)}; known: {sorted(names)}")
    mode = over.pop("mode", None) or base.mode
    if "min_psnr_db" in over or "min_cosine" in over:
        mode = "psnr"
    elif ("atol" in over or "rtol" in over) and base.mode != "allclose":
        mode = "allclose"
    values: dict[str, Any] = {k: float(v) for k, v in over.items()}
    return replace(base, mode=mode, explicit=True, **values)


def native_unusable_paths(native_err: dict[str, dict[str, float]] | None) -> dict[str, str]:
    """``native_unusable``'s reason for each output path on which the native reference is no bar ({} when none)."""
    out: dict[str, str] = {}
    for path, err in (native_err or {}).items():
        why = native_unusable({path: err})
        if why:
            out[path] = why
    return out


def native_unusable(native_err: dict[str, dict[str, float]] | None) -> str:
    """Why the native-precision reference is no bar on a case ('' when it is): on some output its relative L2 error
    against the float64 truth (``ktui.worker.native.native_errors``: ``{path: {"max_abs", "rel_l2"}}``) is above
    ``MAX_NATIVE_REL_L2``, so the op cannot be computed in its own precision on these inputs (special values: a
    LayerNorm of values near float32's max is off by 87% in torch's own fp32) and no kernel in that precision can
    meet a bound there. The judge skips such special-values cases, as it skips those whose reference overflows."""
    for path, err in (native_err or {}).items():
        rel = err.get("rel_l2", 0.0)
        if not math.isfinite(rel) or rel > MAX_NATIVE_REL_L2:
            return (
                f"the reference computed in its own precision is itself wrong as a whole at {path or 'out'} "
                f"(rel_l2_err {rel:.3g} > {MAX_NATIVE_REL_L2:g})"
            )
    return ""


def is_low_precision(dtype: str) -> bool:
    """``dtype`` (a torch name) is judged by PSNR and cosine rather than elementwise."""
    return dtype in LOW_PRECISION
