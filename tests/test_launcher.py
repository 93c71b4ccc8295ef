"""``python bot.py`` / ``python launcher.py``: what a newcomer sees without a token, the admin list it reads, and the
shards it runs."""

import os
import subprocess
import sys
from pathlib import Path

import discord
import pytest
from discord.ext import commands

import bot
import launcher
from cogs.memory.runtime.config import load_settings


def test_without_a_token_it_explains_how_to_get_one_and_exits_non_zero(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    monkeypatch.setattr(launcher, "ENV_FILE", tmp_path / ".env")  # a developer's real .env must not be read
    assert launcher.main([]) == 2
    assert capsys.readouterr().err == launcher.NO_TOKEN_HELP + "\n"


def test_the_help_names_both_privileged_intents():
    assert "MESSAGE CONTENT INTENT" in launcher.NO_TOKEN_HELP and "SERVER MEMBERS INTENT" in launcher.NO_TOKEN_HELP


def test_the_bot_gets_the_admins_the_settings_name():
    made = launcher.create_bot(launcher.parse_args([]), load_settings({"BOT_ADMIN_IDS": "1, 2 3"}, None))
    assert made.bot_admin_ids == frozenset({1, 2, 3})


def test_bad_settings_stop_the_bot_with_one_line_each_and_exit_1(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("DISCORD_TOKEN", "token")
    monkeypatch.setenv("DEV_GUILD_ID", "myserver")
    monkeypatch.setenv("BOT_ADMIN_IDS", "alice")
    monkeypatch.setattr(launcher, "ENV_FILE", tmp_path / ".env")
    assert launcher.main([]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "error: DEV_GUILD_ID must be a Discord server id (a number), not 'myserver'",
        "error: BOT_ADMIN_IDS must be Discord user ids separated by commas, not 'alice'"]


def test_the_token_may_come_from_the_env_file(monkeypatch, tmp_path):
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    (tmp_path / ".env").write_text("DISCORD_TOKEN=from-the-file\nMEMORY_STORE_DMS=yes\n")
    monkeypatch.setattr(launcher, "ENV_FILE", tmp_path / ".env")
    started = fake_start(monkeypatch)
    assert launcher.main([]) == 0
    assert started == [("from-the-file", True)]


def fake_start(monkeypatch) -> list:
    monkeypatch.setattr(launcher, "tune_interpreter", lambda: None)
    monkeypatch.setattr(discord.utils, "setup_logging", lambda **_: None)
    monkeypatch.setattr(launcher, "route_library_logs", lambda: None)
    started = []

    async def fake_run_bot(token, made):
        started.append((token, made.store_dms))

    monkeypatch.setattr(launcher, "run_bot", fake_run_bot)
    return started


# -- sharding: --shards N --shard-ids a,b ------------------------------------------------------------------------


def test_without_shard_flags_the_bot_is_one_unsharded_connection():
    made = launcher.create_bot(launcher.parse_args([]), load_settings({}, None))
    assert (type(made), made.shard_count) == (bot.MemoryBot, None)


def test_shard_flags_build_an_auto_sharded_bot_running_those_shards():
    made = launcher.create_bot(launcher.parse_args(["--shards", "4", "--shard-ids", "1,3"]), load_settings({}, None))
    assert isinstance(made, commands.AutoShardedBot)
    assert (made.shard_count, made.shard_ids) == (4, [1, 3])


def test_shards_without_ids_run_every_shard_in_this_process():
    made = launcher.create_bot(launcher.parse_args(["--shards", "2"]), load_settings({}, None))
    assert (made.shard_count, made.shard_ids) == (2, None)


def test_main_starts_the_bot_with_the_shards_it_was_given(monkeypatch, tmp_path):
    monkeypatch.setenv("DISCORD_TOKEN", "token")
    monkeypatch.setattr(launcher, "ENV_FILE", tmp_path / ".env")
    monkeypatch.setattr(launcher, "tune_interpreter", lambda: None)
    monkeypatch.setattr(discord.utils, "setup_logging", lambda **_: None)
    monkeypatch.setattr(launcher, "route_library_logs", lambda: None)
    started = []

    async def fake_run_bot(token, made):
        started.append((token, made.shard_count, made.shard_ids))

    monkeypatch.setattr(launcher, "run_bot", fake_run_bot)
    assert launcher.main(["--shards", "3", "--shard-ids", "2"]) == 0
    assert started == [("token", 3, [2])]


@pytest.mark.parametrize(("argv", "message"), [
    (["--shard-ids", "0"], "--shard-ids needs --shards N (the total across all processes)"),
    (["--shards", "2", "--shard-ids", "1,2"], "--shard-ids must be between 0 and 1 for --shards 2; you gave 2"),
    (["--shards", "0"], "argument --shards: must be at least 1; you gave 0"),
    (["--shards", "2", "--shard-ids", "0,x"], "argument --shard-ids: must be shard numbers separated by commas; "
                                              "you gave '0,x'"),
    (["--shards", "2", "--shard-ids", "1,1"], "argument --shard-ids: names a shard twice: '1,1'"),
])
def test_bad_shard_flags_are_refused_with_a_reason(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        launcher.parse_args(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(f"error: {message}\n")


@pytest.mark.skipif((Path(launcher.__file__).parent / ".env").exists(), reason="a real .env would start the bot")
def test_python_bot_py_still_starts_the_launcher():
    env = {key: value for key, value in os.environ.items() if key != "DISCORD_TOKEN"}
    done = subprocess.run([sys.executable, "bot.py"], cwd=Path(launcher.__file__).parent, env=env,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (2, launcher.NO_TOKEN_HELP + "\n")
