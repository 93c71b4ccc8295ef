"""``stats``, ``guilds``, ``channels``: what memory holds, by name and id, times in UTC; an unknown guild lists the
known ones by name."""

import json
import re

from .conftest import export, message


async def test_stats_shows_each_guild_with_its_channels_and_last_message(cli, two_guilds):
    code, out, _ = await cli("stats")
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == "profile: tiny-a; embedding model: " + lines[0].split("embedding model: ")[1]
    assert re.fullmatch(r"reranker: .*tiny-qwen3-reranker\d* \(local, torch\); not loaded by this command: the bot "
                        r"loads it at start, search and ask here when they rerank", lines[1])
    assert lines[2] == "vectors pending: 0 (every guild)"
    assert re.fullmatch(r"guild 1 \(Picnic Club\): 4 messages, 4 vectors \(0 pending\), 2 channels, last message 2024-05-01 12:05 UTC,"
                        r" vector index \S+ \d+\.\d MB on disk", lines[3])
    assert lines[4].startswith("guild 2: 1 messages, 1 vectors (0 pending), 1 channels, last message 2024-05-01 "
                               "12:00 UTC")


async def test_stats_loads_no_reranker(cli, two_guilds, monkeypatch):
    from cogs.memory import models

    built = []
    monkeypatch.setattr(models, "build_reranker", lambda *args: built.append(args))
    code, _, _ = await cli("stats", "--guild", "2")
    assert (code, built) == (0, [])


async def test_guilds_lists_names_and_ids_and_says_when_a_name_is_unknown(cli, two_guilds):
    code, out, err = await cli("guilds")
    assert (code, out) == (0, "1  Picnic Club  4 messages in 2 channels, last 2024-05-01 12:05 UTC\n"
                              "2  name unknown  1 messages in 1 channels, last 2024-05-01 12:00 UTC\n")
    assert err.startswith("some names are unknown: memory learns a guild's or channel's name when the bot sees it")


async def test_guilds_says_nothing_of_unknown_names_when_every_name_is_known(cli, two_guilds):
    assert (await cli("forget", "--guild", "2", "--all", "--yes"))[0] == 0
    code, out, err = await cli("guilds")
    assert (code, out, err) == (0, "1  Picnic Club  4 messages in 2 channels, last 2024-05-01 12:05 UTC\n", "")


async def test_channels_lists_a_guilds_channels_by_name_and_id(cli, two_guilds):
    code, out, err = await cli("channels", "--guild", "1")
    assert (code, out, err) == (0, "20  #general  3 messages (its threads' included), last 2024-05-01 12:02 UTC\n"
                                   "21  #photos  1 messages (its threads' included), last 2024-05-01 12:05 UTC\n", "")


async def test_channels_names_a_thread_with_its_parent(cli, two_guilds, tmp_path):
    thread = export(tmp_path / "thread.json", 1, 22, [message(34, "raffle tickets", 6)], channel_name="raffle")
    data = json.loads(thread.read_text(encoding="utf-8"))
    data["channel"] |= {"type": "GuildPublicThread", "categoryId": "20", "category": "general"}
    thread.write_text(json.dumps(data), encoding="utf-8")
    assert (await cli("import", str(thread)))[0] == 0
    _, out, _ = await cli("channels", "--guild", "1")
    assert "22  #raffle (thread in #general)  1 messages" in out


async def test_a_channel_whose_name_memory_never_saw_says_so(cli, two_guilds):
    code, out, err = await cli("channels", "--guild", "2")
    assert (code, out) == (0, "40  name unknown  1 messages (its threads' included), last 2024-05-01 12:00 UTC\n")
    assert err.startswith("some names are unknown")


async def test_a_name_with_control_characters_is_shown_not_obeyed(cli, tmp_path):
    exports = tmp_path / "exports"
    exports.mkdir()
    loud = export(exports / "loud.json", 3, 60, [message(70, "hello", 0)], guild_name="\x1b[2J\x1b]0;pwned\x07Club",
                  channel_name="\x1b[31mred")
    assert (await cli("import", str(loud)))[0] == 0
    _, guilds, _ = await cli("guilds")
    _, channels, _ = await cli("channels")
    _, hits, _ = await cli("search", "hello", "--no-rerank")
    assert (guilds.split("  ")[1], channels.split("  ")[1]) == ("\\x1b[2J\\x1b]0;pwned\\x07Club", "#\\x1b[31mred")
    assert "\x1b" not in guilds + channels + hits and " #\\x1b[31mred " in hits


async def test_an_unknown_guild_says_which_guilds_exist(cli, two_guilds):
    for command in (("channels", "--guild", "999"), ("search", "picnic", "--guild", "999", "--no-rerank"),
                    ("stats", "--guild", "999")):
        code, out, err = await cli(*command)
        assert (code, out, err) == (2, "", "error: guild 999 is not in memory (guilds in memory: 1 (Picnic Club), "
                                           "2)\n"), command
