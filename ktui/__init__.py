"""ktui: a terminal assistant for writing GPU kernels with an LLM.

The package is split along one line: ``ktui.worker`` runs inside worker processes and owns torch, triton and the
CUDA context; everything else (workspace, ladder orchestration, scheduler, watcher, results, the TUI) runs in ktui's
own process and never imports torch.
"""

__version__ = "0.1.0"
