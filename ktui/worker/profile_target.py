"""The program Nsight Compute profiles: ``python -m ktui.worker.profile_target PARAMS.json``.

It generates a benchmark spec's inputs, calls the version ``warmup`` times (compilation, caches), then exactly
once more between ``cudaProfilerStart`` and ``cudaProfilerStop``: ncu runs with ``--profile-from-start off``, so
that call's kernels are the only ones profiled, whatever the version launches while warming up.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ktui.protocol import ProfileParams


def main() -> None:
    """Profile one call of the version on the spec in the params file (``protocol.ProfileParams``)."""
    p: ProfileParams = json.loads(Path(sys.argv[1]).read_text())
    import torch

    from ktui.worker.problem import Problem, load_module

    ref, k = p["reference"], p["kernel"]
    problem = Problem(Path(ref["path"]), ref["problem"], ref["sha"])
    module = load_module(
        Path(k["path"]), f"ktui_profiled_{k['sha'][:16]}", Path(k["search_dir"]) if k.get("search_dir") else None
    )
    data = problem.generate(p["seed"], p["spec"], "cuda")
    for _ in range(p.get("warmup", 3)):
        module.custom_kernel(data)
    torch.cuda.synchronize()
    cudart = torch.cuda.cudart()  # type: ignore[no-untyped-call]  # torch.cuda.cudart() is unannotated in torch
    cudart.cudaProfilerStart()
    module.custom_kernel(data)
    torch.cuda.synchronize()
    cudart.cudaProfilerStop()
    print("ktui-profile-target: ok", flush=True)


if __name__ == "__main__":
    main()
