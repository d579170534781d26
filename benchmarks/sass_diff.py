"""How long a 50,000-line SASS diff takes: parse both listings, normalize, diff, render as text, and draw it in the
TUI's Diff tab (a Textual ``Log``, headless). Target: under a second.

    python benchmarks/sass_diff.py [--lines 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ktui.core.inspect import sass

OPS = [
    "FFMA R{a}, R{b}, R{c}, R{a} ;",
    "LDG.E.128 R{a}, desc[UR4][R{b}.64] ;",
    "IMAD.WIDE R{a}, R{b}, 0x4, R{c} ;",
    "HGMMA.64x256x16.F32.BF16 R24, gdesc[UR8].tnspB, R24 ;",
    "BAR.SYNC.DEFER_BLOCKING 0x0 ;",
    "ISETP.GE.AND P{p}, PT, R{a}, UR5, PT ;",
    "STG.E.128 desc[UR4][R{b}.64], R{a} ;",
    "LDS.128 R{a}, [R{b}] ;",
]


def listing(n: int, seed: int, change_every: int | None = None) -> str:
    rnd = random.Random(seed)
    out = ["//--------------------- .text.k --------------------------", ".text.k:"]
    for i in range(n):
        op = OPS[rnd.randrange(len(OPS))]
        if change_every and i % change_every == 0:
            op = "FMUL R{a}, R{b}, R{c} ;"
        out.append(
            f"        /*{i * 16:05x}*/   "
            + op.format(a=rnd.randrange(255), b=rnd.randrange(255), c=rnd.randrange(255), p=rnd.randrange(6))
        )
    return "\n".join(out)


def core(a: str, b: str) -> tuple[float, list[str]]:
    t0 = time.perf_counter()
    la, lb = sass.normalized_text_lines(a), sass.normalized_text_lines(b)
    lines = sass.unified_diff(la, lb, "A", "B")
    return time.perf_counter() - t0, lines


async def draw(lines: list[str]) -> float:
    from textual.app import App
    from textual.widgets import Log

    class Bench(App):
        def compose(self):
            yield Log(id="diff")

    app = Bench()
    async with app.run_test(size=(120, 40)) as pilot:
        t0 = time.perf_counter()
        app.query_one(Log).write_lines(lines)
        await pilot.pause()
        return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=50_000)
    args = ap.parse_args()
    a = listing(args.lines, 1)
    b = listing(args.lines, 1, change_every=37)
    runs = [core(a, b) for _ in range(5)]
    lines = runs[0][1]
    draws = [asyncio.run(draw(lines)) for _ in range(3)]
    c, d = statistics.median(t for t, _ in runs), statistics.median(draws)
    print(f"{args.lines} SASS lines each side, {len(lines)} diff lines")
    print(f"  parse + normalize + diff  median {c:.3f} s (5 runs)")
    print(f"  draw in the Diff tab      median {d:.3f} s (3 runs)")
    print(f"  total                     {c + d:.3f} s  (target < 1 s): {'PASS' if c + d < 1.0 else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
