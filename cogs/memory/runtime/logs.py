"""The process's logging: one handler on the root logger, at the level ``LOG_LEVEL`` and ``-v``/``-q`` ask for, and
each library's records printed once, through it."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType

__all__ = ("LEVEL_STEP", "LIBRARIES", "OncePerMessage", "Demoted", "chosen_level", "is_terminal", "logger_levels",
           "plain_formatter", "quiet_libraries", "route_library_logs")

# One -v or -q moves one level: WARNING -> INFO -> DEBUG, WARNING -> ERROR -> CRITICAL.
LEVEL_STEP = logging.INFO - logging.DEBUG
# Libraries whose loggers set a level of their own (WARNING), so the root's level alone would not silence them, and
# print through a handler of their own (transformers instead of ours, huggingface_hub besides it: twice).
LIBRARIES = ("transformers", "huggingface_hub")
# Their records (and ``warnings.warn``'s) repeat: a warning per model load, per offline retry, per tokenizer.
REPEATING = (*LIBRARIES, "sentence_transformers", "py.warnings")
# How many distinct library messages are remembered to print each once; later new ones print, unremembered.
REMEMBERED_MESSAGES = 4096
# Loggers kept at WARNING unless MEMORY_LOG_LEVELS names them: aiosqlite logs every statement at DEBUG.
QUIETED = ("aiosqlite",)
# faiss.loader's INFO (which CPU build it loaded, and the ModuleNotFoundError of each faster build it probed for):
# shown at DEBUG, as what it is.
DEMOTED = ("faiss.loader",)
# discord.py warns at each client's creation that voice is unsupported (PyNaCl, davey): the bot has no voice.
VOICE_UNSUPPORTED = "voice will NOT be supported"
# Log lines off a terminal, in discord.py's own layout without its colours.
PLAIN_FORMAT = "[{asctime}] [{levelname:<8}] {name}: {message}"


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


class Demoted(logging.Filter):
    """Shows a logger's INFO records as DEBUG ones: printed only when the root logs at DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)


class _NoVoiceWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return VOICE_UNSUPPORTED not in record.getMessage()


def logger_levels(setting: str | None) -> dict[str, int]:
    """MEMORY_LOG_LEVELS's ``aiosqlite=DEBUG,discord.gateway=INFO`` as {logger: level}; raises ValueError."""
    levels: dict[str, int] = {}
    for part in (setting or "").replace(";", ",").split(","):
        if not part.strip():
            continue
        name, _, level = part.partition("=")
        number = logging.getLevelName(level.strip().upper())
        if not name.strip() or not isinstance(number, int):
            raise ValueError("must be logger=LEVEL pairs joined by commas, such as aiosqlite=DEBUG")
        levels[name.strip()] = number
    return levels


def quiet_libraries(levels: Mapping[str, int] | None = None) -> None:
    """Our DEBUG readable and our log honest: aiosqlite at WARNING, faiss's probing at DEBUG, no voice warnings;
    ``levels`` (MEMORY_LOG_LEVELS) set any logger's level, aiosqlite's included."""
    for name in QUIETED:
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in DEMOTED:
        demoted = logging.getLogger(name)
        if not any(isinstance(existing, Demoted) for existing in demoted.filters):
            demoted.addFilter(Demoted())
    voice = logging.getLogger("discord.client")
    if not any(isinstance(existing, _NoVoiceWarning) for existing in voice.filters):
        voice.addFilter(_NoVoiceWarning())
    for name, level in (levels or {}).items():
        logging.getLogger(name).setLevel(level)


def plain_formatter() -> logging.Formatter:
    return logging.Formatter(PLAIN_FORMAT, "%Y-%m-%d %H:%M:%S", style="{")


def route_library_logs() -> None:
    """Sends library records through the root handler alone, at the root's level, each once: drops the handlers
    transformers and huggingface_hub print through, lets their records propagate, sets their loggers to the root's
    level (their INFO only at DEBUG: it is chatty), turns ``warnings.warn`` into log records, and drops a library
    record already printed. Off a terminal, or quieter than WARNING, their progress bars ("Loading weights") are off:
    carriage returns do not belong in a log file. Call it once the root handler is set up.

    Neither library is imported for it (transformers imports torch: seconds and hundreds of MB a light command
    never needs): each is routed as it is imported, or now when it already is."""
    root = logging.getLogger()
    logging.captureWarnings(True)
    for handler in root.handlers:
        if not any(isinstance(existing, OncePerMessage) for existing in handler.filters):
            handler.addFilter(OncePerMessage())
    routes: dict[str, Callable[[ModuleType], None]] = {
        "huggingface_hub.utils.logging": lambda _: _route("huggingface_hub"),
        "transformers.utils.logging": _route_transformers,
    }
    for module_name, route in routes.items():
        module = sys.modules.get(module_name)
        if module is not None:
            route(module)
        else:
            _RouteOnImport.add(module_name, route)


def _route(name: str) -> None:
    root = logging.getLogger()
    library = logging.getLogger(name)
    for handler in list(library.handlers):
        library.removeHandler(handler)
    library.propagate = True
    library.setLevel(max(root.level, logging.INFO if root.level <= logging.DEBUG else logging.WARNING))


def _route_transformers(transformers_logging: ModuleType) -> None:
    transformers_logging.disable_default_handler()
    _route("transformers")
    if logging.getLogger().level > logging.WARNING or not is_terminal():
        transformers_logging.disable_progress_bar()  # huggingface_hub's bars too


class _RouteOnImport(importlib.abc.MetaPathFinder):
    """Runs a module's route right after the module is first imported (its handler is added on import)."""

    routes: dict[str, Callable[[ModuleType], None]] = {}

    @classmethod
    def add(cls, module_name: str, route: Callable[[ModuleType], None]) -> None:
        cls.routes[module_name] = route
        if not any(isinstance(finder, cls) for finder in sys.meta_path):
            sys.meta_path.insert(0, cls())

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        route = self.routes.pop(fullname, None)
        if route is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _ThenRoute(spec.loader, route)
        return spec


class _ThenRoute(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, route: Callable[[ModuleType], None]) -> None:
        self._loader, self._route = loader, route

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._route(module)

    def __getattr__(self, name: str) -> object:  # get_source, is_package...: the real loader's
        return getattr(self._loader, name)


def is_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except ValueError:  # a closed stream
        return False
