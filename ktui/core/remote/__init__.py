"""The workers on another machine: ``ktui --remote HOST`` (``[remote]`` in ``ktui.toml``).

``config`` reads the settings, ``link`` holds the one SSH connection (asyncssh) and moves files, ``paths`` maps local
paths to the remote's, ``transport`` is the ``Transport`` whose workers are SSH channels. The TUI, the watcher, the
agent and the store stay here; only the workers (candidate, judge, compiler) run there, together.
"""

import warnings

# asyncssh reads deprecated names of the installed cryptography on import (a CryptographyDeprecationWarning printed
# above ktui's own error on every --remote call: CI, 2026-12-05): not the user's to act on
warnings.filterwarnings("ignore", module=r"asyncssh(\..*)?$")
