"""A member's export on both stores: what it carries (their messages in channels they can read now, by name; replies
by id; their opt-out; their quotations) and what it never carries (another member's text, another guild, a channel
they cannot read now by name); nothing for a member memory holds nothing of; parts under the size limit."""

from __future__ import annotations

import dataclasses
import json
import random
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cogs.memory.memory import Memory
from cogs.memory.privacy.member_export import SCHEMA, SCHEMA_VERSION, ExportRequest, write_member_export
from cogs.memory.privacy.subject_access import Readable
from cogs.memory.records import MessageRecord
from cogs.memory.store.member_rows import Quotation

MEMBER, OTHER = 100, 200
OTHERS_WORDS = "the other member's secret recipe"


def request(readable: Readable, *, opted_out: bool = False, member: int = MEMBER) -> ExportRequest:
    return ExportRequest(1, "Test <Guild>", member, readable, {10: "general", 11: "staff"}, opted_out)


READS_GENERAL = Readable(frozenset({10}))


async def conversation(memory: Memory, make_record: Callable[..., MessageRecord]) -> None:
    """The other member says something in #general; the member replies to it, says two more things (one in a channel
    they cannot read now, 11); the member says something in guild 2."""
    await memory.add(make_record(1, OTHERS_WORDS, author_id=OTHER))
    await memory.add(dataclasses.replace(make_record(2, "my <b>answer</b> & more", author_id=MEMBER), reply_to_id=1))
    await memory.add(make_record(3, "my second note", author_id=MEMBER))
    await memory.add(make_record(4, "said in staff", channel_id=11, author_id=MEMBER))
    await memory.add(make_record(5, "said in another server", guild_id=2, channel_id=20, author_id=MEMBER))
    await memory.flush()


def documents(parts: tuple[Path, ...]) -> list[tuple[dict[str, Any], str]]:
    found = []
    for part in parts:
        with zipfile.ZipFile(part) as archive:
            found.append((json.loads(archive.read("memory.json")), archive.read("memory.html").decode()))
    return found


async def test_the_export_carries_the_members_own_messages_with_replies_by_id(any_memory, make_record, tmp_path):
    await conversation(any_memory, make_record)
    result = await write_member_export(any_memory.subject_access, request(READS_GENERAL), tmp_path / "out")
    ((document, _),) = documents(result.parts)
    assert [(m["id"], m["channel"], m["content"], m["reply_to_id"]) for m in document["messages"]] == [
        ("2", "general", "my <b>answer</b> & more", "1"), ("3", "general", "my second note", None)]
    assert (document["schema"], document["version"], document["last_part"]) == (SCHEMA, SCHEMA_VERSION, True)


async def test_the_export_never_carries_another_members_text_nor_another_guild(any_memory, make_record, tmp_path):
    await conversation(any_memory, make_record)
    result = await write_member_export(any_memory.subject_access, request(READS_GENERAL), tmp_path / "out")
    ((document, page),) = documents(result.parts)
    whole = json.dumps(document) + page
    assert ("secret recipe" in whole, "another server" in whole) == (False, False)


async def test_a_channel_the_member_cannot_read_now_is_counted_not_named(any_memory, make_record, tmp_path):
    await conversation(any_memory, make_record)
    result = await write_member_export(any_memory.subject_access, request(READS_GENERAL), tmp_path / "out")
    ((document, page),) = documents(result.parts)
    whole = json.dumps(document) + page
    assert ("staff" in whole, "said in staff" in whole) == (False, False)
    assert document["held"] == {"messages": 2, "channels_not_shown": 1, "messages_in_channels_not_shown": 1}


async def test_the_readable_copy_escapes_every_text(any_memory, make_record, tmp_path):
    await conversation(any_memory, make_record)
    result = await write_member_export(any_memory.subject_access, request(READS_GENERAL), tmp_path / "out")
    ((_, page),) = documents(result.parts)
    assert ("<b>answer</b>" in page, "my &lt;b&gt;answer&lt;/b&gt; &amp; more" in page, "Test &lt;Guild&gt;" in page,
            "<Guild>" in page) == (False, True, True, False)


async def test_an_opted_out_member_gets_the_opt_out_itself(any_memory, make_record, tmp_path):
    await conversation(any_memory, make_record)
    await any_memory.set_opt_out(1, MEMBER, True)
    await any_memory.forget_author(1, MEMBER)
    result = await write_member_export(any_memory.subject_access, request(READS_GENERAL, opted_out=True), tmp_path / "out")
    ((document, _),) = documents(result.parts)
    assert (document["settings"]["opted_out"], document["settings"]["opted_out_at"] is not None,
            document["messages"], result.holds_nothing) == (True, True, [], False)


async def test_a_forgotten_member_gets_nothing_and_no_file(any_memory, make_record, tmp_path):
    await conversation(any_memory, make_record)
    await any_memory.forget_author(1, MEMBER)
    result = await write_member_export(any_memory.subject_access, request(READS_GENERAL), tmp_path / "out")
    assert (result.holds_nothing, result.parts, (tmp_path / "out").exists()) == (True, (), False)


async def test_quotations_carry_ids_and_times_and_an_answer_only_where_the_member_reads(any_memory, make_record,
                                                                                       tmp_path):
    await conversation(any_memory, make_record)
    async with any_memory.ingest.write_lock:
        await any_memory.store.record_quotations([Quotation(1, MEMBER, 2, 10, 1000.0, "answer", 10, 77),
                                                  Quotation(1, MEMBER, 3, 10, 1001.0, "answer", 11, 78),
                                                  Quotation(1, MEMBER, 4, 11, 1002.0, "search")])
    result = await write_member_export(any_memory.subject_access, request(READS_GENERAL), tmp_path / "out")
    ((document, _),) = documents(result.parts)
    assert [(q["message_id"], q["kind"], q["answer_url"]) for q in document["quotations"]] == [
        ("3", "answer", None), ("2", "answer", "https://discord.com/channels/1/10/77")]


async def test_a_large_export_is_split_into_parts_each_under_the_limit(any_memory, make_record, tmp_path):
    for number in range(1, 401):  # text that compresses little: some 400 KiB zipped
        await any_memory.add(make_record(number, f"message {number} " + random.Random(number).randbytes(500).hex(),
                                         author_id=MEMBER))
    await any_memory.flush()
    limit = 300 * 1024
    result = await write_member_export(any_memory.subject_access, request(READS_GENERAL), tmp_path / "out",
                                        part_limit=limit)
    found = documents(result.parts)
    ids = [m["id"] for document, _ in found for m in document["messages"]]
    assert len(result.parts) > 1 and all(part.stat().st_size <= limit for part in result.parts)
    assert (ids, [d["last_part"] for d, _ in found]) == ([str(n) for n in range(1, 401)],
                                                         [False] * (len(found) - 1) + [True])
