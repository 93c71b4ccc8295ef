"""/memory slash commands through the real command tree, asserting what the member sees."""

import re
import time

import discord
import discord.ext.test as dpytest
import pytest

from cogs.memory.cog import replies
from cogs.memory.records import SearchFilters
from tests.fixtures.discord import hidden_channel, make_forum_channel, say
from tests.fixtures.history import said_while_away
from tests.fixtures.waiting import eventually

SECRET = "the staff bonus budget is 4000 euros"


async def stored(bot, guild, query="picnic"):
    await bot.memory.flush(vectors=True)
    return sorted(hit.content for hit in await bot.memory.search(query, SearchFilters(guild_id=guild.id), 20))


async def confirm(slash, name, member, channel, /, button="Forget", **options):
    http, task = slash.start(name, member, channel, **options)
    prompt = await http.wait_for(lambda sent: sent.kind == "response")
    await slash.press(http, prompt, button, member, channel)
    await task
    return prompt, http


# -- search -------------------------------------------------------------------------------------------------------


async def test_search_shows_a_private_page_of_results_with_scores_and_links(memory_bot, slash, channel, member, other):
    message = await say("the picnic moved to Saturday", other, channel)
    await memory_bot.memory.flush(vectors=True)
    http = await slash.run("memory search", member, channel, query="when is the picnic")
    result = http.last
    (line,) = result.embeds[0].description.split("\n")
    when = discord.utils.format_dt(message.created_at, "R")
    assert (result.kind, result.ephemeral, result.embeds[0].title, result.embeds[0].footer.text) == (
        "followup", True, "Memory search: when is the picnic", "Page 1/1 · 1 results")
    assert re.fullmatch(rf"1\. \*\*{re.escape(other.display_name)}\*\* {re.escape(when)}: the picnic moved to "
                        rf"Saturday \(rerank_score \d\.\d\d\) {re.escape(message.jump_url)}", line)


async def test_search_defers_before_searching(memory_bot, slash, channel, member):
    http = await slash.run("memory search", member, channel, query="picnic")
    assert (http.sent[0].kind, http.sent[0].ephemeral) == ("defer", True)


async def test_search_never_shows_a_channel_the_member_cannot_read(memory_bot, slash, guild, channel, member, other):
    await say(SECRET, other, hidden_channel(guild))
    await memory_bot.memory.flush(vectors=True)
    http = await slash.run("memory search", member, channel, query="staff bonus budget")
    assert http.last.content == replies.NO_RESULTS


async def test_search_never_shows_another_guild(memory_bot, slash, channel, member):
    other_guild = dpytest.get_config().guilds[1]
    stranger = next(m for m in other_guild.members if not m.bot)
    await say(SECRET, stranger, other_guild.text_channels[0])
    await memory_bot.memory.flush(vectors=True)
    http = await slash.run("memory search", member, channel, query="staff bonus budget")
    assert http.last.content == replies.NO_RESULTS


async def test_searching_a_channel_you_cannot_read_says_so(memory_bot, slash, guild, channel, member):
    staff = hidden_channel(guild)
    http = await slash.run("memory search", member, channel, query="budget", channel=staff)
    assert [(s.content, s.ephemeral) for s in http.sent] == [(f"You can't read {staff.mention}, so I can't search it "
                                                             "for you.", True)]


async def test_a_bad_date_says_how_to_write_one(memory_bot, slash, channel, member):
    http = await slash.run("memory search", member, channel, query="picnic", after="last tuesday")
    assert http.last.content == "`last tuesday` is not a date I understand. Use YYYY-MM-DD, for example 2024-05-31."


async def seven_results(memory_bot, slash, channel, member, other):
    """The member's search for seven remembered plans: one page of five, and a second."""
    for day in range(7):
        await say(f"picnic plan number {day}", other, channel)
    await memory_bot.memory.flush(vectors=True)
    return await slash.run("memory search", member, channel, query="picnic plan", limit=7)


async def test_many_results_are_paginated(memory_bot, slash, channel, member, other):
    http = await seven_results(memory_bot, slash, channel, member, other)
    page = http.last
    labels = [(c["label"], c.get("disabled", False)) for row in page.components for c in row["components"]]
    assert (page.embeds[0].footer.text, labels) == ("Page 1/2 · 7 results", [("Previous", True), ("Next", False)])


async def test_next_shows_the_second_page(memory_bot, slash, channel, member, other):
    http = await seven_results(memory_bot, slash, channel, member, other)
    await slash.press(http, http.last, "Next", member, channel)
    update = await http.wait_for(lambda sent: sent.kind == "update")
    assert update.embeds[0].footer.text == "Page 2/2 · 7 results"


async def test_the_pages_take_discords_copy_of_their_edited_message(memory_bot, slash, channel, member, other):
    """discord.py hands a view the components of each edit of its message (a MESSAGE_UPDATE), through the view's
    own ``_refresh``: the paginator must take them as any view does, and turn pages after."""
    http = await seven_results(memory_bot, slash, channel, member, other)
    first = http.last
    await slash.press(http, first, "Next", member, channel)
    update = await http.wait_for(lambda sent: sent.kind == "update")
    memory_bot._connection._view_store.update_from_message(first.message_id, update.components)
    await slash.press(http, first, "Previous", member, channel)  # the same message, edited: its id stays
    back = await http.wait_for(lambda sent: sent.kind == "update" and sent is not update)
    assert back.embeds[0].footer.text == "Page 1/2 · 7 results"


async def test_someone_else_cannot_turn_your_pages(memory_bot, slash, channel, member, other):
    http = await seven_results(memory_bot, slash, channel, member, other)
    await slash.press(http, http.last, "Next", other, channel)
    refusal = await http.wait_for(lambda sent: sent.kind == "response")
    assert (refusal.content, refusal.ephemeral) == ("These buttons belong to the member who ran the command.", True)


# -- stats --------------------------------------------------------------------------------------------------------


async def test_stats_counts_this_guild_only(memory_bot, slash, guild, channel, member):
    await say("the picnic moved to Saturday", member, channel)
    other_guild = dpytest.get_config().guilds[1]
    await say("elsewhere", next(m for m in other_guild.members if not m.bot), other_guild.text_channels[0])
    await memory_bot.memory.flush(vectors=True)
    http = await slash.run("memory stats", member, channel)
    fields = {field.name: field.value for field in http.last.embeds[0].fields}
    assert (http.last.embeds[0].title, fields["Messages"], fields["Profile"]) == (
        f"Memory of {guild.name}", "1", "test-tiny (embeddings: all-MiniLM-L6-v2)")


async def stats_after_a_search(memory_bot, slash, channel, member):
    """The fields of /memory stats once the member has searched what they said."""
    await say("the picnic moved to Saturday", member, channel)
    await memory_bot.memory.flush(vectors=True)
    await slash.run("memory search", member, channel, query="picnic")
    http = await slash.run("memory stats", member, channel)
    return {field.name: field.value for field in http.last.embeds[0].fields}


async def test_stats_reports_the_reranker_and_latencies(memory_bot, slash, channel, member):
    fields = await stats_after_a_search(memory_bot, slash, channel, member)
    assert fields["Reranker"].endswith("(local, loaded)") and fields["Search latency"].endswith("(1 samples)")


# -- forget -------------------------------------------------------------------------------------------------------


async def test_forgetting_my_messages_asks_first(memory_bot, slash, channel, member):
    http, task = slash.start("memory forget", member, channel, what="my messages")
    prompt = await http.wait_for(lambda sent: sent.kind == "response")
    await slash.press(http, prompt, "Cancel", member, channel)
    await task
    assert (prompt.content, prompt.ephemeral) == (
        "This will make me forget all your messages in this server. This cannot be undone. Forget it?", True)


async def test_forgetting_my_messages_removes_them_from_search(memory_bot, slash, guild, channel, member, other):
    await say("my picnic idea", member, channel)
    await say("their picnic idea", other, channel)
    await memory_bot.memory.flush(vectors=True)
    _, http = await confirm(slash, "memory forget", member, channel, what="my messages")
    assert (http.last.content, await stored(memory_bot, guild)) == (
        "Done: forgot 1 messages (all your messages in this server).", ["their picnic idea"])


async def test_forgetting_my_messages_in_one_channel_keeps_the_rest(memory_bot, slash, guild, channel, member):
    await say("picnic here", member, channel)
    await say("picnic there", member, guild.text_channels[1])
    await memory_bot.memory.flush(vectors=True)
    _, http = await confirm(slash, "memory forget", member, channel, what="my messages", channel=channel)
    assert (http.last.content, await stored(memory_bot, guild)) == (
        f"Done: forgot 1 messages (your messages in {channel.mention}).", ["picnic there"])


async def test_cancel_forgets_nothing(memory_bot, slash, guild, channel, member):
    await say("my picnic idea", member, channel)
    _, http = await confirm(slash, "memory forget", member, channel, button="Cancel", what="my messages")
    assert (http.last.content, await stored(memory_bot, guild)) == (replies.FORGET_CANCELLED, ["my picnic idea"])


async def test_a_member_cannot_forget_another_member(memory_bot, slash, channel, member, other):
    http = await slash.run("memory forget", member, channel, what="a member", member=other)
    assert [(s.content, s.ephemeral) for s in http.sent] == [(replies.FORGET_ADMIN_ONLY, True)]


async def test_a_member_cannot_forget_a_channel(memory_bot, slash, channel, member):
    http = await slash.run("memory forget", member, channel, what="a channel", channel=channel)
    assert http.last.content == replies.FORGET_ADMIN_ONLY


async def test_a_member_cannot_forget_someone_elses_message(memory_bot, slash, channel, member, other):
    message = await say("their picnic idea", other, channel)
    await memory_bot.memory.flush(vectors=True)
    http = await slash.run("memory forget", member, channel, what="a message", message_link=message.jump_url)
    assert http.last.content == replies.FORGET_NOT_YOURS


async def test_a_link_naming_another_channel_cannot_forget_someone_elses_message(
    memory_bot, slash, guild, channel, member, other
):
    message = await say("their picnic idea", other, channel)
    await memory_bot.memory.flush(vectors=True)
    elsewhere = guild.text_channels[1]
    link = f"https://discord.com/channels/{guild.id}/{elsewhere.id}/{message.id}"
    http = await slash.run("memory forget", member, channel, what="a message", message_link=link)
    assert (http.last.content, await stored(memory_bot, guild)) == (replies.FORGET_BAD_LINK, ["their picnic idea"])


async def test_an_admin_forgets_a_member(memory_bot, slash, guild, channel, member, admin):
    await say("my picnic idea", member, channel)
    await say("admin picnic idea", admin, channel)
    _, http = await confirm(slash, "memory forget", admin, channel, what="a member", member=member)
    assert (http.last.content, await stored(memory_bot, guild)) == (
        f"Done: forgot 1 messages (all messages by {member.mention}).", ["admin picnic idea"])


async def test_an_admin_forgets_a_channel(memory_bot, slash, guild, channel, member, admin):
    await say("picnic here", member, channel)
    await say("picnic there", member, guild.text_channels[1])
    _, http = await confirm(slash, "memory forget", admin, channel, what="a channel", channel=channel)
    assert (http.last.content, await stored(memory_bot, guild)) == (
        f"Done: forgot 1 messages (everything in {channel.mention}).", ["picnic there"])


async def test_the_author_forgets_one_message_by_link(memory_bot, slash, guild, channel, member):
    message = await say("my picnic idea", member, channel)
    await say("my other picnic idea", member, channel)
    await memory_bot.memory.flush(vectors=True)
    _, http = await confirm(slash, "memory forget", member, channel, what="a message", message_link=message.jump_url)
    assert (http.last.content, await stored(memory_bot, guild)) == (
        "Done: forgot 1 messages (that message).", ["my other picnic idea"])


async def test_a_link_to_another_server_is_refused(memory_bot, slash, channel, member):
    http = await slash.run("memory forget", member, channel, what="a message",
                           message_link="https://discord.com/channels/1/2/3")
    assert http.last.content == replies.FORGET_BAD_LINK


async def test_a_link_naming_a_forum_where_a_channel_goes_is_refused(memory_bot, slash, guild, channel, member, other):
    message = await say("their picnic idea", other, channel)
    await memory_bot.memory.flush(vectors=True)
    link = f"https://discord.com/channels/{guild.id}/{make_forum_channel(guild).id}/{message.id}"
    http = await slash.run("memory forget", member, channel, what="a message", message_link=link)
    assert (http.last.content, await stored(memory_bot, guild)) == (replies.FORGET_BAD_LINK, ["their picnic idea"])


# -- opting out -----------------------------------------------------------------------------------------------------


async def test_opting_out_forgets_my_history(memory_bot, slash, guild, channel, member, other):
    await say("my picnic idea", member, channel)
    await say("their picnic idea", other, channel)
    await memory_bot.memory.flush(vectors=True)
    http = await slash.run("memory optout", member, channel)
    assert (http.last.content, await stored(memory_bot, guild)) == (
        "I will no longer remember your messages here, and I forgot the 1 I had. Use /memory optin to undo.",
        ["their picnic idea"])


async def test_after_opting_out_new_messages_are_not_remembered(memory_bot, slash, guild, channel, member):
    await slash.run("memory optout", member, channel)
    await say("my picnic idea", member, channel)
    assert await stored(memory_bot, guild) == []


async def test_opting_back_in_remembers_again(memory_bot, slash, guild, channel, member):
    await slash.run("memory optout", member, channel)
    http = await slash.run("memory optin", member, channel)
    # Discord's ids carry milliseconds: a message stamped the millisecond of the opt-in may have been written before
    # it, while opted out. The member's next message comes once the clock is past that millisecond.
    opted_in = time.time()
    await eventually(lambda: time.time() >= opted_in + 0.002, what="the clock past the opt-in's millisecond")
    await say("my picnic idea", member, channel)
    assert (http.last.content, await stored(memory_bot, guild)) == (replies.OPTED_IN, ["my picnic idea"])


# -- admin: settings and backfill -----------------------------------------------------------------------------------


async def test_an_admin_turns_on_auto_recall_in_a_channel(memory_bot, slash, channel, admin):
    http = await slash.run("memory settings", admin, channel, auto_recall=True, recall_channel=channel)
    assert http.last.content == (
        f"**Memory settings for this server**\nAuto-recall: on in <#{channel.id}>\nNot captured: none\n"
        "Retention: keep everything\nForget members who leave: no\nOther bots' and webhooks' messages: not stored\n"
        "Quotation log: on, notes kept 90 days\nMember exports: one every 24 hours per member")


async def test_an_admin_turns_the_quotation_log_off_and_sets_the_export_interval(memory_bot, slash, guild, channel,
                                                                                 admin):
    http = await slash.run("memory settings", admin, channel, quotation_log=False, export_interval_hours=0)
    settings = await memory_bot.memory.settings(guild.id)
    assert (http.last.content.splitlines()[-2:], settings.quotation_log, settings.export_interval_hours) == (
        ["Quotation log: off", "Member exports: no limit"], False, 0)


async def test_an_admin_lets_other_bots_messages_be_stored(memory_bot, slash, guild, channel, admin):
    http = await slash.run("memory settings", admin, channel, store_bot_messages=True)
    assert (http.last.content.splitlines()[-3], (await memory_bot.memory.settings(guild.id)).store_bot_messages) == (
        "Other bots' and webhooks' messages: stored", True)


async def test_capture_channel_without_capture_says_how(memory_bot, slash, channel, admin):
    http = await slash.run("memory settings", admin, channel, capture_channel=channel)
    assert http.last.content == replies.SETTINGS_CAPTURE_PAIR


async def test_backfill_reads_history_that_was_not_captured(memory_bot, slash, guild, channel, member, admin):
    said_while_away("old picnic plans", member, channel)
    said_while_away("older picnic plans", member, channel)
    http = await slash.run("memory backfill", admin, channel, channel=channel)
    assert (http.sent[0].content, http.last.content, await stored(memory_bot, guild)) == (
        f"Reading the history of {channel.mention}…",
        f"Backfill of {channel.mention} finished: read 2 messages, newest first. Run it again to go further back.",
        ["old picnic plans", "older picnic plans"])


async def test_backfill_resumes_further_back(memory_bot, slash, guild, channel, member, admin):
    for age in ("oldest", "older", "newest"):
        said_while_away(f"{age} picnic plans", member, channel)
    await slash.run("memory backfill", admin, channel, channel=channel, limit=1)
    http = await slash.run("memory backfill", admin, channel, channel=channel, limit=1)
    assert (http.last.content.split(":")[1], await stored(memory_bot, guild)) == (
        " read 1 messages, newest first. Run it again to go further back.",
        ["newest picnic plans", "older picnic plans"])


# -- profile --------------------------------------------------------------------------------------------------------


async def test_profile_show_names_the_profile(memory_bot, slash, channel, member):
    http = await slash.run("memory profile show", member, channel)
    assert http.last.content.split("\n")[0] == "**Profile `test-tiny`**: "


async def test_profile_list_marks_the_current_one(memory_bot, slash, channel, member, tiny_profiles_dir):
    memory_bot.profiles_dir = tiny_profiles_dir
    http = await slash.run("memory profile list", member, channel)
    assert http.last.content == "**Profiles**\n- `tiny-a`\n- `tiny-b`"


async def test_profile_names_autocomplete(memory_bot, slash, channel, member, tiny_profiles_dir):
    memory_bot.profiles_dir = tiny_profiles_dir
    choices = await slash.autocomplete("memory profile set", member, channel, focused="name", name="b")
    assert choices == [{"name": "tiny-b", "value": "tiny-b"}]


async def test_a_bot_admin_switches_the_profile_and_sees_what_changed(memory_bot, slash, channel, member,
                                                                      tiny_profiles_dir):
    memory_bot.profiles_dir = tiny_profiles_dir
    memory_bot.bot_admin_ids = frozenset({member.id})
    http = await slash.run("memory profile set", member, channel, name="tiny-b")
    assert http.last.content == (
        "Switched from `test-tiny` to `tiny-b`. What changed:\n"
        "embedding_batch_size: `32` → `16`\n"
        "reranker.batch_size: `4` → `2`\n"
        "reranker.cache_size: `256` → `4096`"
    )


async def test_a_profile_switch_is_remembered_for_the_next_start(memory_bot, slash, channel, member,
                                                                 tiny_profiles_dir):
    memory_bot.profiles_dir = tiny_profiles_dir
    memory_bot.bot_admin_ids = frozenset({member.id})
    await slash.run("memory profile set", member, channel, name="tiny-b")
    assert memory_bot.choose_profile().name == "tiny-b"


async def test_an_unknown_profile_says_where_to_look(memory_bot, slash, channel, member, tiny_profiles_dir):
    memory_bot.profiles_dir = tiny_profiles_dir
    memory_bot.bot_admin_ids = frozenset({member.id})
    http = await slash.run("memory profile set", member, channel, name="huge")
    assert http.last.content == "There is no profile called `huge`. See /memory profile list."


async def test_a_profile_whose_reranker_cannot_load_keeps_the_old_profile(memory_bot, slash, channel, member,
                                                                         tiny_profiles_dir):
    broken = (tiny_profiles_dir / "tiny-b.toml").read_text(encoding="utf-8").replace(
        'model = "', 'model = "/nonexistent/', 1)
    (tiny_profiles_dir / "broken.toml").write_text(broken, encoding="utf-8")
    memory_bot.profiles_dir = tiny_profiles_dir
    memory_bot.bot_admin_ids = frozenset({member.id})
    http = await slash.run("memory profile set", member, channel, name="broken")
    assert http.last.content.startswith(
        "Could not switch to `broken`; still using the old profile. Reason: the reranker of profile 'broken' "
        "did not load: ")
    assert memory_bot.memory.profile.name == "test-tiny"


async def test_stats_reports_how_the_reranker_ran_in_the_last_hour(memory_bot, slash, channel, member):
    fields = await stats_after_a_search(memory_bot, slash, channel, member)
    assert re.fullmatch(r"torch float32 · p50 [\d,]+ ms · p95 [\d,]+ ms per query \(1 query\) · 1\.0 of 1\.0 "
                        r"candidates scored per recall · cache hits: 0 scores, 0 prompt prefixes",
                        fields["Reranking (last hour)"])
