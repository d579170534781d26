"""ktui's own log: ``.ktui/logs/ktui.log`` in the workspace, through the stdlib ``logging`` tree under ``"ktui"``.

What fails where nobody waits for an answer (an event subscriber, the watcher's callback, a Textual worker) goes
here with its traceback, beside a one-line ``Notice`` on screen. Nothing is ever printed over the screen: until
someone calls ``open_log`` the ``"ktui"`` logger has only a ``NullHandler`` (so ``logging``'s last-resort handler
does not write to stderr either).
"""

from __future__ import annotations

import logging
from pathlib import Path

LOGGER_NAME = "ktui"
LOG_FILE = "ktui.log"
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"

logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())


def get_logger(name: str = "") -> logging.Logger:
    """The logger ``ktui`` or ``ktui.<name>`` (``get_logger("events")``)."""
    return logging.getLogger(f"{LOGGER_NAME}.{name}" if name else LOGGER_NAME)


def log_path(state_dir: Path) -> Path:
    """Where ``open_log(state_dir)`` writes: ``<state_dir>/logs/ktui.log``."""
    return Path(state_dir) / "logs" / LOG_FILE


def open_log(state_dir: Path, level: int = logging.INFO) -> logging.Handler:
    """Append ktui's log to ``<state_dir>/logs/ktui.log`` (created); returns the handler for ``close_log``.

    Opening the same file twice returns the handler already open, so a front end and a session may both call it.
    """
    path = log_path(state_dir).resolve()
    logger = get_logger()
    for h in logger.handlers:
        if isinstance(h, logging.FileHandler) and Path(h.baseFilename) == path:
            return h
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.setLevel(level)
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > level:
        logger.setLevel(level)
    return handler


def close_log(handler: logging.Handler) -> None:
    """Stop writing through ``handler`` (from ``open_log``) and close its file."""
    get_logger().removeHandler(handler)
    handler.close()
