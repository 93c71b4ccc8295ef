"""When a command says it forgot, the words are already gone from every file under the data directory; when the
erasure ledger cannot record a forget, the command says it was not done, and a delete on Discord is done anyway."""

import logging
from pathlib import Path

import discord
import discord.ext.test as dpytest
from discord.ext.test import backend

from cogs.memory.cog import replies
from cogs.memory.privacy.ledger import LEDGER_NAME
from tests.fixtures.discord import say
from tests.fixtures.ledger import fill_the_disk, make_read_only

# Lowercase letters and a first letter no other word here starts with, so the FTS5 index holds it whole.
NONCE = "zqjwxkvbtm"


def files_holding(data_dir: Path, needle: str) -> list[str]:
    return sorted(str(path.relative_to(data_dir)) for path in data_dir.rglob("*")
                  if path.is_file() and needle.encode() in path.read_bytes())


async def remember_secret(bot, member, channel) -> discord.Message:
    """The secret among a few other messages, stored and saved (so the index file holds its vector too)."""
    await say("the picnic moved to Saturday", member, channel)
    message = await say(f"the door code is {NONCE}", member, channel)
    await say("bring sandwiches", member, channel)
    await bot.memory.flush(vectors=True)
    await bot.memory.save()
    return message


async def test_forgetting_a_message_erases_it_from_the_files_before_saying_so(
    memory_bot, slash, guild, channel, member
):
    message = await remember_secret(memory_bot, member, channel)
    data_dir = memory_bot.db_path.parent
    before = files_holding(data_dir, NONCE)
    http, task = slash.start("memory forget", member, channel, what="a message", message_link=message.jump_url)
    prompt = await http.wait_for(lambda sent: sent.kind == "response")
    await slash.press(http, prompt, "Forget", member, channel)
    await task
    assert (before != [], http.last.content, files_holding(data_dir, NONCE)) == (
        True, "Done: forgot 1 messages (that message).", [])


async def test_opting_out_erases_my_messages_from_the_files_before_saying_so(
    memory_bot, slash, guild, channel, member
):
    await remember_secret(memory_bot, member, channel)
    data_dir = memory_bot.db_path.parent
    before = files_holding(data_dir, NONCE)
    http = await slash.run("memory optout", member, channel)
    assert (before != [], http.last.content, files_holding(data_dir, NONCE)) == (
        True, "I will no longer remember your messages here, and I forgot the 3 I had. Use /memory optin to undo.", [])


# -- an erasure ledger that cannot be written (privacy/ledger.py): a forget is not done, a delete is --------------


def ledger_of(bot) -> Path:
    return bot.db_path.parent / LEDGER_NAME


async def test_a_forget_the_ledger_cannot_record_says_it_was_not_done_and_why(
    memory_bot, slash, guild, channel, member, monkeypatch
):
    message = await remember_secret(memory_bot, member, channel)
    ledger_of(memory_bot).touch()
    make_read_only(ledger_of(memory_bot), monkeypatch)
    http, task = slash.start("memory forget", member, channel, what="a message", message_link=message.jump_url)
    prompt = await http.wait_for(lambda sent: sent.kind == "response")
    await slash.press(http, prompt, "Forget", member, channel)
    await task
    # The ephemeral prompt says it in place of its buttons.
    assert (prompt.ephemeral, http.last.kind, http.last.content, http.last.components) == (
        True, "edit", replies.NOT_RECORDED.format(reason="permission denied"), [])
    assert await memory_bot.memory.has_message(message.id)


async def test_an_opt_out_the_ledger_cannot_record_says_it_was_not_done(memory_bot, slash, channel, member,
                                                                        monkeypatch):
    await remember_secret(memory_bot, member, channel)
    fill_the_disk(monkeypatch)
    http = await slash.run("memory optout", member, channel)
    assert [(sent.kind, sent.content, sent.ephemeral) for sent in http.sent[1:]] == [
        ("followup", replies.NOT_RECORDED.format(reason="the disk is full"), True)]
    assert not await memory_bot.memory.is_opted_out(channel.guild.id, member.id)


async def test_a_message_deleted_on_discord_is_forgotten_on_a_full_disk_with_a_warning(
    memory_bot, guild, channel, member, monkeypatch, caplog
):
    message = await remember_secret(memory_bot, member, channel)
    fill_the_disk(monkeypatch)
    with caplog.at_level(logging.WARNING):
        backend.delete_message(message)
        await dpytest.run_all_events()
    assert not await memory_bot.memory.has_message(message.id)
    assert [r.getMessage().split(":")[0] for r in caplog.records if r.levelno == logging.WARNING] == [
        f"Could not record a delete on Discord in the erasure ledger {ledger_of(memory_bot)} (the disk is full)"]
