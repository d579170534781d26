"""Compile a version's launches for sm_90a, with ktui's tracer on or off, and write each cubin: a helper that
``tests/test_trace_device.py`` runs in a fresh process per build (the tracer is a process's state, and each build
gets its own Triton cache directory, so no build is ever served from another's cache).

    python tests/trace_compile.py on|off REFERENCE KERNEL OUT_DIR

Each launch the version's dry call makes (``ktui.worker.capture``, cross mode: Triton launches compiled with
``triton.compile`` for sm_90a; ``cute.compile`` with CUTE_DSL_ARCH=sm_90a) is written as ``OUT_DIR/<i>-<kernel>.cubin``;
``OUT_DIR/buffers.json`` lists the trace buffers the markers asked for (kernel, regions, address).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

FAKE_BASE = 0x7F00_0000_0000  # a device address for the traced build (nothing runs: it is only compiled)


def main() -> None:
    mode, ref, kernel, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    out.mkdir(parents=True, exist_ok=True)
    os.environ["TRITON_CACHE_DIR"] = str(out / "triton-cache")
    os.environ["CUTE_DSL_CACHE_DIR"] = str(out / "cute-cache")
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    from ktui.trace import state

    if mode == "on":
        bases = iter(range(FAKE_BASE, FAKE_BASE + (1 << 40), 1 << 30))
        state.activate(state.Tracer("ktui", allocate=lambda n: next(bases), buffer_bytes=32 << 20))
    from ktui.worker import capture
    from ktui.worker.artifacts import cute_artifact
    from ktui.worker.problem import Problem, load_module

    capture.install_triton()
    capture.install_cute(has_gpu=False)
    problem = Problem(ref, ref.stem, hashlib.sha256(ref.read_bytes()).hexdigest())
    spec = problem.module.tests[-1]
    data = problem.generate(1, spec, "cpu")
    module = load_module(kernel, f"traced_{mode}_{kernel.stem}")
    cap = capture.Capture(dry=True, cross=True, keep=True)
    with capture.capturing(cap):
        try:
            module.custom_kernel(data)
        except capture.NeedsGPU:
            pass  # a CuTeDSL version calls its compiled function: compiled, not run
    for i, rec in enumerate(cap.launches):
        compiled = rec["_compiled"]
        if rec["language"] == "triton":
            blob = compiled.asm["cubin"]
        else:
            blob = cute_artifact(getattr(compiled.artifacts, "CUBIN", None), "cubin")
        (out / f"{i}-{rec['kernel']}.cubin").write_bytes(blob)
    tracer = state.active()
    bufs = tracer.buffers if tracer else []
    buffers = [{"kernel": b.kernel, "regions": b.regions, "address": b.address} for b in bufs]
    (out / "buffers.json").write_text(json.dumps(buffers))


if __name__ == "__main__":
    main()
