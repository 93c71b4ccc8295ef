"""The process's logging: one handler on the root logger, at the level ``LOG_LEVEL`` and ``-v``/``-q`` ask for, and
each library's records printed once, through it."""

from __future__ import annotations

import logging

__all__ = ("LEVEL_STEP", "chosen_level", "route_library_logs")

# One -v or -q moves one level: WARNING -> INFO -> DEBUG, WARNING -> ERROR -> CRITICAL.
LEVEL_STEP = logging.INFO - logging.DEBUG
# Libraries that attach a handler of their own to their root logger while still propagating to ours, so that
# each of their records printed twice (huggingface_hub: every offline retry of a model download).
OWN_HANDLER_LIBRARIES = ("huggingface_hub",)


def chosen_level(setting: str | None, verbose: int = 0, quiet: int = 0, default: int = logging.INFO) -> int:
    """The level to log at: ``LOG_LEVEL`` (or ``default``), moved one step down per ``-v`` and up per ``-q``."""
    base = default if setting is None else logging.getLevelName(setting.upper())
    return min(max(base + (quiet - verbose) * LEVEL_STEP, logging.DEBUG), logging.CRITICAL)


def route_library_logs() -> None:
    """Sends library records through the root handler alone: drops the handlers huggingface_hub adds at import
    (its records also propagate, so they printed twice), and turns ``warnings.warn`` into log records (printed once,
    in the same format, and silenced by ``-q``)."""
    import huggingface_hub.utils.logging  # noqa: F401 - adds its handler on import: import it first, then drop it

    for name in OWN_HANDLER_LIBRARIES:
        library = logging.getLogger(name)
        for handler in list(library.handlers):
            library.removeHandler(handler)
        library.propagate = True
    logging.captureWarnings(True)
