"""Names and ids both, where an admin acts: ``search`` shows each hit's ids and jump link, ``members`` lists authors
with their ids, and ``forget`` takes ``@name`` and ``#channel`` within the guild, refusing when they do not name one."""

from __future__ import annotations

from pathlib import Path

from tests.cogs.memory.cli.conftest import export, message


async def test_search_shows_the_message_author_and_channel_ids_and_a_jump_link(cli, two_guilds: Path) -> None:
    code, out, err = await cli("search", "cake", "--guild", "1", "--no-rerank", "--limit", "1")
    assert code == 0, err
    assert out.splitlines()[2] == ("    message id 32 by bob (user id 6) in #general (channel id 20): "
                                   "https://discord.com/channels/1/20/32")


async def test_members_lists_authors_by_id_with_their_last_name_and_count(cli, two_guilds: Path,
                                                                          tmp_path: Path) -> None:
    renamed = export(tmp_path / "renamed.json", 1, 20, [message(34, "call me robert now", 9, author=6, name="robert")])
    assert (await cli("import", str(renamed)))[0] == 0
    code, out, err = await cli("members", "--guild", "1")
    assert (code, err) == (0, "")
    assert out == ("6  robert  3 messages, last 2024-05-01 12:09 UTC\n"
                   "5  alice  2 messages, last 2024-05-01 12:01 UTC\n")


async def test_forget_takes_a_member_by_name(cli, two_guilds: Path) -> None:
    code, out, err = await cli("forget", "--guild", "1", "--member", "@Bob", "--yes")
    assert (code, out, err) == (0, "forgot 2 messages of member 6 in guild 1\n", "")
    _, members, _ = await cli("members", "--guild", "1")
    assert members.splitlines() == ["5  alice  2 messages, last 2024-05-01 12:01 UTC"]


async def test_forget_takes_a_channel_by_name(cli, two_guilds: Path) -> None:
    code, out, _ = await cli("forget", "--guild", "1", "--channel", "#photos", "--yes")
    assert (code, out) == (0, "forgot 1 message in channel 21 (and its threads) of guild 1\n")


async def test_forget_refuses_a_name_two_members_share_and_lists_them(cli, two_guilds: Path, tmp_path: Path) -> None:
    other_alice = export(tmp_path / "alice2.json", 1, 20, [message(35, "another alice here", 10, author=7)])
    assert (await cli("import", str(other_alice)))[0] == 0
    code, out, err = await cli("forget", "--guild", "1", "--member", "@alice", "--yes")
    assert (code, out) == (2, "")
    assert err == "error: @alice names 2 members in guild 1: @alice (id 5), @alice (id 7); pass the id\n"
    _, members, _ = await cli("members", "--guild", "1")
    assert len(members.splitlines()) == 3  # nothing forgotten


async def test_forget_refuses_an_unknown_name_and_offers_the_near_ones(cli, two_guilds: Path) -> None:
    code, _, err = await cli("forget", "--guild", "1", "--member", "@alic", "--yes")
    assert (code, err) == (2, "error: no member @alic in guild 1's memory; near: @alice (id 5) (`members --guild 1` "
                              "lists them)\n")
    code, _, err = await cli("forget", "--guild", "1", "--channel", "#memes", "--yes")
    assert (code, err) == (2, "error: no channel #memes in guild 1's memory (`channels --guild 1` lists them)\n")


async def test_a_name_of_another_guild_is_not_found(cli, two_guilds: Path) -> None:
    """Guild 2's alice is not guild 1's: a name resolves within the guild given."""
    code, _, err = await cli("forget", "--guild", "2", "--channel", "#general", "--yes")
    assert code == 2 and err.startswith("error: no channel #general in guild 2's memory")


async def test_forget_takes_a_member_and_a_channel_by_their_mentions(cli, two_guilds: Path) -> None:
    """What Discord's client copies for a member (``<@id>``) or a channel (``<#id>``) is their id."""
    code, out, err = await cli("forget", "--guild", "1", "--channel", "<#21>", "--yes")
    assert (code, out, err) == (0, "forgot 1 message in channel 21 (and its threads) of guild 1\n", "")
    code, out, err = await cli("forget", "--guild", "1", "--member", "<@5>", "--yes")
    assert (code, out, err) == (0, "forgot 2 messages of member 5 in guild 1\n", "")
