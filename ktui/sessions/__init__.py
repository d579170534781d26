"""Recorded sessions: the event log (``log``), its writer (``record``), the fold that replays it (``fold``), the
catalogue, exports and re-runs. Imports the core and the agent's events; never the screen or what the workers own."""
