"""The admin web dashboard: pages, a JSON API and /metrics, served by the bot's own event loop.

Owns its web server, sign-in, templates and metrics. It reaches memory only through ``source.DashboardSource``;
``memory_source`` is the one module that imports the memory core (``Memory`` and its records).
"""

from __future__ import annotations

from .config import DashboardConfig
from .metrics import MetricsRecorder, RecallSample
from .server import Dashboard
from .source import DashboardSource

__all__ = ("Dashboard", "DashboardConfig", "DashboardSource", "MetricsRecorder",
           "RecallSample")
