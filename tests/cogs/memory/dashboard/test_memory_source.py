"""The dashboard over a real Memory (SQLite, FAISS, MiniLM, the tiny Qwen3 reranker), through its HTTP API."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cogs.memory.memory import Memory
from tests.fixtures.dashboard import CHANNEL, GUILD, NONCE, NONCE_ID, SignedIn, files_holding
from tests.fixtures.ledger import fill_the_disk


async def test_the_overview_counts_what_memory_holds(real_client: SignedIn) -> None:
    body = await real_client.get_json("/api/overview")
    [guild] = body["guilds"]
    assert (guild["guild_id"], guild["name"], guild["messages"], guild["channels"]) == (GUILD, "Real guild", 41, 2)
    assert guild["vectors"] == 41 and guild["vectors_waiting"] == 0 and guild["index_file_bytes"] > 0
    process = body["process"]
    assert (process["profile"], process["store_backend"], process["dtype"]) == ("test-tiny", "sqlite", "float32")
    assert process["embedding_model"] == "all-MiniLM-L6-v2" and process["reranker_backend"].startswith("torch")
    assert process["database_bytes"] > 0 and process["rss_bytes"] > 0


async def test_a_search_explains_each_hit_and_is_recorded(real_client: SignedIn, real_dashboard) -> None:
    body = await real_client.get_json(f"/api/search?q=lake+cabin+booked&guild={GUILD}&limit=5")
    assert body["reranked"] and len(body["hits"]) == 5
    assert [hit["rank_after"] for hit in body["hits"]] == [1, 2, 3, 4, 5]
    assert all(hit["rerank_score"] is not None and hit["rank_before"] >= 1 and hit["sources"] for hit in body["hits"])
    assert [hit["rerank_score"] for hit in body["hits"]] == sorted((h["rerank_score"] for h in body["hits"]),
                                                                   reverse=True)
    assert body["rerank_ms"] > 0 and body["first_stage_ms"] > 0 and body["candidates_scored"] >= 5
    # The profile's 20 candidates, of the guild's 41 messages, all offered to the reranker; 5 shown.
    assert (body["first_stage_candidates"], body["candidates_offered"]) == (20, 20)
    assert body["total_ms"] >= body["first_stage_ms"] + body["rerank_ms"] - 1e-6
    for hit in body["hits"]:  # what each first-stage score is made of adds up to it
        parts = hit["parts"]
        sides = sum(parts[f"{side}_weight"] * parts[side] for side in ("keyword", "vector") if parts[side] is not None)
        loans = parts["neighbour_loan"] + parts["question_loan"] + parts["reply_loan"]
        assert sides + parts["missing"] + loans == pytest.approx(hit["first_stage_score"], abs=1e-9)
    [point] = [p for p in (await real_client.get_json("/api/performance"))["points"] if p["recalls"]]
    assert point["rerank_p50_ms"] == body["rerank_ms"]


async def test_browse_pages_a_channel_newest_first(real_client: SignedIn) -> None:
    first = await real_client.get_json(f"/api/browse?guild={GUILD}&channel={CHANNEL}&limit=5")
    ids = [m["message_id"] for m in first["messages"]]
    assert ids == [39, 37, 35, 33, 31] and first["messages"][0]["author_name"] == "member2"
    second = await real_client.get_json(f"/api/browse?guild={GUILD}&channel={CHANNEL}&limit=5"
                                    f"&before={first['next_before'].replace('+', '%2B')}"
                                    f"&before_id={first['next_before_id']}")
    assert [m["message_id"] for m in second["messages"]] == [29, 27, 25, 23, 21]


async def test_forgetting_a_message_takes_it_from_search_and_from_the_files(
        real_client: SignedIn, real_memory: Memory, tmp_path: Path) -> None:
    assert files_holding(tmp_path, NONCE.encode())
    found = await real_client.get_json(f"/api/search?q={NONCE}&guild={GUILD}&limit=3&rerank=false")
    assert found["hits"][0]["message_id"] == NONCE_ID
    asked = await real_client.post_json("/api/forget", {"kind": "message", "guild_id": GUILD, "target_id": NONCE_ID})
    done = await real_client.post_json("/api/forget/confirm", {"pending_id": asked["pending_id"]})
    assert done["message"] == f"Forgot 1 message (message {NONCE_ID}) in guild {GUILD}; erased from the files too."
    after = await real_client.get_json(f"/api/search?q={NONCE}&guild={GUILD}&limit=50&rerank=false")
    assert NONCE_ID not in [hit["message_id"] for hit in after["hits"]]
    assert await asyncio.to_thread(files_holding, tmp_path, NONCE.encode()) == []
    assert not await real_memory.has_message(NONCE_ID)


async def test_forgetting_a_member_uses_the_cores_forget(real_client: SignedIn, real_memory: Memory) -> None:
    asked = await real_client.post_json("/api/forget", {"kind": "member", "guild_id": GUILD, "target_id": 101})
    done = await real_client.post_json("/api/forget/confirm", {"pending_id": asked["pending_id"]})
    assert done["message"] == f"Forgot 13 messages of member 101 in guild {GUILD}; erased from the files too."
    assert (await real_memory.stats(GUILD)).messages == 28


async def test_a_message_of_another_guild_is_not_forgotten(real_client: SignedIn, real_memory: Memory) -> None:
    asked = await real_client.post_json("/api/forget", {"kind": "message", "guild_id": 999, "target_id": NONCE_ID})
    done = await real_client.post_json("/api/forget/confirm", {"pending_id": asked["pending_id"]})
    assert done["result"]["count"] == 0 and await real_memory.has_message(NONCE_ID)


async def test_settings_saved_from_the_dashboard_are_memorys(real_client: SignedIn, real_memory: Memory) -> None:
    done = await real_client.post_json("/api/settings", {"guild_id": GUILD, "retention_days": 30, "auto_recall": True})
    assert done["message"] == (f"Saved the settings of guild {GUILD}: auto recall on, retention 30 days, "
                               "forget on leave off, other bots' messages not stored.")
    saved = await real_memory.settings(GUILD)
    assert (saved.retention_days, saved.auto_recall, saved.forget_on_leave) == (30, True, False)


async def test_storing_other_bots_messages_from_the_dashboard_is_memorys(real_client: SignedIn,
                                                                         real_memory: Memory) -> None:
    done = await real_client.post_json("/api/settings", {"guild_id": GUILD, "store_bot_messages": True})
    assert done["settings"]["store_bot_messages"] is True
    assert (await real_memory.settings(GUILD)).store_bot_messages is True
    await real_client.post_json("/api/settings", {"guild_id": GUILD, "store_bot_messages": False})
    assert (await real_memory.settings(GUILD)).store_bot_messages is False


async def test_an_unknown_profile_is_not_switched_to(real_client: SignedIn, real_memory: Memory) -> None:
    async with real_client.http.post(real_client.url("/api/profile"), json={"name": "nope"},
                                     headers={"X-CSRF-Token": real_client.csrf}) as response:
        assert response.status == 409
        assert (await response.json())["message"] == ("Did not switch the profile from test-tiny to nope: there is "
                                                      "no profile named 'nope'")
    assert real_memory.profile.name == "test-tiny"


async def test_a_forget_the_erasure_ledger_cannot_record_is_the_dashboards_error_and_forgets_nothing(
        real_client: SignedIn, real_memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = await real_client.post_json("/api/forget", {"kind": "message", "guild_id": GUILD, "target_id": NONCE_ID})
    fill_the_disk(monkeypatch)
    async with real_client.http.post(real_client.url("/api/forget/confirm"), json={"pending_id": asked["pending_id"]},
                                     headers={"X-CSRF-Token": real_client.csrf}) as response:
        assert (response.status, await response.json()) == (503, {"error": (
            f"Nothing was forgotten: the erasure ledger {tmp_path / 'erasures.jsonl'} cannot be written (the disk is "
            "full). Free some space (or make it writable), then try again.")})
    assert await real_memory.has_message(NONCE_ID)
