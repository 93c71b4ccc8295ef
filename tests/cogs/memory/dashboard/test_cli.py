"""``dashboard-link`` is the dashboard's own command: the terminal's root adds it beside the CLI's commands, and the
command line a user types stays ``python -m cogs.memory dashboard-link``."""

from __future__ import annotations

import pytest

from cogs.memory import cli
from cogs.memory.__main__ import build_parser, parse_args
from cogs.memory.dashboard.cli import dashboard_link


def test_the_terminals_root_adds_dashboard_link_after_the_clis_own_commands() -> None:
    args = parse_args(["dashboard-link"])
    assert (args.handler, args.memory) == (dashboard_link, None)
    commands = next(action for action in build_parser()._actions if action.dest == "command")
    assert list(commands.choices)[-1] == "dashboard-link"


def test_the_cli_alone_knows_no_dashboard_command() -> None:
    with pytest.raises(SystemExit):
        cli.parse_args(["dashboard-link"])


def test_dashboard_serves_memory_read_only_where_data_says(tmp_path) -> None:
    import io

    from cogs.memory.cli.options import Terminal
    from cogs.memory.dashboard.standalone import choose_sources, serve_dashboard
    from cogs.memory.runtime.config import load_settings

    args = parse_args(["dashboard", "--data", str(tmp_path), "--port", "0"])
    assert (args.handler, args.memory, args.port) == (serve_dashboard, "read", 0)
    args.settings = load_settings({"DATABASE_URL": "postgresql://memory@db.example/memory"}, env_file=None)
    err = io.StringIO()
    assert choose_sources(args, Terminal(io.StringIO(), err, io.StringIO())) == 2  # nothing imported there yet
    assert err.getvalue().startswith(f"error: {tmp_path / 'memory.sqlite3'} does not exist: --data names the folder")
    (tmp_path / "memory.sqlite3").touch()
    assert choose_sources(args, Terminal(io.StringIO(), err, io.StringIO())) is None
    assert (args.db, args.index_dir) == (tmp_path / "memory.sqlite3", tmp_path / "indexes")
    assert args.settings.database is None  # --data names an SQLite memory, whatever DATABASE_URL says
    assert (args.dashboard_config.port, args.dashboard_config.token_dir) == (0, tmp_path / "dashboard")


def test_dashboard_takes_a_database_url_or_data_and_a_port_in_range() -> None:
    from cogs.memory.runtime.config import load_settings
    from cogs.memory.dashboard.standalone import DEFAULT_PORT, choose_sources

    args = parse_args(["dashboard", "postgresql://memory@db.example/memory"])
    args.settings = load_settings({}, env_file=None)
    assert choose_sources(args, None) is None  # type: ignore[arg-type]
    assert args.settings.database == "postgresql://memory@db.example/memory"
    assert args.dashboard_config.port == DEFAULT_PORT
    for wrong in (["dashboard", "--port", "70000"], ["dashboard", "--port", "８０"],
                  ["dashboard", "--data", "d", "postgresql://x@y/z"], ["dashboard", "mysql://x@y/z"]):
        with pytest.raises(SystemExit):
            parse_args(wrong)
