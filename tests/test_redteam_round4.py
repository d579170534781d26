"""Ways through found by this session's red team (from the README and the code alone), each with its twin.

- an honest autotuned kernel whose configs are pruned (Triton's ``early_config_prune``) failed: ktui pinned configs
  from the unpruned list, so a block too small for the row ran (a false alarm);
- a torch fallback through ``import torch.nn as nn`` passed the static scan;
- bool outputs were never poisoned: an unwritten element passed whenever the decoy happened to hold the answer.
"""

from __future__ import annotations

import re

from ktui.core.inspect.scan import scan_source
from ktui.core.results import Status

from .test_cases import CASES, K, corr, good, run


def test_an_autotuned_kernel_with_pruned_configs_is_checked_on_the_configs_the_autotuner_keeps(make_ws, ladder_for):
    res = good(run(make_ws, ladder_for, "softmax", K / "autotune_prune_good.py", seed=5))
    assert "autotune: 4 configs" in res.rung("compile").summary
    bad = corr(run(make_ws, ladder_for, "softmax", K / "autotune_prune_bad.py", seed=5))
    assert bad.status is Status.FAILED
    blocks = [128, 1024, 8192, 32768]  # the configs' BLOCK: each case names the config it ran
    failed = [(s["spec"]["cols"], c) for s in bad.figures["specs"] for c in s["failed_cases"]]
    assert failed and all(blocks[int(re.search(r"softmax_kernel:(\d)", c)[1])] < cols for cols, c in failed)
    assert "unwritten" in bad.summary or "fill=decoy" in bad.summary  # the tail unwritten (or holding the decoy)


def test_torch_submodules_under_another_name_are_torch():
    src = (K / "nn_alias_fallback_bad.py").read_text()
    assert [f.message() for f in scan_source(src) if f.kind == "torch-op"] == [
        "falls back to torch for nn.functional.softmax (line 37)"
    ]
    found = scan_source("from torch import nn\n\ndef custom_kernel(x):\n    return nn.functional.gelu(x)\n")
    assert any("nn.functional.gelu" in f.message() for f in found)
    assert scan_source("import torch.nn as nn\n\ndef custom_kernel(x):\n    return torch.empty_like(x)\n") == []


def test_bool_outputs_are_poisoned_so_an_unwritten_element_fails(make_ws, ladder_for):
    """Bool outputs were left unpoisoned: an unwritten element failed only when the decoy's random bit differed."""
    ref = CASES / "references" / "positive_mask.py"
    good(run(make_ws, ladder_for, "positive_mask", K / "positive_mask_good.py", reference=ref, seed=3))
    bad = corr(run(make_ws, ladder_for, "positive_mask", K / "positive_mask_unwritten_bad.py", reference=ref, seed=3))
    assert bad.status is Status.FAILED
    assert "1 element unwritten" in bad.summary
