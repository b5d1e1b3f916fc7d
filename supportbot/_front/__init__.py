"""The two front ends, ``SupportBot`` and ``AsyncSupportBot``, and what only they do: check what
callers pass (``_validate``), open a bot over its store, business system and models (``_open``,
``_opening``), and forget, prune and reset (``_lifecycle``). Internal: the public names are
``supportbot``'s."""
