"""What the worker's integrity check costs: ``integrity.tampered`` against the whole fingerprint (torch, torch.Tensor,
the standard modules, ktui's own; once a run) and against ktui's own functions alone (after every case). Targets:
under 0.1 s and under 0.05 s a call (the judge runs the second per case, so it bounds a case's overhead).

    python benchmarks/integrity_cost.py [--n 20]

Prints the median, min and max seconds a call of each, and whether each meets its target.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20, help="calls of each check")
    args = ap.parse_args()
    import ktui.worker.candidate  # noqa: F401  (what a worker has imported when it checks)
    from ktui.worker import integrity

    rows = []
    for label, own_only, target in (("whole fingerprint", False, 0.1), ("ktui's own", True, 0.05)):
        base = integrity.fingerprint(own_only=own_only)
        times = []
        for _ in range(args.n):
            t0 = time.perf_counter()
            assert integrity.tampered(base, own_only=own_only) == []
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        rows.append((label, len(base), med, min(times), max(times), target, med < target))
    print(f"{'check':<18} {'entries':>8} {'median s':>9} {'min s':>8} {'max s':>8} {'target':>7}  met")
    for label, n, med, lo, hi, target, ok in rows:
        print(f"{label:<18} {n:>8} {med:>9.4f} {lo:>8.4f} {hi:>8.4f} {target:>7.2f}  {'yes' if ok else 'NO'}")
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
