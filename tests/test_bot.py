"""The bot: the intents it asks for, who its admins are, when it collects garbage, and what ``python bot.py`` says."""

import gc
import os
import subprocess
import sys
import weakref
from pathlib import Path

import discord
import pytest

import bot


def test_python_bot_py_points_to_the_launcher_and_starts_nothing():
    """Older docs said ``python bot.py``: it now names the launcher in one line (no token is read: the launcher
    would have printed its setup steps here)."""
    env = {key: value for key, value in os.environ.items() if key != "DISCORD_TOKEN"}
    done = subprocess.run([sys.executable, "bot.py"], cwd=Path(bot.__file__).parent, env=env,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "bot.py holds the bot classes only; start the bot with: python launcher.py\n")


def test_the_bot_asks_for_message_content_and_members():
    intents = bot.bot_intents()
    assert (intents.message_content, intents.members) == (True, True)


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
