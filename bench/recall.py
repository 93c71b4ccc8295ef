"""Benchmark: first-stage recall of memory search on a chat dataset, ingested through the real ingest path.

python -m bench.recall [--data DIR | --messages M.jsonl --queries Q.jsonl] --mode vector|keyword|hybrid
                       [--json OUT] [--profile cpu-small] [--candidates 100] [--db DIR]
                       [--database-url postgresql://...] [--ablate RULE[,RULE] | all] [--ablate-mode hybrid]
                       [--structure]

``--data`` is a directory holding messages.jsonl and queries.jsonl: LoCoMo (../shared/data/locomo, the default) or
the bilingual fixture bench/data/bilingual (three conversations written for this project, in English and Chinese,
one also in Japanese and Korean).

``--mode hybrid,vector,keyword`` ingests once and answers the queries in each mode: it prints (and writes) a JSON
list of the per-mode objects, which share the one ingest measurement. ``alone`` is a baseline, not a search of
memory: each message embedded by itself, ranked by cosine in the query's channel (bench/alone.py), the floor the
vector side must not fall below.

messages.jsonl: {"channel", "msg_id", "author", "ts", "text"} a line, optionally "reply_to" (the msg_id of an
earlier message it replies to, as Discord's reply does); queries.jsonl: {"channel", "qid", "question",
"category", "relevant": [msg_id, ...]} a line (the format of ../shared/data/locomo/), optionally with "lang": then the
result has ``per_language`` as well as ``per_category``. All messages go into one guild, one Discord channel per
``channel`` value (named by it), in file order; each query is searched within its own channel, or with
``"guild_wide": true`` across the guild. A query may carry ``"asked_at"`` (an ISO time; default: now) for the times it
names, and write mentions and channel links by name: ``<@alice>`` and ``<#general>`` become Discord's ``<@id>`` and
``<#id>`` for the ids the messages gave that author and channel (bench/data/named).

``--ablate RULE`` (repeatable, a comma list, or ``all``: bench/ablation.py) answers the queries again with each
rule switched off, one at a time, in each ``--ablate-mode``, and prints the table of every rule's contribution
(the full system minus the system without it); ``vector_form`` ingests a second time, reusing the vectors of the
first (each text is embedded once per run). A second table reads each contribution question by question
(bench/paired.py): its 95% bootstrap interval at R@10 and MRR@10, and how many questions the rule helps and hurts;
the JSON holds the same for every metric under ``paired``. ``--structure`` prints each channel's structure
(bench/structure.py) and the labelled answer-after-question rate against its base rate, without ingesting anything.

An optional "parent" on a message names the channel its thread belongs to (a Discord thread is its own channel).

``--database-url`` runs the same ingest and queries on the PostgreSQL store too (in a scratch database created on
that server and dropped afterwards, bench/pg.py): the output is then ``{"sqlite": ..., "postgresql": ...,
"postgresql_minus_sqlite": {mode: {metric: difference}}}``.
"""

from __future__ import annotations
import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
import numpy as np
from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import load_profile
from cogs.memory.records import MessageRecord, SearchFilters


from . import ablation, structure
from .alone import AloneBaseline
from .dataset import GUILD_ID, Query, channel_names, load_dataset
from .informative import content_free
from .ingesting import ingest_showing_progress
from .paired import paired

# LoCoMo, beside the repository (never copied into it): see ../shared/data/locomo/README.md.
DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo"
KS = (5, 10, 20, 50)
MODES = ("vector", "keyword", "hybrid", "alone")
MRR_AT = 10
METRICS = (*(f"recall@{k}" for k in KS), f"mrr@{MRR_AT}")
FREE_AT = f"content_free@{MRR_AT}"  # share of the top 10 that says nothing of its own


# Vectors already computed in this run, by (passage or query, text): an ablation's second ingest and repeated
# queries embed nothing twice.
Memo = dict[tuple[str, str], np.ndarray]


class _TextRecorder:
    """Wraps the live EmbeddingService's ``embed`` so the benchmark knows exactly which texts ingest embedded; with a
    ``memo``, ``embed`` and ``embed_queries`` embed each text once per run."""

    def __init__(self, service: EmbeddingService, memo: Memo | None = None) -> None:
        self.texts: list[str] = []
        self._memo = memo
        self._embed = service.embed
        self._embed_queries = service.embed_queries
        service.embed = self.embed  # type: ignore[method-assign]  # instance attribute shadows the method
        if memo is not None:
            service.embed_queries = self.embed_queries  # type: ignore[method-assign]

    async def embed(self, texts: Sequence[str], **options: Any) -> Any:
        self.texts.extend(texts)
        if self._memo is None or not texts:
            return await self._embed(texts, **options)
        return await self._memoised("passage", texts, lambda missing: self._embed(missing, **options))

    async def embed_queries(self, queries: Sequence[str]) -> Any:
        return await self._memoised("query", queries, self._embed_queries)

    async def _memoised(self, kind: str, texts: Sequence[str],
                        embed: Callable[[list[str]], Awaitable[Any]]) -> np.ndarray:
        assert self._memo is not None
        missing = list(dict.fromkeys(text for text in texts if (kind, text) not in self._memo))
        if missing:
            vectors = np.asarray(await embed(missing), dtype=np.float32)
            self._memo.update(((kind, text), vector) for text, vector in zip(missing, vectors, strict=True))
        return np.stack([self._memo[kind, text] for text in texts])


def score(ranked: list[int], relevant: frozenset[int]) -> dict[str, float]:
    """recall@k (share of the relevant ids in the top k) and reciprocal rank within the top 10."""
    scores = {f"recall@{k}": len(relevant.intersection(ranked[:k])) / len(relevant) for k in KS}
    first = next((i for i, rowid in enumerate(ranked[:MRR_AT], start=1) if rowid in relevant), None)
    scores[f"mrr@{MRR_AT}"] = 1.0 / first if first else 0.0
    return scores


def _free_share(ranked: list[int], free: frozenset[int]) -> float:
    """The share of the top ``MRR_AT`` that says nothing of its own (bench/informative.content_free)."""
    top = ranked[:MRR_AT]
    return sum(rowid in free for rowid in top) / len(top) if top else 0.0


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.fmean(row[key] for row in rows), 4) for key in rows[0]}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def _timed(function: Callable[[list[str]], Any], texts: list[str]) -> float:
    started = time.perf_counter()
    function(texts)
    return time.perf_counter() - started


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The SQLite store's results, one object per mode."""
    records, queries = load_dataset(args.messages, args.queries)
    return await run_store(args, records, queries, None)


async def run_both(args: argparse.Namespace) -> dict[str, Any]:
    """The same ingest and queries on SQLite and on PostgreSQL, and PostgreSQL's difference per metric."""
    from .pg import scratch_database

    records, queries = load_dataset(args.messages, args.queries)
    sqlite = await run_store(args, records, queries, None)
    async with scratch_database(args.database_url, "recall") as url:
        postgresql = await run_store(args, records, queries, url)
    return {
        "sqlite": sqlite[0] if len(sqlite) == 1 else sqlite,
        "postgresql": postgresql[0] if len(postgresql) == 1 else postgresql,
        "postgresql_minus_sqlite": {ours["mode"]: {m: round(theirs[m] - ours[m], 4) for m in METRICS}
                                    for ours, theirs in zip(sqlite, postgresql, strict=True)},
    }


@asynccontextmanager
async def ingested(args: argparse.Namespace, records: list[MessageRecord], database_url: str | None,
                   memo: Memo | None = None) -> AsyncIterator[tuple[Memory, dict[str, Any]]]:
    """A fresh store (SQLite, or PostgreSQL at ``database_url``) holding ``records``, and ingest's measurement.

    With a ``memo`` (an ablation run) the model alone is not timed: ingest reuses vectors, so the two would not
    compare, and timing it embeds every text twice more.
    """
    profile = load_profile(args.profile)
    profile = replace(profile, vector_candidates=args.candidates, keyword_candidates=args.candidates,
                      reranker=replace(profile.reranker, enabled=False))
    with tempfile.TemporaryDirectory(dir=args.db) as workdir:
        memory = await Memory.open(profile, Path(workdir) / "memory.sqlite3", Path(workdir) / "indexes",
                                   database_url)
        try:
            recorder = _TextRecorder(memory.embedder, memo)
            started = time.perf_counter()
            await ingest_showing_progress(records, memory)
            ingest_s = time.perf_counter() - started
            for channel_id, name in channel_names(args.messages).items():  # as capture notes them
                memory.names.note_channel(GUILD_ID, channel_id, name)
            await memory.names.flush()

            # The model alone, twice, keeping the faster: a first pass over new text lengths pays warm-up,
            # which would flatter ingest by comparison.
            inputs = memory.embedder.prefixes.passages(recorder.texts)  # what ``embed`` hands the model
            embed_s = None if memo is not None else min(_timed(memory.embedder.embed_sync, inputs) for _ in range(2))

            # Messages a second, both ways: the model alone is timed on every text ingest handed over (one a
            # message, vectors/stored.py; two under the benchmark's ``mean`` form).
            yield memory, {
                "ingest_msgs_per_s": round(len(records) / ingest_s, 1),
                "embed_only_msgs_per_s": None if embed_s is None else round(len(records) / embed_s, 1),
                "n_messages": len(records),
                "n_embedded": len(recorder.texts),
                "profile": profile.name,
                # Not printed: the ids of content-free messages (bench/informative.py), read by _answer.
                "content_free": frozenset(record.message_id for record in records if content_free(record.content)),
            }
        finally:
            await memory.close()


async def run_store(args: argparse.Namespace, records: list[MessageRecord], queries: list[Query],
                    database_url: str | None) -> list[dict[str, Any]]:
    """Ingest ``records`` into a fresh store (SQLite, or PostgreSQL at ``database_url``) and answer ``queries``."""
    async with ingested(args, records, database_url) as (memory, ingest):
        alone = await AloneBaseline.build(memory.embedder, records) if "alone" in args.mode else None
        return [await _answer(_searcher(memory, alone, mode), queries, mode, ingest, args.candidates)
                for mode in args.mode]


async def run_ablations(args: argparse.Namespace) -> dict[str, Any]:
    """The full system in every mode, then each ``args.ablate`` rule switched off in each ``args.ablate_mode``,
    and each rule's contribution: the full system's score minus the score without the rule."""
    records, queries = load_dataset(args.messages, args.queries)
    memo: Memo = {}
    modes = list(dict.fromkeys([*args.mode, *args.ablate_mode]))
    full: list[dict[str, Any]] = []
    ablated: dict[str, list[dict[str, Any]]] = {}
    per_query: dict[tuple[str, str], list[dict[str, float]]] = {}  # (rule, or "" for the full system; mode)
    timings: dict[str, float] = {}
    for form in ablation.INPUT_FORMS:
        core = form == ablation.INPUT_FORMS[0]
        rules = [rule for rule in args.ablate if ablation.ABLATIONS[rule].get("vector_input", ablation.INPUT_FORMS[0])
                 == form]
        if not core and not rules:
            continue
        with ablation.input_form(form):
            started = time.perf_counter()
            async with ingested(args, records, None, memo) as (memory, ingest):
                timings[f"ingest_{form}_s"] = round(time.perf_counter() - started, 1)
                if core:
                    started = time.perf_counter()
                    for mode in modes:
                        result, per_query[("", mode)] = await _answered(_searcher(memory, None, mode), queries,
                                                                        mode, ingest, args.candidates)
                        full.append(result)
                    timings["full_s"] = round(time.perf_counter() - started, 1)
                for rule in rules:
                    started = time.perf_counter()
                    ablated[rule] = []
                    with ablation.tuned(memory.search_engine, ablation.ABLATIONS[rule]):
                        for mode in args.ablate_mode:
                            result, per_query[(rule, mode)] = await _answered(_searcher(memory, None, mode),
                                                                              queries, mode, ingest, args.candidates)
                            ablated[rule].append(result)
                    timings[f"{rule}_s"] = round(time.perf_counter() - started, 1)
    by_mode = {result["mode"]: result for result in full}
    return {
        "dataset": str(args.messages.parent),
        "full": full,
        "ablations": ablated,
        "contributions": {rule: {result["mode"]: {metric: round(by_mode[result["mode"]][metric] - result[metric], 4)
                                                  for metric in METRICS} for result in results}
                          for rule, results in ablated.items()},
        # Each contribution question by question: the full system against the system without the rule.
        "paired": {rule: {mode: {metric: paired([scores[metric] for scores in per_query[("", mode)]],
                                                [scores[metric] for scores in per_query[(rule, mode)]]).as_dict()
                                 for metric in METRICS}
                          for mode in args.ablate_mode}
                   for rule in ablated},
        "timings_s": timings,
    }


Searcher = Callable[[Query], Awaitable[list[int]]]


def _searcher(memory: Memory, alone: AloneBaseline | None, mode: str) -> Searcher:
    """The message ids one mode ranks for a query, best first: memory's search, or the message-alone baseline."""
    if mode == "alone":
        assert alone is not None
        return lambda query: alone.search(query.question, query.channel_id, max(KS))

    async def search(query: Query) -> list[int]:
        channels = None if query.guild_wide else frozenset({query.channel_id})
        filters = SearchFilters(guild_id=GUILD_ID, channel_ids=channels)
        hits = await memory.search_engine.search(query.question, filters, max(KS), mode=mode, asked_at=query.asked_at)
        return [hit.message_id for hit in hits]

    return search


async def _answer(search: Searcher, queries: list[Query], mode: str, ingest: dict[str, Any],
                  candidates: int) -> dict[str, Any]:
    return (await _answered(search, queries, mode, ingest, candidates))[0]


async def _answered(search: Searcher, queries: list[Query], mode: str, ingest: dict[str, Any],
                    candidates: int) -> tuple[dict[str, Any], list[dict[str, float]]]:
    """One mode's result over ``queries``, and each query's scores in their order."""
    per_query: list[tuple[Query, dict[str, float]]] = []
    latencies: list[float] = []
    for query in queries:
        started = time.perf_counter()
        ranked = await search(query)
        latencies.append((time.perf_counter() - started) * 1000)
        per_query.append((query, {**score(ranked, query.relevant),
                                  FREE_AT: _free_share(ranked, ingest.get("content_free", frozenset()))}))
    languages = {"per_language": _grouped(per_query, lambda query: query.lang)} if any(
        query.lang for query, _ in per_query) else {}
    each = [scores for _, scores in per_query]
    result = {
        "mode": mode,
        "n_queries": len(per_query),
        **_mean(each),
        "per_category": _grouped(per_query, lambda query: query.category),
        **languages,
        "ingest_msgs_per_s": ingest["ingest_msgs_per_s"],
        "embed_only_msgs_per_s": ingest["embed_only_msgs_per_s"],
        "search_p50_ms": round(_percentile(latencies, 0.50), 2),
        "search_p95_ms": round(_percentile(latencies, 0.95), 2),
        "n_messages": ingest["n_messages"],
        "n_embedded": ingest["n_embedded"],
        "candidates": candidates,
        "profile": ingest["profile"],
    }
    return result, each


def _grouped(per_query: list[tuple[Query, dict[str, float]]], key: Callable[[Query], str]) -> dict[str, Any]:
    """The mean scores of the queries sharing each value of ``key``."""
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for query, scores in per_query:
        groups[key(query)].append(scores)
    return {value: {"n_queries": len(rows), **_mean(rows)} for value, rows in sorted(groups.items())}


def ablation_table(result: dict[str, Any]) -> str:
    """The full system's scores, then each rule's contribution (full minus without it), as a Markdown table; then,
    where the result reads them question by question (``paired``), each contribution's interval and the questions it
    helps and hurts at R@10 and MRR@10."""
    head = ["dataset", "system", "mode", *(f"R@{k}" for k in KS), f"MRR@{MRR_AT}"]
    dataset = Path(result["dataset"]).name
    lines = [_row(head), _row(["---"] * len(head))]
    lines += [_row([dataset, "full", full["mode"], *(f"{full[m]:.4f}" for m in METRICS)]) for full in result["full"]]
    for rule, by_mode in result["contributions"].items():
        lines += [_row([dataset, f"{rule} (contribution)", mode, *(f"{delta[m]:+.4f}" for m in METRICS)])
                  for mode, delta in by_mode.items()]
    if result.get("paired"):
        shown = ("recall@10", f"mrr@{MRR_AT}")
        head = ["dataset", "rule", "mode", *(f"{label} {part}" for label in ("R@10", f"MRR@{MRR_AT}")
                                             for part in ("95% interval", "questions helped / hurt"))]
        lines += ["", _row(head), _row(["---"] * len(head))]
        for rule, by_mode in result["paired"].items():
            lines += [_row([dataset, rule, mode, *(cell for metric in shown for cell in (
                f"{compared[metric]['low']:+.4f} to {compared[metric]['high']:+.4f}",
                f"{compared[metric]['better']} / {compared[metric]['worse']}"))])
                for mode, compared in by_mode.items()]
    return "\n".join(lines)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _modes(value: str) -> list[str]:
    modes = [mode.strip() for mode in value.split(",") if mode.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if not modes or unknown:
        raise argparse.ArgumentTypeError(f"modes are {', '.join(MODES)}; got {value!r}")
    return modes


def _rules(value: str) -> list[str]:
    try:
        return ablation.rules(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.recall", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="directory with messages.jsonl and queries.jsonl (default: LoCoMo, %(default)s)")
    parser.add_argument("--messages", type=Path, help="messages file (default: DATA/messages.jsonl)")
    parser.add_argument("--queries", type=Path, help="queries file (default: DATA/queries.jsonl)")
    parser.add_argument("--mode", type=_modes, default=["hybrid"],
                        help="vector, keyword, hybrid, alone (a baseline), or a comma list")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--profile", default="cpu-small", help="profile name or .toml path (reranker is off)")
    parser.add_argument("--candidates", type=int, default=100, help="vector and keyword candidates per query")
    parser.add_argument("--db", type=Path, default=None, help="directory for the temporary database")
    parser.add_argument("--database-url", help="also run on PostgreSQL (a scratch database on this server)")
    parser.add_argument("--ablate", type=_rules, action="extend", metavar="RULE",
                        help=f"switch off one rule at a time: {', '.join(ablation.ABLATIONS)}, a comma list, or all")
    parser.add_argument("--ablate-mode", type=_modes, default=["hybrid"],
                        help="the modes the ablations are answered in (default: hybrid)")
    parser.add_argument("--structure", action="store_true",
                        help="print each channel's structure and the answer-after-question rate; ingest nothing")
    args = parser.parse_args(argv)
    args.messages = args.messages or args.data / "messages.jsonl"
    args.queries = args.queries or args.data / "queries.jsonl"
    for path in (args.messages, args.queries):
        if not path.is_file():
            parser.error(f"{path} does not exist: give --data DIR (with messages.jsonl and queries.jsonl), "
                         "or --messages and --queries")
    if args.structure:
        records, queries = load_dataset(args.messages, args.queries)
        evidence = frozenset().union(*(query.relevant for query in queries))
        print(structure.table(args.messages.parent.name, records, channel_names(args.messages), evidence,
                              len(queries)))
        return
    if args.ablate:
        if args.database_url is not None:
            parser.error("--ablate runs on SQLite only: leave out --database-url")
        result = asyncio.run(run_ablations(args))
        print(ablation_table(result))
        _write(args.json, json.dumps(result, indent=2))
        return
    if args.database_url is not None:
        out = json.dumps(asyncio.run(run_both(args)), indent=2)
    else:
        results = asyncio.run(run(args))
        out = json.dumps(results[0] if len(results) == 1 else results, indent=2)
    print(out)
    _write(args.json, out)


def _write(path: Path | None, out: str) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(out + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
