"""``Settings``: every variable the bot and the CLI read, from the environment over ``.env``, checked at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogs.memory.runtime.config import (Settings, SettingsError, export_library_variables, load_settings,
                                        takes_credentials)
from tests.fixtures.credentials import CASES, FORMS, SECRET, TAKES_ANY_TEXT, refused_lines


def test_nothing_set_means_the_defaults() -> None:
    settings = load_settings({}, None)
    assert (settings.discord_token, settings.database, settings.dev_guild_id, settings.bot_admin_ids,
            settings.memory_store_dms, settings.memory_profile, settings.llm_base_url, settings.memory_dashboard_port,
            settings.memory_dashboard_host, settings.log_level) == (
        None, None, None, frozenset(), False, None, None, None, "127.0.0.1", None)


def test_an_empty_value_counts_as_unset() -> None:
    settings = load_settings({"DATABASE_URL": "", "DEV_GUILD_ID": "", "LOG_LEVEL": ""}, None)
    assert (settings.database, settings.dev_guild_id, settings.log_level) == (None, None, None)


def test_each_variable_is_read_into_its_type() -> None:
    settings = load_settings({
        "DISCORD_TOKEN": "tok", "DATABASE_URL": "postgresql://bot@db/memory", "DEV_GUILD_ID": " 123 ",
        "BOT_ADMIN_IDS": "1, 2 3", "MEMORY_STORE_DMS": "yes", "MEMORY_PROFILE": "cpu-small",
        "LLM_BASE_URL": "http://localhost:11434/v1/", "LLM_MODEL": "llama3", "LLM_API_KEY": "sk",
        "MEMORY_DASHBOARD_PORT": "8765", "MEMORY_DASHBOARD_HOST": "0.0.0.0", "MEMORY_DASHBOARD_PUBLIC": "1",
        "MEMORY_DASHBOARD_URL": "https://memory.example.org/", "MEMORY_DASHBOARD_METRICS_TOKEN": "m",
        "LOG_LEVEL": "debug",
    }, None)
    assert settings.discord_token is not None and settings.discord_token.get_secret_value() == "tok"
    assert (settings.database, settings.dev_guild_id, settings.bot_admin_ids, settings.memory_store_dms,
            settings.memory_profile) == ("postgresql://bot@db/memory", 123, frozenset({1, 2, 3}), True, "cpu-small")
    assert (settings.llm_base_url, settings.llm_model, settings.llm_api_key.get_secret_value()) == (
        "http://localhost:11434/v1", "llama3", "sk")
    assert (settings.memory_dashboard_port, settings.memory_dashboard_host, settings.memory_dashboard_public,
            settings.memory_dashboard_url, settings.log_level) == (8765, "0.0.0.0", True, "https://memory.example.org",
                                                                   "DEBUG")


def test_secrets_never_show_in_the_settings_text() -> None:
    settings = load_settings({"DISCORD_TOKEN": "tok-123", "DATABASE_URL": "postgresql://bot:pw-456@db/m",
                              "LLM_API_KEY": "sk-789", "MEMORY_DASHBOARD_METRICS_TOKEN": "metrics-0"}, None)
    shown = f"{settings} {settings!r}"
    assert not any(secret in shown for secret in ("tok-123", "pw-456", "sk-789", "metrics-0"))


def test_the_env_file_is_read_and_the_environment_wins_over_it(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("DEV_GUILD_ID=111\nMEMORY_PROFILE=cpu-tiny\nSOMETHING_ELSE=kept out\n", encoding="utf-8")
    settings = load_settings({"DEV_GUILD_ID": "222"}, env_file)
    assert (settings.dev_guild_id, settings.memory_profile) == (222, "cpu-tiny")


def test_each_bad_value_is_one_line_naming_the_variable() -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings({"DEV_GUILD_ID": "myserver", "BOT_ADMIN_IDS": "alice", "MEMORY_STORE_DMS": "maybe",
                       "MEMORY_DASHBOARD_PORT": "99999", "LLM_BASE_URL": "localhost:11434", "LOG_LEVEL": "loud",
                       "MEMORY_DASHBOARD_URL": "ftp://x"}, None)
    assert sorted(refused.value.lines) == sorted([
        "DEV_GUILD_ID must be a Discord server id (a number), not 'myserver'",
        "BOT_ADMIN_IDS must be Discord user ids separated by commas, not 'alice'",
        "MEMORY_STORE_DMS must be 1 or 0 (true/false, yes/no, on/off), not 'maybe'",
        "MEMORY_DASHBOARD_PORT must be a port number from 1 to 65535, not '99999'",
        "LLM_BASE_URL must be an http:// or https:// URL, not a value without scheme:// (not shown: it may be a key)",
        "LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, not 'loud'",
        "MEMORY_DASHBOARD_URL must be an http:// or https:// URL, not 'ftp://x'",
    ])


def test_a_bad_value_in_the_env_file_is_reported_too(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("DEV_GUILD_ID=myserver\n", encoding="utf-8")
    with pytest.raises(SettingsError) as refused:
        load_settings({}, env_file)
    assert refused.value.lines == ["DEV_GUILD_ID must be a Discord server id (a number), not 'myserver'"]


def test_a_database_url_of_another_kind_is_refused_without_showing_its_password() -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings({"DATABASE_URL": "mysql://bot:secret@db/memory"}, None)
    assert refused.value.lines == [
        "DATABASE_URL must be a postgresql:// URL (or unset for SQLite), not 'mysql://bot:***@db/memory'"]


def test_the_discord_proxy_is_an_http_url_and_a_bad_one_is_refused_without_showing_its_password() -> None:
    assert load_settings({"DISCORD_PROXY": " http://u:p@proxy:3128 "}, None).discord_proxy == "http://u:p@proxy:3128"
    with pytest.raises(SettingsError) as refused:
        load_settings({"DISCORD_PROXY": "socks5://u:hunter2@proxy:1080"}, None)
    assert refused.value.lines == [
        "DISCORD_PROXY must be an HTTP proxy's URL, such as http://127.0.0.1:3128 or http://user:pass@host:3128, not "
        "'socks5://u:***@proxy:1080'"]


def test_the_settings_that_may_hold_credentials_are_every_secret_and_every_url() -> None:
    assert {name for name in Settings.model_fields if takes_credentials(name)} == {
        "discord_token", "discord_proxy", "database_url", "llm_base_url", "llm_api_key", "memory_dashboard_url",
        "memory_dashboard_metrics_token"}


@pytest.mark.parametrize(("field", "form"), CASES)
def test_a_refused_value_is_named_without_its_credentials(field: str, form: str) -> None:
    lines = refused_lines({field.upper(): FORMS[form]})
    assert bool(lines) is (field not in TAKES_ANY_TEXT), lines
    assert all(line.startswith(field.upper()) and SECRET not in line for line in lines), lines


@pytest.mark.parametrize(("url", "line"), [
    ("postgresql://bot:pw@db:notaport/memory", "whose ports are numbers from 1 to 65535 (a / ? # or @ in the password "
                                               "written %2F %3F %23 %40), not 'postgresql://bot:***@db:***/memory'"),
    ("postgresql://bot:pw@db:99999/memory", "whose ports are numbers from 1 to 65535 (a / ? # or @ in the password "
                                            "written %2F %3F %23 %40), not 'postgresql://bot:***@db:99999/memory'"),
    ("postgresql://bot:pw@[::1/memory", "with any IPv6 host in brackets ([::1]:5432) and its query as name=value "
                                        "pairs joined by &, not 'postgresql://bot:***@[::1/memory'"),
    ("postgresql://bot:pw@db/memory?sslmode=on", "whose sslmode is one of disable, allow, prefer, require, verify-ca, "
                                                 "verify-full, not 'postgresql://bot:***@db/memory?sslmode=on'"),
    ("postgresql://bot:pw@a,,b/memory", "whose hosts are named, joined by commas, not "
                                        "'postgresql://bot:***@a,,b/memory'"),
])
def test_a_database_url_asyncpg_cannot_read_is_a_settings_error(url: str, line: str) -> None:
    assert refused_lines({"DATABASE_URL": url}) == [f"DATABASE_URL must be a postgresql:// URL {line}"]


@pytest.mark.parametrize("url", ["postgresql://bot:p%2Fw@db.example.org:5432/memory?sslmode=require",
                                 "postgres://bot@[::1]:5432,db2:5433/memory", "postgresql:///memory?host=/run/pg",
                                 "postgresql://db/memory?port=5433&connect_timeout=10"])
def test_a_database_url_asyncpg_reads_is_accepted(url: str) -> None:
    assert load_settings({"DATABASE_URL": url}, None).database == url


def test_a_blank_database_url_means_sqlite() -> None:
    assert load_settings({"DATABASE_URL": "  "}, None).database is None


def test_the_env_files_other_lines_reach_the_libraries_and_the_settings_do_not(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("DISCORD_TOKEN=tok\nLLM_API_KEY=sk\nHF_HUB_OFFLINE=1\nHF_HOME=/models\n", encoding="utf-8")
    environ = {"HF_HOME": "/already/set"}
    assert export_library_variables(env_file, environ) == ["HF_HUB_OFFLINE"]
    assert environ == {"HF_HOME": "/already/set", "HF_HUB_OFFLINE": "1"}
