"""Recall asked inside a thread: the parent channel and the thread are remembered, private places stay private."""

import pytest

from cogs.memory.cog.listeners import RECENT_TURNS
from cogs.memory.cog.recall import NO_MEMORIES_REPLY, ONLY_SHARED_CHANNELS_NOTE
from tests.fixtures.discord import bot_replies, hidden_channel, make_thread, memory_line, remember, say

PICNIC = "the picnic moved to Saturday"
SECRET = "the staff bonus budget is 4000 euros"


@pytest.fixture
def thread(guild, channel, speaker):
    """A public thread in ``channel``, where the asker asks."""
    return make_thread(guild, channel, owner=speaker)


async def scroll_away(bot, member, thread):
    """Enough later turns that what was said earlier is no longer on the asker's screen."""
    for number in range(RECENT_TURNS):
        await remember(bot, f"ok {number}", member, thread)


async def ask(bot, question, asker, thread):
    await say(f"{bot.user.mention} {question}", asker, thread)
    (reply,) = bot_replies()
    assert reply.channel == thread  # answered where it was asked, not in the parent channel
    return reply.content


async def test_a_question_in_a_thread_recalls_its_parent_channel(memory_bot, channel, thread, asker, speaker):
    memory = await remember(memory_bot, PICNIC, speaker, channel)
    header, line = (await ask(memory_bot, "when is the picnic?", asker, thread)).split("\n")
    assert header == "Here is what I remember:" and memory_line(memory).fullmatch(line)


async def test_a_question_in_a_thread_recalls_the_thread_from_before_the_screen(memory_bot, thread, asker, speaker):
    memory = await remember(memory_bot, PICNIC, speaker, thread)
    await scroll_away(memory_bot, speaker, thread)
    header, line = (await ask(memory_bot, "when is the picnic?", asker, thread)).split("\n")
    assert header == "Here is what I remember:" and memory_line(memory).fullmatch(line)


async def test_what_is_on_the_threads_screen_is_not_recalled(memory_bot, thread, asker, speaker):
    await remember(memory_bot, PICNIC, speaker, thread)
    assert await ask(memory_bot, "when is the picnic?", asker, thread) == NO_MEMORIES_REPLY


async def test_a_private_thread_the_asker_is_not_in_is_never_recalled(memory_bot, guild, channel, thread, asker,
                                                                      speaker):
    private = make_thread(guild, channel, private=True, members=[speaker], owner=speaker)
    await remember(memory_bot, SECRET, speaker, private)
    assert await ask(memory_bot, "what is the staff bonus budget?", asker, thread) == NO_MEMORIES_REPLY


async def test_a_private_thread_the_asker_is_in_is_not_quoted_in_a_public_thread(memory_bot, guild, channel, thread,
                                                                               asker, speaker):
    """The public thread's readers are not all in the private one; the asker is pointed to /memory search."""
    private = make_thread(guild, channel, private=True, members=[speaker, asker], owner=speaker)
    await remember(memory_bot, SECRET, speaker, private)
    assert await ask(memory_bot, "what is the staff bonus budget?", asker, thread) == (
        f"{NO_MEMORIES_REPLY}\n{ONLY_SHARED_CHANNELS_NOTE}")


async def test_a_private_thread_is_recalled_inside_itself(memory_bot, guild, channel, asker, speaker):
    private = make_thread(guild, channel, private=True, members=[speaker, asker], owner=speaker)
    memory = await remember(memory_bot, SECRET, speaker, private)
    await scroll_away(memory_bot, speaker, private)
    header, line = (await ask(memory_bot, "what is the staff bonus budget?", asker, private)).split("\n")
    assert header == "Here is what I remember:" and memory_line(memory).fullmatch(line)


async def test_a_thread_of_a_channel_the_asker_cannot_read_is_never_recalled(memory_bot, guild, thread, asker,
                                                                             speaker):
    staff_thread = make_thread(guild, hidden_channel(guild), owner=speaker)
    await remember(memory_bot, SECRET, speaker, staff_thread)
    assert await ask(memory_bot, "what is the staff bonus budget?", asker, thread) == NO_MEMORIES_REPLY


async def test_a_channel_the_asker_cannot_read_is_never_recalled_in_a_thread(memory_bot, guild, thread, asker,
                                                                             speaker):
    await remember(memory_bot, SECRET, speaker, hidden_channel(guild))
    assert await ask(memory_bot, "what is the staff bonus budget?", asker, thread) == NO_MEMORIES_REPLY
