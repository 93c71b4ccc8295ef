"""DiscordChatExporter JSON into MessageRecords."""

import json
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cogs.memory.chat_export.reader import (ExportedChannel, ExportError, ReadStopped, RejectedMessage,
                                           open_export)
from cogs.memory.records import MessageRecord


@dataclass
class Read:
    """A whole file's batches together."""

    channel: ExportedChannel
    records: list[MessageRecord]
    rejected: list[RejectedMessage]
    notices: int
    read: int


def read_export(path: Path, batch_size: int = 2) -> Read:
    with open_export(path) as export:
        batches = list(export.batches(batch_size))
    return Read(export.channel, [record for batch in batches for record in batch.records],
                [rejected for batch in batches for rejected in batch.rejected], sum(b.notices for b in batches),
                batches[-1].read if batches else 0)


def export(messages, *, channel_type="GuildTextChat", category_id="900"):
    return {
        "guild": {"id": "1", "name": "Picnic Club", "iconUrl": ""},
        "channel": {"id": "20", "type": channel_type, "categoryId": category_id, "category": "General",
                    "name": "general", "topic": None},
        "dateRange": {"after": None, "before": None},
        "messages": messages,
        "messageCount": len(messages),
    }


def message(message_id, content, **extra):
    data = {
        "id": str(message_id), "type": "Default", "timestamp": "2024-05-01T14:00:00.123+02:00",
        "timestampEdited": None, "isPinned": False, "content": content,
        "author": {"id": "5", "name": "alice", "discriminator": "0000", "nickname": "Alice A.", "isBot": False},
        "attachments": [], "embeds": [], "reactions": [], "mentions": [],
    }
    data.update(extra)
    return data


@pytest.fixture
def write(tmp_path):
    def write_export(data):
        path = tmp_path / "export.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    return write_export


def test_a_message_becomes_a_record_in_utc(write):
    records = read_export(write(export([message(30, "picnic on Saturday")]))).records
    (record,) = records
    assert (record.message_id, record.guild_id, record.channel_id, record.author_name, record.content,
            record.created_at) == (30, 1, 20, "Alice A.", "picnic on Saturday",
                                   datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC))


def test_system_messages_are_skipped(write):
    records = read_export(write(export([message(30, "", type="GuildMemberJoin"), message(31, "hi")]))).records
    assert [r.message_id for r in records] == [31]


def test_system_messages_are_counted(write):
    messages = [message(30, "", type="ChannelPinnedMessage"), message(31, "hi"), message(32, "", type="ThreadCreated")]
    assert read_export(write(export(messages))).notices == 2


def test_a_reply_keeps_its_parent(write):
    records = read_export(write(export([message(31, "yes", type="Reply", reference={"messageId": "30"})]))).records
    assert records[0].reply_to_id == 30


def test_only_a_reply_keeps_what_it_references(write):
    forward = message(32, "", reference={"messageId": "30"})  # a forward: a plain message that references another
    records = read_export(write(export([forward]))).records
    assert records[0].reply_to_id is None


def test_attachments_and_embed_titles_become_stand_ins(write):
    data = export([message(30, "", attachments=[{"fileName": "map.png"}], embeds=[{"title": "Park info"}])])
    records = read_export(write(data)).records
    assert records[0].attachments == ("map.png", "Park info")


def test_a_thread_export_names_its_parent_channel(write):
    channel = read_export(write(export([], channel_type="GuildPublicThread", category_id="19"))).channel
    assert channel.parent_channel_id == 19


def test_a_channel_in_a_category_has_no_parent_channel(write):
    channel = read_export(write(export([]))).channel
    assert channel.parent_channel_id is None


def test_a_bot_author_is_marked(write):
    author = {"id": "6", "name": "helper", "discriminator": "0", "nickname": None, "isBot": True}
    records = read_export(write(export([message(30, "beep", author=author)]))).records
    assert records[0].author_is_bot


def test_json_that_is_not_an_export_is_rejected(write):
    with pytest.raises(ExportError, match="not a DiscordChatExporter JSON export"):
        read_export(write({"messages": []}))


def test_a_file_that_is_not_json_is_rejected(tmp_path):
    path = tmp_path / "notes.json"
    path.write_text("hello", encoding="utf-8")
    with pytest.raises(ExportError, match="not JSON"):
        read_export(path)


def test_a_private_thread_export_stores_private_records(write):
    data = export([message(30, "the staff bonus budget")], channel_type="GuildPrivateThread", category_id="19")
    exported = read_export(write(data))
    channel, records = exported.channel, exported.records
    assert channel.private_thread and records[0].private_thread


@pytest.mark.parametrize("channel_type", ["GuildPublicThread", "GuildNewsThread", "GuildTextChat"])
def test_public_threads_and_channels_export_public_records(write, channel_type):
    records = read_export(write(export([message(30, "picnic")], channel_type=channel_type, category_id="19"))).records
    assert not records[0].private_thread


def test_a_message_whose_content_is_null_is_rejected_alone(write):
    exported = read_export(write(export([message(30, "picnic"), message(31, None), message(32, "blankets")])))
    assert ([r.message_id for r in exported.records], exported.rejected) == (
        [30, 32], [RejectedMessage("31", "its content is null, not text")])


def test_a_message_with_no_author_is_rejected_alone(write):
    broken = message(31, "who said this")
    del broken["author"]
    exported = read_export(write(export([broken, message(32, "blankets")])))
    assert ([r.message_id for r in exported.records], exported.rejected) == (
        [32], [RejectedMessage("31", "no 'author'")])


def test_a_message_with_a_bad_time_is_rejected_alone(write):
    exported = read_export(write(export([message(31, "when", timestamp="yesterday"), message(32, "now")])))
    assert ([r.message_id for r in exported.records], exported.rejected) == (
        [32], [RejectedMessage("31", "Invalid isoformat string: 'yesterday'")])


@pytest.mark.parametrize("timestamp", [None, ""])
def test_a_message_without_a_time_is_rejected_alone(write, timestamp):
    exported = read_export(write(export([message(31, "when", timestamp=timestamp), message(32, "now")])))
    assert ([r.message_id for r in exported.records], [r.message_id for r in exported.rejected]) == ([32], ["31"])
    assert "timestamp" in exported.rejected[0].reason


def test_a_non_utf8_export_is_one_clear_error(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(json.dumps(export([message(30, "café")]), ensure_ascii=False).encode("latin-1"))
    offset = path.read_bytes().index(b"\xe9")
    with pytest.raises(ExportError) as error:
        read_export(path)
    assert str(error.value) == (f"{path}: not UTF-8 text (byte 0xe9 at offset {offset}); export it again, or "
                                "convert it to UTF-8")


def test_an_export_with_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(export([message(30, "picnic")])).encode())
    assert [r.content for r in read_export(path).records] == ["picnic"]


@pytest.mark.parametrize("cut", [0.5, 0.999])
def test_a_truncated_export_says_so(tmp_path, cut):
    path = tmp_path / "cut.json"
    text = json.dumps(export([message(30 + i, "picnic plans " * 20) for i in range(20)]))
    path.write_text(text[: int(len(text) * cut)], encoding="utf-8")
    with pytest.raises(ExportError) as error:
        read_export(path)
    assert str(error.value) == f"{path}: the JSON ends early (the file is truncated); export or copy it again"


def test_a_folder_is_one_clear_error(tmp_path):
    with pytest.raises(ExportError) as error:
        read_export(tmp_path)
    assert str(error.value) == f"{tmp_path}: is a folder, not an export file"


def test_a_missing_file_is_one_clear_error(tmp_path):
    with pytest.raises(ExportError) as error:
        read_export(tmp_path / "gone.json")
    assert str(error.value) == f"{tmp_path / 'gone.json'}: no such file"


@pytest.mark.parametrize("text", ["[1, 2]", "42", '"an export"', "null"])
def test_json_that_is_no_object_is_one_clear_error(tmp_path, text):
    path = tmp_path / "other.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ExportError) as error:
        read_export(path)
    assert str(error.value) == f"{path}: not a DiscordChatExporter JSON export (top level is not an object)"


def test_a_million_open_brackets_are_one_clear_error(tmp_path):
    path = tmp_path / "brackets.json"
    path.write_text("[" * 10**6, encoding="utf-8")
    with pytest.raises(ExportError) as error:
        read_export(path)
    assert str(error.value) == f"{path}: not a DiscordChatExporter JSON export (top level is not an object)"


def test_an_export_nesting_a_million_deep_is_one_clear_error(tmp_path):
    path = tmp_path / "deep.json"
    text = json.dumps(export([message(30, "picnic")]))
    path.write_text(text.replace('"messages": [', '"messages": [' + "[" * 10**6 + "]" * 10**6 + ", "),
                    encoding="utf-8")
    with pytest.raises(ExportError) as error:
        read_export(path)
    assert str(error.value) == (f"{path}: not a DiscordChatExporter JSON export (it nests more than 64 levels "
                                "deep)")


def test_messages_that_are_no_list_are_one_clear_error(write):
    data = export([])
    data["messages"] = {"30": message(30, "picnic")}
    path = write(data)
    with pytest.raises(ExportError) as error:
        read_export(path)
    assert str(error.value) == (f"{path}: not a DiscordChatExporter JSON export (missing or bad 'messages' is not "
                                "a list)")


def test_an_export_without_messages_is_one_clear_error(write):
    data = export([])
    del data["messages"]
    path = write(data)
    with pytest.raises(ExportError) as error:
        read_export(path)
    assert str(error.value) == f"{path}: not a DiscordChatExporter JSON export (missing or bad 'messages')"


def test_text_after_the_export_is_one_clear_error(tmp_path):
    path = tmp_path / "two.json"
    path.write_text(json.dumps(export([message(30, "picnic")])) + " {}", encoding="utf-8")
    with pytest.raises(ExportError) as error:
        read_export(path)
    assert str(error.value) == f"{path}: not JSON (parse error: trailing garbage)"


def test_the_header_may_come_after_the_messages(tmp_path):
    data = export([message(30, "picnic"), message(31, "blankets")])
    path = tmp_path / "late.json"
    path.write_text(json.dumps({"messages": data["messages"], "channel": data["channel"], "guild": data["guild"]}),
                    encoding="utf-8")
    exported = read_export(path)
    assert ([r.message_id for r in exported.records], exported.channel.channel_id) == ([30, 31], 20)


def test_messages_come_a_batch_at_a_time(write):
    path = write(export([message(30 + i, "picnic") for i in range(5)]))
    with open_export(path) as exported:
        batches = [([r.message_id for r in batch.records], batch.read) for batch in exported.batches(2)]
    assert (exported.channel.message_count, batches) == (5, [([30, 31], 2), ([32, 33], 4), ([34], 5)])


def test_a_batch_counts_notices_and_rejected_messages_too(write):
    path = write(export([message(30, "", type="GuildMemberJoin"), message(31, None), message(32, "hi")]))
    with open_export(path) as exported:
        batches = [(len(b.records), len(b.rejected), b.notices, b.read) for b in exported.batches(2)]
    assert batches == [(0, 1, 1, 2), (1, 0, 0, 3)]


def test_a_message_with_no_time_is_rejected_alone(write):
    exported = read_export(write(export([message(31, "when", timestamp=None), message(32, "now")])))
    assert ([r.message_id for r in exported.records], exported.rejected) == (
        [32], [RejectedMessage("31", "no 'timestamp'")])


def test_a_message_that_is_not_an_object_is_rejected_alone_by_its_place(write):
    exported = read_export(write(export([message(30, "picnic"), ["not", "a", "message"], message(32, "now")])))
    assert ([r.message_id for r in exported.records], exported.rejected) == (
        [30, 32], [RejectedMessage("#2", "it is not an object")])


def test_a_stop_ends_the_reading_at_its_next_read(write):
    stop = threading.Event()
    path = write(export([message(30 + i, "picnic plans " * 200) for i in range(200)]))
    with open_export(path, stop) as exported:
        batches = exported.batches(1)
        next(batches)
        stop.set()
        with pytest.raises(ReadStopped):
            list(batches)


def test_a_stop_set_before_the_check_ends_it(write):
    stop = threading.Event()
    stop.set()
    with pytest.raises(ReadStopped):
        open_export(write(export([message(30, "picnic")])), stop)
