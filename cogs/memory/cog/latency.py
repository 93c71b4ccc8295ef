"""How long recent searches and recalls took: measured by the commands and the listeners, shown by /memory stats."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..dashboard import MetricsRecorder

__all__ = ("Latencies",)

SAMPLES = 500


@dataclass(frozen=True, slots=True)
class Latencies:
    """Milliseconds of the latest ``/memory search`` calls and automatic recalls; one shared by both cogs."""

    search_ms: deque[float] = field(default_factory=lambda: deque(maxlen=SAMPLES))
    recall_ms: deque[float] = field(default_factory=lambda: deque(maxlen=SAMPLES))
    # The dashboard's time series (both stages apart), when the dashboard is on.
    recorder: MetricsRecorder | None = None
