"""``python -m ktui.importers.probe``: try generated references' specs, in a child process.

Reads a JSON list of jobs ``{"path", "call", "specs"}`` on stdin; imports each ``path`` (a generated module: this
is where upstream code runs, never in ktui's own process), and for each spec calls ``generate_input(0, **spec)``
then ``ref_kernel(data)`` on the CPU (``call == "ref_kernel"``) or ``bytes_moved(**spec)``. Prints one JSON line:
per job, the import error as a string, or a list with an error or '' per spec. ``call == "output_buffers"``
answers per spec where ``ref_kernel``'s result differs in dtype or shape from the declared output buffer
(``buffer_mismatch``), '' where it does not.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from typing import Any


def _one_line(exc: BaseException) -> str:
    """``TypeError: Bound must be a type. (at task.py:5)``: the error and the innermost frame of the problem's own
    files (not Python's or an installed package's; new-user trial 20 L10: the message named neither file nor line)."""
    text = str(exc).strip()
    line = f"{type(exc).__name__}: {text.splitlines()[0][:200]}" if text else type(exc).__name__
    import os
    import traceback

    installed = tuple({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
    own = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not os.path.realpath(f.filename).startswith(installed)
        and not f.filename.startswith("<")
        and os.path.basename(f.filename) != "probe.py"
    ]
    return f"{line} (at {os.path.basename(own[-1].filename)}:{own[-1].lineno})" if own else line


def run_job(job: dict[str, Any], n: int) -> list[str] | str:
    """One job's answer (see the module's docstring)."""
    import torch

    try:
        spec = importlib.util.spec_from_file_location(f"ktui_probe_reference_{n}", job["path"])
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except BaseException as exc:  # the module's own error, reported to the importer
        return _one_line(exc)
    out = []
    for s in job["specs"]:
        try:
            torch.manual_seed(0)
            if job["call"] == "bytes_moved":
                float(mod.bytes_moved(**s))
                out.append("")
            elif job["call"] == "output_buffers":
                out.append(buffer_mismatch(mod, s))
            else:
                with torch.device("cpu"):
                    mod.ref_kernel(mod.generate_input(0, **s))
                out.append("")
        except Exception as exc:
            out.append(_one_line(exc))
    return out


def _shown(t: Any) -> str:
    return f"a {str(t.dtype).removeprefix('torch.')} tensor of shape {tuple(t.shape)}"


def buffer_mismatch(mod: Any, spec: dict[str, Any]) -> str:
    """Where ``ref_kernel`` returns one tensor that is not the module's one declared output buffer (``outputs``)
    and differs from it in dtype or shape: ``ref_kernel returns a float64 tensor of shape (1023,) where the output
    buffer data[1] is a float32 tensor of shape (1023,)``; '' otherwise (on the CPU, seed 0)."""
    import torch

    keys = tuple(getattr(mod, "outputs", ()) or ())
    if len(keys) != 1:
        return ""
    with torch.device("cpu"):
        data = mod.generate_input(0, **spec)
        got = mod.ref_kernel(data)
    buf = data[keys[0]]
    if not isinstance(got, torch.Tensor) or not isinstance(buf, torch.Tensor) or got is buf:
        return ""
    if got.dtype == buf.dtype and got.shape == buf.shape:
        return ""
    return f"ref_kernel returns {_shown(got)} where the output buffer data[{keys[0]!r}] is {_shown(buf)}"


def main() -> int:
    jobs = json.loads(sys.stdin.read() or "[]")
    print(json.dumps([run_job(j, n) for n, j in enumerate(jobs)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
