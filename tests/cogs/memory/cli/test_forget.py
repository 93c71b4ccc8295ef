"""``forget``: the slash commands' erasure from a terminal: ledger, purge, exact words, and a confirmation; a ledger
that cannot be written forgets nothing and says so."""

import re
from pathlib import Path

from cogs.memory.privacy.ledger import LEDGER_NAME, ErasureLedger
from tests.fixtures.ledger import fill_the_disk

from .conftest import Keyboard


def on_disk(db: Path, text: bytes) -> list[str]:
    """Which files of the data folder still hold ``text`` (the database, its WAL, the vector index files)."""
    return [path.name for path in db.parent.rglob("*") if path.is_file() and text in path.read_bytes()]


async def stored_texts(cli) -> list[str]:
    _, out, _ = await cli("search", "picnic", "--guild", "1", "--no-rerank")
    return re.findall(r"^    (?!message id )(.*)$", out, flags=re.M)


async def test_forget_a_member_erases_their_messages_everywhere(cli, two_guilds):
    code, out, err = await cli("forget", "--guild", "1", "--member", "6", "--yes")
    assert (code, out, err) == (0, "forgot 2 messages of member 6 in guild 1\n", "")
    assert sorted(await stored_texts(cli)) == ["bring blankets to the picnic", "the picnic moved to Saturday"]
    assert on_disk(two_guilds, b"picnic cake") == []
    entries = await ErasureLedger(two_guilds.parent / LEDGER_NAME).read()
    assert [(e.kind, e.guild_id, e.author_id) for e in entries] == [("forget", 1, 6)]


async def test_forget_a_channel_a_message_and_a_guild_say_what_they_did(cli, two_guilds):
    assert (await cli("forget", "--guild", "1", "--message", "30", "--yes"))[:2] == (
        0, "forgot message 30 in guild 1\n")
    assert (await cli("forget", "--guild", "1", "--channel", "21", "--yes"))[:2] == (
        0, "forgot 1 message in channel 21 (and its threads) of guild 1\n")
    assert (await cli("forget", "--guild", "2", "--all", "--yes"))[:2] == (
        0, "forgot 1 message: everything of guild 2\n")
    # The forgotten channel's name ("photos", its one message's word too) leaves every file with it.
    assert on_disk(two_guilds, b"moved to Saturday") == on_disk(two_guilds, b"other server") == []
    assert on_disk(two_guilds, b"photos") == []
    _, out, _ = await cli("guilds")
    assert out.startswith("1  Picnic Club  2 messages in 1 channels") and "\n2 " not in out


async def test_forget_off_a_terminal_without_yes_is_refused(cli, two_guilds):
    code, out, err = await cli("forget", "--guild", "1", "--member", "6")
    assert (code, out, err) == (2, "", "error: forget asks for confirmation and stdin is not a terminal: add --yes\n")
    assert len(await stored_texts(cli)) == 4


async def test_forget_on_a_terminal_asks_first(cli, two_guilds):
    code, out, err = await cli("forget", "--guild", "1", "--member", "6", stdin=Keyboard("n\n"))
    assert (code, out, err) == (0, "nothing forgotten\n", "forget all messages of member 6 in guild 1? This cannot "
                                                          "be undone. [y/N] ")
    assert len(await stored_texts(cli)) == 4
    code, out, _ = await cli("forget", "--guild", "1", "--member", "6", stdin=Keyboard("y\n"))
    assert (code, out) == (0, "forgot 2 messages of member 6 in guild 1\n")


async def test_forget_a_message_memory_does_not_hold_fails(cli, two_guilds):
    code, _, err = await cli("forget", "--guild", "1", "--message", "50", "--yes")  # guild 2's
    assert (code, err) == (1, "error: message 50 is not in memory for guild 1; nothing to forget\n")


async def test_forget_in_an_unknown_guild_lists_the_known(cli, two_guilds):
    code, _, err = await cli("forget", "--guild", "7", "--all", "--yes")
    assert (code, err) == (2, "error: guild 7 is not in memory (guilds in memory: 1 (Picnic Club), 2)\n")


async def test_a_forget_the_erasure_ledger_cannot_record_is_one_error_line_and_nothing_forgotten(
        cli, two_guilds, monkeypatch):
    fill_the_disk(monkeypatch)
    code, out, err = await cli("forget", "--guild", "1", "--member", "6", "--yes")
    ledger = two_guilds.parent / LEDGER_NAME
    assert (code, out, err) == (1, "", f"error: nothing forgotten: the erasure ledger {ledger} cannot be written (the "
                                       "disk is full); free some space (or make it writable), then run this again\n")
    assert (len(await stored_texts(cli)), ledger.read_bytes()) == (4, b"")  # cut back to what it held
