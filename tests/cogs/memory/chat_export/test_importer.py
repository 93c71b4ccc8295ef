"""Importing exports: each file says what it stored, read back from the database; a bad file or a bad message
is reported alone while the rest is imported; a failed write is never reported as stored."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from cogs.memory.chat_export import importer
from cogs.memory.chat_export.importer import import_exports
from cogs.memory.memory import Memory
from cogs.memory.records import MessageRecord
from cogs.memory.runtime.profile import MemoryProfile


def export(messages: list[dict], guild_id: str = "1", channel_id: str = "20") -> dict:
    return {"guild": {"id": guild_id, "name": "Picnic Club"},
            "channel": {"id": channel_id, "type": "GuildTextChat", "categoryId": None, "name": "general"},
            "messages": messages}


def message(message_id: int, content: str | None, minute: int = 0) -> dict:
    return {"id": str(message_id), "type": "Default", "timestamp": f"2024-05-01T12:{minute:02d}:00+00:00",
            "timestampEdited": None, "content": content,
            "author": {"id": "5", "name": "alice", "nickname": None, "isBot": False}, "attachments": [], "embeds": []}


def write(path: Path, messages: list[dict], **channel: str) -> Path:
    path.write_text(json.dumps(export(messages, **channel)), encoding="utf-8")
    return path


@pytest.fixture
async def memory(core_profile: MemoryProfile, db_path: Path, index_dir: Path, embedder: object) -> AsyncIterator[Memory]:
    memory = await Memory.open(core_profile, db_path, index_dir)
    yield memory
    await memory.close()


async def run_import(memory: Memory, *paths: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await import_exports(memory, list(paths), out, err)
    return code, out.getvalue(), err.getvalue()


class TextRecorder:
    """The real model behind a record of every text it was asked to embed."""

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self.model_name, self.dimension = inner.model_name, inner.dimension
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return await self._inner.embed(texts)


async def test_each_file_says_what_it_stored(memory: Memory, tmp_path: Path) -> None:
    first = write(tmp_path / "a.json", [message(30, "the picnic moved to Saturday"), message(31, "bring blankets")])
    second = write(tmp_path / "b.json", [message(31, "bring blankets"), message(32, "and lemonade"),
                                         message(33, "")], channel_id="20")
    await run_import(memory, first)
    code, out, _ = await run_import(memory, second)
    assert (code, out) == (0, f"{second}: #general (guild 1): 1 stored, 1 already stored, 1 skipped (1 empty), "
                              "0 rejected\n"
                              "imported 1 of 1 file(s): 1 stored, 1 already stored, 1 skipped, 0 rejected\n")


async def test_every_message_of_a_file_is_accounted_for(memory: Memory, tmp_path: Path) -> None:
    bot = {"id": "6", "name": "levelbot", "nickname": None, "isBot": True}
    messages = [message(30, "the picnic moved to Saturday"), message(31, "bring blankets"),
                message(32, "") | {"type": "ChannelPinnedMessage"}, message(33, "") | {"type": "GuildMemberJoin"},
                message(34, "picnic") | {"type": "ThreadCreated"}, message(35, "alice reached level 5") | {"author": bot},
                message(36, ""), message(37, None)]
    first = write(tmp_path / "a.json", messages[:1])
    await run_import(memory, first)
    path = write(tmp_path / "b.json", messages)
    code, out, _ = await run_import(memory, path)
    line = out.splitlines()[0]
    counts = [int(count) for count in re.findall(r"(\d+) (?:stored|already stored|skipped|rejected)\b", line)]
    assert (code, line, sum(counts)) == (1, f"{path}: #general (guild 1): 1 stored, 1 already stored, 5 skipped "
                                            "(3 system messages, 1 bot or webhook, 1 empty), 1 rejected", len(messages))


async def test_a_reimport_embeds_nothing_again(memory: Memory, tmp_path: Path) -> None:
    path = write(tmp_path / "a.json", [message(30, "the picnic moved to Saturday"), message(31, "bring blankets")])
    await run_import(memory, path)
    recorder = TextRecorder(memory.embedder)
    memory.ingest.use(recorder, memory.indexes, batch_size=memory.ingest.batch_size)
    code, out, _ = await run_import(memory, path)
    assert (code, out.splitlines()[0], recorder.texts) == (
        0, f"{path}: #general (guild 1): 0 stored, 2 already stored, 0 skipped, 0 rejected", [])


class BrokenModel:
    """A model that fails on every text."""

    def __init__(self, inner: object) -> None:
        self.model_name, self.dimension = inner.model_name, inner.dimension

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("CUDA error: out of memory")


async def test_messages_the_model_fails_on_are_stored_and_said_to_wait_for_vectors(
    memory: Memory, tmp_path: Path
) -> None:
    memory.ingest.use(BrokenModel(memory.embedder), memory.indexes, batch_size=memory.ingest.batch_size)
    path = write(tmp_path / "a.json", [message(30, "the picnic moved to Saturday"), message(31, "bring blankets")])
    code, out, _ = await run_import(memory, path)
    assert (code, out.splitlines()) == (1, [
        f"{path}: #general (guild 1): 2 stored, 0 already stored, 0 skipped, 0 rejected",
        "imported 1 of 1 file(s): 2 stored, 0 already stored, 0 skipped, 0 rejected; 2 stored messages wait for "
        "their vectors (the embedding model fails (RuntimeError: CUDA error: out of memory); they are embedded "
        "later)"])


async def test_a_message_with_null_content_is_rejected_alone(memory: Memory, tmp_path: Path) -> None:
    path = write(tmp_path / "a.json", [message(30, "the picnic moved to Saturday"), message(31, None, 1),
                                       message(32, "bring blankets", 2)])
    code, out, err = await run_import(memory, path)
    stored, _ = await memory.known_message_ids([30, 31, 32])
    assert (code, out.splitlines()[0], err.splitlines()[0], stored) == (
        1, f"{path}: #general (guild 1): 2 stored, 0 already stored, 0 skipped, 1 rejected",
        f"{path}: message 31 rejected: its content is null, not text", {30, 32})


async def test_bad_files_are_reported_one_line_each_and_the_others_imported(memory: Memory, tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", [message(30, "the picnic moved to Saturday")])
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(json.dumps(export([message(40, "café")]), ensure_ascii=False).encode("latin-1"))
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(export([message(41, "cut short")]))[:60], encoding="utf-8")
    other_json = tmp_path / "settings.json"
    other_json.write_text("{}", encoding="utf-8")
    folder = tmp_path / "exports"
    folder.mkdir()
    missing = tmp_path / "missing.json"
    last = write(tmp_path / "last.json", [message(50, "bring blankets")], channel_id="21")
    code, out, err = await run_import(memory, good, latin1, cut, other_json, folder, missing, last)
    offset = latin1.read_bytes().index(b"\xe9")
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert (code, errors, out.splitlines()[-1]) == (1, [
        f"error: {latin1}: not UTF-8 text (byte 0xe9 at offset {offset}); export it again, or convert it to UTF-8",
        f"error: {cut}: the JSON ends early (the file is truncated); export or copy it again",
        f"error: {other_json}: not a DiscordChatExporter JSON export (missing or bad 'guild')",
        f"error: {folder}: is a folder, not an export file",
        f"error: {missing}: no such file",
    ], "imported 2 of 7 file(s): 2 stored, 0 already stored, 0 skipped, 0 rejected")


@contextlib.contextmanager
def write_lock_held(db_path: Path) -> Iterator[None]:
    """Another process holds the database's write lock (BEGIN IMMEDIATE) meanwhile."""
    script = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
              "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.readline()")
    holder = subprocess.Popen([sys.executable, "-c", script, str(db_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        yield
    finally:
        holder.communicate("\n", timeout=30)


async def test_a_locked_database_is_reported_as_not_stored(memory: Memory, db_path: Path, tmp_path: Path) -> None:
    first = write(tmp_path / "a.json", [message(30, "the picnic moved to Saturday"), message(31, "blankets", 1)])
    second = write(tmp_path / "b.json", [message(40, "lemonade")], channel_id="21")
    with write_lock_held(db_path):
        code, out, err = await run_import(memory, first, second)
    assert (code, out, err.split("\n")[1:]) == (1, (
        f"{first}: #general (guild 1): 0 stored, 0 already stored, 0 skipped, 0 rejected, 2 NOT stored "
        "(another process holds the database's write lock)\n"
        "imported 1 of 2 file(s): 0 stored, 0 already stored, 0 skipped, 0 rejected, 2 NOT stored\n"), [
        f"error: 2 messages of {first} were not stored (another process holds the database's write "
        "lock); what is stored is kept, so run the same "
        "import again once that is fixed",
        f"error: stopped before {second}", ""])


async def test_the_progress_bar_counts_stored_messages_not_queued_ones(
    memory: Memory, db_path: Path, tmp_path: Path
) -> None:
    path = write(tmp_path / "a.json", [message(30, "the picnic moved to Saturday"), message(31, "blankets", 1)])
    with write_lock_held(db_path):
        _, _, err = await run_import(memory, path)
    assert err.split("\n")[0] == "Picnic Club #general: 0/2 (0%)"


async def test_away_from_a_terminal_progress_is_plain_lines_ending_with_what_was_stored(
    memory: Memory, tmp_path: Path
) -> None:
    path = write(tmp_path / "a.json", [message(30, "the picnic moved to Saturday"), message(31, "blankets", 1)])
    _, _, err = await run_import(memory, path)
    assert "\r" not in err and re.fullmatch(r"Picnic Club #general: 2/2 \(100%\), \d+ msg/s, done in 00:\d\d\n", err)


async def test_an_import_records_the_guild_and_channel_names_the_export_names(memory: Memory, tmp_path: Path) -> None:
    thread = export([message(40, "the raffle thread")], channel_id="21")
    thread["channel"] |= {"type": "GuildPublicThread", "categoryId": "20", "category": "general", "name": "raffle"}
    (tmp_path / "t.json").write_text(json.dumps(thread), encoding="utf-8")
    await run_import(memory, tmp_path / "t.json")
    assert (memory.names.guild_name(1), memory.names.channel_names(1), memory.names.channel_parent(1, 21)) == (
        "Picnic Club", {20: "general", 21: "raffle"}, 20)


async def test_an_import_keeps_a_name_memory_already_holds(memory: Memory, tmp_path: Path) -> None:
    """The bot saw the channel renamed after the export was written: the export's older name does not win."""
    memory.names.note_channel(1, 20, "picnic-planning")
    await run_import(memory, write(tmp_path / "a.json", [message(30, "the picnic moved to Saturday")]))
    assert (memory.names.guild_name(1), memory.names.channel_names(1)) == ("Picnic Club", {20: "picnic-planning"})


async def test_an_import_of_a_forgotten_channel_records_no_name(memory: Memory, tmp_path: Path) -> None:
    await run_import(memory, write(tmp_path / "a.json", [message(30, "the picnic moved to Saturday")]))
    await memory.forget_channel(1, 20)
    await run_import(memory, write(tmp_path / "a.json", [message(30, "the picnic moved to Saturday")]))
    assert memory.names.channel_names(1) == {}


async def test_malformed_files_are_one_error_line_each_and_the_others_imported(memory: Memory, tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", [message(30, "the picnic moved to Saturday")])
    brackets = tmp_path / "brackets.json"
    brackets.write_text("[" * 10**6, encoding="utf-8")
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps(export([message(40, "deep")])).replace(
        '"messages": [', '"messages": [' + "[" * 10**6 + "]" * 10**6 + ", "), encoding="utf-8")
    a_list = tmp_path / "list.json"
    a_list.write_text(json.dumps([export([message(41, "listed")])]), encoding="utf-8")
    a_number = tmp_path / "number.json"
    a_number.write_text("42", encoding="utf-8")
    not_json = tmp_path / "notes.json"
    not_json.write_text("picnic on Saturday", encoding="utf-8")
    last = write(tmp_path / "last.json", [message(50, "bring blankets")], channel_id="21")
    code, out, err = await run_import(memory, good, brackets, deep, a_list, a_number, not_json, last)
    not_an_export = "not a DiscordChatExporter JSON export"
    assert (code, err.splitlines()[1:-1], out.splitlines()[-1]) == (1, [
        f"error: {brackets}: {not_an_export} (top level is not an object)",
        f"error: {deep}: {not_an_export} (it nests more than 64 levels deep)",
        f"error: {a_list}: {not_an_export} (top level is not an object)",
        f"error: {a_number}: {not_an_export} (top level is not an object)",
        f"error: {not_json}: not JSON (lexical error: invalid char in json text)",
    ], "imported 2 of 7 file(s): 2 stored, 0 already stored, 0 skipped, 0 rejected")
    assert (await memory.known_message_ids([30, 40, 41, 50]))[0] == {30, 50}


async def test_messages_missing_what_they_need_are_rejected_alone_and_counted(memory: Memory, tmp_path: Path) -> None:
    broken = [message(100 + i, "no author") for i in range(12)]
    for number, bad in enumerate(broken):
        del bad[("author", "id", "timestamp")[number % 3]]
    path = write(tmp_path / "a.json", [message(30, "the picnic moved to Saturday"), *broken,
                                       message(31, "bring blankets", 1)])
    code, out, err = await run_import(memory, path)
    rejected = [line for line in err.splitlines() if " rejected" in line]
    assert (code, out.splitlines()[0], len(rejected), rejected[:3], rejected[-1]) == (
        1, f"{path}: #general (guild 1): 2 stored, 0 already stored, 0 skipped, 12 rejected", 11,
        [f"{path}: message 100 rejected: no 'author'", f"{path}: message #3 rejected: no 'id'",
         f"{path}: message 102 rejected: no 'timestamp'"], f"{path}: ... and 2 more rejected")
    assert (await memory.known_message_ids([30, 31, 100, 103]))[0] == {30, 31}


def stop_at(memory: Memory, stop: asyncio.Event, message_id: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``stop`` is set (as Ctrl-C sets it) when ``message_id`` is handed to ingest."""
    add = Memory.add

    async def adding(self: Memory, record: MessageRecord) -> None:
        if record.message_id == message_id:
            stop.set()
        await add(self, record)

    monkeypatch.setattr(Memory, "add", adding)


async def test_a_stop_stores_what_was_handed_over_and_says_where_it_stopped(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importer, "BATCH_SIZE", 4)
    stop = asyncio.Event()
    stop_at(memory, stop, 35, monkeypatch)
    first = write(tmp_path / "a.json", [message(30 + n, f"picnic note {n}", n) for n in range(10)])
    second = write(tmp_path / "b.json", [message(50, "bring blankets")], channel_id="21")
    out, err = io.StringIO(), io.StringIO()
    code = await import_exports(memory, [first, second], out, err, stop)
    stored, _ = await memory.known_message_ids(list(range(30, 51)))
    assert (code, out.getvalue().splitlines(), sorted(stored)) == (130, [
        f"{first}: #general (guild 1): 8 stored, 0 already stored, 0 skipped, 0 rejected; interrupted after message 8 "
        "of 10",
        f"interrupted: 0 of 2 file(s) imported whole: 8 stored, 0 already stored, 0 skipped, 0 rejected; not read: "
        f"{second}; 8 stored messages wait for their vectors (they are embedded later); what is stored is kept: run "
        "the same import again to go on"], list(range(30, 38)))
    assert "Traceback" not in err.getvalue()


async def test_an_import_stopped_between_files_reads_no_more(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = asyncio.Event()
    stop_at(memory, stop, 31, monkeypatch)
    first = write(tmp_path / "a.json", [message(30, "the picnic moved to Saturday"), message(31, "blankets", 1)])
    second = write(tmp_path / "b.json", [message(50, "bring blankets")], channel_id="21")
    out, err = io.StringIO(), io.StringIO()
    code = await import_exports(memory, [first, second], out, err, stop)
    assert (code, out.getvalue().splitlines()[0], out.getvalue().splitlines()[1].split("; ")[:2]) == (
        130, f"{first}: #general (guild 1): 2 stored, 0 already stored, 0 skipped, 0 rejected",
        ["interrupted: 1 of 2 file(s) imported whole: 2 stored, 0 already stored, 0 skipped, 0 rejected",
         f"not read: {second}"])


async def test_a_reimport_of_a_big_file_takes_it_a_batch_at_a_time(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importer, "BATCH_SIZE", 3)
    monkeypatch.setattr(importer, "FLUSH_EVERY", 5)
    path = write(tmp_path / "a.json", [message(30 + n, f"picnic note {n}" if n % 4 else "", n) for n in range(20)])
    await run_import(memory, write(tmp_path / "first.json", [message(30 + n, f"picnic note {n}", n)
                                                             for n in range(1, 8) if n % 4]))
    code, out, _ = await run_import(memory, path)
    assert (code, out.splitlines()[0]) == (
        0, f"{path}: #general (guild 1): 9 stored, 6 already stored, 5 skipped (5 empty), 0 rejected")
