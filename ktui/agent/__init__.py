"""The LLM side of ktui: configuration, the litellm client, the agent's tools, its prompts and the verifiable loop.

Nothing here imports Textual or torch; litellm is imported lazily (it takes seconds), with its cost map read from
the package instead of the network.
"""
