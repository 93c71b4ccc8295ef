"""``python -m cogs.memory`` reads the bot's settings (the environment over ``.env``), refuses bad ones in one line
each, and logs at the level ``LOG_LEVEL`` and ``-v``/``-q`` ask for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cogs.memory import cli

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI's .env, in a temporary folder; nothing of the developer's environment leaks in."""
    for name in ("DATABASE_URL", "DEV_GUILD_ID", "LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(cli, "route_library_logs", lambda: None)
    path = tmp_path / ".env"
    monkeypatch.setattr(cli, "ENV_FILE", path)
    return path


def test_a_database_url_in_the_env_file_stops_a_backup_of_the_sqlite_file(env_file: Path, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    env_file.write_text("DATABASE_URL=postgresql://bot@db/memory\n", encoding="utf-8")
    code = cli.main(["--db", str(tmp_path / "memory.sqlite3"), "backup", str(tmp_path / "backups") + "/"])
    assert (code, capsys.readouterr().err) == (2, "error: memory is kept in PostgreSQL (DATABASE_URL is set); backup "
                                                  "works on the SQLite file: use pg_dump and pg_restore\n")
    assert not (tmp_path / "backups").exists()


def test_a_bad_setting_is_one_line_and_exit_code_2(env_file: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    env_file.write_text("DEV_GUILD_ID=myserver\n", encoding="utf-8")
    code = cli.main(["--db", str(tmp_path / "memory.sqlite3"), "check"])
    assert (code, capsys.readouterr().err) == (
        2, "error: DEV_GUILD_ID must be a Discord server id (a number), not 'myserver'\n")


def run_cli(*argv: str, log_level: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "LOG_LEVEL"}
    if log_level is not None:
        env["LOG_LEVEL"] = log_level
    return subprocess.run([sys.executable, "-m", "cogs.memory", *argv, "check"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


# asyncio logs the event loop it makes at DEBUG: a line every run prints at that level and none above it.
DEBUG_LINE = "DEBUG asyncio: Using selector"


@pytest.mark.parametrize(("argv", "log_level", "shown"), [
    ((), None, False),
    (("-vv",), None, True),
    ((), "debug", True),
    (("-q",), "DEBUG", False),
])
def test_log_level_and_v_q_set_what_is_printed(tmp_path: Path, argv: tuple[str, ...], log_level: str | None,
                                               shown: bool) -> None:
    done = run_cli("--db", str(tmp_path / "none.sqlite3"), *argv, log_level=log_level)
    assert done.returncode == 1, done.stderr  # no database there: "check" says so
    assert (DEBUG_LINE in done.stderr) is shown, done.stderr
