"""Rewrite a wheel without the files under some folders (and without their RECORD lines), so that it travels in one
call of the device tool (64 MiB a call): Ray's wheel is 79 MB, of which ``ray/jars/`` (the jars of Ray's Java API,
32 MB, which Python never loads) is the bulk; without them it is 47 MB.

    python benchmarks/slim_wheel.py .whl/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl ray/jars/
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import zipfile
from pathlib import Path


def slim(wheel: Path, prefixes: list[str]) -> tuple[int, int]:
    """Drop every member of ``wheel`` whose name starts with one of ``prefixes`` (and its line in ``*.dist-info/
    RECORD``), in place. Returns the sizes before and after, bytes."""
    before = wheel.stat().st_size
    fd, tmp = tempfile.mkstemp(suffix=".whl", dir=wheel.parent)
    os.close(fd)
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename.startswith(tuple(prefixes)):
                continue
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines(keepends=True)
                data = "".join(x for x in lines if not x.startswith(tuple(prefixes))).encode()
            dst.writestr(info, data, compress_type=info.compress_type)
    os.replace(tmp, wheel)
    return before, wheel.stat().st_size


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("wheel", type=Path)
    p.add_argument("prefixes", nargs="+", help="folders inside the wheel to leave out, e.g. ray/jars/")
    args = p.parse_args()
    before, after = slim(args.wheel, args.prefixes)
    print(f"{args.wheel.name}: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
