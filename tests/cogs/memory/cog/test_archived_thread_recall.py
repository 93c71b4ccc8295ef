"""Archived threads: Discord drops them from the cache, yet a public one stays readable through its parent channel.

A private one is never recalled once it leaves the cache, not even for its members.
"""


from cogs.memory.cog import replies
from cogs.memory.cog.recall import NO_MEMORIES_REPLY
from tests.fixtures.discord import (
    archive,
    bot_replies,
    hidden_channel,
    make_forum_channel,
    make_thread,
    memory_line,
    remember,
    say,
)

PICNIC = "the picnic moved to Saturday"
SECRET = "the staff bonus budget is 4000 euros"


async def ask(bot, question, asker, channel):
    await say(f"{bot.user.mention} {question}", asker, channel)
    (reply,) = bot_replies()
    return reply.content


async def test_an_archived_public_thread_is_recalled_for_a_reader_of_its_parent(memory_bot, guild, channel, asker,
                                                                                speaker):
    thread = make_thread(guild, channel, owner=speaker)
    memory = await remember(memory_bot, PICNIC, speaker, thread)
    await archive(thread)
    header, line = (await ask(memory_bot, "when is the picnic?", asker, channel)).split("\n")
    assert header == "Here is what I remember:" and memory_line(memory).fullmatch(line)


async def test_an_archived_forum_post_is_recalled_for_a_reader_of_the_forum(memory_bot, guild, channel, asker,
                                                                            speaker):
    post = make_thread(guild, make_forum_channel(guild), owner=speaker)
    memory = await remember(memory_bot, PICNIC, speaker, post)
    await archive(post)
    header, line = (await ask(memory_bot, "when is the picnic?", asker, channel)).split("\n")
    assert header == "Here is what I remember:" and memory_line(memory).fullmatch(line)


async def test_an_archived_thread_of_a_channel_the_asker_cannot_read_is_never_recalled(memory_bot, guild, channel,
                                                                                       asker, speaker):
    staff_thread = make_thread(guild, hidden_channel(guild), owner=speaker)
    await remember(memory_bot, SECRET, speaker, staff_thread)
    await archive(staff_thread)
    assert await ask(memory_bot, "what is the staff bonus budget?", asker, channel) == NO_MEMORIES_REPLY


async def test_an_archived_private_thread_is_never_recalled_even_for_its_members(memory_bot, guild, channel, asker,
                                                                                 speaker):
    private = make_thread(guild, channel, private=True, members=[speaker, asker], owner=speaker)
    await remember(memory_bot, SECRET, speaker, private)
    await archive(private)
    assert await ask(memory_bot, "what is the staff bonus budget?", asker, channel) == NO_MEMORIES_REPLY


async def test_search_finds_an_archived_public_thread(memory_bot, slash, guild, channel, asker, speaker):
    thread = make_thread(guild, channel, owner=speaker)
    message = await remember(memory_bot, PICNIC, speaker, thread)
    await archive(thread)
    http = await slash.run("memory search", asker, channel, query="when is the picnic")
    (line,) = http.last.embeds[0].description.split("\n")
    assert line.startswith(f"1. **{speaker.display_name}**") and line.endswith(message.jump_url)


async def test_search_never_shows_an_archived_private_thread(memory_bot, slash, guild, channel, asker, speaker):
    private = make_thread(guild, channel, private=True, members=[speaker, asker], owner=speaker)
    await remember(memory_bot, SECRET, speaker, private)
    await archive(private)
    http = await slash.run("memory search", asker, channel, query="staff bonus budget")
    assert http.last.content == replies.NO_RESULTS
