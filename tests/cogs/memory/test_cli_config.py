"""``python -m cogs.memory`` reads the bot's settings (the environment over ``.env``), refuses bad ones in one line
each, and logs at the level ``LOG_LEVEL`` and ``-v``/``-q`` ask for."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cogs.memory import cli
from cogs.memory.runtime.config import Settings
from tests.fixtures.credentials import FORMS, SECRET, environ_with, refused_lines

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI's .env, in a temporary folder; nothing of the developer's environment leaks in."""
    for name in ("DATABASE_URL", "DEV_GUILD_ID", "LOG_LEVEL", "MEMORY_PROFILE"):
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


def settings_free_environ() -> dict[str, str]:
    """The process's environment without any setting a developer may have exported (DATABASE_URL, LOG_LEVEL...)."""
    return {key: value for key, value in os.environ.items() if key.lower() not in Settings.model_fields}


@pytest.mark.skipif((REPO / ".env").exists(), reason="a real .env would be read")
@pytest.mark.parametrize("form", FORMS)
def test_the_real_cli_names_each_bad_setting_in_one_line_without_its_credentials(tmp_path: Path, form: str) -> None:
    environ = environ_with(form)
    done = subprocess.run([sys.executable, "-m", "cogs.memory", "--db", str(tmp_path / "m.sqlite3"), "stats"],
                          cwd=REPO, env=settings_free_environ() | environ, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert SECRET not in done.stderr + done.stdout
    assert done.stderr.splitlines() == [f"error: {line}" for line in refused_lines(environ)]


def test_a_setting_the_cli_reads_later_is_shown_without_its_credentials(env_file: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """MEMORY_PROFILE takes any text; a profile of that name is looked for only as a command opens memory."""
    env_file.write_text(f"MEMORY_PROFILE={FORMS['URL with user:password@']}\n", encoding="utf-8")
    code = cli.main(["--db", str(tmp_path / "memory.sqlite3"), "stats"])
    err = capsys.readouterr().err
    assert (code, err.count("\n"), SECRET in err) == (2, 1, False), err
    assert err.startswith("error: MEMORY_PROFILE: field 'name' = 'htps://bot:***@db.example.org:5432/memory' is not a "
                          "profile")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_malformed_database_url_is_a_bad_setting_and_an_unreachable_one_a_failure(
        env_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both one line, neither a traceback nor the password: a typo is a usage error (exit 2) before anything opens,
    a server that does not answer is a failure (exit 1) that names it."""
    db = str(tmp_path / "memory.sqlite3")
    env_file.write_text(f"DATABASE_URL=postgresql://bot:{SECRET}@127.0.0.1:notaport/memory\n", encoding="utf-8")
    assert cli.main(["--db", db, "stats"]) == 2
    assert capsys.readouterr().err == (
        "error: DATABASE_URL must be a postgresql:// URL whose ports are numbers from 1 to 65535 (a / ? # or @ in the "
        "password written %2F %3F %23 %40), not 'postgresql://bot:***@127.0.0.1:***/memory'\n")
    port = closed_port()
    env_file.write_text(f"DATABASE_URL=postgresql://bot:{SECRET}@127.0.0.1:{port}/memory\n", encoding="utf-8")
    assert cli.main(["--db", db, "-q", "stats"]) == 1
    err = capsys.readouterr().err
    assert SECRET not in err and "Traceback" not in err
    assert err.splitlines()[-1].startswith(f"error: PostgreSQL at bot@127.0.0.1:{port}/memory cannot be reached (")


@pytest.mark.parametrize("form", FORMS)
def test_migrates_to_is_refused_as_database_url_is_without_its_credentials(form: str,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.parse_args(["migrate", "--to", FORMS[form]])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and SECRET not in err
    assert err.splitlines()[-1].startswith("python -m cogs.memory migrate: error: argument --to: must be a "
                                           "postgresql:// URL")
