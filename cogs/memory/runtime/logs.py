"""The process's logging: one handler on the root logger, at the level ``LOG_LEVEL`` and ``-v``/``-q`` ask for, and
each library's records printed once, through it."""

from __future__ import annotations

import logging
import sys

__all__ = ("LEVEL_STEP", "LIBRARIES", "OncePerMessage", "chosen_level", "route_library_logs")

# One -v or -q moves one level: WARNING -> INFO -> DEBUG, WARNING -> ERROR -> CRITICAL.
LEVEL_STEP = logging.INFO - logging.DEBUG
# Libraries whose loggers set a level of their own (WARNING), so the root's level alone would not silence them, and
# print through a handler of their own (transformers instead of ours, huggingface_hub besides it: twice).
LIBRARIES = ("transformers", "huggingface_hub")
# Their records (and ``warnings.warn``'s) repeat: a warning per model load, per offline retry, per tokenizer.
REPEATING = (*LIBRARIES, "sentence_transformers", "py.warnings")
# How many distinct library messages are remembered to print each once; later new ones print, unremembered.
REMEMBERED_MESSAGES = 4096


def chosen_level(setting: str | None, verbose: int = 0, quiet: int = 0, default: int = logging.INFO) -> int:
    """The level to log at: ``LOG_LEVEL`` (or ``default``), moved one step down per ``-v`` and up per ``-q``."""
    base = default if setting is None else logging.getLevelName(setting.upper())
    return min(max(base + (quiet - verbose) * LEVEL_STEP, logging.DEBUG), logging.CRITICAL)


class OncePerMessage(logging.Filter):
    """Lets a library's record through the first time its logger, level and text are seen, and drops repeats."""

    def __init__(self, names: tuple[str, ...] = REPEATING, remembered: int = REMEMBERED_MESSAGES) -> None:
        super().__init__()
        self._names = names
        self._remembered = remembered
        self._seen: set[tuple[str, int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(self._names):
            return True
        key = (record.name, record.levelno, record.getMessage())
        if key in self._seen:
            return False
        if len(self._seen) < self._remembered:
            self._seen.add(key)
        return True


def route_library_logs() -> None:
    """Sends library records through the root handler alone, at the root's level, each once: drops the handlers
    transformers and huggingface_hub print through, lets their records propagate, sets their loggers to the root's
    level (their INFO only at DEBUG: it is chatty), turns ``warnings.warn`` into log records, and drops a library
    record already printed. Off a terminal, or quieter than WARNING, their progress bars ("Loading weights") are off:
    carriage returns do not belong in a log file. Call it once the root handler is set up."""
    import huggingface_hub.utils.logging  # noqa: F401 - adds its handler on import: import it first, then drop it
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_default_handler()
    root = logging.getLogger()
    level = max(root.level, logging.INFO if root.level <= logging.DEBUG else logging.WARNING)
    for name in LIBRARIES:
        library = logging.getLogger(name)
        for handler in list(library.handlers):
            library.removeHandler(handler)
        library.propagate = True
        library.setLevel(level)
    logging.captureWarnings(True)
    for handler in root.handlers:
        if not any(isinstance(existing, OncePerMessage) for existing in handler.filters):
            handler.addFilter(OncePerMessage())
    if root.level > logging.WARNING or not _is_terminal():
        transformers_logging.disable_progress_bar()  # huggingface_hub's bars too


def _is_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except ValueError:  # a closed stream
        return False
