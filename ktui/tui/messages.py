"""The one bridge from ktui's event bus onto the UI's event loop: a ``CoreEvent`` message per event.

Events are published on worker threads (scheduler, watcher, worker clients, the agent's thread); the app's bus
subscriber posts a ``CoreEvent`` for each (``post_message`` is thread-safe), and the app hands it, on its own loop,
to the handler its ``{event type: handler}`` table names. Bursts of events where only the latest matters (the queue,
a rung's progress) coalesce through ``can_replace``.
"""

from __future__ import annotations

from textual.message import Message

from ktui.core.events import Event, QueueChanged, RungProgress


class CoreEvent(Message):
    """An event of the bus (a core or an agent event), carried onto the UI loop."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event

    def can_replace(self, message: Message) -> bool:
        """True when ``message``, right behind this one in the queue, makes it stale: a newer queue state, or newer
        progress of the same rung of the same run."""
        if not isinstance(message, CoreEvent):
            return False
        a, b = self.event, message.event
        if isinstance(a, QueueChanged):
            return isinstance(b, QueueChanged)
        if isinstance(a, RungProgress) and isinstance(b, RungProgress):
            return (a.key, a.run_id, a.rung) == (b.key, b.run_id, b.rung)
        return False
