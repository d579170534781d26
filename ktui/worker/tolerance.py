"""The tolerance policy: how close is close enough, by the precision of the data involved.

Full precision (float64, float32): every element must satisfy ``|out - ref| <= atol + rtol * |ref|``, the test of
``torch.testing.assert_close`` / ``numpy.allclose``.

Low precision (bfloat16, float16, float8): elementwise bounds are either too loose or fail on rounding, so the verdict
uses whole-tensor figures: PSNR (dB) and cosine similarity must reach thresholds.

In both, NaN positions must match the reference's exactly and every element must be written. Full precision also
bounds the relative L2 error (``max_rel_l2``: 1e-3 for float32), so an all-zero answer to an output whose values are
all below ``atol`` fails (cases.md zeros-pass) instead of passing elementwise; low precision bounds it too (0.05 for
bfloat16), whatever mode an override picks.

A reference module overrides any field by dtype name::

    tolerance = {"float32": {"atol": 1e-5, "rtol": 1e-5},
                 "bfloat16": {"min_psnr_db": 45.0, "min_cosine": 0.9999}}

Default thresholds. float32: atol = rtol = 1e-5, about 80 ulp at 1.0 (eps = 2**-23 = 1.2e-7), enough for reductions
of a few thousand terms. PSNR = 20 log10(peak / RMSE): bfloat16 keeps 8 significant bits, so rounding the output alone
gives a relative RMS error of 2**-9 / sqrt(3) = 1.1e-3, a PSNR of at least 59 dB (more when the peak is above the RMS);
40 dB leaves a factor of ~9 for accumulated rounding. float16 keeps 11 bits: 18 dB more, so 58 dB. Cosine similarity:
``1 - cos ~ rel_rms_err**2 / 2``, so 0.9999 allows a relative RMS error of ~1.4e-2 (bf16), 0.99999 ~4.5e-3 (fp16).
Neither sees a uniform scale error (``1.03 * ref`` has cosine 1 and, at bf16, a PSNR near 43 dB), so low precision
also bounds ``scale_err = |<out,ref>/<ref,ref> - 1|`` at about 2.5 units of precision: 0.01 for bfloat16 (eps =
2**-8), 0.002 for float16 (2**-11), 0.1 / 0.2 for float8 e4m3 / e5m2. Rounding to nearest leaves it near 0; even
truncation to the output dtype leaves it below eps / 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

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

    def describe(self) -> str:
        """The thresholds in one phrase: ``atol=1e-05 rtol=1e-05``, ``psnr_db>=40 cosine>=0.9999``, ``exact``."""
        if self.mode == "allclose":
            return f"atol={self.atol:g} rtol={self.rtol:g}"
        if self.mode == "psnr":
            return f"psnr_db>={self.min_psnr_db:g} cosine>={self.min_cosine:g}"
        return "exact"


DEFAULTS: dict[str, Tolerance] = {
    "float64": Tolerance("allclose", atol=1e-10, rtol=1e-10, max_rel_l2=1e-9),
    "float32": Tolerance("allclose", atol=1e-5, rtol=1e-5, max_rel_l2=1e-3),
    "bfloat16": Tolerance("psnr", min_psnr_db=40.0, min_cosine=0.9999, max_rel_l2=0.05, max_scale_err=0.01),
    "float16": Tolerance("psnr", min_psnr_db=58.0, min_cosine=0.99999, max_rel_l2=0.02, max_scale_err=0.002),
    "float8_e4m3fn": Tolerance("psnr", min_psnr_db=25.0, min_cosine=0.999, max_rel_l2=0.2, max_scale_err=0.1),
    "float8_e5m2": Tolerance("psnr", min_psnr_db=20.0, min_cosine=0.998, max_rel_l2=0.3, max_scale_err=0.2),
}
EXACT = Tolerance("exact")


def resolve(policy_dtype: str, overrides: dict[str, Any] | None) -> Tolerance:
    """The tolerance for data whose lowest precision is ``policy_dtype`` (a torch dtype name without ``torch.``).

    Integer and bool data compare exactly. A float dtype with no default falls back to float32's or bfloat16's
    thresholds by its precision class.

    Raises:
        ValueError: an override names a field that does not exist, or gives one for the wrong mode.
    """
    if policy_dtype.startswith(("int", "uint", "bool")):
        return EXACT
    base = DEFAULTS.get(policy_dtype) or (
        DEFAULTS["bfloat16"] if policy_dtype in LOW_PRECISION else DEFAULTS["float32"]
    )
    over = dict((overrides or {}).get(policy_dtype, {}))
    if not over:
        return base
    names = {f.name for f in fields(Tolerance)} - {"mode"}
    unknown = set(over) - names
    if unknown:
        raise ValueError(f"tolerance[{policy_dtype!r}] has unknown field(s) {sorted(unknown)}; known: {sorted(names)}")
    mode = over.pop("mode", None) or base.mode
    if "min_psnr_db" in over or "min_cosine" in over:
        mode = "psnr"
    elif ("atol" in over or "rtol" in over) and base.mode != "allclose":
        mode = "allclose"
    return replace(base, mode=mode, **{k: float(v) for k, v in over.items()})


def is_low_precision(dtype: str) -> bool:
    """``dtype`` (a torch name) is judged by PSNR and cosine rather than elementwise."""
    return dtype in LOW_PRECISION
