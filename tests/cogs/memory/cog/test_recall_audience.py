"""A public answer quotes only what everyone in its channel may read; the asker is told how to search the rest privately.

Through the gateway: a staff member mentions the bot in #general, read by everyone, and in #staff, read by staff.
"""

import discord
import pytest
from aiohttp import web
from discord.ext.test import backend

from cogs.memory.cog.listeners import RECENT_TURNS
from cogs.memory.cog.recall import NO_MEMORIES_REPLY, ONLY_SHARED_CHANNELS_NOTE
from tests.fixtures.discord import (
    archive,
    bot_replies,
    chat_completions_server,
    give_role,
    make_thread,
    memory_line,
    remember,
    say,
)

BUDGET = "the party budget is 50 euros"
SECRET = "the staff bonus budget is 4000 euros"
QUESTION = "what is the budget?"


@pytest.fixture
def staff(guild, staff_role):
    """#staff: hidden from @everyone, shown to the staff role (the bot has it too, to read and answer there)."""
    give_role(guild.me, staff_role)
    view = str(discord.Permissions(view_channel=True).value)
    return backend.make_text_channel("staff", guild, permission_overwrites=[
        {"id": str(guild.default_role.id), "type": 0, "allow": "0", "deny": view},
        {"id": str(staff_role.id), "type": 0, "allow": view, "deny": "0"},
    ])


@pytest.fixture
def staff_asker(asker, staff_role):
    return give_role(asker, staff_role)


@pytest.fixture
async def memories(memory_bot, guild, staff, speaker):
    """The party budget said in #general's neighbour (everyone reads it), the staff bonus said in #staff."""
    budget = await remember(memory_bot, BUDGET, speaker, guild.text_channels[1])
    secret = await remember(memory_bot, SECRET, speaker, staff)
    for number in range(RECENT_TURNS):  # off the screen of #staff, so asking there may recall it
        await remember(memory_bot, f"ok {number}", speaker, staff)
    return budget, secret


async def ask(bot, question, member, channel):
    await say(f"{bot.user.mention} {question}", member, channel)
    (reply,) = bot_replies()
    return reply.content


async def test_in_general_a_staff_member_gets_only_what_everyone_there_reads(memory_bot, general, staff_asker,
                                                                             memories):
    budget, _ = memories
    header, line, note = (await ask(memory_bot, QUESTION, staff_asker, general)).split("\n")
    assert (header, bool(memory_line(budget).fullmatch(line)), note) == (
        "Here is what I remember:", True, ONLY_SHARED_CHANNELS_NOTE)


async def test_in_general_the_staff_message_is_never_quoted(memory_bot, general, staff_asker, memories):
    assert SECRET not in await ask(memory_bot, "what is the staff bonus budget?", staff_asker, general)


async def test_in_staff_the_same_member_gets_general_and_staff(memory_bot, staff, staff_asker, memories):
    reply = await ask(memory_bot, QUESTION, staff_asker, staff)
    header, *lines = reply.split("\n")
    matched = {m.content for m in memories for line in lines if memory_line(m).fullmatch(line)}
    assert (header, matched, ONLY_SHARED_CHANNELS_NOTE in reply) == (
        "Here is what I remember:", {BUDGET, SECRET}, False)


async def test_the_note_is_there_even_when_nothing_matches(memory_bot, general, staff, staff_asker):
    assert await ask(memory_bot, QUESTION, staff_asker, general) == f"{NO_MEMORIES_REPLY}\n{ONLY_SHARED_CHANNELS_NOTE}"


async def test_no_note_when_the_asker_reads_nothing_more_than_the_channel(memory_bot, general, asker, memories):
    budget, _ = memories
    header, line = (await ask(memory_bot, QUESTION, asker, general)).split("\n")
    assert (header, bool(memory_line(budget).fullmatch(line))) == ("Here is what I remember:", True)


async def test_public_results_are_not_crowded_out_by_hidden_ones(memory_bot, guild, general, staff, staff_asker,
                                                                 speaker):
    """More #staff messages match than the search keeps: the search itself must skip them, not a filter after it."""
    budget = await remember(memory_bot, BUDGET, speaker, guild.text_channels[1])
    for number in range(25):
        await say(f"what is the budget? the budget of team {number} is 4000 euros", speaker, staff)
    await memory_bot.memory.flush(vectors=True)
    bot_replies()
    _, line, _ = (await ask(memory_bot, QUESTION, staff_asker, general)).split("\n")
    assert memory_line(budget).fullmatch(line)


async def test_an_archived_thread_of_staff_is_never_quoted_in_general(memory_bot, guild, general, staff, staff_asker,
                                                                      speaker):
    thread = make_thread(guild, staff, owner=speaker)
    await remember(memory_bot, SECRET, speaker, thread)
    await archive(thread)
    assert await ask(memory_bot, QUESTION, staff_asker, general) == f"{NO_MEMORIES_REPLY}\n{ONLY_SHARED_CHANNELS_NOTE}"


async def test_in_a_thread_of_general_the_staff_message_is_never_quoted(memory_bot, guild, general, staff_asker,
                                                                        speaker, memories):
    thread = make_thread(guild, general, owner=speaker)
    assert SECRET not in await ask(memory_bot, "what is the staff bonus budget?", staff_asker, thread)


# -- answering through an LLM -------------------------------------------------------------------------------------


@pytest.fixture
async def llm_requests(memory_bot):
    """Every request the bot sends to a local chat-completions server, which always answers "50 euros."."""
    requests = []

    async def completions(request: web.Request) -> web.Response:
        requests.append(await request.json())
        return web.json_response({"choices": [{"message": {"role": "assistant", "content": "50 euros."}}]})

    async with chat_completions_server(completions) as url:
        from cogs.memory.llm import ChatClient, LLMConfig

        cog = memory_bot.get_cog("MemoryListeners")
        cog.llm = ChatClient(LLMConfig(base_url=url, model="llama3"))
        yield requests
        await cog.llm.close()


async def test_the_prompt_of_a_public_answer_holds_no_staff_text(memory_bot, general, staff_asker, memories,
                                                                 llm_requests):
    await ask(memory_bot, "what is the staff bonus budget?", staff_asker, general)
    (request,) = llm_requests
    prompt = "\n".join(message["content"] for message in request["messages"])
    assert (BUDGET in prompt, "4000" in prompt) == (True, False)


async def test_an_llm_answer_in_public_ends_with_the_note(memory_bot, general, staff_asker, memories, llm_requests):
    assert await ask(memory_bot, QUESTION, staff_asker, general) == f"50 euros.\n{ONLY_SHARED_CHANNELS_NOTE}"
