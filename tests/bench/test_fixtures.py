"""The discord, longchat and named recall fixtures: they load through bench.recall, every label points at a message, and
build.py makes exactly the committed files."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from bench.recall import load_dataset

DATA = Path(__file__).resolve().parents[2] / "bench" / "data"
FIXTURES = ("discord", "longchat", "named")


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("name", FIXTURES)
def test_every_question_loads_with_all_its_evidence(name: str) -> None:
    messages, queries = rows(DATA / name / "messages.jsonl"), rows(DATA / name / "queries.jsonl")
    channel_of = {row["msg_id"]: row["channel"] for row in messages}
    for query in queries:
        assert query["relevant"] and all(channel_of.get(msg_id) == query["channel"] for msg_id in query["relevant"])
    records, loaded = load_dataset(DATA / name / "messages.jsonl", DATA / name / "queries.jsonl")
    assert len(records) == len(messages) and len(loaded) == len(queries)
    assert [len(query.relevant) for query in loaded] == [len(set(query["relevant"])) for query in queries]


def test_every_discord_reply_answers_an_earlier_message_of_its_channel() -> None:
    messages = rows(DATA / "discord" / "messages.jsonl")
    seen: dict[str, str] = {}
    replies = 0
    for row in messages:
        if "reply_to" in row:
            replies += 1
            assert seen[row["reply_to"]] == row["channel"]
        seen[row["msg_id"]] = row["channel"]
    records, _ = load_dataset(DATA / "discord" / "messages.jsonl", DATA / "discord" / "queries.jsonl")
    assert sum(record.reply_to_id is not None for record in records) == replies > 0
    assert {record.parent_channel_id for record in records} - {None}  # the thread names its channel


@pytest.mark.parametrize("name", FIXTURES)
def test_build_makes_the_committed_files(name: str, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(f"{name}_build", DATA / name / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(tmp_path)
    for file in ("messages.jsonl", "queries.jsonl"):
        assert (tmp_path / file).read_bytes() == (DATA / name / file).read_bytes()
