"""Registers each area's fixture module; the fixtures themselves live in tests/fixtures/."""

pytest_plugins = ["tests.fixtures.core", "tests.fixtures.reranker", "tests.fixtures.discord", "tests.fixtures.postgres",
                  "tests.fixtures.history", "tests.fixtures.stores", "tests.fixtures.dashboard"]
