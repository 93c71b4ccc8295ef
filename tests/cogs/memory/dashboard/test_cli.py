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
