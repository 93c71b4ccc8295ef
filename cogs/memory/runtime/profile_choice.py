"""Which profile this process runs with: an admin's saved choice first, else ``MEMORY_PROFILE`` or the hardware."""

from __future__ import annotations

import logging
from pathlib import Path

from .private_files import make_private_folder, open_private
from .profile import MemoryProfile, load_profile, select_profile

__all__ = ("saved_or_selected_profile", "save_profile_choice")

log = logging.getLogger(__name__)


def saved_or_selected_profile(choice_path: Path, profiles_dir: Path, override: str | None = None) -> MemoryProfile:
    """Blocking (reads files, probes hardware): call it off the event loop. ``override`` is ``MEMORY_PROFILE``."""
    try:
        saved = choice_path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        saved = ""
    if saved:
        log.info("Using profile %r saved by /memory profile set (%s)", saved, choice_path)
        return load_profile(saved, profiles_dir)
    return select_profile(profiles_dir=profiles_dir, override=override)


def save_profile_choice(choice_path: Path, name: str) -> None:
    """Atomically records the chosen profile name so the next start uses it (blocking)."""
    make_private_folder(choice_path.parent)
    temporary = choice_path.with_suffix(".tmp")
    with open_private(temporary) as file:
        file.write((name + "\n").encode())
    temporary.replace(choice_path)
