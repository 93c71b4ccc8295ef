"""The README's "Try it without Discord" is the script CI runs (scripts/try_without_discord.sh): every terminal
command the README shows there, the script runs too, so the path an admin follows is the one tested."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "try_without_discord.sh"


def readme_section(title: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    return text[start:text.index("\n## ", start + 1)]


def test_the_script_runs_each_command_the_readme_shows() -> None:
    shown = re.findall(r"-m cogs\.memory ([a-z-]+)", readme_section("Try it without Discord"))
    script = SCRIPT.read_text(encoding="utf-8")
    run = set(re.findall(r"^(?:if )?memory ([a-z-]+)", script, flags=re.M))
    run |= set(re.findall(r'^"\$PYTHON" -m cogs\.memory ([a-z-]+)', script, flags=re.M))  # one served meanwhile
    assert shown and set(shown) <= run, set(shown) - run


def test_ci_runs_the_script() -> None:
    assert "scripts/try_without_discord.sh" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert SCRIPT.stat().st_mode & 0o111  # executable, as CI calls it
