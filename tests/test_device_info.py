"""The device fingerprint a worker's hello carries (issue 12: a session records it, a re-run compares it)."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess

import pytest
import torch

from ktui.sessions.rerun import device_divergence
from ktui.worker.server import device_info, nvml_facts


def test_the_cpu_hello_names_the_versions_of_torch_triton_cuda_and_cutedsl():
    import triton

    info = device_info("cpu")
    assert info["torch"] == torch.__version__ and info["triton"] == triton.__version__
    assert info["cuda"] == torch.version.cuda
    try:
        want: str | None = importlib.metadata.version("nvidia-cutlass-dsl")
    except importlib.metadata.PackageNotFoundError:
        want = None
    assert info["cutedsl"] == want
    assert info["interpreter"] is True and "driver" not in info


def test_a_rerun_flags_another_driver_and_cutedsl_but_not_the_clock_now():
    a = {"type": "cuda", "name": "NVIDIA H200", "driver": "580.159.04", "cutedsl": "4.8.1", "sm_clock_mhz": 1980}
    b = {**a, "sm_clock_mhz": 345}
    assert device_divergence(a, b) == []
    c = {**a, "driver": "575.51.03", "cutedsl": "4.9.0"}
    got = " ".join(device_divergence(a, c))
    assert "575.51.03" in got and "4.9.0" in got


@pytest.mark.skipif(not shutil.which("nvidia-smi"), reason="no NVIDIA driver here")
def test_nvml_reads_the_driver_that_nvidia_smi_reports():
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,uuid", "--format=csv,noheader,nounits", "-i", "0"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split(",")
    facts = nvml_facts(0)
    assert facts["driver"] == smi[0].strip()
    assert facts["sm_clock_max_mhz"] == int(smi[1])
    assert facts["uuid"] == smi[2].strip() and facts["uuid"].startswith("GPU-")  # which GPU (the Ray engine's)


def test_without_nvml_the_facts_are_empty_not_an_error(monkeypatch):
    import ctypes

    def missing(name, *a, **k):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", missing)
    assert nvml_facts(0) == {}
