"""DiscordChatExporter JSON into MessageRecords."""

import json
from datetime import UTC, datetime

import pytest

from cogs.memory.exporter import ExportError, read_export


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
    _, records = read_export(write(export([message(30, "picnic on Saturday")])))
    (record,) = records
    assert (record.message_id, record.guild_id, record.channel_id, record.author_name, record.content,
            record.created_at) == (30, 1, 20, "Alice A.", "picnic on Saturday",
                                   datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC))


def test_system_messages_are_skipped(write):
    _, records = read_export(write(export([message(30, "", type="GuildMemberJoin"), message(31, "hi")])))
    assert [r.message_id for r in records] == [31]


def test_a_reply_keeps_its_parent(write):
    _, records = read_export(write(export([message(31, "yes", type="Reply", reference={"messageId": "30"})])))
    assert next(records).reply_to_id == 30


def test_attachments_and_embed_titles_become_stand_ins(write):
    data = export([message(30, "", attachments=[{"fileName": "map.png"}], embeds=[{"title": "Park info"}])])
    _, records = read_export(write(data))
    assert next(records).attachments == ("map.png", "Park info")


def test_a_thread_export_names_its_parent_channel(write):
    channel, _ = read_export(write(export([], channel_type="GuildPublicThread", category_id="19")))
    assert channel.parent_channel_id == 19


def test_a_channel_in_a_category_has_no_parent_channel(write):
    channel, _ = read_export(write(export([])))
    assert channel.parent_channel_id is None


def test_a_bot_author_is_marked(write):
    author = {"id": "6", "name": "helper", "discriminator": "0", "nickname": None, "isBot": True}
    _, records = read_export(write(export([message(30, "beep", author=author)])))
    assert next(records).author_is_bot


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
    channel, records = read_export(write(data))
    assert channel.private_thread and next(records).private_thread


@pytest.mark.parametrize("channel_type", ["GuildPublicThread", "GuildNewsThread", "GuildTextChat"])
def test_public_threads_and_channels_export_public_records(write, channel_type):
    _, records = read_export(write(export([message(30, "picnic")], channel_type=channel_type, category_id="19")))
    assert not next(records).private_thread
