"""When a command says it forgot, the words are already gone from every file under the data directory."""

from pathlib import Path

import discord

from tests.fixtures.discord import say

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
