"""The dashboard over a real Memory on either store (SQLite, and PostgreSQL through pgserver), end to end over HTTP:
the overview counts, an explained search, browse pages that end among messages of one timestamp, and forget."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cogs.memory.dashboard.config import DashboardConfig
from cogs.memory.dashboard.server import Dashboard
from cogs.memory.dashboard.memory_source import MemorySource
from cogs.memory.memory import Memory
from tests.fixtures.core import RecordFactory
from tests.fixtures.dashboard import SignedIn, signed_in_over

GUILD, CHANNEL = 1, 10
BURST = range(21, 26)  # five messages of one timestamp, as a bot's burst or an import leaves them


@pytest.fixture
async def stored(any_memory: Memory, make_record: RecordFactory) -> Memory:
    await any_memory.add(make_record(1, "We should book the cabin by the lake for July", author_name="ann"))
    await any_memory.add(make_record(2, "Has anyone fixed the printer on floor two?", author_name="ben"))
    await any_memory.add(make_record(3, "The lake cabin has a boat we can borrow", author_name="cat"))
    for message_id in BURST:
        await any_memory.add(make_record(message_id, f"status report {message_id}", minute=30))
    await any_memory.flush(vectors=True)
    return any_memory


@pytest.fixture
async def client(stored: Memory, tmp_path: Path) -> AsyncIterator[SignedIn]:
    async with signed_in_over(stored, tmp_path) as signed_in:
        yield signed_in


async def test_the_overview_counts_what_the_store_holds(client: SignedIn, store_kind: str) -> None:
    body = await client.get_json("/api/overview")
    [guild] = body["guilds"]
    assert (guild["guild_id"], guild["messages"], guild["channels"], guild["vectors_waiting"]) == (GUILD, 8, 1, 0)
    assert body["process"]["store_backend"] == store_kind


async def test_a_search_explains_each_hit_on_either_store(client: SignedIn) -> None:
    body = await client.get_json(f"/api/search?q=lake+cabin&guild={GUILD}&limit=5&rerank=false")
    hits = body["hits"]
    assert {hit["message_id"] for hit in hits[:2]} == {1, 3} and not body["reranked"]
    for hit in hits:  # the parts add up to the first-stage score; a side that found it has its score
        parts = hit["parts"]
        sides = sum(parts[f"{side}_weight"] * parts[side] for side in ("keyword", "vector") if parts[side] is not None)
        loans = parts["neighbour_loan"] + parts["question_loan"] + parts["reply_loan"]
        assert sides + parts["missing"] + loans == pytest.approx(hit["first_stage_score"], abs=1e-9)
        assert {side for side in ("keyword", "vector") if parts[side] is not None} == \
            set(hit["sources"]) - {"context"}


async def test_browse_pages_on_time_and_id_so_a_burst_is_not_skipped(client: SignedIn) -> None:
    pages, path = [], f"/api/browse?guild={GUILD}&channel={CHANNEL}&limit=2"
    while path:
        page = await client.get_json(path)
        pages.append([message["message_id"] for message in page["messages"]])
        path = (f"/api/browse?guild={GUILD}&channel={CHANNEL}&limit=2&before_id={page['next_before_id']}"
                f"&before={page['next_before'].replace('+', '%2B')}") if page["next_before"] else ""
    assert pages == [[25, 24], [23, 22], [21, 3], [2, 1]]


async def test_forgetting_a_message_takes_it_from_search(client: SignedIn, stored: Memory) -> None:
    asked = await client.post_json("/api/forget", {"kind": "message", "guild_id": GUILD, "target_id": 3})
    done = await client.post_json("/api/forget/confirm", {"pending_id": asked["pending_id"]})
    assert done["message"].startswith(f"Forgot 1 message (message 3) in guild {GUILD}")
    after = await client.get_json(f"/api/search?q=lake+cabin+boat&guild={GUILD}&limit=10&rerank=false")
    assert 3 not in [hit["message_id"] for hit in after["hits"]]
    assert not await stored.has_message(3)
    assert (await client.get_json("/api/overview"))["guilds"][0]["messages"] == 7


# The count is the recall's own record, the same over either store: SQLite alone is enough.
@pytest.mark.parametrize("store_kind", ["sqlite"])
@pytest.mark.parametrize("narrowed, found", [("", 5), (f"&channel={CHANNEL}", 5), ("&channel=11", 0)])
async def test_a_search_says_how_many_candidates_its_first_stage_found(
        client: SignedIn, store_kind: str, narrowed: str, found: int) -> None:
    body = await client.get_json(f"/api/search?q=lake+cabin&guild={GUILD}&limit=5&rerank=false{narrowed}")
    assert (body["first_stage_candidates"], len(body["hits"]), body["candidates_offered"]) == (found, found, None)


@pytest.mark.parametrize("store_kind", ["sqlite"])
async def test_the_search_page_says_what_its_first_stage_found(client: SignedIn, store_kind: str) -> None:
    async with client.http.get(client.url(f"/search?q=lake+cabin&guild={GUILD}&limit=5&channel=11")) as response:
        html = await response.text()
    assert "The first stage found 0 candidates that pass the filters." in " ".join(html.split())


async def test_the_names_memory_saw_name_the_guild_and_its_channels(client: SignedIn, stored: Memory) -> None:
    """Without Discord (a CLI's dashboard), the names memory stored are what the pages show."""
    stored.names.note_guild(GUILD, "Harbour Club")
    stored.names.note_channel(GUILD, CHANNEL, "cabin-trips")
    [guild] = (await client.get_json("/api/overview"))["guilds"]
    channels = await client.get_json(f"/api/guilds/{GUILD}/channels")
    async with client.http.get(client.url(f"/browse?guild={GUILD}")) as response:
        html = await response.text()
    assert (guild["name"], channels["channel_names"]) == ("Harbour Club", {str(CHANNEL): "cabin-trips"})
    assert f'channel={CHANNEL}">#cabin-trips</a>' in html


async def test_a_forget_named_with_an_at_says_what_goes_on_either_store(client: SignedIn) -> None:
    # Every message here is author 100's, under four names: "ben" names them, and the newest is the burst's.
    asked = await client.post_json("/api/forget", {"kind": "member", "guild_id": GUILD, "target_id": "@BEN"})
    assert asked["will_forget"] == f"every message of member 100 in guild {GUILD}"
    assert asked["preview"] == {"count": 8, "author_id": 100, "author_name": "alice", "channel_id": CHANNEL,
                                "channel_name": None, "text": "status report 25"}
    asked = await client.post_json("/api/forget", {"kind": "message", "guild_id": GUILD, "target_id": 2})
    assert asked["preview"] == {"count": 1, "author_id": 100, "author_name": "ben", "channel_id": CHANNEL,
                                "channel_name": None, "text": "Has anyone fixed the printer on floor two?"}
    page = await client.get_json(f"/api/browse?guild={GUILD}&channel={CHANNEL}&limit=1")
    assert [(m["author_name"], m["author_id"]) for m in page["messages"]] == [("alice", 100)]


async def test_the_performance_history_outlives_a_dashboard_on_either_store(stored: Memory, tmp_path: Path) -> None:
    from cogs.memory.metrics import MetricsRecorder, RecallSample

    source = MemorySource(lambda: stored, profiles_dir=tmp_path)
    first = Dashboard(source, DashboardConfig(port=0, data_dir=tmp_path / "dashboard"), MetricsRecorder())
    await first.keep_history()
    first.recorder.record_recall(RecallSample(first_stage_ms=12.0))
    await first.keep_history()
    again = MetricsRecorder()
    await Dashboard(source, DashboardConfig(port=0, data_dir=tmp_path / "dashboard"), again).keep_history()
    assert sum(point.recalls for point in again.series("day").points) == 1
