"""The seam: MemorySource (and the tests' fake) offer every DashboardSource method with its parameters."""

from __future__ import annotations

import inspect

import pytest

from cogs.memory.dashboard.memory_source import MemorySource
from cogs.memory.dashboard.source import DashboardSource
from tests.fixtures.dashboard import FakeSource

METHODS = [name for name, member in vars(DashboardSource).items()
           if inspect.iscoroutinefunction(member) and not name.startswith("_")]


@pytest.mark.parametrize("implementation", [MemorySource, FakeSource])
def test_each_source_offers_the_protocols_methods(implementation: type) -> None:
    assert len(METHODS) == 16
    for name in METHODS:
        method = getattr(implementation, name)
        assert inspect.iscoroutinefunction(method), name
        assert (list(inspect.signature(method).parameters) ==
                list(inspect.signature(getattr(DashboardSource, name)).parameters)), name
