"""/memory backfill over long runs: progress saved as it goes, and reported past the interaction token's life."""

import importlib

import pytest

from cogs.memory.records import SearchFilters
from tests.fixtures.core import message_writes_failing, write_locked
from tests.fixtures.discord import bot_replies, say
from tests.fixtures.history import deleted_while_away, said_while_away


@pytest.fixture
def backfill(monkeypatch):
    """The extension's backfill module as loaded now, reading pages of 2 messages, reporting every 2."""
    module = importlib.import_module("cogs.memory.cog.backfill")
    monkeypatch.setattr(module, "PROGRESS_EVERY", 2)
    monkeypatch.setattr(module, "PAGE_SIZE", 2)
    return module


@pytest.fixture
def history(guild, channel, member):
    """Three messages said in ``channel`` before the bot heard it, oldest first."""
    for age in ("oldest", "older", "newest"):
        said_while_away(f"{age} picnic plans", member, channel)


def done(channel, count):
    return (f"Backfill of {channel.mention} finished: read {count} messages, newest first. "
            "Run it again to go further back.")


async def stored(bot, guild):
    await bot.memory.flush(vectors=True)
    hits = await bot.memory.search("picnic plans", SearchFilters(guild_id=guild.id), 20)
    return sorted(hit.content for hit in hits if hit.content.endswith("picnic plans"))


async def test_a_run_cut_short_resumes_from_its_last_save(memory_bot, slash, guild, channel, admin, history, backfill,
                                                          history_api):
    history_api.fail(channel.id, nth=2)
    await slash.run("memory backfill", admin, channel, channel=channel)  # fails on its second page, the third message
    http = await slash.run("memory backfill", admin, channel, channel=channel)
    assert (http.last.content, await stored(memory_bot, guild)) == (
        done(channel, 1), ["newest picnic plans", "older picnic plans", "oldest picnic plans"])


async def test_progress_moves_to_a_channel_message_when_the_token_has_expired(memory_bot, slash, guild, channel,
                                                                              admin, history, backfill):
    slash.token_expired = True
    await slash.run("memory backfill", admin, channel, channel=channel)
    (notice,) = bot_replies()
    assert (await channel.fetch_message(notice.id)).content == done(channel, 3)


async def test_progress_moves_to_a_channel_message_before_the_token_expires(memory_bot, slash, guild, channel,
                                                                            admin, history, backfill, monkeypatch):
    monkeypatch.setattr(backfill, "INTERACTION_EDITS_FOR_S", 0)
    http = await slash.run("memory backfill", admin, channel, channel=channel)
    (notice,) = bot_replies()
    assert ([sent.kind for sent in http.sent], (await channel.fetch_message(notice.id)).content) == (
        ["response"], done(channel, 3))


async def test_a_long_run_remembers_everything_it_read(memory_bot, slash, guild, channel, admin, history, backfill):
    slash.token_expired = True
    await slash.run("memory backfill", admin, channel, channel=channel)
    assert await stored(memory_bot, guild) == ["newest picnic plans", "older picnic plans", "oldest picnic plans"]


# -- gaps on either side, and what Discord no longer has ----------------------------------------------------------


async def test_a_first_run_fills_a_gap_in_the_middle(memory_bot, slash, guild, channel, member, admin, backfill):
    await say("oldest picnic plans", member, channel)
    said_while_away("older picnic plans", member, channel)  # the bot was away: a gap between what it heard
    await say("newest picnic plans", member, channel)
    await slash.run("memory backfill", admin, channel, channel=channel)
    assert await stored(memory_bot, guild) == ["newest picnic plans", "older picnic plans", "oldest picnic plans"]


async def test_a_later_run_fills_what_was_missed_since_the_last(memory_bot, slash, guild, channel, member, admin,
                                                                backfill):
    await say("oldest picnic plans", member, channel)
    await slash.run("memory backfill", admin, channel, channel=channel)
    said_while_away("older picnic plans", member, channel)
    await say("newest picnic plans", member, channel)
    http = await slash.run("memory backfill", admin, channel, channel=channel)
    assert (http.last.content, await stored(memory_bot, guild)) == (
        done(channel, 2), ["newest picnic plans", "older picnic plans", "oldest picnic plans"])


async def test_a_run_forgets_what_discord_no_longer_has(memory_bot, slash, guild, channel, member, admin, backfill):
    kept = await say("oldest picnic plans", member, channel)
    gone = await say("older picnic plans", member, channel)
    await memory_bot.memory.flush(vectors=True)
    deleted_while_away(gone)
    await slash.run("memory backfill", admin, channel, channel=channel)
    assert (kept.content, await stored(memory_bot, guild)) == ("oldest picnic plans", ["oldest picnic plans"])


# -- a run cut short ------------------------------------------------------------------------------------------------


async def test_a_run_cut_short_says_how_far_it_got(memory_bot, slash, guild, channel, admin, history, backfill,
                                                   history_api):
    history_api.fail(channel.id, nth=2)
    http = await slash.run("memory backfill", admin, channel, channel=channel)
    assert http.last.content == (
        f"Backfill of {channel.mention} stopped after 2 messages: Discord answered 503 (upstream connect error). "
        "What it read is saved; run it again to go on from there.")


async def test_a_write_that_fails_stops_the_run_and_says_so(memory_bot, slash, guild, channel, admin, history,
                                                            backfill):
    with write_locked(memory_bot.db_path):
        http = await slash.run("memory backfill", admin, channel, channel=channel)
    assert http.last.content == (
        f"Backfill of {channel.mention} stopped after reading 2 messages: 2 of them could not be stored (another "
        "process holds the database's write lock). I keep them and keep trying; run the backfill again later to go on.")


async def test_a_write_that_fails_saves_no_progress_past_it(memory_bot, slash, guild, channel, admin, history,
                                                            backfill):
    with message_writes_failing(memory_bot.db_path):  # its place could be saved: only the messages' writes fail
        await slash.run("memory backfill", admin, channel, channel=channel)
    http = await slash.run("memory backfill", admin, channel, channel=channel)  # reads the unstored page again
    assert (http.last.content, await stored(memory_bot, guild)) == (
        done(channel, 3), ["newest picnic plans", "older picnic plans", "oldest picnic plans"])
