"""Where the workers run with ``--remote``: ``[remote]`` in ``ktui.toml`` and the command line, over the user's SSH
configuration.

    # ktui.toml
    [remote]
    host = "gpu1"                # a host name or an alias of ~/.ssh/config (HostName, User, Port, IdentityFile
    user = "me"                  # and UserKnownHostsFile there apply; what is set here wins)
    port = 22
    key = "~/.ssh/id_ed25519"    # a private key file (default: the SSH agent and ~/.ssh/config's keys)
    python = "~/venv/bin/python" # the remote interpreter that has ktui installed (default: python3)
    workdir = "~/.cache/ktui"    # the remote work folder: blobs and workspace mirrors (default)
    known_hosts = "~/.ssh/known_hosts"   # default: ~/.ssh/config's UserKnownHostsFile, else this file

``--remote HOST`` on the command line uses that host with the rest of ``[remote]``; ``[remote] host`` alone makes
every command that runs kernels use the remote; ``--local`` runs here whatever ``ktui.toml`` says. Host keys are
always checked against ``known_hosts`` (an unknown or changed key refuses the connection); nothing here is a
secret: a key is named by its file, never read into ``ktui.toml``, logs or sessions.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

DEFAULT_PYTHON = "python3"
DEFAULT_WORKDIR = "~/.cache/ktui"
LOCAL = "local"  # ``--remote local``: the same as ``--local``


class RemoteConfigError(ValueError):
    """``[remote]`` of ``ktui.toml`` is malformed (the message names the key and what it expected)."""


@dataclass(frozen=True)
class RemoteConfig:
    """One remote host's settings.

    Attributes:
        host: the host name or ``~/.ssh/config`` alias.
        user: the remote user ('' for ``~/.ssh/config``'s, else the local user's name).
        port: the SSH port (0 for ``~/.ssh/config``'s, else 22).
        key: a private key file ('' for the SSH agent and the configuration's keys).
        python: the remote interpreter with ktui installed.
        workdir: the remote work folder (``~`` is the remote home).
        known_hosts: the known_hosts file to check the host key against ('' for the configuration's, else
            ``~/.ssh/known_hosts``).
        ssh_config: OpenSSH client configuration files to read (empty: ``~/.ssh/config`` when it exists).
        connect_timeout_s: how long a connection attempt may take, seconds.
    """

    host: str
    user: str = ""
    port: int = 0
    key: str = ""
    python: str = DEFAULT_PYTHON
    workdir: str = DEFAULT_WORKDIR
    known_hosts: str = ""
    ssh_config: tuple[str, ...] = ()
    connect_timeout_s: float = 15.0

    @property
    def label(self) -> str:
        """``user@host:port`` as set (the parts the configuration leaves to ``~/.ssh/config`` are left out)."""
        who = f"{self.user}@" if self.user else ""
        return f"{who}{self.host}" + (f":{self.port}" if self.port else "")


_KEYS: dict[str, type | tuple[type, ...]] = {
    "host": str,
    "user": str,
    "port": int,
    "key": str,
    "python": str,
    "workdir": str,
    "known_hosts": str,
    "ssh_config": list,
    "connect_timeout_s": (int, float),
}


def parse_table(table: dict[str, Any], where: str = "[remote]") -> dict[str, Any]:
    """The checked settings of a ``[remote]`` table (only the keys it sets).

    Raises:
        RemoteConfigError: an unknown key or a value of the wrong type.
    """
    out: dict[str, Any] = {}
    for key, value in table.items():
        want = _KEYS.get(key)
        if want is None:
            raise RemoteConfigError(f"{where}: unknown key {key!r} (keys: {', '.join(_KEYS)})")
        if not isinstance(value, want) or isinstance(value, bool):
            raise RemoteConfigError(f"{where}: {key} must be a {_type_name(want)}, not {value!r}")
        if key == "ssh_config":
            names = tuple(cast(list[Any], value))
            if not all(isinstance(v, str) for v in names):
                raise RemoteConfigError(f"{where}: ssh_config must be a list of file names")
            value = names
        if key == "port" and not 0 < value < 65536:
            raise RemoteConfigError(f"{where}: port must be 1..65535, not {value}")
        out[key] = value
    return out


def _type_name(t: type | tuple[type, ...]) -> str:
    if isinstance(t, tuple):
        return "number"
    names: dict[type, str] = {str: "string", int: "integer", list: "list"}
    return names.get(t, t.__name__)


def load_remote(root: Path, cli_host: str | None = None, local: bool = False) -> RemoteConfig | None:
    """The remote to use for the workspace at ``root``: None to run here.

    ``local`` (``--local``, or ``--remote local``) runs here; ``cli_host`` (``--remote HOST``) picks the host; else
    ``[remote] host`` of ``ktui.toml`` (``[tool.ktui.remote]`` of ``pyproject.toml``; ``ktui.toml`` wins), if set.
    The other settings come from that table either way.

    Raises:
        RemoteConfigError: the table is malformed, or ``--remote`` was given an empty host.
    """
    if local or cli_host == LOCAL:
        return None
    table: dict[str, Any] = {}
    for path, keys in ((root / "pyproject.toml", ("tool", "ktui", "remote")), (root / "ktui.toml", ("remote",))):
        try:
            doc: Any = tomllib.loads(path.read_text())
        except FileNotFoundError:
            continue
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise RemoteConfigError(f"{path.name}: {exc}") from None
        for k in keys:
            doc = doc.get(k, {}) if isinstance(doc, dict) else {}
        if not isinstance(doc, dict):
            raise RemoteConfigError(f"{path.name}: [{'.'.join(keys)}] must be a table")
        table.update(parse_table(doc, f"{path.name} [{'.'.join(keys)}]"))
    if cli_host is not None:
        if not cli_host.strip():
            raise RemoteConfigError("--remote needs a host name (or `local`)")
        table["host"] = cli_host.strip()
    host = table.pop("host", "")
    if not host:
        return None
    return replace(RemoteConfig(host=host), **table)
