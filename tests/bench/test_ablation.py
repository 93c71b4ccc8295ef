"""bench.ablation: each rule's overrides reach the search while in force and are put back afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import ablation, recall
from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.records import MessageRecord, SearchFilters
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.search.context import ChannelWindow, neighbours_in
from cogs.memory.search.first_stage import FirstStage
from cogs.memory.runtime.ranking import RankingTuning
from cogs.memory.store.sqlite.search import SqliteSearchEngine
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.vectors.registry import IndexRegistry
from cogs.memory.vectors.stored import VectorSource
from tests.bench.test_recall_smoke import MESSAGES, QUERIES, write_jsonl
from tests.fixtures.core import T0, RecordFactory

GUILD = 4
# "take your amp to Hank" -> "is he expensive" -> "he did mine for 80": only the question's loan finds the answer;
# "Loud Repairs was closed all week" -> "nice": only the neighbour spread finds the remark after it.
MESSAGES_IN_CHANNELS = [(1, 41, "take your amp to Hank at Loud Repairs"), (2, 41, "is he expensive"),
                        (3, 41, "he did mine for 80"), (4, 42, "Loud Repairs was closed all week"), (5, 42, "nice"),
                        *((10 + i, 43, f"the amp buzzes again, day {i} of the tour, somebody help me")
                          for i in range(6))]


@pytest.fixture
async def engine(store: SqliteStore, embedder: EmbeddingService, indexes: IndexRegistry, ingest: IngestQueue,
                 make_record: RecordFactory, core_profile: MemoryProfile) -> SqliteSearchEngine:
    for message_id, channel, content in MESSAGES_IN_CHANNELS:  # two people taking turns: each channel a dialogue
        await ingest.add(make_record(message_id, content, guild_id=GUILD, channel_id=channel,
                                     author_id=500 + message_id % 2))
    await ingest.flush(vectors=True)
    return SqliteSearchEngine(store, embedder, indexes, core_profile)


async def found(engine: SqliteSearchEngine) -> list[int]:
    hits = await engine.search("amp Hank Loud Repairs", SearchFilters(guild_id=GUILD), 20, mode="keyword")
    return [hit.message_id for hit in hits]


async def test_question_loan_off_loses_the_answer_below_a_question_and_comes_back(engine: SqliteSearchEngine) -> None:
    assert 3 in await found(engine)
    with ablation.tuned(engine, ablation.ABLATIONS["question_loan"]):
        assert engine.tuning.answer_context_weight == 0.0
        assert 3 not in await found(engine)
    assert engine.tuning == RankingTuning() and 3 in await found(engine)


async def test_neighbour_spread_off_loses_the_remark_after_a_hit(engine: SqliteSearchEngine) -> None:
    assert 5 in await found(engine)
    with ablation.tuned(engine, ablation.ABLATIONS["neighbour_spread"]):
        assert 5 not in await found(engine)
    assert engine.tuning == RankingTuning() and 5 in await found(engine)


def test_replies_off_lends_nothing_through_discord_replies(core_profile: MemoryProfile) -> None:
    # 1 asks; 2 is next; 9 replies to 1 through Discord's reply, far below.
    rows = {rowid: MessageRecord(rowid, GUILD, 41, None, author, "", "", T0)
            for rowid, author in [(1, "jo"), (2, "sam"), (9, "kat")]}
    window = {1: ChannelWindow(None, (2,), (9,))}
    engine = FirstStage(None, core_profile)  # type: ignore[arg-type]  # the replies rule never reaches the model

    def answers() -> tuple[int, ...]:
        return neighbours_in(window, rows, engine.tuning.reply_window, engine.tuning.replies_lent)[1].answers

    with ablation.tuned(engine, ablation.ABLATIONS["replies"]):
        assert answers() == (2,)
    assert answers() == (2, 9)


def test_coverage_off_reads_every_script_and_is_put_back(core_profile: MemoryProfile) -> None:
    engine = FirstStage(None, core_profile)  # type: ignore[arg-type]
    before = engine.scripts
    with ablation.tuned(engine, ablation.ABLATIONS["coverage"]):
        assert engine.scripts == "all"
    assert engine.scripts == before == "latin"


def test_coordination_off_counts_every_keyword_hit_in_full_and_is_put_back(core_profile: MemoryProfile) -> None:
    engine = FirstStage(None, core_profile)  # type: ignore[arg-type]
    with ablation.tuned(engine, ablation.ABLATIONS["coordination"]):
        assert engine.tuning.keyword_coordination == 0.0
    assert engine.tuning.keyword_coordination == RankingTuning().keyword_coordination > 0.0


def test_an_unknown_override_is_refused_and_changes_nothing(core_profile: MemoryProfile) -> None:
    engine = FirstStage(None, core_profile)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no_such_weight"):
        with ablation.tuned(engine, {"author_weight": 0.0, "no_such_weight": 1.0}):
            pass
    assert engine.tuning == RankingTuning()


def test_the_mean_input_form_embeds_the_message_after_its_predecessor_too_until_left() -> None:
    source = VectorSource("ann", "tacos", ("ben", "where should we eat?"))
    with ablation.input_form("mean"):
        assert len(source.texts()) == 2
    assert len(source.texts()) == 1


async def test_structure_off_lends_in_a_channel_that_is_no_dialogue(
        store: SqliteStore, embedder: EmbeddingService, indexes: IndexRegistry, ingest: IngestQueue,
        make_record: RecordFactory, core_profile: MemoryProfile) -> None:
    # Before the question, four people each wrote three lines in a row: channel 41 is a group that changes author
    # less often than chance, its adjacent messages are no exchange, so the question lends nothing to the next one.
    # (Two people in bursts would be a dialogue: search/structure.py.)
    for i, author in enumerate([502] * 3 + [503] * 3 + [501] * 3 + [500] * 3):
        await ingest.add(make_record(20 + i, "brb", guild_id=GUILD, channel_id=41, author_id=author, minute=-20 + i))
    for message_id, channel, content in MESSAGES_IN_CHANNELS:
        await ingest.add(make_record(message_id, content, guild_id=GUILD, channel_id=channel,
                                     author_id=500 + message_id % 2))
    await ingest.flush(vectors=True)
    engine = SqliteSearchEngine(store, embedder, indexes, core_profile)
    assert 3 not in await found(engine)
    with ablation.tuned(engine, ablation.ABLATIONS["structure"]):
        assert 3 in await found(engine)
    assert engine.tuning == RankingTuning() and 3 not in await found(engine)


def test_rule_names_are_checked() -> None:
    assert ablation.rules("all") == list(ablation.ABLATIONS)
    assert ablation.rules("replies, name_match") == ["replies", "name_match"]
    with pytest.raises(ValueError, match="rules are"):
        ablation.rules("question_loan,nope")


def test_ablate_all_reports_every_rule_s_contribution(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ablate.json"
    recall.main(["--messages", str(write_jsonl(tmp_path / "m.jsonl", MESSAGES)),
                 "--queries", str(write_jsonl(tmp_path / "q.jsonl", QUERIES)), "--mode", "hybrid,keyword",
                 "--ablate", "all", "--candidates", "10", "--db", str(tmp_path), "--json", str(out)])
    result = json.loads(out.read_text(encoding="utf-8"))
    assert [full["mode"] for full in result["full"]] == ["hybrid", "keyword"]
    assert set(result["contributions"]) == set(ablation.ABLATIONS)
    # Each channel has fewer than 5 messages: every rule's contribution at R@5 is nothing.
    assert {rule: by_mode["hybrid"]["recall@5"] for rule, by_mode in result["contributions"].items()} == dict.fromkeys(
        ablation.ABLATIONS, 0.0)
    table = capsys.readouterr().out
    assert [line.split(" | ")[1] for line in table.splitlines() if "(contribution)" in line] == [
        f"{rule} (contribution)" for rule in ablation.ABLATIONS]
    # Each contribution read question by question: its mean is the contribution, its interval holds it, and the
    # questions it helps and hurts are counted; the second table shows R@10 and MRR@10 of each.
    assert set(result["paired"]) == set(ablation.ABLATIONS)
    for rule, by_mode in result["paired"].items():
        compared = by_mode["hybrid"]
        for metric, delta in result["contributions"][rule]["hybrid"].items():
            assert compared[metric]["mean"] == pytest.approx(delta, abs=2e-4)
            assert compared[metric]["low"] <= compared[metric]["mean"] <= compared[metric]["high"]
            assert compared[metric]["better"] + compared[metric]["worse"] <= len(QUERIES)
    read = [line.split(" | ")[1:3] for line in table.splitlines() if " to " in line]
    assert read == [[rule, "hybrid"] for rule in ablation.ABLATIONS]
    assert len(VectorSource("a", "b", ("c", "d")).texts()) == 1
