"""The store's seams hold on every implementation: each role Protocol's methods, with the same parameter names, kinds
and defaults, async where the role is async, on SqliteStore and PostgresStore; the same for the vector indexes,
search engines, backends and history ledgers. mypy checks the types themselves: ``static_conformance`` below."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from cogs.memory.store.history import HistoryLedger
from cogs.memory.store.postgres.backend import PostgresBackend
from cogs.memory.store.postgres.history import PostgresHistory
from cogs.memory.store.postgres.indexes import DatabaseIndexes
from cogs.memory.store.postgres.search import PostgresSearchEngine
from cogs.memory.store.postgres.store import PostgresStore
from cogs.memory.store.protocol import (ErasureRecords, GuildPolicyStore, GuildRulesSource, IngestStore, MemberRecords,
                                        MessageAuthors, MessageReads, MessageRefs, MessageWrites, PendingVectors,
                                        PerformanceHistory, PlaceNameStore, Reembedding, SearchEngine, Store,
                                        StoreBackend, StoreUpkeep, VectorIndexes)
from cogs.memory.store.sqlite.backend import SqliteBackend
from cogs.memory.store.sqlite.history import SqliteHistory
from cogs.memory.store.sqlite.search import SqliteSearchEngine
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.index import EmbeddingSource
from cogs.memory.vectors.registry import IndexRegistry

ROLES = (MessageWrites, PendingVectors, MessageRefs, IngestStore, MessageReads, Reembedding, GuildRulesSource,
         GuildPolicyStore, PlaceNameStore, ErasureRecords, StoreUpkeep, MessageAuthors, PerformanceHistory, MemberRecords,
         Store)
SEAMS: list[tuple[type, type]] = [
    *((role, store) for role in ROLES for store in (SqliteStore, PostgresStore)),
    (EmbeddingSource, SqliteStore),
    (VectorIndexes, IndexRegistry), (VectorIndexes, DatabaseIndexes),
    (SearchEngine, SqliteSearchEngine), (SearchEngine, PostgresSearchEngine),
    (StoreBackend, SqliteBackend), (StoreBackend, PostgresBackend),
    (HistoryLedger, SqliteHistory), (HistoryLedger, PostgresHistory),
]
_PROTOCOL_BASES = {object, Protocol, Any}


def protocol_members(protocol: type) -> dict[str, Any]:
    """Name → what the protocol declares (a function, a property, or an annotation for a plain attribute)."""
    members: dict[str, Any] = {}
    for base in reversed(protocol.__mro__):
        if base in _PROTOCOL_BASES or not getattr(base, "_is_protocol", False):
            continue
        members.update({name: "attribute" for name in vars(base).get("__annotations__", {})})
        members.update({name: value for name, value in vars(base).items()
                        if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, property))})
    return members


def calling_kind(function: Callable[..., Any], *, declared: bool = False) -> str:
    """How a call is used: awaited, iterated with ``async for``, or neither. A protocol declares an async generator
    as a plain method returning an AsyncIterator (``declared``)."""
    if inspect.iscoroutinefunction(function):
        return "async def"
    if inspect.isasyncgenfunction(function):
        return "async generator"
    returns = str(inspect.signature(function).return_annotation)
    return "async generator" if declared and returns.startswith("AsyncIterator") else "def"


def instance_attributes(implementation: type) -> set[str]:
    """The attributes an implementation has on its instances: class annotations (dataclass fields), and what any
    ``__init__`` in its MRO assigns to ``self``."""
    names: set[str] = set()
    for base in implementation.__mro__:
        names.update(vars(base).get("__annotations__", {}))
        init = vars(base).get("__init__")
        try:
            source = textwrap.dedent(inspect.getsource(init)) if inspect.isfunction(init) else ""
        except OSError:  # a dataclass's generated __init__: its fields are the annotations above
            source = ""
        for node in ast.walk(ast.parse(source)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            for target in targets:
                for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(element, ast.Attribute) and isinstance(element.value, ast.Name) \
                            and element.value.id == "self":
                        names.add(element.attr)
    return names


def parameters(function: Callable[..., Any]) -> list[tuple[str, str, Any]]:
    return [(p.name, p.kind.description, p.default) for p in inspect.signature(function).parameters.values()]


def shape(function: Callable[..., Any]) -> str:
    """The parameter list as a call sees it, without annotations: ``(self, guild_id, *, since=None)``."""
    signature = inspect.signature(function)
    bare = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=bare, return_annotation=inspect.Signature.empty))


def mismatches(protocol: type, implementation: type) -> list[str]:
    """What ``implementation`` lacks or declares differently from ``protocol``, one line each (empty: it conforms)."""
    found: list[str] = []
    attributes = instance_attributes(implementation)
    for name, declared in sorted(protocol_members(protocol).items()):
        actual = inspect.getattr_static(implementation, name, None)
        if declared == "attribute" or isinstance(declared, property):
            if actual is None and name not in attributes:
                found.append(f"{name}: missing attribute")
            continue
        if not inspect.isfunction(actual):
            found.append(f"{name}: missing method" if actual is None else f"{name}: not a method")
            continue
        if calling_kind(actual) != calling_kind(declared, declared=True):
            found.append(f"{name}: {calling_kind(actual)}, the protocol says {calling_kind(declared, declared=True)}")
        if parameters(actual) != parameters(declared):
            found.append(f"{name}{shape(actual)}, the protocol says {name}{shape(declared)}")
    return found


@pytest.mark.parametrize(("protocol", "implementation"), SEAMS,
                         ids=[f"{implementation.__name__}-{protocol.__name__}" for protocol, implementation in SEAMS])
def test_each_implementation_has_every_method_of_its_protocol_with_the_same_signature(
        protocol: type, implementation: type) -> None:
    assert protocol_members(protocol)
    assert mismatches(protocol, implementation) == []


def test_store_is_every_role_and_the_roles_cover_all_of_it() -> None:
    roles = set(ROLES) - {Store}
    assert roles <= set(Store.__mro__)
    assert set(protocol_members(Store)) == set().union(*(protocol_members(role) for role in roles))


# -- the checker itself: a deliberately wrong fake fails it -----------------------------------------------------


class Counter(Protocol):
    total: int

    async def count(self, guild_id: int, since: float | None = None) -> int: ...
    def pages(self, guild_id: int, size: int = 100) -> AsyncIterator[list[int]]: ...


class RightCounter:
    def __init__(self) -> None:
        self.total = 0

    async def count(self, guild_id: int, since: float | None = None) -> int:
        return guild_id

    async def pages(self, guild_id: int, size: int = 100) -> AsyncIterator[list[int]]:
        yield [guild_id] * size


class RenamedParameter(RightCounter):
    async def count(self, guild: int, since: float | None = None) -> int:
        return guild


class OtherDefault(RightCounter):
    async def count(self, guild_id: int, since: float | None = 0.0) -> int:
        return guild_id


class KeywordOnly(RightCounter):
    async def count(self, guild_id: int, *, since: float | None = None) -> int:  # type: ignore[override]
        return guild_id


class NotAsync(RightCounter):
    def count(self, guild_id: int, since: float | None = None) -> int:  # type: ignore[override]
        return guild_id


class NoPages:
    total = 0

    async def count(self, guild_id: int, since: float | None = None) -> int:
        return guild_id


class NoTotal:
    async def count(self, guild_id: int, since: float | None = None) -> int:
        return guild_id

    async def pages(self, guild_id: int, size: int = 100) -> AsyncIterator[list[int]]:
        yield []


def test_the_checker_passes_a_class_that_matches() -> None:
    assert mismatches(Counter, RightCounter) == []


@pytest.mark.parametrize(("fake", "said"), [
    (RenamedParameter, "count(self, guild, since=None), the protocol says count(self, guild_id, since=None)"),
    (OtherDefault, "count(self, guild_id, since=0.0), the protocol says count(self, guild_id, since=None)"),
    (KeywordOnly, "count(self, guild_id, *, since=None), the protocol says count(self, guild_id, since=None)"),
    (NotAsync, "count: def, the protocol says async def"),
    (NoPages, "pages: missing method"),
    (NoTotal, "total: missing attribute"),
], ids=["renamed-parameter", "other-default", "keyword-only", "not-async", "missing-method", "missing-attribute"])
def test_the_checker_names_what_a_wrong_class_gets_wrong(fake: type, said: str) -> None:
    assert mismatches(Counter, fake) == [said]


if TYPE_CHECKING:
    def static_conformance(sqlite: SqliteStore, postgres: PostgresStore, registry: IndexRegistry,
                           database: DatabaseIndexes, sqlite_engine: SqliteSearchEngine,
                           postgres_engine: PostgresSearchEngine, sqlite_backend: SqliteBackend,
                           postgres_backend: PostgresBackend, sqlite_history: SqliteHistory,
                           postgres_history: PostgresHistory) -> None:
        """Never run: ``mypy --strict tests/cogs/memory/store/test_protocol.py`` checks every parameter and return
        type of each implementation against its protocol here (``Store`` inherits every role)."""
        stores: list[Store] = [sqlite, postgres]
        embeddings: EmbeddingSource = sqlite
        indexes: list[VectorIndexes] = [registry, database]
        engines: list[SearchEngine] = [sqlite_engine, postgres_engine]
        backends: list[StoreBackend] = [sqlite_backend, postgres_backend]
        ledgers: list[HistoryLedger] = [sqlite_history, postgres_history]
        del stores, embeddings, indexes, engines, backends, ledgers
