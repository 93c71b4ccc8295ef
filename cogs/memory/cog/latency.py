"""How long recent searches and recalls took: recorded by the commands and the listeners from each recall's own
record, shown by /memory stats (and plotted by the dashboard, when the bot serves one)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..metrics import MetricsRecorder, RecallSample
from ..records import Recall

__all__ = ("Latencies",)

SAMPLES = 500


@dataclass(frozen=True, slots=True)
class Latencies:
    """Milliseconds of the latest ``/memory search`` calls and automatic recalls; one shared by both cogs."""

    search_ms: deque[float] = field(default_factory=lambda: deque(maxlen=SAMPLES))
    recall_ms: deque[float] = field(default_factory=lambda: deque(maxlen=SAMPLES))
    # The time series both stages apart, when the bot keeps one (its dashboard is on).
    recorder: MetricsRecorder | None = None

    def searched(self, recall: Recall) -> None:
        """A ``/memory search`` made ``recall``."""
        self.search_ms.append(recall.total_ms)
        self._record(recall)

    def recalled(self, recall: Recall) -> None:
        """An automatic recall (a mention, a reply, an auto-recall channel) made ``recall``."""
        self.recall_ms.append(recall.total_ms)
        self._record(recall)

    def _record(self, recall: Recall) -> None:
        if self.recorder is not None:
            self.recorder.record_recall(RecallSample.of(recall))
