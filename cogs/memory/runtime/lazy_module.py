"""A module imported on its first attribute use, so a command that never touches it never pays for it (FAISS for
``stats``, ``forget``... a light command loads no index: docs/operations.md)."""

from __future__ import annotations

import importlib
import threading
from types import ModuleType
from typing import Any

__all__ = ("LazyModule",)


class LazyModule:
    """Stands for the module ``name``: the first attribute read imports it (once, whichever thread reads first)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None
        self._lock = threading.Lock()

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            with self._lock:
                if self._module is None:
                    self._module = importlib.import_module(self._name)
                module = self._module
        return getattr(module, attribute)
