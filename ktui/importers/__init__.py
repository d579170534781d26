"""Importers for problems written in other harnesses' formats, and the commands around them.

- ``kernelbench``: ``KernelBench/level{N}/{id}_{Name}.py`` (ScalingIntelligence/KernelBench) to a ktui reference, a
  ``ModelNew`` candidate to a version (an adapter), a version back to a ``ModelNew`` file;
- ``gpumode``: a ``problems/<set>/<problem>/`` folder of gpu-mode/reference-kernels (``reference.py``, ``task.py``,
  ``task.yml``, ``solutions/``) to a ktui reference and versions, a version back to a ``submission.py``;
- ``evaluate``: ``ktui eval``, the ladder over a set of problems and one table (fast_p, geometric mean speedup);
- ``cli``: the argument parsing of ``ktui import``, ``ktui export gpumode|kernelbench`` and ``ktui eval``.

Everything here runs in ktui's own process and reads upstream files with ``ast`` and PyYAML only: no upstream code
is imported here. The generated reference module is what the workers import; ``probe`` (run as a subprocess) is the
one module of this package that imports torch, to try the generated specs before they are written.
"""
