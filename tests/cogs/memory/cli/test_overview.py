"""``stats``, ``guilds``, ``channels``: what memory holds, by id, times in UTC; an unknown guild lists the known."""

import re


async def test_stats_shows_each_guild_with_its_channels_and_last_message(cli, two_guilds):
    code, out, _ = await cli("stats")
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == "profile: tiny-a; embedding model: " + lines[0].split("embedding model: ")[1]
    assert re.fullmatch(r"reranker: .*tiny-qwen3-reranker\d* \(local, torch\); not loaded by this command: the bot "
                        r"loads it at start, search and ask here when they rerank", lines[1])
    assert lines[2] == "vectors pending: 0 (every guild)"
    assert re.fullmatch(r"guild 1: 4 messages, 4 vectors \(0 pending\), 2 channels, last message 2024-05-01 12:05 UTC,"
                        r" vector index \S+ \d+\.\d MB on disk", lines[3])
    assert lines[4].startswith("guild 2: 1 messages, 1 vectors (0 pending), 1 channels, last message 2024-05-01 "
                               "12:00 UTC")


async def test_stats_loads_no_reranker(cli, two_guilds, monkeypatch):
    from cogs.memory import memory as memory_module

    built = []
    monkeypatch.setattr(memory_module, "_build_reranker", lambda *args: built.append(args))
    code, _, _ = await cli("stats", "--guild", "2")
    assert (code, built) == (0, [])


async def test_guilds_lists_ids_and_says_names_are_unknown(cli, two_guilds):
    code, out, err = await cli("guilds")
    assert (code, out) == (0, "1  name unknown  4 messages in 2 channels, last 2024-05-01 12:05 UTC\n"
                              "2  name unknown  1 messages in 1 channels, last 2024-05-01 12:00 UTC\n")
    assert err.startswith("names: unknown here; memory stores ids only")


async def test_channels_lists_a_guilds_channels(cli, two_guilds):
    code, out, _ = await cli("channels", "--guild", "1")
    assert (code, out) == (0, "#20  name unknown  3 messages (its threads' included), last 2024-05-01 12:02 UTC\n"
                              "#21  name unknown  1 messages (its threads' included), last 2024-05-01 12:05 UTC\n")


async def test_an_unknown_guild_says_which_guilds_exist(cli, two_guilds):
    for command in (("channels", "--guild", "999"), ("search", "picnic", "--guild", "999", "--no-rerank"),
                    ("stats", "--guild", "999")):
        code, out, err = await cli(*command)
        assert (code, out, err) == (2, "", "error: guild 999 is not in memory (guilds in memory: 1, 2)\n"), command
