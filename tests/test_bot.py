"""``python bot.py``: what a newcomer sees without a token, and the admin list it reads."""

import discord
import pytest

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



def test_after_the_startup_freeze_full_collections_never_start_on_their_own(monkeypatch):
    calls = []
    monkeypatch.setattr(bot.gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(bot.gc, "set_threshold", lambda *thresholds: calls.append(thresholds))
    bot.freeze_startup_objects()
    assert calls == ["freeze", bot.GC_THRESHOLDS]
    assert bot.GC_THRESHOLDS[2] >= 100_000  # gen1 collections before a full one: never, in practice


@pytest.fixture
def collections(monkeypatch) -> list[int]:
    made: list[int] = []
    monkeypatch.setattr(bot.gc, "collect", lambda generation=2: made.append(generation) or 0)
    return made


@pytest.fixture
def ingest_backlog(memory_bot, monkeypatch):
    def set_backlog(count: int) -> None:
        monkeypatch.setattr(type(memory_bot.memory.ingest), "queued", property(lambda self: count))
    return set_backlog


async def test_a_full_collection_runs_when_ingest_is_idle(memory_bot, collections, ingest_backlog):
    ingest_backlog(0)
    await memory_bot.collect_garbage()
    assert collections == [2]


async def test_no_full_collection_while_messages_wait_for_ingest(memory_bot, collections, ingest_backlog):
    ingest_backlog(500)
    await memory_bot.collect_garbage()
    assert collections == []


async def test_an_overdue_full_collection_runs_even_under_load(memory_bot, collections, ingest_backlog, monkeypatch):
    ingest_backlog(500)
    monkeypatch.setattr(memory_bot, "_last_full_collection", bot.time.monotonic() - bot.GC_MAX_INTERVAL_S - 1)
    await memory_bot.collect_garbage()
    assert collections == [2]
