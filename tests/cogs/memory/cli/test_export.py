"""``export``: a subject access request from the terminal: one member's messages in one guild, named as memory last
saw their channels, as zipped JSON and HTML parts; nothing written for a member memory holds nothing of."""

import json
import zipfile
from pathlib import Path


def documents(out: str) -> list[dict]:
    parts = [Path(line) for line in out.splitlines() if line.endswith(".zip")]
    found = []
    for part in parts:
        with zipfile.ZipFile(part) as archive:
            found.append(json.loads(archive.read("memory.json")))
    return found


async def test_export_writes_a_members_messages_of_one_guild(cli, two_guilds, tmp_path):
    code, out, err = await cli("export", "--guild", "1", "--member", "6", str(tmp_path / "sar"))
    (document,) = documents(out)
    assert (code, err, out.splitlines()[-1]) == (0, "", "exported 2 messages and 0 quotation notes in 1 part(s)")
    assert [(m["content"], m["channel"]) for m in document["messages"]] == [
        ("I will bake a picnic cake", "general"), ("picnic photos are up", "photos")]
    assert document["guild"] == {"id": "1", "name": "Picnic Club"}


async def test_export_of_a_member_memory_holds_nothing_of_writes_nothing(cli, two_guilds, tmp_path):
    code, out, _ = await cli("export", "--guild", "1", "--member", "99", str(tmp_path / "sar"))
    assert (code, out, (tmp_path / "sar").exists()) == (
        0, "memory holds nothing of member 99 in guild 1; nothing written\n", False)


async def test_export_in_an_unknown_guild_is_a_usage_error(cli, two_guilds, tmp_path):
    code, _, err = await cli("export", "--guild", "7", "--member", "6", str(tmp_path / "sar"))
    assert code == 2 and "7" in err
