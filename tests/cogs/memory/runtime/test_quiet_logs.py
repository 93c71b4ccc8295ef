"""Quiet, honest logs: no voice warnings (the bot has no voice), no colour codes off a terminal, faiss's probing at
DEBUG, aiosqlite at WARNING unless MEMORY_LOG_LEVELS asks, and one warning per misspelled setting."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cogs.memory.runtime.config import SettingsError, load_settings, unknown_variables
from cogs.memory.runtime.logs import logger_levels, quiet_libraries

REPO = Path(__file__).resolve().parents[4]


def run(script: str, environ: dict[str, str] | None = None) -> str:
    """``script`` in a fresh interpreter whose stderr is a pipe (not a terminal); returns what it printed there."""
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(environ or {})})
    assert done.returncode == 0, done.stderr
    return done.stderr


QUIETED = """
import logging
logging.basicConfig(level=logging.{level}, format="%(levelname)s %(name)s: %(message)s")
from cogs.memory.runtime.logs import quiet_libraries
{quiet}
{then}
"""


def quieted(then: str, level: str = "INFO", quiet: str = "quiet_libraries()") -> str:
    return run(QUIETED.format(level=level, quiet=quiet, then=then))


CLIENT = "import discord; discord.Client(intents=discord.Intents.default())"


def test_a_discord_client_logs_no_voice_warning() -> None:
    assert "voice will NOT be supported" not in quieted(CLIENT)
    assert "voice will NOT be supported" in quieted(CLIENT, quiet="")  # what the filter is for


def test_faiss_probing_is_shown_at_debug_only() -> None:
    assert "faiss.loader" not in quieted("import faiss")
    assert "INFO faiss.loader" in quieted("import faiss", quiet="")  # what the filter is for
    assert "DEBUG faiss.loader: Loading faiss" in quieted("import faiss", level="DEBUG")


def test_aiosqlite_is_at_warning_unless_asked() -> None:
    logging.getLogger().setLevel(logging.DEBUG)
    quiet_libraries()
    assert logging.getLogger("aiosqlite").getEffectiveLevel() == logging.WARNING
    quiet_libraries(logger_levels("aiosqlite=DEBUG, discord.gateway=info"))
    assert logging.getLogger("aiosqlite").getEffectiveLevel() == logging.DEBUG
    assert logging.getLogger("discord.gateway").level == logging.INFO
    quiet_libraries()


def test_memory_log_levels_is_read_from_the_settings_and_refused_when_malformed() -> None:
    settings = load_settings({"MEMORY_LOG_LEVELS": "aiosqlite=DEBUG"}, env_file=None)
    assert settings.logger_levels == {"aiosqlite": logging.DEBUG}
    with pytest.raises(SettingsError) as refused:
        load_settings({"MEMORY_LOG_LEVELS": "aiosqlite:loud"}, env_file=None)
    assert refused.value.lines == ["MEMORY_LOG_LEVELS must be logger=LEVEL pairs joined by commas, such as "
                                   "aiosqlite=DEBUG, not 'aiosqlite:loud'"]


def test_the_launcher_logs_without_colour_codes_off_a_terminal() -> None:
    printed = run("import logging, launcher; launcher.set_up_logging(logging.INFO); "
                  "logging.getLogger('discord.gateway').warning('shard 0 reconnecting')")
    assert "shard 0 reconnecting" in printed and "\x1b[" not in printed


def test_a_misspelled_setting_names_the_closest_one(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("LLM_MODLE=qwen\nHF_HOME=/models\n", encoding="utf-8")
    lines = unknown_variables({"MEMORY_DASHBORD_PORT": "8080", "MEMORY_PROFILE": "cpu", "PATH": "/bin"}, env_file)
    assert lines == [
        "LLM_MODLE (in .env) is not a setting this bot reads, so it does nothing: did you mean LLM_MODEL?",
        "MEMORY_DASHBORD_PORT (in the environment) is not a setting this bot reads, so it does nothing: did you "
        "mean MEMORY_DASHBOARD_PORT?",
    ]


def test_a_command_warns_once_of_a_misspelled_setting(tmp_path: Path) -> None:
    environ = {name: value for name, value in os.environ.items() if name != "LOG_LEVEL"}
    environ["MEMORY_DASHBORD_PORT"] = "8080"
    done = subprocess.run([sys.executable, "-m", "cogs.memory", "--db", str(tmp_path / "m.sqlite3"), "check"],
                          cwd=REPO, env=environ, capture_output=True, text=True, timeout=300)
    assert done.stderr.count("MEMORY_DASHBORD_PORT") == 1, done.stderr
    assert "did you mean MEMORY_DASHBOARD_PORT?" in done.stderr
