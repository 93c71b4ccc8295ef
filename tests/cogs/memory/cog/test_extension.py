"""``cogs.memory.cog`` is the extension: unloading and loading it through the bot leaves the core and its memory be."""

import sys

from cogs.memory.records import SearchFilters
from tests.fixtures.discord import TINY_PROFILE_TOML, say

EXTENSION = "cogs.memory.cog"


def core_modules() -> dict[str, object]:
    return {name: module for name, module in sys.modules.items()
            if name.startswith("cogs.memory") and not name.startswith(EXTENSION)}


async def test_unloading_removes_the_commands_and_listeners(memory_bot):
    await memory_bot.unload_extension(EXTENSION)
    assert (memory_bot.get_cog("MemoryCommands"), memory_bot.get_cog("MemoryListeners"),
            memory_bot.tree.get_command("memory")) == (None, None, None)


async def test_unloading_leaves_the_core_modules_loaded(memory_bot):
    before = core_modules()
    await memory_bot.unload_extension(EXTENSION)
    assert core_modules() == before


async def test_unloading_leaves_the_bots_memory_open(memory_bot, guild, channel, member):
    memory = memory_bot.memory
    await memory_bot.unload_extension(EXTENSION)
    await say("the picnic moved to Saturday", member, channel)  # no listener left: not captured
    await memory_bot.memory.flush(vectors=True)
    hits = await memory.search("picnic", SearchFilters(guild_id=guild.id), 5)
    assert (memory_bot.memory, hits) == (memory, [])


async def test_a_reloaded_extension_captures_again(memory_bot, guild, channel, member):
    await memory_bot.unload_extension(EXTENSION)
    await memory_bot.load_extension(EXTENSION)
    await say("the picnic moved to Saturday", member, channel)
    await memory_bot.memory.flush(vectors=True)
    hits = await memory_bot.memory.search("picnic", SearchFilters(guild_id=guild.id), 5)
    assert [hit.content for hit in hits] == ["the picnic moved to Saturday"]


async def test_a_reloaded_extension_still_catches_the_cores_errors(memory_bot, slash, channel, member,
                                                                   tiny_profiles_dir):
    # A second copy of the core would raise a ProfileError the reloaded cog does not catch ("Something went wrong").
    await memory_bot.reload_extension(EXTENSION)
    unloadable = TINY_PROFILE_TOML.format(name="broken", model="/nonexistent", batch_size=2, embedding_batch_size=16)
    (tiny_profiles_dir / "broken.toml").write_text(unloadable, encoding="utf-8")
    memory_bot.profiles_dir, memory_bot.bot_admin_ids = tiny_profiles_dir, frozenset({member.id})
    http = await slash.run("memory profile set", member, channel, name="broken")
    assert http.last.content.startswith("Could not switch to `broken`; still using the old profile.")


async def test_opting_out_works_without_the_listeners(memory_bot, slash, guild, channel, member):
    await memory_bot.remove_cog("MemoryListeners")
    http = await slash.run("memory optout", member, channel)
    assert (http.last.content, await memory_bot.memory.is_opted_out(guild.id, member.id)) == (
        "I will no longer remember your messages here, and I forgot the 0 I had. Use /memory optin to undo.", True)


async def test_settings_work_without_the_listeners(memory_bot, slash, guild, channel, member, admin):
    await memory_bot.remove_cog("MemoryListeners")
    await slash.run("memory settings", admin, channel, retention_days=30)
    assert (await memory_bot.memory.settings(guild.id)).retention_days == 30
