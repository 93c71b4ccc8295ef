"""A memory of two guilds imported from DiscordChatExporter JSON, and the CLI driven as ``main`` drives it."""

import io
import json
from pathlib import Path

import pytest

from cogs.memory.cli import parse_args, run


class Keyboard(io.StringIO):
    """stdin as a terminal (or not) with the admin's answer already typed."""

    def __init__(self, answer: str = "", tty: bool = True) -> None:
        super().__init__(answer)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def message(message_id: int, content: str, minute: int, author: int = 5, name: str = "alice") -> dict:
    return {
        "id": str(message_id), "type": "Default", "timestamp": f"2024-05-01T12:{minute:02d}:00+00:00",
        "timestampEdited": None, "content": content,
        "author": {"id": str(author), "name": name, "discriminator": "0", "nickname": None, "isBot": False},
        "attachments": [], "embeds": [],
    }


def export(path: Path, guild: int, channel: int, messages: list[dict], guild_name: str = "Picnic Club",
           channel_name: str = "general") -> Path:
    path.write_text(json.dumps({
        "guild": {"id": str(guild), "name": guild_name},
        "channel": {"id": str(channel), "type": "GuildTextChat", "categoryId": None, "name": channel_name},
        "messages": messages,
    }), encoding="utf-8")
    return path


@pytest.fixture
def cli(tmp_path, tiny_profiles_dir):
    """Runs one command on a memory under ``tmp_path``; returns (exit code, stdout, stderr)."""
    async def call(*argv: str, stdin: io.StringIO | None = None) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        base = ["--db", str(tmp_path / "data" / "m.sqlite3"), "--index-dir", str(tmp_path / "data" / "idx"),
                "--profile", str(tiny_profiles_dir / "tiny-a.toml")]
        code = await run(parse_args([*base, *argv]), out, err, Keyboard(tty=False) if stdin is None else stdin)
        return code, out.getvalue(), err.getvalue()

    return call


@pytest.fixture
async def two_guilds(cli, tmp_path):
    """Guild 1, "Picnic Club": #general 20 (alice 5 at 12:00 and 12:01, bob 6 at 12:02) and #photos 21 (bob at
    12:05). Guild 2, whose export names nothing: one message in channel 40. All imported."""
    exports = tmp_path / "exports"  # apart from the data folder, which tests search for erased text
    exports.mkdir()
    files = [
        export(exports / "g1c20.json", 1, 20, [message(30, "the picnic moved to Saturday", 0),
                                                 message(31, "bring blankets to the picnic", 1),
                                                 message(32, "I will bake a picnic cake", 2, author=6, name="bob")]),
        export(exports / "g1c21.json", 1, 21, [message(33, "picnic photos are up", 5, author=6, name="bob")],
               channel_name="photos"),
        export(exports / "g2.json", 2, 40, [message(50, "hello from the other server", 0)], guild_name="",
               channel_name=""),
    ]
    code, _, err = await cli("import", *map(str, files))
    assert code == 0, err
    return tmp_path / "data" / "m.sqlite3"
