"""What the dumps rung keeps of a compiled launch: Triton's IR stages, PTX and cubin, CuTeDSL's PTX and cubin, written
next to each other as ``<i>-<kernel>.<stage>``; and the public part of a capture record."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from ktui.protocol import Launch, ObservedLaunch


def public_launch(rec: dict[str, Any]) -> Launch:
    """A capture record without its private keys (``_compiled``, ``_key``): what a reply lists."""
    # cast: capture builds each record from Launch's keys plus the private ones dropped here.
    return cast(Launch, {k: v for k, v in rec.items() if not k.startswith("_")})


def write_artifacts(records: list[dict[str, Any]], out_dir: Path) -> list[Launch]:
    """Write every stage each compiled launch of ``records`` (``capture.Capture.launches`` with ``keep=True``)
    carries into ``out_dir`` (created) and return the launches, each with ``files``: stage -> file name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    launches: list[Launch] = []
    for i, rec in enumerate(records):
        compiled = rec.get("_compiled")
        base = f"{i}-{rec.get('kernel', 'kernel')}"
        files: dict[str, str] = {}
        if rec["language"] == "triton" and compiled is not None:
            for stage, blob in getattr(compiled, "asm", {}).items():
                if stage == "source":
                    continue
                f = out_dir / f"{base}.{stage}"
                f.write_bytes(blob if isinstance(blob, bytes) else str(blob).encode())
                files[stage] = f.name
        elif rec["language"] == "cutedsl" and compiled is not None:
            art = getattr(compiled, "artifacts", None)
            for stage, attr in (("ptx", "PTX"), ("cubin", "CUBIN")):
                blob = cute_artifact(getattr(art, attr, None), stage)
                if blob:
                    f = out_dir / f"{base}.{stage}"
                    f.write_bytes(blob)
                    files[stage] = f.name
        launches.append({**public_launch(rec), "files": files})
    return launches


def cute_artifact(blob: Any, stage: str) -> bytes | None:
    """The bytes of one CuTeDSL artifact (``JitFunctionArtifacts.PTX`` / ``.CUBIN``): the content itself, or, where
    CuTeDSL gives the path of the file it wrote (``<dump dir>/<function>.<arch>.<stage>``), that file's content;
    None when there is nothing (no such file: a path is never kept as if it were the code).

    Args:
        blob: the attribute's value (bytes, str or None).
        stage: ``ptx`` or ``cubin``, the path's extension.
    """
    if not blob:
        return None
    if isinstance(blob, str) and "\n" not in blob and blob.endswith(f".{stage}"):
        try:
            return Path(blob).read_bytes()
        except OSError:
            return None
    return blob if isinstance(blob, bytes) else str(blob).encode()


def launch_label(rec: ObservedLaunch) -> str:
    """``softmax_kernel(*fp32:16, *fp32, i32:16, i32, CHUNK=1024)``: an observed launch's kernel, the type of each
    argument (``:16`` divisible by 16) and its constexprs, in the kernel's parameter order."""
    parts = [
        f"{name}={rec['constexprs'].get(name)}" if ty == "constexpr" else ty for name, ty in rec["signature"].items()
    ]
    return f"{rec['kernel']}({', '.join(parts)})"
