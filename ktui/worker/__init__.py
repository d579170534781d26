"""What runs inside ktui's worker processes (``python -m ktui.worker --role ...``): the candidate, which runs kernel
versions; the judge, which runs only references and decides verdicts (with the tolerance policy); the compiler. These
modules own torch, triton and the CUDA context, and never import ``ktui.core``, the TUI or the agent: they speak
``ktui.protocol`` to ktui's own process."""
