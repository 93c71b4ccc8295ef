"""``python -m cogs.memory import|search``: the admin's terminal view of memory."""

import io
import json
import re

import pytest

from cogs.memory.__main__ import parse_args, run


def export(messages):
    return {
        "guild": {"id": "1", "name": "Picnic Club"},
        "channel": {"id": "20", "type": "GuildTextChat", "categoryId": None, "name": "general"},
        "messages": messages,
    }


def message(message_id, content, minute):
    return {
        "id": str(message_id), "type": "Default", "timestamp": f"2024-05-01T12:{minute:02d}:00+00:00",
        "timestampEdited": None, "content": content,
        "author": {"id": "5", "name": "alice", "discriminator": "0", "nickname": None, "isBot": False},
        "attachments": [], "embeds": [],
    }


@pytest.fixture
def cli(tmp_path, tiny_profiles_dir):
    async def call(*argv):
        out, err = io.StringIO(), io.StringIO()
        base = ["--db", str(tmp_path / "m.sqlite3"), "--index-dir", str(tmp_path / "idx"),
                "--profile", str(tiny_profiles_dir / "tiny-a.toml")]
        code = await run(parse_args([*base, *argv]), out, err)
        return code, out.getvalue(), err.getvalue()

    return call


@pytest.fixture
def export_file(tmp_path):
    path = tmp_path / "general.json"
    path.write_text(json.dumps(export([message(30, "the picnic moved to Saturday", 0),
                                       message(31, "bring blankets", 1)])), encoding="utf-8")
    return path


async def test_import_reports_what_it_read(cli, export_file):
    code, out, _ = await cli("import", str(export_file))
    assert (code, out) == (0, f"{export_file}: 2 messages from #general (guild 1)\nimported 2 messages\n")


async def test_import_shows_a_progress_bar(cli, export_file):
    _, _, err = await cli("import", str(export_file))
    assert re.search(r"\rPicnic Club #general \[#{30}\] 2/2 \d+ msg/s\n$", err)


async def test_importing_twice_stores_each_message_once(cli, export_file):
    await cli("import", str(export_file))
    await cli("import", str(export_file))
    _, out, _ = await cli("search", "picnic", "--no-rerank")
    assert len(re.findall(r"^ *\d+\. ", out, flags=re.M)) == 2


async def test_search_prints_first_stage_and_rerank_scores(cli, export_file):
    await cli("import", str(export_file))
    _, out, _ = await cli("search", "when is the picnic", "--limit", "1")
    assert re.fullmatch(r" 1\. score=\d\.\d{4} rerank_score=\d\.\d{4} #20 alice 2024-05-01T12:00\n"
                        r"    the picnic moved to Saturday\n", out)


async def test_search_without_rerank_has_no_rerank_score(cli, export_file):
    await cli("import", str(export_file))
    _, out, _ = await cli("search", "picnic", "--no-rerank", "--limit", "1")
    assert "rerank_score=- " in out


async def test_search_with_several_guilds_asks_for_one(cli, export_file, tmp_path):
    other = tmp_path / "other.json"
    data = export([message(40, "hello", 0)])
    data["guild"]["id"] = "2"
    other.write_text(json.dumps(data), encoding="utf-8")
    await cli("import", str(export_file), str(other))
    code, _, err = await cli("search", "picnic")
    assert (code, err) == (2, "error: pass --guild (guilds in memory: 1, 2)\n")


async def test_a_bad_export_is_an_error_not_a_traceback(cli, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{}", encoding="utf-8")
    code, _, err = await cli("import", str(path))
    assert (code, err) == (1, f"error: {path}: not a DiscordChatExporter JSON export (missing or bad 'guild')\n")
