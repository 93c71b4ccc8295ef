"""``python -m cogs.memory import|search``: the admin's terminal view of memory."""

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cogs.memory.__main__ import parse_args, run
from cogs.memory.store.sqlite.integrity import RESTORE_ADVICE
from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import ProfileError, load_profile

REPO = Path(__file__).resolve().parents[3]


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
    assert (code, out) == (0, f"{export_file}: #general (guild 1): 2 stored, 0 already stored, 0 skipped, 0 rejected\n"
                              "imported 1 of 1 file(s): 2 stored, 0 already stored, 0 skipped, 0 rejected\n")


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


async def test_search_reports_the_rerankers_part_of_the_query_on_stderr(cli, export_file):
    await cli("import", str(export_file))
    _, _, err = await cli("search", "when is the picnic", "--limit", "1")
    assert re.fullmatch(r"rerank: torch float32, 2 of 2 candidates scored in [\d,]+ ms \(0 from the score cache; "
                        r"prompt prefix cache hits so far: 0\)\n", err)


def refusal(capsys, *argv):
    """Exit code and the last line on stderr when argparse refuses ``argv``."""
    with pytest.raises(SystemExit) as exited:
        parse_args(list(argv))
    return exited.value.code, capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize("limit", ["-5", "0", "51", "10000"])
def test_a_limit_outside_1_to_50_is_refused(capsys, limit):
    assert refusal(capsys, "search", "picnic", "--limit", limit) == (
        2, f"python -m cogs.memory search: error: argument --limit: must be between 1 and 50; you gave {limit}")


def test_a_limit_that_is_not_a_number_is_refused(capsys):
    assert refusal(capsys, "search", "picnic", "--limit", "ten") == (
        2, "python -m cogs.memory search: error: argument --limit: must be a whole number; you gave 'ten'")


def test_a_blank_query_is_refused(capsys):
    assert refusal(capsys, "search", "  ") == (
        2, "python -m cogs.memory search: error: argument query: is blank; give some words to search for")


def test_an_overlong_query_is_refused(capsys):
    assert refusal(capsys, "search", "picnic " * 43) == (
        2, "python -m cogs.memory search: error: argument query: must be at most 300 characters; you gave 301")


def test_a_guild_that_is_no_discord_id_is_refused(capsys):
    assert refusal(capsys, "search", "picnic", "--guild", "-3") == (
        2, "python -m cogs.memory search: error: argument --guild: must be a Discord id (a positive whole number); "
           "you gave -3")


async def test_importing_a_missing_file_reports_it_and_imports_the_others(cli, export_file, tmp_path):
    missing = tmp_path / "missing.json"
    code, out, err = await cli("import", str(missing), str(export_file))
    assert (code, err.splitlines()[0], out.splitlines()[-1]) == (
        1, f"error: {missing}: no such file",
        "imported 1 of 2 file(s): 2 stored, 0 already stored, 0 skipped, 0 rejected")


async def test_an_unknown_profile_is_an_error_not_a_traceback(tmp_path):
    with pytest.raises(ProfileError) as unknown:
        load_profile("nonsense")
    out, err = io.StringIO(), io.StringIO()
    args = parse_args(["--db", str(tmp_path / "m.sqlite3"), "--profile", "nonsense", "search", "picnic"])
    assert (await run(args, out, err), err.getvalue()) == (2, f"error: {unknown.value}\n")


def test_a_refused_argument_exits_2_without_a_traceback():
    done = subprocess.run([sys.executable, "-m", "cogs.memory", "search", "picnic", "--limit", "-5"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr.splitlines()[-1], "Traceback" in done.stderr) == (
        2, "python -m cogs.memory search: error: argument --limit: must be between 1 and 50; you gave -5", False)


async def test_reimporting_an_export_does_not_bring_back_a_message_deleted_since(cli, export_file, tmp_path,
                                                                               tiny_reranker_profile):
    await cli("import", str(export_file))
    bot_memory = await Memory.open(tiny_reranker_profile, tmp_path / "m.sqlite3", tmp_path / "idx")
    await bot_memory.delete([30])  # deleted on Discord while the bot ran
    await bot_memory.close()
    await cli("import", str(export_file))
    _, out, _ = await cli("search", "picnic blankets", "--no-rerank")
    assert re.findall(r"^    (.*)$", out, flags=re.M) == ["bring blankets"]


async def test_a_damaged_database_is_one_error_line_not_a_traceback(cli, export_file, tmp_path):
    (tmp_path / "m.sqlite3").write_bytes(b"not a database" * 500)
    code, _, err = await cli("import", str(export_file))
    assert (code, err.splitlines()[-1]) == (
        1, f"error: the memory database {tmp_path / 'm.sqlite3'} is damaged (file is not a database). "
           + RESTORE_ADVICE.format(path=tmp_path / "m.sqlite3"))
