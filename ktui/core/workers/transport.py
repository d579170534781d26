"""Where a worker process runs: the ``Transport`` seam, and ``LocalTransport`` (a child process of ktui).

A transport only makes the process; ``ktui.core.workers.client.WorkerProcess`` speaks the protocol over its pipes,
restarts it and kills it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from typing import IO, Protocol


class Transport(Protocol):
    """The seam for *where* a worker runs: it makes the process, and nothing else.

    ``spawn`` starts ``python -m ktui.worker --role ROLE --device DEVICE`` somewhere and returns its process handle:
    the protocol travels over the handle's ``stdin`` (requests) and ``stdout`` (replies, read non-blocking), the
    worker's stderr goes to ``stderr`` (a pipe that ktui drains into the role's log, ``ktui.core.workers.logs``),
    and killing the handle's process group stops it and every
    process it started. ``LocalTransport`` runs it as a child of ktui's process. A remote transport would return the
    ``subprocess.Popen`` of ``ssh -T HOST python -m ktui.worker ...`` (the channel is then the ssh process's pipes
    and a hang-up ends the remote worker); the paths in requests (snapshots, ``out_dir``) must then name storage that
    both machines see.
    """

    def spawn(self, role: str, device: str, env: dict[str, str], stderr: IO[bytes]) -> subprocess.Popen[bytes]:
        """Start the worker for ``role`` on ``device`` with ``env`` added to its environment."""
        ...


@dataclass(frozen=True)
class LocalTransport:
    """The worker as a child process of ktui, in a session of its own (a kill reaches the worker's children too).

    Attributes:
        python: the interpreter that runs the worker (ktui's own by default: the same torch and the same ktui).
    """

    python: str = sys.executable

    def command(self, role: str, device: str) -> list[str]:
        """The worker's command line."""
        return [self.python, "-m", "ktui.worker", "--role", role, "--device", device]

    def spawn(self, role: str, device: str, env: dict[str, str], stderr: IO[bytes]) -> subprocess.Popen[bytes]:
        """``subprocess.Popen`` of ``command`` with pipes for the protocol and ktui's environment plus ``env``."""
        return subprocess.Popen(
            self.command(role, device),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={**os.environ, **env},
            start_new_session=True,
        )
