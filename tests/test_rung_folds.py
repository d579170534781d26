"""The pure folds of the compile, run, dumps and profile rungs, on hand-made worker replies (no workers, milliseconds).

The correctness fold is in ``test_ladder_units.py``, the benchmark fold in ``test_benchmark_result.py``.
"""

from __future__ import annotations

from ktui.core.ladder.rungs.compile import compile_result
from ktui.core.ladder.rungs.dumps import launch_line
from ktui.core.ladder.rungs.profile import profile_summary
from ktui.core.ladder.rungs.run import run_result
from ktui.core.results import Status


def test_compile_names_each_launch_once_with_its_warps_stages_target_and_configs():
    reply = {
        "languages": ["triton"],
        "launches": [
            {"kernel": "softmax_kernel", "num_warps": 16, "num_stages": 3, "target": "sm_90a"},
            {"kernel": "softmax_kernel", "num_warps": 16, "num_stages": 3, "target": "sm_90a"},
            {"kernel": "fill", "target": "sm_90a"},
        ],
        "import_s": 0.5,
        "compile_s": 1.25,
        "autotune_configs": 4,
        "warnings": ["from the compiler"],
    }
    rr = compile_result(reply, ["falls back to torch for torch.softmax (line 12)"], [{"kind": "torch", "line": 12}])
    assert rr.status is Status.OK
    assert rr.summary == "triton: softmax_kernel(w=16,s=3), fill [sm_90a] autotune: 4 configs"
    assert rr.figures["autotune_configs"] == 4 and rr.figures["compile_s"] == 1.25
    assert rr.figures["scan"] == [{"kind": "torch", "line": 12}]
    assert rr.warnings == ["falls back to torch for torch.softmax (line 12)", "from the compiler"]


def test_compile_without_launches_says_so():
    rr = compile_result({"languages": [], "launches": []}, [], [])
    assert rr.summary == "host: no launches"
    assert rr.figures["autotune_configs"] == 0


def test_run_counts_cases_specs_and_times_and_warns_on_threads_and_patches():
    reply = {
        "cases": [{"spec_index": 0, "seed": 5, "seconds": 0.25}, {"spec_index": 1, "seed": 6, "seconds": 0.5}],
        "tampered": ["torch.sub"],
        "threads_left": 2,
    }
    planned = [{"spec_index": 0, "seed": 5}, {"spec_index": 1, "seed": 6}]
    rr = run_result(reply, planned, n_specs=2)
    assert rr.status is Status.OK
    assert rr.summary == "2 cases ok on 2 specs, first 0.25 s, total 0.75 s"
    assert rr.figures["calls"] == 2 and rr.figures["total_s"] == 0.75 and rr.figures["seeds"] == [5, 6]
    assert rr.figures["tampered"] == ["torch.sub"]
    assert any("2 thread(s)" in w for w in rr.warnings)
    assert any("patched torch.sub" in w for w in rr.warnings)


def test_a_dumps_line_keeps_resources_and_the_notable_instructions_only():
    resources = {"registers": 38, "local": 0, "shared": 1024, "dynamic_shared": 64}
    mix = {"total": 900, "FFMA": 120, "LDG.128": 4, "STG.128": 4, "HGMMA": 2, "LDL": 0, "BRA": 7}
    line = launch_line("softmax_kernel", resources, mix)
    assert line == "softmax_kernel: 38 regs, 0 B local, 1088 B smem; LDG.128 4, STG.128 4, HGMMA 2"
    assert launch_line("k", {"registers": 8}, {"total": 3, "BRA": 3}) == "k: 8 regs, 0 B local, 0 B smem; no memory ops"


def test_the_profile_line_names_the_first_kernel_and_the_peaks():
    k = {
        "kernel": "add_kernel",
        "duration_us": 732.61,
        "sm_throughput_pct": 25.4,
        "memory_throughput_pct": 90.8,
        "dram_throughput_pct": 90.8,
        "achieved_occupancy_pct": 84.9,
        "theoretical_occupancy_pct": 100.0,
        "registers": 25,
    }
    line = profile_summary([k, dict(k, kernel="other")], {"pct_peak_bandwidth": 103.2})
    assert line.startswith("add_kernel: 732.61 us, SM 25.4%, mem 90.8%, DRAM 90.8%, occupancy 84.9/100%, 25 regs")
    assert line.endswith(", 103% of peak bandwidth (+1 more kernels)")
    assert "FLOP/s" not in line
