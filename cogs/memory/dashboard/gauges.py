"""Per-guild Prometheus gauges for /metrics, read from the latest overview the dashboard sampled."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .source import GuildOverview

__all__ = ("GUILD_GAUGES", "OverviewCollector")

# (metric name, help, the overview's field)
GUILD_GAUGES = (
    ("memory_guild_messages", "Messages memory holds", "messages"),
    ("memory_guild_channels", "Channels memory holds messages of", "channels"),
    ("memory_guild_vectors", "Messages with a vector", "vectors"),
    ("memory_guild_vectors_waiting", "Stored messages waiting for a vector", "vectors_waiting"),
    ("memory_guild_index_file_bytes", "Size of the guild's vector index file", "index_file_bytes"),
)


class OverviewCollector(Collector):
    """Per-guild gauges from the latest overview the dashboard sampled (scrapes never wait on the database)."""

    def __init__(self, overviews: Callable[[], Sequence[GuildOverview]]) -> None:
        self._overviews = overviews

    def collect(self) -> Iterable[Metric]:
        overviews = self._overviews()
        for name, text, attribute in GUILD_GAUGES:
            family = GaugeMetricFamily(name, text, labels=["guild"])
            for overview in overviews:
                family.add_metric([str(overview.guild_id)], getattr(overview, attribute))
            yield family

    def describe(self) -> Iterable[Metric]:
        return [GaugeMetricFamily(name, text, labels=["guild"]) for name, text, _ in GUILD_GAUGES]
