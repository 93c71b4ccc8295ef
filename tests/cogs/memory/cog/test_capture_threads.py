"""Capture records which kind of thread a message came from: only public kinds are readable through the parent."""

import pytest

from tests.fixtures.core import fetchall
from tests.fixtures.discord import make_forum_channel, make_thread, remember


async def stored_private_thread(bot, message) -> int:
    rows = await fetchall(bot.memory.store, "SELECT private_thread FROM messages WHERE message_id = ?", (message.id,))
    return rows[0][0]


async def test_a_private_thread_message_is_stored_as_private(memory_bot, guild, channel, member):
    thread = make_thread(guild, channel, private=True, members=[member], owner=member)
    message = await remember(memory_bot, "the staff bonus budget", member, thread)
    assert await stored_private_thread(memory_bot, message) == 1


@pytest.mark.parametrize("kind", ["public", "news", "forum post"])
async def test_a_public_kind_of_thread_is_stored_as_public(memory_bot, guild, channel, member, kind):
    parent = make_forum_channel(guild) if kind == "forum post" else channel
    thread = make_thread(guild, parent, news=kind == "news", owner=member)
    message = await remember(memory_bot, "the picnic moved to Saturday", member, thread)
    assert await stored_private_thread(memory_bot, message) == 0


async def test_a_channel_message_is_not_a_private_thread(memory_bot, channel, member):
    message = await remember(memory_bot, "the picnic moved to Saturday", member, channel)
    assert await stored_private_thread(memory_bot, message) == 0
