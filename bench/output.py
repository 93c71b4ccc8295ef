"""What every benchmark does with its figures: print them as JSON, and write them to a file when asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ("report",)


def report(result: dict[str, Any], path: Path | None) -> None:
    """Print `result` as JSON, and write it to `path` too when one is given."""
    text = json.dumps(result, indent=2)
    print(text)
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
