"""Textual messages that carry ktui's core events onto the UI's event loop.

Core events are published on worker threads (scheduler, watcher, worker clients); the app posts one of these for each
(``post_message`` is thread-safe) and handles it on its own loop.
"""

from __future__ import annotations

from textual.message import Message

from ktui.core.events import (Event, FileChanged, LadderFinished, LadderStarted, Notice, QueueChanged, ResultStored,
                         RungFinished, RungStarted, WorkerState)


class LadderUpdate(Message):
    """A ladder started or finished, or one of its rungs did."""

    def __init__(self, event: LadderStarted | RungStarted | RungFinished | LadderFinished) -> None:
        super().__init__()
        self.event = event


class QueueUpdate(Message):
    """What runs and what waits. Bursts coalesce: only the latest matters."""

    def __init__(self, event: QueueChanged) -> None:
        super().__init__()
        self.event = event

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, QueueUpdate)


class WorkerUpdate(Message):
    def __init__(self, event: WorkerState) -> None:
        super().__init__()
        self.event = event


class FileUpdate(Message):
    """A kernel or reference file was saved or deleted (the tree may need new rows)."""

    def __init__(self, event: FileChanged) -> None:
        super().__init__()
        self.event = event


class NoticeUpdate(Message):
    def __init__(self, event: Notice) -> None:
        super().__init__()
        self.event = event


class StoredUpdate(Message):
    """A result file changed on disk: reload it when it is newer than what the screen shows."""

    def __init__(self, event: ResultStored) -> None:
        super().__init__()
        self.event = event


def message_for(event: Event) -> Message | None:
    """The UI message for a core event, or None for events the UI does not show."""
    if isinstance(event, (LadderStarted, RungStarted, RungFinished, LadderFinished)):
        return LadderUpdate(event)
    if isinstance(event, QueueChanged):
        return QueueUpdate(event)
    if isinstance(event, WorkerState):
        return WorkerUpdate(event)
    if isinstance(event, FileChanged):
        return FileUpdate(event)
    if isinstance(event, Notice):
        return NoticeUpdate(event)
    if isinstance(event, ResultStored):
        return StoredUpdate(event)
    return None
