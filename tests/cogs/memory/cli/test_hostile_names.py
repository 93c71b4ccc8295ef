"""Names and text from an export reach the admin's terminal shown, never obeyed: an escape sequence does not retitle
or clear it, a CR/LF does not forge an ``error:`` line, a bidi override does not reorder a line, in any command."""

import re
from pathlib import Path

import pytest
from aiohttp import web

from tests.cogs.memory.cli.conftest import export, message
from tests.fixtures.discord import chat_completions_server

TITLE = "\x1b]0;pwned\x07"  # retitles an xterm
FORGED = "\r\nerror: forged"  # a line of its own that looks like the CLI's
BIDI = "\u202e"  # right-to-left override
GUILD = 7
CHANNEL = 70
# C0 but the newline that ends each printed line, DEL, C1, the bidi marks and overrides, lone surrogates.
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")


def hostile_export(folder: Path) -> Path:
    """Guild, channel, author, text and even the file's name carry the three, and one message's id is text."""
    folder.mkdir()
    messages = [message(701, f"picnic plans {TITLE}{FORGED}{BIDI}evil", 0, author=8, name=f"mallory{TITLE}{FORGED}"
                                                                                          f"{BIDI}"),
                message(702, "picnic snacks", 1, author=9, name=f"{BIDI}eve")]
    messages.append(message(703, "a message whose id is no number", 2) | {"id": f"{TITLE}{FORGED}"})
    return export(folder / f"picnic{TITLE}{FORGED}.json", GUILD, CHANNEL, messages,
                  guild_name=f"{TITLE}Picnic{FORGED}{BIDI}", channel_name=f"general{FORGED}{TITLE}{BIDI}")


def assert_shown_not_obeyed(text: str) -> None:
    assert RAW_CONTROL.search(text) is None, repr(text)
    assert not any(line.startswith("error: forged") for line in text.splitlines()), text


async def test_every_command_shows_hostile_names_as_escapes(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    monkeypatch.delenv("LLM_MODEL", raising=False)
    path = hostile_export(tmp_path / "exports")
    printed = []
    code, out, err = await cli("import", str(path))
    assert code == 1  # the message whose id is text is rejected; the two others are stored
    printed.append(out + err)
    assert "#general\\r\\nerror: forged\\x1b]0;pwned\\x07\\u202e (guild 7): 2 stored" in out
    for command in (("guilds",), ("channels",), ("stats",), ("search", "picnic", "--no-rerank"),
                    ("ask", "picnic plans"), ("check",),
                    ("forget", "--guild", str(GUILD), "--member", "9", "--yes")):
        code, out, err = await cli(*command)
        assert code == 0, (command, err)
        printed.append(out + err)
    for text in printed:
        assert_shown_not_obeyed(text)
    guilds, hits = printed[1], printed[4]
    assert f"{GUILD}  \\x1b]0;pwned\\x07Picnic\\r\\nerror: forged\\u202e  2 messages" in guilds
    # Memory keeps a name's newline (and drops its other C0 controls) as it stores it: shown as an escape here.
    assert " mallory]0;pwned\\nerror: forged\\u202e " in hits and " \\u202eeve " in hits
    assert "picnic plans ]0;pwned error: forged\\u202eevil" in hits


async def test_an_llm_answer_keeps_its_lines_and_shows_their_control_characters(cli, tmp_path, monkeypatch):
    """The LLM may repeat what a member wrote: the answer's lines (LF) are kept, a CR or an escape in one is shown."""
    path = hostile_export(tmp_path / "exports")
    assert (await cli("import", str(path)))[0] == 1

    async def answer(request: web.Request) -> web.Response:
        return web.json_response({"choices": [{"message": {"content": f"Saturday.\nBring {TITLE} cake\rerror: "
                                                                      f"forged {BIDI}"}}]})

    async with chat_completions_server(answer) as url:
        monkeypatch.setenv("LLM_BASE_URL", url)
        monkeypatch.setenv("LLM_MODEL", "llama3")
        code, out, err = await cli("ask", "picnic plans")
    assert code == 0, err
    assert_shown_not_obeyed(out + err)
    assert out.splitlines()[-3:] == ["answer (llama3):", "Saturday.",
                                     "Bring \\x1b]0;pwned\\x07 cake\\rerror: forged \\u202e"]


@pytest.mark.parametrize("name", [f"{TITLE}x", f"x{FORGED}", f"{BIDI}x"])
async def test_a_file_that_cannot_be_read_is_named_as_an_escape(cli, tmp_path, name):
    folder = tmp_path / "exports"
    folder.mkdir()
    path = folder / f"{name}.json"
    path.write_text("{not json", encoding="utf-8")
    code, out, err = await cli("import", str(path))
    assert code == 1
    assert_shown_not_obeyed(out + err)
    assert err.startswith("error: ") and err.count("\n") == 1
