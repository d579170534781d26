"""ktui's side of the worker pipe: the worker processes, the pool that keeps them warm, and the reaper of what a
kernel leaves behind. What runs inside the workers is ``ktui.worker``."""
