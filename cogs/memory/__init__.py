"""The memory core: remembers a server's conversations and recalls the right ones. It knows nothing of Discord;
its Discord surface is the ``cogs.memory.cog`` extension."""

from __future__ import annotations

import os

# Idle OpenMP threads (torch's, under the embedder and the reranker) sleep instead of spinning: on a small box a
# spinning thread holds the core the event loop and SQLite need. Read once, when torch is first imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
