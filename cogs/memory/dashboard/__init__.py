"""The admin web dashboard: pages, a JSON API and /metrics, served by the bot's own event loop (server.Dashboard),
and the terminal's ``dashboard-link`` command (cli).

Owns its web server, sign-in, templates and the per-guild gauges. It reaches memory only through
``source.DashboardSource``; ``memory_source`` is the one module that imports the ``Memory`` facade.

May import: ``records``, ``metrics`` (the recorder it shares with the Discord surface), ``runtime`` and, in
``memory_source``, the facade; never the Discord surface (``cog``) or the terminal (``cli``), which sit beside it.
The bot (bot.py) starts it; the terminal's root (``cogs/memory/__main__.py``) registers its command. Importing
the package loads nothing, so the terminal does not pay for the web server.
"""
