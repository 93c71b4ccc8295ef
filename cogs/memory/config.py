"""The process's configuration in one place: where memory keeps its files, and the devices and dtypes models use."""

from __future__ import annotations

from pathlib import Path

__all__ = ("DATA_DIR", "DB_PATH", "DEVICES", "DTYPES", "INDEX_DIR", "PROFILES_DIR", "PROFILE_CHOICE_PATH", "ROOT")

# The bot's folder, wherever the process runs from.
ROOT = Path(__file__).resolve().parents[2]
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
