"""The session recorder: one subscriber of the session's ``EventBus`` that appends every event to
``sessions/<id>/events.jsonl`` in the workspace (the format is ``ktui.sessions.log``'s).

``ktui``, ``ktui run`` and ``ktui agent`` each start one (``start_recording``) unless ``--no-record`` or
``[sessions] record = false`` in ``ktui.toml`` says not to, and close it at exit, a signal included.

What is written, in order:

- seq 0, ``session``: the metadata (``log.SessionMeta``): ktui's version and git commit, the workspace (and its
  commit), the command and its argv, the device as the candidate worker reported it in its hello (when the hello
  has not come yet, a ``device`` record follows once it does), the model's name, and the *names* of the
  environment variables that configure ktui, the model or the device (``CONFIG_ENV``); never their values.
- one record per event: ``type`` is ``event.kind``, ``data`` is ``event.to_json()`` less its ``"event"`` key, ``t``
  is ``event.at``. Each line is written with one ``os.write``, then fsync'd, under a lock (the bus publishes from
  the ladder's, the workers' and the agent's threads).
- a ``source`` record just before each event that brings a file's content: ``FileChanged`` of a kernel or a
  reference (the file as saved), ``LadderStarted`` (the run's kernel snapshot, by its ``source_sha256``, and the
  reference), ``LadderFinished`` (the reference's snapshot when the run's ``reference_sha256`` is not the one
  recorded last). The bytes go to ``blobs/<sha256>`` beside the log (atomically, once per hash); a source record
  is written when a file's recorded content changes, not again for the same content.
- ``end`` (``data``: ``reason``) from ``close``. A log without it was cut short.

A resumed session (``ktui --resume``: ``Recorder(..., resume_dir=folder)``) appends to the log it continues
instead: the log is cut back to its last whole line (a partial last line, left by a crash, is dropped: the reader
skipped it anyway), the numbering goes on from its last ``seq``, a ``resumed`` record (the metadata's fields for
this run, ``after_seq``, ``previous_end``) comes first, and a source already recorded with the same content is not
written again. A log being written is locked (``flock``, released when its writer dies, SIGKILL included), so that
no two processes append to one log: ``log_in_use`` says whether one is.

Not recorded (streaming noise whose content arrives whole in another event): ``ChatDelta`` (the reply's pieces;
``ChatReplyDone`` carries the whole text) and ``RungProgress`` (a running rung's ticks; ``RungFinished`` carries
its figures).

Secrets: before any line or blob is written, every substring equal to the value of an environment variable whose
name looks secret (``SECRET_NAME``: KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL...; values of ``MIN_SECRET_CHARS``
characters or more; read once at start) becomes ``[redacted NAME]``.

The recorder never raises into the bus: a failure (a full disk, an event that does not serialize) is logged once
as a warning (``.ktui/logs/ktui.log``), the line is not written (a half-written one is cut off again, so no line
in the middle is ever partial), and recording goes on with the next event.

Crash semantics: a SIGKILL at any moment leaves every complete line; at most the last line is partial, and
``log.read_log`` skips it with a ``truncated`` warning.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ktui
from ktui.agent.events import ChatDelta
from ktui.core.events import Event, FileChanged, LadderFinished, LadderStarted, RungProgress, WorkerState
from ktui.core.log import get_logger
from ktui.core.results import LadderResult
from ktui.core.store import Snapshots, atomic_write, sha256
from ktui.core.workspace import Workspace
from ktui.sessions.log import BLOBS, LOG_NAME, SessionMeta, envelope, read_log

if TYPE_CHECKING:
    from ktui.core.session import Session

SESSIONS_DIR = "sessions"
"""The folder of the workspace that holds one folder per session."""

SKIPPED: tuple[type[Event], ...] = (ChatDelta, RungProgress)
"""Event kinds not recorded: streaming noise whose content another event carries whole."""

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW(OR)?D|CREDENTIAL|AUTH(?!OR)", re.IGNORECASE)
"""An environment variable whose name matches holds a secret: its value is redacted wherever it appears."""

MIN_SECRET_CHARS = 8
"""Shorter values are not redacted (``1``, ``true``, a port: redacting them would garble the log, and they are no
credential)."""

CONFIG_ENV = re.compile(
    r"^(KTUI_|OPENAI_|ANTHROPIC_|LITELLM_|AZURE_|GEMINI_|MISTRAL_|GROQ_|OLLAMA_|HOSTED_VLLM_|DEEPSEEK_|OPENROUTER_"
    r"|TOGETHER|HF_|TRITON_|CUDA_|NVIDIA_|PYTORCH_|TORCH_)|(_API_KEY|_API_BASE|_BASE_URL|_API_VERSION)$"
)
"""The environment variables whose names the metadata lists: ktui's own, the model providers', the device's."""

log = get_logger("sessions")


class SessionBusy(OSError):
    """Another process holds the log's lock: it is recording into it now."""


def _lock(fd: int, path: Path) -> None:
    """Hold an exclusive ``flock`` on the log ``fd`` (until it is closed or its process dies; no-op where the
    platform has no ``fcntl`` or the file system no locks: recording goes on unlocked).

    Raises:
        SessionBusy: another process holds it.
    """
    try:
        import fcntl
    except ImportError:  # (not POSIX: no lock, as before)
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SessionBusy(f"{path} is being recorded by another ktui process now") from None
    except OSError as exc:  # (ENOLCK, a network file system without flock)
        log.debug("session log %s not locked: %r", path, exc)


def _is_record(line: bytes) -> bool:
    """``line`` parses as a JSON object with a ``seq``: a record (``read_log`` reads it), not a partial line."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and "seq" in obj


def log_in_use(path: Path) -> bool:
    """Whether a live process records into the log at ``path`` now (it holds the log's lock). False when the
    file cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        _lock(fd, path)
        return False
    except SessionBusy:
        return True
    finally:
        os.close(fd)


# -- configuration -------------------------------------------------------------------------------------------------
def recording_enabled(root: Path) -> tuple[bool, str]:
    """Whether sessions of the workspace at ``root`` are recorded: ``record`` in the ``[sessions]`` table of its
    ``ktui.toml`` (``[tool.ktui.sessions]`` of its ``pyproject.toml``, which ``ktui.toml`` overrides); default True.

    Returns:
        (enabled, a warning for the user: '' unless a file or the value is malformed, when recording stays on).
    """
    enabled, warning = True, ""
    for path, keys in ((root / "pyproject.toml", ("tool", "ktui", "sessions")), (root / "ktui.toml", ("sessions",))):
        try:
            table: Any = tomllib.loads(path.read_text())
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            warning = f"{path.name}: cannot read it ({exc}); sessions are recorded"
            continue
        for k in keys:
            table = table.get(k, {}) if isinstance(table, dict) else {}
        if not isinstance(table, dict) or "record" not in table:
            continue
        if isinstance(table["record"], bool):
            enabled = table["record"]
        else:
            warning = f"{path.name}: [sessions] record must be true or false, not {table['record']!r}; recorded"
    return enabled, warning


# -- metadata ------------------------------------------------------------------------------------------------------
def new_session_id(now: float | None = None) -> str:
    """``YYYYMMDD-HHMMSS-xxxx``: the UTC time ``now`` (default: now) and 4 random hex digits (``log.SESSION_ID``)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)) + "-" + secrets.token_hex(2)


def git_commit(folder: Path, toplevel: bool = False) -> str | None:
    """``git rev-parse HEAD`` in ``folder``, or None (no git, not a checkout, no commit yet, 5 s without an
    answer). With ``toplevel``, only when ``folder`` is the checkout's own top folder (ktui installed into some
    other repository's virtual environment is not that repository's commit)."""
    args = ["git", "-C", str(folder), "rev-parse", *(["--show-toplevel"] if toplevel else []), "HEAD"]
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=5, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    lines = p.stdout.split()
    if p.returncode != 0 or not lines or not re.fullmatch(r"[0-9a-f]{40,64}", lines[-1]):
        return None
    if toplevel and (len(lines) != 2 or Path(lines[0]).resolve() != folder.resolve()):
        return None
    return lines[-1]


def config_env_names(environ: Mapping[str, str], extra: Iterable[str] = ()) -> list[str]:
    """The names in ``environ`` that configure ktui, the model or the device (``CONFIG_ENV``, and ``extra``:
    ``api_key_env``), sorted. Names only."""
    want = set(extra)
    return sorted(n for n in environ if CONFIG_ENV.search(n) or n in want)


def env_secrets(environ: Mapping[str, str], extra: Iterable[str] = ()) -> list[tuple[str, str]]:
    """``(value, name)`` of every variable of ``environ`` whose name looks secret (``SECRET_NAME``, or in ``extra``)
    and whose value has ``MIN_SECRET_CHARS`` characters or more, longest value first (a value that contains another
    is redacted whole)."""
    want = set(extra)
    found: dict[str, str] = {}
    for name in sorted(environ):
        value = environ[name]
        if (SECRET_NAME.search(name) or name in want) and len(value) >= MIN_SECRET_CHARS:
            found.setdefault(value, re.sub(r"[^A-Za-z0-9_]", "_", name))
    return sorted(found.items(), key=lambda vn: -len(vn[0]))


class Redactor:
    """Replaces each secret value (``env_secrets``) with ``[redacted NAME]`` in strings, JSON lines and bytes."""

    def __init__(self, pairs: Sequence[tuple[str, str]]):
        self.pairs = list(pairs)
        self._escaped = [(json.dumps(v)[1:-1], n) for v, n in self.pairs]
        self._bytes = [(v.encode("utf-8", "surrogateescape"), n) for v, n in self.pairs]

    def text(self, s: str) -> str:
        for value, name in self.pairs:
            if value in s:
                s = s.replace(value, f"[redacted {name}]")
        return s

    def data(self, v: Any) -> Any:
        """``v`` (JSON-able) with every string, and every key, redacted."""
        if not self.pairs:
            return v
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            return {self.text(k) if isinstance(k, str) else k: self.data(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [self.data(x) for x in v]
        return v

    def line(self, s: str) -> str:
        """A JSON line with each value, as written or JSON-escaped, redacted (what crosses strings' boundaries)."""
        for (value, name), (escaped, _) in zip(self.pairs, self._escaped):
            for form in {value, escaped}:
                if form in s:
                    s = s.replace(form, f"[redacted {name}]")
        return s

    def blob(self, data: bytes) -> tuple[bytes, list[str]]:
        """``data`` redacted, and the names of the variables whose values it held."""
        names = []
        for value, name in self._bytes:
            if value in data:
                data = data.replace(value, f"[redacted {name}]".encode())
                names.append(name)
        return data, names


# -- the recorder --------------------------------------------------------------------------------------------------
class Recorder:
    """Appends a session's events to ``<workspace>/sessions/<id>/events.jsonl``; call it with each event (it is a
    bus subscriber: ``bus.subscribe(recorder)``; ``start_recording`` does that).

    Args:
        workspace: the session's workspace (the log goes under its ``sessions/``).
        command: ``tui``, ``run`` or ``agent``.
        argv: the command line (``["ktui", "run", ...]``).
        model: the chat's model name, or None.
        device_type: ``cpu`` or ``cuda``.
        device: the worker's hello ``device``, or None when not known yet (``note_device`` writes it later).
        device_probe: returns the worker's ``device`` without waiting, or None; called on each ``WorkerState`` of
            the candidate turning ``ready`` (a ``device`` record is written when it differs from the last).
        secret_env: names of further variables whose values are secrets (``api_key_env``).
        environ: the environment (default ``os.environ``), read once here: names for the metadata, secret values.
        session_id: the id (default ``new_session_id()``; tests).
        resume_dir: append to the log in this session folder (a resumed session: ``ktui --resume``) instead of
            making a new one; the first line written is a ``resumed`` record, not a ``session`` one.

    Raises:
        OSError: the session's folder or log cannot be made, or the metadata cannot be written; with
            ``resume_dir``, no log there or ``SessionBusy`` (another process records into it).
    """

    def __init__(
        self,
        workspace: Workspace,
        command: str,
        argv: Sequence[str],
        *,
        model: str | None = None,
        device_type: str = "",
        device: dict[str, Any] | None = None,
        device_probe: Callable[[], dict[str, Any] | None] | None = None,
        secret_env: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
        session_id: str | None = None,
        resume_dir: Path | None = None,
    ):
        env = dict(os.environ if environ is None else environ)
        extra = [n for n in secret_env if n]
        self.ws = workspace
        self.redact = Redactor(env_secrets(env, extra))
        self._lock = threading.RLock()
        self._snapshots = Snapshots(workspace)
        self._probe = device_probe
        self._device = dict(device) if device else None
        self._last_source: dict[str, str] = {}  # workspace path -> the sha256 of its content recorded last
        self._last_artifact: dict[str, str] = {}  # workspace path -> the sha256 of the artifact recorded last
        self._blobs: set[str] = set()
        self._seq = 0
        self._size = 0  # the log's length after the last line written whole
        self._fd: int | None = None
        self._warned = False
        self.failures = 0
        self.unsubscribe: Callable[[], None] | None = None
        self.closed = False
        started = time.time()
        resumed: dict[str, Any] | None = None
        if resume_dir is not None:
            resumed = self._reopen(Path(resume_dir))
            self._device = dict(device) if device else self._device  # (the last recorded, else)
        else:
            self._create(workspace.root / SESSIONS_DIR, session_id, started)
        pkg_root = Path(ktui.__file__).resolve().parent.parent
        meta: SessionMeta = {
            "id": self.id,
            "started": started,
            "ktui_version": ktui.__version__,
            "ktui_commit": git_commit(pkg_root, toplevel=True),
            "workspace": str(workspace.root),
            "workspace_commit": git_commit(workspace.root),
            "command": command,
            "argv": [str(a) for a in argv],
            "device_type": device_type,
            "device": self._device if resumed is None else (dict(device) if device else None),
            "model": model,
            "env": config_env_names(env, extra),
            "python": sys.version.split()[0],
            "pid": os.getpid(),
        }
        try:
            if resumed is None:
                self._append("session", dict(meta), started)
            else:
                self._append("resumed", {**meta, **resumed}, started)
        except BaseException:
            self._close_fd()
            raise

    def _create(self, root: Path, session_id: str | None, started: float) -> None:
        """Make the session's folder under ``root`` (``session_id``, else a new id) and open its log, locked.
        Sets ``id``, ``dir``, ``path`` and the log's descriptor.

        Raises:
            OSError: the folder or the log cannot be made (``FileExistsError``: ``session_id`` is taken).
        """
        for attempt in range(20):
            sid = session_id if session_id and attempt == 0 else new_session_id(started)
            d = root / sid
            try:
                root.mkdir(parents=True, exist_ok=True)
                d.mkdir()
            except FileExistsError:
                if session_id:
                    raise
                continue
            break
        else:
            raise FileExistsError(f"no free session id under {root}")
        self.id = sid
        self.dir = d
        self.path = d / LOG_NAME
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            _lock(self._fd, self.path)
        except BaseException:
            self._close_fd()
            raise

    def _reopen(self, folder: Path) -> dict[str, Any]:
        """Open the log in ``folder`` to append to it: lock it, cut it back to its last whole line, and read back
        the numbering, the sources (by path, the content's own hash), the artifacts and the device recorded so far
        (what is recorded already is not written again). Sets ``id``, ``dir``, ``path`` and the log's descriptor.

        Returns:
            The ``resumed`` record's own fields: ``after_seq`` (the last sequence number read, -1 for none),
            ``previous_end`` (the last ``end``'s reason when no ``resumed`` follows it, else None: cut short) and
            ``dropped_bytes`` (the partial last line cut off, 0 when the log ended whole).

        Raises:
            OSError: no log in ``folder``, it cannot be opened or cut, or ``SessionBusy``.
        """
        self.id, self.dir, self.path = folder.name, folder, folder / LOG_NAME
        if not self.path.is_file():
            raise FileNotFoundError(f"no session log {self.path}")
        self._fd = fd = os.open(self.path, os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
        try:
            _lock(fd, self.path)
            size = os.fstat(fd).st_size
            data = os.pread(fd, size, 0)
            whole = data.rfind(b"\n") + 1
            if whole < size and _is_record(data[whole:]):  # a whole record whose newline was not written: kept
                os.write(fd, b"\n")
                whole = size = size + 1
            elif whole < size:
                os.ftruncate(fd, whole)
            os.fsync(fd)
            found = read_log(self.path)
        except BaseException:
            self._close_fd()
            raise
        self._size = whole
        last = max((r.seq for r in found.records), default=-1)
        self._seq = last + 1
        previous_end: str | None = None
        for r in found.records:
            if r.type == "source" and isinstance(r.data.get("path"), str):
                own = r.data.get("original_sha256") or r.data.get("sha256")
                if isinstance(own, str):
                    self._last_source[r.data["path"]] = own
            elif r.type == "artifact" and isinstance(r.data.get("path"), str):
                if isinstance(r.data.get("sha256"), str):
                    self._last_artifact[r.data["path"]] = r.data["sha256"]
            elif r.type in ("session", "resumed", "device"):
                dev = r.data if r.type == "device" else r.data.get("device")
                if isinstance(dev, dict) and dev:
                    self._device = dict(dev)
            if r.type in ("end", "resumed"):
                reason = r.data.get("reason") if r.type == "end" else None
                previous_end = reason if isinstance(reason, str) else None
        blobs = folder / BLOBS
        self._blobs = {p.name for p in blobs.iterdir()} if blobs.is_dir() else set()
        return {"after_seq": last, "previous_end": previous_end, "dropped_bytes": size - whole}

    # -- the subscriber ------------------------------------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        """Record ``event`` (with the sources it brings); never raises."""
        if isinstance(event, SKIPPED) or self.closed:
            return
        with self._lock:
            if self.closed:
                return
            try:
                self._sources_for(event)
            except Exception as exc:
                self._failed(f"the source of {event.kind}", exc)
            try:
                data = event.to_json()
                data.pop("event", None)
                self._append(event.kind, data, event.at)
            except Exception as exc:
                self._failed(event.kind, exc)
                return
            if isinstance(event, WorkerState) and event.role == "candidate" and event.state == "ready":
                try:
                    info = self._probe() if self._probe else None
                    if info:
                        self.note_device(info)
                except Exception as exc:
                    self._failed("the device", exc)

    def note_device(self, info: dict[str, Any]) -> None:
        """Write a ``device`` record with ``info`` (a worker hello's ``device``) unless it is the one recorded."""
        with self._lock:
            if self.closed or not info or info == self._device:
                return
            try:
                self._append("device", dict(info), time.time())
                self._device = dict(info)
            except Exception as exc:
                self._failed("device", exc)

    def close(self, reason: str = "done") -> None:
        """Write the ``end`` record (``reason``: ``done``, ``stopped by SIGTERM``...), stop listening and close the
        log. Safe to call twice; never raises."""
        unsub, self.unsubscribe = self.unsubscribe, None
        if unsub is not None:
            try:
                unsub()
            except Exception:
                pass
        with self._lock:
            if self.closed:
                return
            try:
                self._append("end", {"reason": reason}, time.time())
            except Exception as exc:
                self._failed("end", exc)
            self.closed = True
            self._close_fd()

    # -- sources -------------------------------------------------------------------------------------------------
    def _sources_for(self, event: Event) -> None:
        if isinstance(event, FileChanged):
            what = self.ws.classify(event.path)
            if what is not None and Path(event.path).is_file():
                self._source(Path(event.path), "kernel" if what[1] else "reference")
        elif isinstance(event, LadderStarted) and event.source_sha256 and "/" in event.key:
            problem, version = event.key.split("/", 1)
            kernel = self.ws.root / "kernels" / problem / f"{version}.py"
            self._source(kernel, "kernel", self._bytes_of(event.source_sha256, problem, version, kernel))
            ref = self.ws.reference_path(problem)
            if ref.is_file():
                self._source(ref, "reference")
        if isinstance(event, LadderFinished):
            self._artifacts_of(event.result)
        if isinstance(event, LadderFinished) and event.result.reference_sha256:
            ref = self.ws.reference_path(event.result.problem)
            sha = event.result.reference_sha256
            if self._last_source.get(self._rel(ref)) != sha:
                data = self._bytes_of(sha, event.result.problem, event.result.problem, ref)
                if data is not None:
                    self._source(ref, "reference", data)

    def _artifacts_of(self, result: LadderResult) -> None:
        """An ``artifact`` record for each file the result's ``dumps`` and ``profile`` rungs name (``artifact_paths``)
        whose content was not recorded at that path before, its bytes in ``blobs/`` up to ``ARTIFACT_BLOB_MAX``
        (deduplicated by hash: the same PTX of two runs is stored once). Secrets are redacted from stored bytes as
        from sources. A file gone or unreadable is skipped."""
        for rung, rel in artifact_paths(result):
            path = self.ws.root / rel
            try:
                size = path.stat().st_size
                if not path.is_file():
                    continue
                data = path.read_bytes() if size <= ARTIFACT_BLOB_MAX else None
            except OSError:
                continue
            digest = sha256(data) if data is not None else _file_sha256(path)
            if digest is None or self._last_artifact.get(rel) == digest:
                continue
            rec: dict[str, Any] = {"path": rel, "sha256": digest, "bytes": size, "rung": rung, "stored": False}
            if data is not None:
                blob, _, names = self._store_blob(data, digest)
                rec.update(sha256=blob, stored=True)
                if names:
                    rec.update(original_sha256=digest, redacted=names)
            self._append("artifact", rec, time.time())
            self._last_artifact[rel] = digest

    def _bytes_of(self, sha: str, problem: str, stem: str, fallback: Path) -> bytes | None:
        """The content of hash ``sha``: its snapshot (``.ktui/snapshots``), else ``fallback`` when it still holds
        it; None when neither does."""
        for p in (self._snapshots.path_for(problem, stem, sha), fallback):
            try:
                data = p.read_bytes()
            except OSError:
                continue
            if sha256(data) == sha:
                return data
        return None

    def _rel(self, path: Path) -> str:
        try:
            return Path(path).resolve().relative_to(self.ws.root).as_posix()
        except ValueError:
            return str(path)

    def _store_blob(self, data: bytes, digest: str) -> tuple[str, int, list[str]]:
        """Keep ``data`` (its sha256 ``digest``) in ``blobs/``, secrets redacted, once per content: returns the
        stored bytes' hash, their size and the names of the variables whose values were redacted."""
        stored, names = self.redact.blob(data)
        blob = sha256(stored) if names else digest
        if blob not in self._blobs:
            target = self.dir / BLOBS / blob
            if not target.is_file():
                atomic_write(target, stored)
            self._blobs.add(blob)
        return blob, len(stored), names

    def _source(self, path: Path, role: str, data: bytes | None = None) -> None:
        if data is None:
            try:
                data = path.read_bytes()
            except OSError:
                return  # deleted since: the event says so
        rel = self._rel(path)
        digest = sha256(data)
        if self._last_source.get(rel) == digest:
            return
        blob, size, names = self._store_blob(data, digest)
        rec: dict[str, Any] = {"path": rel, "sha256": blob, "bytes": size, "role": role}
        if names:
            rec.update(original_sha256=digest, redacted=names)
        self._append("source", rec, time.time())
        self._last_source[rel] = digest

    # -- writing -------------------------------------------------------------------------------------------------
    def _encode(self, seq: int, t: float, type_: str, data: dict[str, Any]) -> bytes:
        text = json.dumps(envelope(seq, t, type_, self.redact.data(data)), default=str)
        clean = self.redact.line(text)
        if clean != text:
            try:
                json.loads(clean)
            except ValueError:  # a secret across JSON syntax (never seen): keep the record, not its payload
                clean = json.dumps(envelope(seq, t, type_, {"redacted": "a secret value across the JSON syntax"}))
        return (clean + "\n").encode()

    def _append(self, type_: str, data: dict[str, Any], t: float) -> None:
        """Write one line (``seq`` the next number), fsync'd.

        Raises:
            OSError: the write failed (the log is cut back to its last whole line), or the log is closed.
            TypeError, ValueError: ``data`` does not serialize.
        """
        with self._lock:
            fd = self._fd
            if fd is None:
                raise OSError(f"{self.path} is closed")
            line = self._encode(self._seq, t, type_, data)
            self._resync(fd)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
            except BaseException:
                self._cut(fd)
                raise
            self._size += len(line)
            self._seq += 1
            os.fsync(fd)

    def _resync(self, fd: int) -> None:
        """Bring the bookkeeping in line with the file after a write that an exception (ctrl+c, a signal) cut
        between the bytes and the counters: a whole line of the expected ``seq`` is kept, anything else cut off."""
        size = os.fstat(fd).st_size
        if size == self._size:
            return
        if size < self._size:  # someone truncated the log: go on from its end
            self._size = size
            return
        tail = os.pread(fd, size - self._size, self._size)
        if tail.endswith(b"\n") and tail.count(b"\n") == 1:
            try:
                whole = json.loads(tail).get("seq") == self._seq
            except (ValueError, AttributeError):
                whole = False
            if whole:
                self._size, self._seq = size, self._seq + 1
                return
        self._cut(fd)

    def _cut(self, fd: int) -> None:
        try:
            os.ftruncate(fd, self._size)
        except OSError:
            pass

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def _failed(self, what: str, exc: BaseException) -> None:
        self.failures += 1
        if not self._warned:
            self._warned = True
            log.warning(
                "session %s: could not record %s (recording goes on)", getattr(self, "id", "?"), what, exc_info=exc
            )
        else:
            log.debug("session %s: could not record %s: %r", getattr(self, "id", "?"), what, exc)


# -- front ends ----------------------------------------------------------------------------------------------------
ARTIFACT_BLOB_MAX = 32 << 20
"""The largest artifact whose bytes the session keeps in ``blobs/`` (32 MiB: a kernel's PTX, cubin and SASS are
kilobytes to a few MB, an ``.ncu-rep`` of one call a few MB); a larger one is recorded by its hash and size only."""


def artifact_paths(result: LadderResult) -> list[tuple[str, str]]:
    """``[(rung, path relative to the workspace)]`` of the files a ladder result's rungs made: every file of every
    launch of the ``dumps`` rung (``figures["kernels"][i]["files"]``: ttir, ttgir, llir, ptx, cubin, sass, linemap),
    the ``profile`` rung's report (``figures["report"]``, ``.ncu-rep``) with its exported CSV pages and its source
    page joined to the lines (``figures["source"]["file"]``), and the ``trace`` rung's Chrome trace."""
    out: list[tuple[str, str]] = []
    for r in result.rungs:
        figs = r.figures if isinstance(r.figures, dict) else {}
        if r.name == "dumps":
            for k in figs.get("kernels") or []:
                files = k.get("files") if isinstance(k, dict) else None
                if isinstance(files, dict):
                    out += [("dumps", f) for f in files.values() if isinstance(f, str)]
        elif r.name == "profile" and isinstance(figs.get("report"), str):
            rep = figs["report"]
            stem = rep.removesuffix(".ncu-rep")
            out += [("profile", rep)] + [("profile", f"{stem}.{page}.csv") for page in ("raw", "details", "source")]
            src = figs.get("source")
            if isinstance(src, dict) and isinstance(src.get("file"), str):
                out.append(("profile", src["file"]))
        elif r.name == "trace" and isinstance(figs.get("report"), str):
            out.append(("trace", figs["report"]))
    return list(dict.fromkeys(out))


def _file_sha256(path: Path) -> str | None:
    h = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def _hello_device(session: Session) -> dict[str, Any] | None:
    """The device of the candidate worker's last hello, without waiting (None before its first hello)."""
    hello = getattr(session.pool.candidate, "last_hello", None)
    dev = hello.get("device") if isinstance(hello, dict) else None
    return dict(dev) if isinstance(dev, dict) else None


def start_recording(
    session: Session,
    command: str,
    argv: Sequence[str],
    *,
    model: str | None = None,
    secret_env: Iterable[str] = (),
    resume_dir: Path | None = None,
) -> Recorder:
    """A ``Recorder`` of ``session`` (subscribed to its bus; call before ``session.start()`` so that the workers'
    first states are in it); ``close`` it after ``session.stop()``. With ``resume_dir``, it appends to that
    session's log (``Recorder``'s ``resume_dir``).

    Raises:
        OSError: the session's folder or log cannot be made (a read-only workspace); ``SessionBusy``.
    """

    def probe() -> dict[str, Any] | None:
        return _hello_device(session)

    rec = Recorder(
        session.ws,
        command,
        argv,
        model=model,
        device_type=session.device,
        device=probe(),
        device_probe=probe,
        secret_env=secret_env,
        resume_dir=resume_dir,
    )
    rec.unsubscribe = session.bus.subscribe(rec)
    return rec


def maybe_record(
    session: Session,
    command: str,
    argv: Sequence[str],
    *,
    disabled: bool = False,
    model: str | None = None,
    secret_env: Iterable[str] = (),
    resume_dir: Path | None = None,
) -> tuple[Recorder | None, list[str]]:
    """What a front end does: ``start_recording`` unless ``disabled`` (``--no-record``) or the workspace's
    ``[sessions] record = false``; with ``resume_dir``, appending to that session's log. Never raises.

    Returns:
        (the recorder or None, warnings for the user: a malformed setting, a log that cannot be made).
    """
    if disabled:
        return None, []
    enabled, warning = recording_enabled(session.ws.root)
    warnings = [warning] if warning else []
    if not enabled:
        if resume_dir is not None:
            warnings.append("[sessions] record = false: nothing of this resumption is appended to its log")
        return None, warnings
    try:
        rec = start_recording(session, command, argv, model=model, secret_env=secret_env, resume_dir=resume_dir)
        return rec, warnings
    except OSError as exc:
        return None, [*warnings, f"the session is not recorded: {exc}"]
