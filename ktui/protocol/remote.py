"""What ktui and a remote host (``ktui --remote HOST``) agree on besides the worker protocol: the probe's reply and
the fingerprint that says both sides run the same ktui.

``python -m ktui.worker.remote probe`` answers one ``RemoteProbe`` line; ktui starts workers there only when the
remote's ``fingerprint`` equals its own (same protocol, same checks).
"""

import hashlib
from pathlib import Path
from typing import TypedDict

FINGERPRINT_PACKAGES = ("protocol", "worker")  # what must be the same ktui on both sides


class RemoteProbe(TypedDict):
    """The remote host's facts (``ktui.worker.remote.probe``)."""

    ktui: str  # ktui.__version__ there
    fingerprint: str  # ``fingerprint`` of its ktui package
    ktui_dir: str  # its ktui package folder (its frames in tracebacks are ktui's, not the kernel's)
    python: str  # its Python version, ``3.11.2``
    executable: str  # the interpreter that answered
    cuda: bool  # a CUDA GPU is usable there (``--device auto`` picks cuda)
    workdir: str  # the absolute work folder (made when missing)
    out_root: str  # where candidate outputs travel to the judge there: ``/dev/shm`` or its temporary folder
    user: str  # the user ktui runs as there
    host: str  # the remote's host name (``uname -n``)


def fingerprint(package_dir: Path) -> str:
    """sha256 (hex) over the ``.py`` sources of ``ktui/protocol`` and ``ktui/worker`` under ``package_dir`` (the
    ``ktui`` package folder): each file's path relative to it and its bytes, in sorted order. Two installs with the
    same fingerprint speak the same protocol and run the same checks.

    Raises:
        OSError: a source cannot be read.
    """
    h = hashlib.sha256()
    for sub in FINGERPRINT_PACKAGES:
        for path in sorted((package_dir / sub).glob("*.py")):
            h.update(f"{sub}/{path.name}\0".encode())
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()
