"""The process's configuration in one place: where memory keeps its files, and the devices and dtypes models use."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ("DATABASE_URL_ENV", "DATA_DIR", "DB_PATH", "DEVICES", "DTYPES", "INDEX_DIR", "PROFILES_DIR",
           "PROFILE_CHOICE_PATH", "ROOT", "database_url")

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

# Set (in the environment or .env) to keep memory in PostgreSQL + pgvector instead of the SQLite file.
DATABASE_URL_ENV = "DATABASE_URL"
_POSTGRESQL_SCHEMES = ("postgresql://", "postgres://")


def database_url(environ: Mapping[str, str] | None = None) -> str | None:
    """The PostgreSQL URL memory should use, or None for the embedded SQLite default.

    launcher.py loads .env into the environment first, so a value there counts too.
    """
    value = (os.environ if environ is None else environ).get(DATABASE_URL_ENV, "").strip()
    if not value:
        return None
    if not value.startswith(_POSTGRESQL_SCHEMES):
        scheme = value.split(":", 1)[0]
        raise ValueError(f"{DATABASE_URL_ENV} must be a postgresql:// URL (or unset for SQLite), not {scheme}:...")
    return value
