"""The process's configuration in one place: where memory keeps its files, the devices and dtypes models use, and
``Settings``, every variable the bot and the CLI read from the environment and ``.env`` (pydantic-settings)."""

from __future__ import annotations

import contextvars
import ipaddress
import os
import re
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, ClassVar, get_args
from urllib.parse import parse_qs, urlsplit

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.sources.utils import parse_env_vars

from .safe_text import shown_value

__all__ = ("DATA_DIR", "DB_PATH", "DEVICES", "DTYPES", "ENV_FILE", "INDEX_DIR", "LOG_LEVELS", "PROFILES_DIR",
           "PROFILE_CHOICE_PATH", "ROOT", "Settings", "SettingsError", "export_library_variables", "is_loopback_host",
           "load_settings", "postgres_url_problem", "takes_credentials", "unknown_variables", "warn_unknown_variables")

# The bot's folder, wherever the process runs from.
ROOT = Path(__file__).resolve().parents[3]
PROFILES_DIR = ROOT / "profiles"
DATA_DIR = ROOT / "data"
DB_PATH = DATA_DIR / "memory.sqlite3"
INDEX_DIR = DATA_DIR / "indexes"
# A local reranker's ONNX Runtime export, one folder per model, revision and dtype.
ONNX_DIR = DATA_DIR / "onnx"
# The admin's `/memory profile set` choice, kept beside the database so it survives restarts.
PROFILE_CHOICE_PATH = DATA_DIR / "profile.txt"

# "auto" is resolved once per profile (profile.resolve_device) and the result handed to every model.
DEVICES = ("cpu", "cuda", "mps", "auto")
# torch's names for them: torch.float32, ...
DTYPES = ("float32", "bfloat16", "float16")

# Read by both entry points (launcher.py, python -m cogs.memory); a variable set in the environment wins over it.
ENV_FILE = ROOT / ".env"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
# SQLite holds signed 64-bit integers, and no Discord id (a snowflake) reaches 2**63.
_SNOWFLAKE_END = 2**63
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# The sslmode values asyncpg takes.
SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_IPV6_HOST = re.compile(r"\[[^\]]+\](?::[0-9]*)?")
# A variable with one of these prefixes that no setting reads is a typo until shown otherwise (MEMORY_DASHBORD_PORT).
OUR_PREFIXES = ("MEMORY_", "DISCORD_", "LLM_")
# Read outside Settings: the restore test's crash point (store/sqlite/restore_journal.py).
OTHER_VARIABLES = ("MEMORY_RESTORE_KILL_AT",)


class SettingsError(ValueError):
    """Some settings are wrong: ``lines`` says which, one line each, naming the variable and what it takes (and the
    value, never its password, key or token)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


def _snowflake(value: str, what: str) -> int:
    text = value.strip()
    if not text.isdigit() or not 0 < int(text) < _SNOWFLAKE_END:
        raise ValueError(f"must be {what} (a number)")
    return int(text)


def postgres_url_problem(url: str) -> str | None:
    """What keeps asyncpg from reading ``url`` (stripped) as a PostgreSQL server's address, as ``must be ...``; None
    when it reads. Checked before memory opens, so that a typo is a setting's error, never a traceback; the words
    never quote the URL (the caller shows it redacted)."""
    if not url.startswith(POSTGRES_SCHEMES):
        return "must be a postgresql:// URL"
    try:
        parts = urlsplit(url)
        query = parse_qs(parts.query, strict_parsing=True) if parts.query else {}
    except ValueError:  # a bracket without its pair, a query part without its =
        return ("must be a postgresql:// URL with any IPv6 host in brackets ([::1]:5432) and its query as name=value "
                "pairs joined by &")
    hosts = parts.netloc.rpartition("@")[2]
    specs = hosts.split(",") if hosts else []
    if any(not spec for spec in specs):
        return "must be a postgresql:// URL whose hosts are named, joined by commas"
    ports = [port for listed in query.get("port", []) for port in listed.split(",")]
    for spec in specs:
        if spec.startswith("["):
            if _IPV6_HOST.fullmatch(spec) is None:
                return "must be a postgresql:// URL with any IPv6 host in brackets, such as [::1]:5432"
            ports += [spec.partition("]:")[2]]
        elif not spec.startswith("/"):  # not a unix socket's folder
            ports += [spec.partition(":")[2]]
    if any(port and not (port.isdigit() and 0 < int(port) < 65536) for port in ports):
        return ("must be a postgresql:// URL whose ports are numbers from 1 to 65535 (a / ? # or @ in the password "
                "written %2F %3F %23 %40)")
    if any(mode not in SSL_MODES for mode in query.get("sslmode", [])):
        return f"must be a postgresql:// URL whose sslmode is one of {', '.join(SSL_MODES)}"
    return None


class Settings(BaseSettings):
    """Every variable the bot and the CLI read, with its default; secrets are ``SecretStr`` (never logged).

    Names are the variables' names, case-insensitive; an empty value counts as unset.
    """

    model_config = SettingsConfigDict(env_file=ENV_FILE, env_file_encoding="utf-8", env_ignore_empty=True,
                                      extra="ignore", frozen=True)

    discord_token: SecretStr | None = None
    # http://host:port: the bot reaches Discord (its API and gateway) through this HTTP proxy; it may hold user:pass@.
    discord_proxy: str | None = None
    # postgresql://... keeps memory in PostgreSQL + pgvector instead of the SQLite file.
    database_url: SecretStr | None = None
    dev_guild_id: int | None = None
    bot_admin_ids: Annotated[frozenset[int], NoDecode] = frozenset()
    memory_store_dms: bool = False
    # A profile name or a .toml path, instead of the hardware's choice (an admin's saved choice still wins).
    memory_profile: str | None = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    memory_dashboard_port: int | None = None
    # A MEMORY_DASHBOARD_HOST other machines reach (0.0.0.0, a LAN address) is refused unless this says so.
    memory_dashboard_public: bool = False
    memory_dashboard_host: str = "127.0.0.1"
    # The address a browser uses when it is not http://HOST:PORT (behind a TLS reverse proxy).
    memory_dashboard_url: str | None = None
    memory_dashboard_metrics_token: SecretStr | None = None
    log_level: str | None = None
    # logger=LEVEL pairs (aiosqlite=DEBUG,discord.gateway=INFO): a library's level, aiosqlite's WARNING included.
    memory_log_levels: str | None = None

    # The environment read instead of os.environ (tests, and load_settings(environ=...)).
    _environ: ClassVar[contextvars.ContextVar[Mapping[str, str] | None]] = contextvars.ContextVar("environ",
                                                                                                  default=None)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        environ = cls._environ.get()
        if environ is not None:
            env_settings = _MappingSource(settings_cls, environ)
        return init_settings, env_settings, dotenv_settings

    @field_validator("database_url", mode="before")
    @classmethod
    def _postgresql_url(cls, value: Any) -> Any:
        text = value.strip() if isinstance(value, str) else value
        problem = postgres_url_problem(text) if isinstance(text, str) and text else None
        if problem is not None:
            raise ValueError(problem if text.startswith(POSTGRES_SCHEMES) else f"{problem} (or unset for SQLite)")
        return text or None

    @field_validator("discord_proxy", mode="before")
    @classmethod
    def _proxy_url(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        text = value.strip()
        parts = urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an HTTP proxy's URL, such as http://127.0.0.1:3128 or http://user:pass@host:3128")
        return text

    @field_validator("dev_guild_id", mode="before")
    @classmethod
    def _guild_id(cls, value: Any) -> Any:
        return _snowflake(value, "a Discord server id") if isinstance(value, str) else value

    @field_validator("bot_admin_ids", mode="before")
    @classmethod
    def _admin_ids(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        parts = value.replace(",", " ").split()
        if not all(part.isdigit() and 0 < int(part) < _SNOWFLAKE_END for part in parts):
            raise ValueError("must be Discord user ids separated by commas")
        return frozenset(int(part) for part in parts)

    @field_validator("memory_store_dms", "memory_dashboard_public", mode="before")
    @classmethod
    def _yes_or_no(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise ValueError("must be 1 or 0 (true/false, yes/no, on/off)")

    @field_validator("llm_base_url", "memory_dashboard_url", mode="before")
    @classmethod
    def _http_url(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        text = value.strip().rstrip("/")
        if urlsplit(text).scheme not in ("http", "https") or not urlsplit(text).netloc:
            raise ValueError("must be an http:// or https:// URL")
        return text

    @field_validator("llm_model", "memory_profile", "memory_dashboard_host", mode="before")
    @classmethod
    def _stripped(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator("memory_dashboard_host")
    @classmethod
    def _public_on_purpose(cls, value: str, info: ValidationInfo) -> str:
        # Fields are checked in the order they are declared: the port and MEMORY_DASHBOARD_PUBLIC come first.
        if info.data.get("memory_dashboard_port") and not info.data.get("memory_dashboard_public") and not (
                is_loopback_host(value)):
            raise ValueError("lets other machines reach the dashboard: set MEMORY_DASHBOARD_PUBLIC=1 to mean it (and "
                             "put TLS in front), or use 127.0.0.1")
        return value

    @field_validator("memory_dashboard_port", mode="before")
    @classmethod
    def _port(cls, value: Any) -> Any:
        if isinstance(value, str) and (not value.strip().isdigit() or not 1 <= int(value) <= 65535):
            raise ValueError("must be a port number from 1 to 65535")
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _level(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value.strip().upper() not in LOG_LEVELS:
                raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
            return value.strip().upper()
        return value

    @field_validator("memory_log_levels", mode="before")
    @classmethod
    def _logger_levels(cls, value: Any) -> Any:
        if isinstance(value, str):
            from .logs import logger_levels

            logger_levels(value)  # raises ValueError saying what it takes
            return value.strip()
        return value

    @property
    def logger_levels(self) -> dict[str, int]:
        """MEMORY_LOG_LEVELS as {logger: level}."""
        from .logs import logger_levels

        return logger_levels(self.memory_log_levels)

    @property
    def database(self) -> str | None:
        """The PostgreSQL URL memory should use, or None for the embedded SQLite default."""
        return None if self.database_url is None else self.database_url.get_secret_value()


class _MappingSource(EnvSettingsSource):
    """The environment source, reading a given mapping instead of ``os.environ``."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._mapping = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self._mapping, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str)


@contextmanager
def _reading(environ: Mapping[str, str] | None) -> Iterator[None]:
    token = Settings._environ.set(environ)
    try:
        yield
    finally:
        Settings._environ.reset(token)


def load_settings(environ: Mapping[str, str] | None = None, env_file: Path | None = ENV_FILE) -> Settings:
    """The settings from ``environ`` (default: the process environment) over ``env_file``; raises ``SettingsError``
    with one line per bad value."""
    try:
        with _reading(environ):
            return Settings(_env_file=env_file)
    except ValidationError as error:
        raise SettingsError([_error_line(problem) for problem in error.errors()]) from None


def export_library_variables(env_file: Path | None = ENV_FILE, environ: MutableMapping[str, str] | None = None,
                             ) -> list[str]:
    """Puts the lines of ``env_file`` that are not settings (HF_HOME, HF_HUB_OFFLINE, CUDA_VISIBLE_DEVICES ...) into
    the environment, where the libraries that read them look; a variable already set wins. The settings themselves
    (tokens and keys among them) stay out of it, so child processes never inherit them. Returns the names set."""
    from dotenv import dotenv_values

    environ = os.environ if environ is None else environ
    if env_file is None or not env_file.is_file():
        return []
    ours = {name.upper() for name in Settings.model_fields}
    exported = {name: value for name, value in dotenv_values(env_file).items()
                if value is not None and name.upper() not in ours and name not in environ}
    environ.update(exported)
    return sorted(exported)


def is_loopback_host(host: str) -> bool:
    """Whether an address to bind (a name or an IP) is this machine's alone: localhost, 127.0.0.0/8, ::1."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:  # a host name, or "" (every address): other machines may reach it
        return False


def takes_credentials(name: str) -> bool:
    """Whether setting ``name`` may hold a password, a key or a token: a secret, or a URL (its ``user:password@``,
    its query)."""
    annotation = Settings.model_fields[name].annotation
    return name.endswith(("_url", "_proxy")) or SecretStr in (annotation, *get_args(annotation))


def _error_line(problem: Any) -> str:
    """One bad value in one line: the variable, what it takes, and the value as ``shown_value`` shows it (the one
    place a setting's value goes into an error)."""
    field = str(problem["loc"][0]) if problem["loc"] else None
    message = problem["msg"].removeprefix("Value error, ")
    line = f"{field.upper()} {message}" if field and problem["type"] == "value_error" else (
        f"{field.upper() if field else 'settings'}: {message}")
    value = problem.get("input")
    if not isinstance(value, str):
        return line
    credentials = field is None or field not in Settings.model_fields or takes_credentials(field)
    return f"{line}, not {shown_value(value, credentials=credentials)}"


def unknown_variables(environ: Mapping[str, str] | None = None, env_file: Path | None = ENV_FILE) -> list[str]:
    """One line per ``MEMORY_*``/``DISCORD_*``/``LLM_*`` variable of the environment or ``env_file`` that no setting
    reads, naming the closest setting (difflib), else those of its prefix."""
    import difflib

    from dotenv import dotenv_values

    environ = os.environ if environ is None else environ
    known = sorted({name.upper() for name in Settings.model_fields} | set(OTHER_VARIABLES))
    found = {name.upper(): "the environment" for name in environ}
    if env_file is not None and env_file.is_file():
        for name in dotenv_values(env_file):
            found.setdefault(name.upper(), env_file.name)
    lines = []
    for name, where in sorted(found.items()):
        if not name.startswith(OUR_PREFIXES) or name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        prefix = name.partition("_")[0] + "_"
        siblings = ", ".join(other for other in known if other.startswith(prefix))
        hint = f"did you mean {close[0]}?" if close else f"the {prefix}* settings are {siblings}"
        lines.append(f"{name} (in {where}) is not a setting this bot reads, so it does nothing: {hint}")
    return lines


def warn_unknown_variables(env_file: Path | None = ENV_FILE) -> None:
    """Logs ``unknown_variables`` once each, at WARNING (both entry points call it once logging is set up)."""
    import logging

    for line in unknown_variables(env_file=env_file):
        logging.getLogger(__name__).warning("%s", line)
