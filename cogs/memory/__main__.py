"""``python -m cogs.memory``: the admin's command line (cogs/memory/cli/); ``discord-memory`` runs the same ``main``."""

from .cli import main, parse_args, run

__all__ = ("main", "parse_args", "run")

if __name__ == "__main__":
    raise SystemExit(main())
