"""/memory mine through the real command tree on both stores: what memory holds of the member who asks, shown to
them alone, only channels they can read now by name, their latest messages with forget buttons that take
/memory forget's checks, a search of their own messages, and where their messages were shown to others."""

from __future__ import annotations

import discord
import discord.ext.test as dpytest
import pytest

from cogs.memory.cog import replies
from tests.fixtures.discord import bot_replies, hidden_channel, say


@pytest.fixture
async def any_bot(discord_bot, tiny_reranker_profile, store_url):
    """``memory_bot`` on SQLite or on PostgreSQL (``store_url``: one run per store kind)."""
    from cogs.memory.memory import Memory

    memory = await Memory.open(tiny_reranker_profile, discord_bot.db_path, discord_bot.index_dir, store_url)
    await memory.reranker.aload()
    await discord_bot.attach_memory(memory)
    return discord_bot


@pytest.fixture
def guild(any_bot):
    return dpytest.get_config().guilds[0]


def buttons(sent):
    return {c["label"]: c.get("disabled", False) for row in sent.components for c in row["components"]}


async def test_mine_shows_privately_how_many_of_my_messages_are_held_per_channel(any_bot, slash, channel, member):
    await say("the picnic moved to Saturday", member, channel)
    await say("bring lemonade", member, channel)
    await any_bot.memory.flush()
    http = await slash.run("memory mine", member, channel)
    first = http.last.embeds[0]
    assert (http.sent[0].kind, http.sent[0].ephemeral, http.last.ephemeral) == ("defer", True, True)
    assert first.title == f"What I remember of you in {channel.guild.name}"
    assert first.description.startswith("**2 messages** since ") and f"{channel.mention}: 2 since " in first.description
    assert {f.name: f.value for f in first.fields}["Opt-out"] == replies.MINE_OPTED_IN


async def test_a_channel_i_can_no_longer_read_is_counted_not_named(any_bot, slash, guild, channel, member):
    staff = hidden_channel(guild)
    await say("said where I no longer read", member, staff)
    await say("said in general", member, channel)
    await any_bot.memory.flush()
    http = await slash.run("memory mine", member, channel)
    description = http.last.embeds[0].description
    assert (staff.mention in description, "**1 messages**" in description,
            replies.MINE_HIDDEN.format(messages=1, channels=1) in description) == (False, True, True)


async def test_my_latest_messages_are_paged_with_jump_links(any_bot, slash, channel, member, other):
    mine = await say("my picnic plan", member, channel)
    await say("their picnic plan", other, channel)
    await any_bot.memory.flush()
    http = await slash.run("memory mine", member, channel)
    await slash.press(http, http.last, "Next", member, channel)
    page = await http.wait_for(lambda sent: sent.kind == "update")
    (line,) = page.embeds[0].description.split("\n")
    assert line.startswith("1. ") and line.endswith(f"my picnic plan {mine.jump_url}")
    assert (buttons(page)["Forget 1"], buttons(page)["Forget 2"]) == (False, True)


async def test_a_forget_button_forgets_that_message_after_asking(any_bot, slash, guild, channel, member):
    await say("my picnic plan", member, channel)
    await say("my older idea", member, channel)
    await any_bot.memory.flush()
    http = await slash.run("memory mine", member, channel)
    shown = http.last
    await slash.press(http, shown, "Next", member, channel)
    await slash.press(http, shown, "Forget 1", member, channel)  # the same message, on page 2: "my older idea"
    prompt = await http.wait_for(lambda sent: sent.kind == "response" and sent.content.startswith("This will"))
    await slash.press(http, prompt, "Forget", member, channel)
    done = await http.wait_for(lambda sent: sent.kind == "edit" and sent.content.startswith("Done"))
    held = [m.content async for m in any_bot.memory.store.iter_member_messages(guild.id, member.id)]
    assert (prompt.ephemeral, done.content, held) == (True, "Done: forgot 1 messages (that message).",
                                                      ["my picnic plan"])


async def test_someone_else_cannot_press_my_forget_buttons(any_bot, slash, channel, member, other):
    await say("my picnic plan", member, channel)
    await any_bot.memory.flush()
    http = await slash.run("memory mine", member, channel)
    shown = http.last
    await slash.press(http, shown, "Next", member, channel)
    await slash.press(http, shown, "Forget 1", other, channel)
    refusal = await http.wait_for(lambda sent: sent.kind == "response")
    assert (refusal.content, refusal.ephemeral) == ("These buttons belong to the member who ran the command.", True)


async def test_the_search_finds_only_my_own_messages(any_bot, slash, channel, member, other):
    await say("my picnic moved to Saturday", member, channel)
    await say("their picnic moved to Sunday", other, channel)
    await any_bot.memory.flush(vectors=True)
    http = await slash.run("memory mine", member, channel, search="picnic moved")
    lines = http.last.embeds[0].description.split("\n")
    assert len(lines) == 1 and "my picnic moved to Saturday" in lines[0]


async def test_where_my_message_was_shown_to_someone_else_never_says_who(any_bot, slash, channel, member, other):
    await say("the picnic moved to Saturday", member, channel)
    await any_bot.memory.flush(vectors=True)
    await slash.run("memory search", other, channel, query="when is the picnic")
    await slash.run("memory search", member, channel, query="when is the picnic")  # mine, to me: not a quotation
    await any_bot.memory.quotations.flush()
    http = await slash.run("memory mine", member, channel)
    quoted = {f.name: f.value for f in http.last.embeds[0].fields}["Where your messages were shown to others"]
    (line,) = quoted.split("\n")
    assert line.endswith(f"your message in {channel.mention}, in someone's private search")
    assert other.display_name not in quoted and other.mention not in quoted


async def test_a_public_answer_notes_where_the_answer_is(any_bot, slash, guild, channel, member, other):
    await say("the picnic moved to Saturday", member, guild.text_channels[1])  # not a turn just above the question
    await any_bot.memory.flush(vectors=True)
    await say(f"{any_bot.user.mention} when is the picnic?", other, channel)
    (reply,) = bot_replies()
    assert "the picnic moved to Saturday" in reply.content
    await any_bot.memory.quotations.flush()
    (quote,) = await any_bot.memory.store.member_quotations(guild.id, member.id)
    assert (quote.kind, quote.answer_channel_id, quote.answer_message_id) == ("answer", channel.id, reply.id)
    http = await slash.run("memory mine", member, channel)
    quoted = {f.name: f.value for f in http.last.embeds[0].fields}["Where your messages were shown to others"]
    assert quoted.endswith(f"in a public answer {reply.jump_url}")


async def test_the_log_is_off_with_one_setting(any_bot, slash, guild, channel, member, other):
    settings = await any_bot.memory.settings(guild.id)
    await any_bot.memory.save_settings(guild.id, settings.with_changes(quotation_log=False))
    await say("the picnic moved to Saturday", member, channel)
    await any_bot.memory.flush(vectors=True)
    await slash.run("memory search", other, channel, query="when is the picnic")
    await any_bot.memory.quotations.flush()
    assert await any_bot.memory.store.member_quotations(guild.id, member.id) == []


async def test_an_opted_out_member_sees_since_when(any_bot, slash, channel, member):
    await slash.run("memory optout", member, channel)
    http = await slash.run("memory mine", member, channel)
    opted = {f.name: f.value for f in http.last.embeds[0].fields}["Opt-out"]
    assert opted.startswith("You opted out here <t:") and opted.endswith(":R>: I don't remember what you say. "
                                                                          "Use /memory optin to undo.")


async def test_a_member_memory_holds_nothing_of_is_told_so(any_bot, slash, channel, member):
    http = await slash.run("memory mine", member, channel)
    assert http.last.embeds[0].description == replies.MINE_NOTHING


async def test_another_guild_is_never_counted(any_bot, slash, channel, member):
    other_guild = dpytest.get_config().guilds[1]
    stranger = next(m for m in other_guild.members if not m.bot)
    await say("elsewhere", stranger, other_guild.text_channels[0])
    await any_bot.memory.flush()
    assert isinstance(member, discord.Member)
    http = await slash.run("memory mine", member, channel)
    assert http.last.embeds[0].description == replies.MINE_NOTHING
