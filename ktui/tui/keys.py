"""The app's keys: what each one does, its footer label, and its command palette entry.

``KEYS`` is the one table of the app's key bindings: ``APP_BINDINGS`` (the app's, with the tab keys 1-8) and the
command palette's entries (``palette_commands``) are made from it, so a key, its footer label and its palette title
cannot drift apart. The actions themselves are ``KtuiApp``'s ``action_*`` methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from rich.table import Table
from rich.text import Text
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

KEYS = (  # key, action, footer label, shown in the footer, command palette title ("": not there), its help
    # the footer shows them in this order and an 80-column one only the first few: help, then the keys of the
    # everyday loop (a new user at 80 x 24 never saw e, x or q there)
    ("question_mark", "toggle_help", "Keys", True, "Keys", "Show or hide the panel of every key and what it does (?)"),
    ("r", "rerun", "Rerun", True, "Rerun", "Run the selected version's ladder again (r)"),
    (
        "x",
        "cancel_run",
        "Cancel run",
        True,  # in the footer only while a ladder runs (KtuiApp.check_action)
        "Cancel run",
        "Cancel the running ladder: its worker calls end now and its workers restart; no verdict (x)",
    ),
    (
        "X",
        "cancel_all",
        "Cancel all",
        False,
        "Cancel all: clear the queue",
        "Cancel the running ladder and withdraw every queued run (X): after a (run all) or a reference edit",
    ),
    ("e", "open_editor", "Edit", True, "Open in $EDITOR", "Open the selected version in $EDITOR, else $VISUAL (e)"),
    ("n", "new_version", "New version", True, "New version", "Copy the selected version to the next free vN.py (n)"),
    ("q", "quit", "Quit", True, "", ""),
    ("a", "run_problem", "Run all", True, "Run all versions", "Run every version of the selected problem (a)"),
    (
        "u",
        "run_stale",
        "Run stale",
        False,
        "Run stale versions",
        "Run every version whose kernel or reference changed since it ran, or only compiled since (u)",
    ),
    ("m", "toggle_maximize", "Maximize", True, "Maximize panel", "The focused panel fills the screen (m; esc)"),
    (
        "ctrl+g",
        "toggle_chat",
        "Chat pane",
        True,
        "Show/hide chat",
        "Collapse the chat pane to one line, or open it to type",
    ),
    ("right_square_bracket", "next_version", "Next", True, "Next version", "Select the next version (])"),
    ("left_square_bracket", "previous_version", "Prev", True, "Previous version", "Select the previous version ([)"),
    ("c", "focus_chat", "Chat", True, "", ""),
    ("p", "profile", "Profile", False, "Profile", "Profile the selected version with Nsight Compute (p, GPU only)"),
    (
        "t",
        "trace",
        "Trace",
        False,
        "Trace",
        "Trace the selected version's ktui.trace regions per warp and CTA: timeline in the Profile tab (t, GPU only)",
    ),
    ("b", "pin_baseline", "Baseline", False, "Pin baseline", "Diff and Profile compare with the selected version (b)"),
    (
        "s",
        "toggle_side_by_side",
        "Side by side",
        False,
        "Diff: side by side",
        "Toggle the SASS diff between unified and two columns (s)",
    ),
    ("escape", "stop_agent", "Stop agent", True, "Agent: stop", "Stop the agent's reply and its loop (esc)"),
    (
        "ctrl+t",
        "toggle_auto",
        "Auto-apply",
        False,
        "Agent: toggle auto-apply",
        "Ask before each write, or apply writes at once (ctrl+t)",
    ),
    (
        "ctrl+r",
        "cycle_rounds",
        "Rounds",
        False,
        "Agent: cycle rounds",
        "Automatic ladder-result rounds 0/1/3/5/10 (ctrl+r)",
    ),
)

TABS = ("Accuracy", "Timings", "SASS", "Diff", "Profile", "Details", "IR", "Context")  # the tabs, keys 1 to 8

APP_BINDINGS: list[BindingType] = [
    *[Binding(key, action, label, show=show) for key, action, label, show, _, _ in KEYS],
    *[Binding(str(i), f"show_tab('tab-{tab.lower()}')", f"{tab} tab", show=False) for i, tab in enumerate(TABS, 1)],
]


def palette_commands(app: App[None]) -> Iterator[SystemCommand]:
    """The command palette's entry for each key of ``KEYS`` that has a title: it runs ``app``'s action."""
    for _, action, _, _, title, help_text in KEYS:
        if title:
            yield SystemCommand(title, help_text, getattr(app, f"action_{action}"))


# one line each for the keys panel (``keys_table``): at most 28 characters, its column at 80 x 24 (the palette keeps
# the long help)
SHORT_HELP = {
    "toggle_help": "This panel",
    "rerun": "Rerun the selected version",
    "cancel_run": "Cancel the running ladder",
    "cancel_all": "Cancel and clear the queue",
    "open_editor": "Open it in $EDITOR",
    "new_version": "Copy it to the next vN.py",
    "quit": "Quit",
    "run_problem": "Run every version",
    "run_stale": "Run stale or unverified ones",
    "toggle_maximize": "Maximize the focused panel",
    "toggle_chat": "Open or collapse the chat",
    "next_version": "Next version",
    "previous_version": "Previous version",
    "focus_chat": "Type to the agent",
    "profile": "Profile (Nsight, GPU)",
    "trace": "Trace regions (GPU)",
    "pin_baseline": "Pin as the baseline",
    "toggle_side_by_side": "Diff: unified/side by side",
    "stop_agent": "Stop the agent",
    "toggle_auto": "Agent: ask or apply writes",
    "cycle_rounds": "Agent: rounds 0/1/3/5/10",
}

# what other keys do, beside ``KEYS``: the tree's and Textual's own (the palette lists every command)
OTHER_KEYS = (
    ("↑ ↓", "Move in the version tree (or the focused table)"),
    ("enter", "Expand or collapse a problem in the tree"),
    ("tab", "Focus the next panel"),
    ("ctrl+p", "The command palette: every command, searchable"),
    ("ctrl+q", "Quit"),
)


def keys_table(display: Callable[[Binding], str]) -> Table:
    """ktui's keys first, each with what it does (``KEYS``, the tabs 1-8), then the tree's and Textual's
    (``OTHER_KEYS``); ``display`` is the app's ``get_key_display`` (``?``, ``]``). Textual's own keys panel listed
    the focused tree's keys first: at 80 x 24 none of ktui's were in view (new-user trial 19)."""
    table = Table(show_header=False, box=None, padding=(0, 1, 0, 0))
    table.add_column(justify="right", style="bold")
    table.add_column()
    for key, action, label, *_ in KEYS:
        table.add_row(display(Binding(key, action, label)), Text(SHORT_HELP.get(action, label)))
    table.add_row("1-8", Text(f"Tabs: {', '.join(TABS)}"))
    table.add_row("", "")
    for key, what in OTHER_KEYS:
        table.add_row(key, Text(what, style="dim"))
    return table


class KeysPanel(VerticalScroll, can_focus=False):
    """The keys panel (``?``): ``keys_table`` in a column docked at the right."""

    DEFAULT_CSS = """
    KeysPanel {
        dock: right;
        width: 46;
        max-width: 50%;
        height: 1fr;
        border-left: vkey $foreground 30%;
        padding: 0 1;
        layer: overlay;
    }
    """

    def compose(self) -> Iterator[Static]:
        yield Static(keys_table(self.app.get_key_display))
