"""A benchmark dataset as files: messages.jsonl and queries.jsonl (their format: bench/recall.py's docstring), read
into records and queries with integer ids, one guild, one channel id per channel name."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cogs.memory.records import MessageRecord

__all__ = ("GUILD_ID", "Query", "channel_names", "load_dataset", "read_jsonl", "write_jsonl")

GUILD_ID = 1


@dataclass(frozen=True, slots=True)
class Query:
    channel_id: int
    question: str
    category: str
    relevant: frozenset[int]
    lang: str = ""
    asked_at: datetime | None = None
    guild_wide: bool = False


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """A dataset file's rows (messages.jsonl, queries.jsonl), blank lines skipped."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` as a dataset file, one JSON object a line (what ``read_jsonl`` reads)."""
    with path.open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def _timestamp(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def load_dataset(messages_path: Path, queries_path: Path) -> tuple[list[MessageRecord], list[Query]]:
    """Records with integer ids (file order) and queries whose relevant ids are mapped the same way."""
    channels: dict[str, int] = {}
    authors: dict[str, int] = {}
    message_ids: dict[str, int] = {}
    records: list[MessageRecord] = []
    for position, row in enumerate(read_jsonl(messages_path), start=1):
        parent = row.get("parent")
        parent_id = None if parent is None else channels.setdefault(str(parent), 100 + len(channels))
        channel_id = channels.setdefault(str(row["channel"]), 100 + len(channels))
        author_id = authors.setdefault(str(row["author"]), 1000 + len(authors))
        reply_to = row.get("reply_to")
        reply_to_id = None if reply_to is None else message_ids.get(str(reply_to))  # an earlier message's, or none
        message_ids[str(row["msg_id"])] = position
        records.append(MessageRecord(message_id=position, guild_id=GUILD_ID, channel_id=channel_id,
                                     parent_channel_id=parent_id, author_id=author_id, author_name=str(row["author"]),
                                     content=str(row["text"]), created_at=_timestamp(row["ts"]),
                                     reply_to_id=reply_to_id))
    queries = []
    for row in read_jsonl(queries_path):
        relevant = frozenset(message_ids[str(m)] for m in row["relevant"] if str(m) in message_ids)
        if relevant and str(row["channel"]) in channels:
            asked_at = None if row.get("asked_at") is None else _timestamp(row["asked_at"])
            queries.append(Query(channels[str(row["channel"])], _with_ids(str(row["question"]), authors, channels),
                                 str(row.get("category", "")), relevant, str(row.get("lang", "")), asked_at,
                                 bool(row.get("guild_wide", False))))
    return records, queries


def _with_ids(question: str, authors: dict[str, int], channels: dict[str, int]) -> str:
    """``question`` with ``<@name>`` and ``<#name>`` written as Discord writes them, with the dataset's ids (a name
    the messages do not hold stays as written)."""
    def mention(match: re.Match[str]) -> str:
        ids = authors if match[1] == "@" else channels
        return f"<{match[1]}{ids[match[2]]}>" if match[2] in ids else match[0]

    return re.sub(r"<([@#])([^<>\s]+)>", mention, question)


def channel_names(messages_path: Path) -> dict[int, str]:
    """Each channel id load_dataset gives, and the channel's name in the file."""
    channels: dict[str, int] = {}
    for row in read_jsonl(messages_path):
        for name in (row.get("parent"), row["channel"]):
            if name is not None:
                channels.setdefault(str(name), 100 + len(channels))
    return {channel_id: name for name, channel_id in channels.items()}
