"""``python -m cogs.memory``: the terminal's composition root. The admin's command line (cogs/memory/cli/) with the
commands of the parts beside it (the dashboard's ``dashboard-link``); ``discord-memory`` runs the same ``main``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from . import cli
from .cli import run
from .dashboard import cli as dashboard_cli

__all__ = ("build_parser", "main", "parse_args", "run")

# Added after the CLI's own groups, in this order.
GROUPS: tuple[cli.CommandGroup, ...] = (dashboard_cli,)


def build_parser() -> argparse.ArgumentParser:
    return cli.build_parser(GROUPS)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return cli.parse_args(argv, GROUPS)


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(argv, GROUPS)


if __name__ == "__main__":
    raise SystemExit(main())
