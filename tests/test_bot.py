"""``python bot.py``: what a newcomer sees without a token, the admin list it reads, and when it collects garbage."""

import gc
import weakref

import discord
import pytest
from discord.ext import commands

import bot


def test_without_a_token_it_explains_how_to_get_one_and_exits_non_zero(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    monkeypatch.setattr(bot, "ENV_FILE", tmp_path / ".env")  # a developer's real .env must not be read
    assert bot.main([]) == 2
    assert capsys.readouterr().err == bot.NO_TOKEN_HELP + "\n"


def test_the_help_names_both_privileged_intents():
    assert "MESSAGE CONTENT INTENT" in bot.NO_TOKEN_HELP and "SERVER MEMBERS INTENT" in bot.NO_TOKEN_HELP


def test_the_bot_asks_for_message_content_and_members():
    intents = bot.bot_intents()
    assert (intents.message_content, intents.members) == (True, True)


def test_bot_admin_ids_accept_commas_and_spaces():
    assert bot.parse_admin_ids("1, 2 3") == frozenset({1, 2, 3})


def test_bad_bot_admin_ids_stop_the_bot_with_a_reason():
    with pytest.raises(SystemExit, match="BOT_ADMIN_IDS must be user ids"):
        bot.parse_admin_ids("alice")


async def test_a_listed_bot_admin_is_a_bot_admin(discord_bot):
    discord_bot.bot_admin_ids = frozenset({77})
    assert await discord_bot.is_bot_admin(discord.Object(77))


async def test_a_member_who_is_not_listed_is_not_a_bot_admin(discord_bot):
    assert not await discord_bot.is_bot_admin(discord.Object(78))


@pytest.fixture
def restore_gc():
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


class Node:
    """Something only the cycle collector can free once it refers to itself."""


def test_the_startup_freeze_puts_what_exists_out_of_the_collectors_reach(restore_gc):
    node = Node()
    node.itself = node
    still_there = weakref.ref(node)
    del node
    bot.freeze_startup_objects()
    gc.collect()
    assert still_there() is not None


def test_after_the_startup_freeze_full_collections_never_start_on_their_own(restore_gc):
    bot.freeze_startup_objects()
    gc.collect()  # from here on, only objects made below weigh on the collector
    started: list[int] = []

    def record(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(record)
    try:
        # ~280 young collections and ~28 of the middle generation: Python's defaults would start 2 full ones.
        survivors = [[] for _ in range(200_000)]
    finally:
        gc.callbacks.remove(record)
    assert (len(survivors), 1 in started, 2 in started) == (200_000, True, False)


@pytest.fixture
def full_collections():
    """How many full collections ran since the test began; automatic ones are paused, so only the bot's count."""
    was_enabled = gc.isenabled()
    gc.disable()
    before = gc.get_stats()[2]["collections"]
    yield lambda: gc.get_stats()[2]["collections"] - before
    if was_enabled:
        gc.enable()


@pytest.fixture
def ingest_backlog(memory_bot, monkeypatch):
    def set_backlog(count: int) -> None:
        monkeypatch.setattr(type(memory_bot.memory.ingest), "queued", property(lambda self: count))
    return set_backlog


async def test_a_full_collection_runs_when_ingest_is_idle(memory_bot, full_collections, ingest_backlog):
    ingest_backlog(0)
    await memory_bot.collect_garbage()
    assert full_collections() == 1


async def test_no_full_collection_while_messages_wait_for_ingest(memory_bot, full_collections, ingest_backlog):
    ingest_backlog(500)
    await memory_bot.collect_garbage()
    assert full_collections() == 0


async def test_an_overdue_full_collection_runs_even_under_load(memory_bot, full_collections, ingest_backlog,
                                                               monkeypatch):
    ingest_backlog(500)
    monkeypatch.setattr(memory_bot, "_last_full_collection", bot.time.monotonic() - bot.GC_MAX_INTERVAL_S - 1)
    await memory_bot.collect_garbage()
    assert full_collections() == 1


# -- sharding: --shards N --shard-ids a,b ------------------------------------------------------------------------


def test_without_shard_flags_the_bot_is_one_unsharded_connection():
    made = bot.create_bot(bot.parse_args([]))
    assert (type(made), made.shard_count) == (bot.MemoryBot, None)


def test_shard_flags_build_an_auto_sharded_bot_running_those_shards():
    made = bot.create_bot(bot.parse_args(["--shards", "4", "--shard-ids", "1,3"]))
    assert isinstance(made, commands.AutoShardedBot)
    assert (made.shard_count, made.shard_ids) == (4, [1, 3])


def test_shards_without_ids_run_every_shard_in_this_process():
    made = bot.create_bot(bot.parse_args(["--shards", "2"]))
    assert (made.shard_count, made.shard_ids) == (2, None)


def test_main_starts_the_bot_with_the_shards_it_was_given(monkeypatch, tmp_path):
    monkeypatch.setenv("DISCORD_TOKEN", "token")
    monkeypatch.setattr(bot, "ENV_FILE", tmp_path / ".env")
    monkeypatch.setattr(bot, "tune_interpreter", lambda: None)
    monkeypatch.setattr(discord.utils, "setup_logging", lambda: None)
    started = []

    async def fake_run_bot(token, made):
        started.append((token, made.shard_count, made.shard_ids))

    monkeypatch.setattr(bot, "run_bot", fake_run_bot)
    assert bot.main(["--shards", "3", "--shard-ids", "2"]) == 0
    assert started == [("token", 3, [2])]


@pytest.mark.parametrize(("argv", "message"), [
    (["--shard-ids", "0"], "--shard-ids needs --shards N (the total across all processes)"),
    (["--shards", "2", "--shard-ids", "1,2"], "--shard-ids must be between 0 and 1 for --shards 2; you gave 2"),
    (["--shards", "0"], "argument --shards: must be at least 1; you gave 0"),
    (["--shards", "2", "--shard-ids", "0,x"], "argument --shard-ids: must be shard numbers separated by commas; "
                                              "you gave '0,x'"),
    (["--shards", "2", "--shard-ids", "1,1"], "argument --shard-ids: names a shard twice: '1,1'"),
])
def test_bad_shard_flags_are_refused_with_a_reason(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bot.parse_args(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(f"error: {message}\n")
