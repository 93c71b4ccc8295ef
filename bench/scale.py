"""Ingest rate and search latency in one guild at growing sizes, against a brute-force numpy baseline.

    python -m bench.scale --sizes 10000,100000,1000000 [--json OUT] [--database-url postgresql://...]

Each size runs in a fresh process (so ``peak_rss_mb`` is that size's own peak) through the real ingest path
and the real SearchEngine. Up to ``--model-max`` messages are embedded with the real model (``vectors":
"model"``, and ``embed_only_msgs_per_s`` is the model alone on exactly the texts ingest embedded); above it,
random unit vectors stand in for the model (``"vectors": "random"``) while queries are still embedded by it.
Message texts are sampled with replacement from a LoCoMo-format ``messages.jsonl``; queries from its
``queries.jsonl``.

``--database-url`` runs each size on the PostgreSQL store as well, in the same process after SQLite: the same
messages (and, above ``--model-max``, the same random vectors) through the real ingest path into a scratch
database on that server (bench/pg.py), then the same searches; its figures are under ``"postgresql"``
(``peak_rss_mb`` covers both runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from cogs.memory.embedding import EmbeddingService
from cogs.memory.ingest import IngestQueue
from cogs.memory.profile import MemoryProfile
from cogs.memory.records import MessageRecord, SearchFilters
from cogs.memory.search import SearchEngine
from cogs.memory.store import MemoryStore
from cogs.memory.vector_index import IndexRegistry, VectorIndex

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo"
GUILD = 1
CHANNELS = 50
K = 10
START = datetime(2024, 1, 1, tzinfo=UTC)


class RandomEmbedder:
    """An ``Embedder`` above ``--model-max``: random unit vectors, on its own thread."""

    def __init__(self, model_name: str, dimension: int, batch_size: int) -> None:
        self.model_name = model_name
        self.dimension = dimension
        self.batch_size = batch_size
        self._rng = np.random.default_rng(0)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="random-embedding")

    def embed_sync(self, texts: list[str]) -> np.ndarray:
        vectors = self._rng.standard_normal((len(texts), self.dimension), dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.embed_sync, list(texts))

    async def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        return await self.embed(queries)


class RecordingEmbedder:
    """An ``Embedder`` over the real model, keeping every text the ingest path asked it to embed."""

    def __init__(self, inner: EmbeddingService) -> None:
        self._inner = inner
        self.model_name, self.dimension, self.batch_size = inner.model_name, inner.dimension, inner.batch_size
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return await self._inner.embed(texts)

    async def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        return await self._inner.embed_queries(queries)


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


def make_records(count: int, messages: list[dict[str, Any]], seed: int) -> list[MessageRecord]:
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(messages), size=count)
    authors = sorted({message["author"] for message in messages})
    author_ids = {name: 1000 + i for i, name in enumerate(authors)}
    return [
        MessageRecord(message_id=10_000_000 + i, guild_id=GUILD, channel_id=100 + i % CHANNELS,
                      parent_channel_id=None, author_id=author_ids[messages[p]["author"]],
                      author_name=messages[p]["author"], content=messages[p]["text"],
                      created_at=START + timedelta(seconds=i))
        for i, p in enumerate(picks)
    ]


def percentile_ms(samples: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(samples) * 1000.0, q)), 2)


async def timed(calls: Sequence[Any]) -> list[float]:
    samples = []
    for call in calls:
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return samples


async def run_size(size: int, args: argparse.Namespace) -> dict[str, Any]:
    messages = load_jsonl(args.data / "messages.jsonl")
    questions = [query["question"] for query in load_jsonl(args.data / "queries.jsonl")]
    rng = np.random.default_rng(size)
    questions = [questions[i] for i in rng.choice(len(questions), size=args.queries, replace=False)]
    model = EmbeddingService(batch_size=args.embed_batch)
    await model.start()
    use_model = size <= args.model_max
    embedder = RecordingEmbedder(model) if use_model else RandomEmbedder(model.model_name, model.dimension, 256)
    result: dict[str, Any] = {"messages": size, "vectors": "model" if use_model else "random"}
    with tempfile.TemporaryDirectory(dir=args.workdir) as workdir:
        store = await MemoryStore.open(Path(workdir) / "scale.sqlite3")
        indexes = IndexRegistry(store, Path(workdir) / "indexes", model.model_name, model.dimension)
        ingest = IngestQueue(store, embedder, indexes, batch_size=args.batch_size, queue_size=4 * args.batch_size)
        ingest.start()
        records = make_records(size, messages, seed=size)
        embed_only: list[float] = []
        if use_model:
            # The model's first pass over new text lengths is far slower than later ones (2.7x measured here),
            # so a throw-away ingest of the same messages warms it and yields the exact texts ingest embeds.
            texts = await warm_up(Path(workdir) / "warm-up", model, records)
            embed_only.append(await time_embed_only(model, texts))
        started = time.perf_counter()
        for record in records:
            await ingest.add(record)
        await ingest.flush()
        elapsed = time.perf_counter() - started
        result["ingest_msgs_per_s"] = round(size / elapsed, 1)
        if use_model:
            # Timed before and after ingest: the mean cancels other load that drifts during the run.
            embed_only.append(await time_embed_only(model, embedder.texts))
            result["embed_only_msgs_per_s"] = round(float(np.mean(embed_only)), 1)
            result["ingest_vs_embed_only"] = round(result["ingest_msgs_per_s"] / result["embed_only_msgs_per_s"], 3)
        await ingest.close()
        del records, ingest  # the old registry's indexes go with it, so the reload below is measured alone

        # Restart: save, then load and verify against SQLite as on start.
        await indexes.close()
        indexes = IndexRegistry(store, Path(workdir) / "indexes", model.model_name, model.dimension)
        started = time.perf_counter()
        await indexes.load_all()
        result["index_load_verify_s"] = round(time.perf_counter() - started, 2)
        index = indexes.get(GUILD)
        result["index_kind"] = index.kind
        engine = SearchEngine(store, model, indexes, MemoryProfile(name="bench-scale", vector_candidates=50,
                                                                   keyword_candidates=50))
        filters = SearchFilters(guild_id=GUILD)
        for question in questions[:5]:  # warm caches (and the fts5vocab table) before timing
            await engine.search(question, filters, K)
        hybrid = await timed([lambda q=q: engine.search(q, filters, K) for q in questions])
        keyword = await timed([lambda q=q: engine.search(q, filters, K, mode="keyword") for q in questions])
        vector = await timed([lambda q=q: engine.search(q, filters, K, mode="vector") for q in questions])
        # The query's own embedding is part of every search above; shown apart, since other load moves it most.
        embedding = await timed([lambda q=q: model.embed([q]) for q in questions])
        result["query_embed_p95_ms"] = percentile_ms(embedding, 95)
        result.update(search_p50_ms=percentile_ms(hybrid, 50), search_p95_ms=percentile_ms(hybrid, 95),
                      keyword_p95_ms=percentile_ms(keyword, 95), vector_p95_ms=percentile_ms(vector, 95))
        result.update(await brute_force(store, index, model, questions))
        await indexes.close()
        await store.close()
    if args.database_url is not None:
        result["postgresql"] = await run_size_postgres(size, args, model, questions)
    await model.close()
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return result


async def run_size_postgres(size: int, args: argparse.Namespace, model: EmbeddingService,
                            questions: list[str]) -> dict[str, Any]:
    """Ingest rate and search latency of the same messages and queries on the PostgreSQL store."""
    from cogs.memory.pg.indexes import DatabaseIndexes
    from cogs.memory.pg.search import PostgresSearchEngine
    from cogs.memory.pg.store import PostgresStore

    from .pg import scratch_database

    use_model = size <= args.model_max  # the model is warm from the SQLite run; random vectors repeat (seed 0)
    embedder = model if use_model else RandomEmbedder(model.model_name, model.dimension, 256)
    records = make_records(size, load_jsonl(args.data / "messages.jsonl"), seed=size)
    result: dict[str, Any] = {}
    async with scratch_database(args.database_url, "scale") as url:
        store = await PostgresStore.open(url)
        try:
            ingest = IngestQueue(store, embedder, DatabaseIndexes(model.model_name, model.dimension),
                                 batch_size=args.batch_size, queue_size=4 * args.batch_size)
            ingest.start()
            started = time.perf_counter()
            for record in records:
                await ingest.add(record)
            await ingest.flush()
            result["ingest_msgs_per_s"] = round(size / (time.perf_counter() - started), 1)
            await ingest.close()
            del records
            engine = PostgresSearchEngine(store, model, MemoryProfile(name="bench-scale", vector_candidates=50,
                                                                      keyword_candidates=50))
            filters = SearchFilters(guild_id=GUILD)
            for question in questions[:5]:  # warm the server's caches before timing
                await engine.search(question, filters, K)
            hybrid = await timed([lambda q=q: engine.search(q, filters, K) for q in questions])
            keyword = await timed([lambda q=q: engine.search(q, filters, K, mode="keyword") for q in questions])
            vector = await timed([lambda q=q: engine.search(q, filters, K, mode="vector") for q in questions])
        finally:
            await store.close()
    result.update(search_p50_ms=percentile_ms(hybrid, 50), search_p95_ms=percentile_ms(hybrid, 95),
                  keyword_p95_ms=percentile_ms(keyword, 95), vector_p95_ms=percentile_ms(vector, 95))
    return result


async def warm_up(directory: Path, model: EmbeddingService, records: list[MessageRecord]) -> list[str]:
    store = await MemoryStore.open(directory / "warm-up.sqlite3")
    recorder = RecordingEmbedder(model)
    ingest = IngestQueue(store, recorder, IndexRegistry(store, directory, model.model_name, model.dimension))
    ingest.start()
    for record in records:
        await ingest.add(record)
    await ingest.close()
    await store.close()
    return recorder.texts


async def time_embed_only(model: EmbeddingService, texts: list[str]) -> float:
    """Messages per second of the model alone on exactly the texts ingest embedded."""
    started = time.perf_counter()
    await asyncio.get_running_loop().run_in_executor(None, model.embed_sync, texts)
    return len(texts) / (time.perf_counter() - started)


async def brute_force(store: MemoryStore, index: Any, model: EmbeddingService, questions: list[str]) -> dict[str, Any]:
    """Exact numpy search over every vector (the baseline), and the index's recall@10 against it."""
    ids = np.zeros(0, dtype=np.int64)
    matrix = np.zeros((0, model.dimension), dtype=np.float32)
    parts: list[tuple[np.ndarray, np.ndarray]] = [page async for page in store.iter_embeddings(GUILD, model.model_name)]
    ids = np.concatenate([page_ids for page_ids, _ in parts] or [ids])
    matrix = np.concatenate([vectors for _, vectors in parts] or [matrix])
    del parts
    queries = await model.embed(questions)
    samples, exact = [], []
    for query in queries:
        started = time.perf_counter()
        scores = matrix @ query
        top = np.argpartition(-scores, K)[:K]
        top = top[np.argsort(-scores[top])]
        samples.append(time.perf_counter() - started)
        exact.append(set(ids[top].tolist()))
    result = {"bruteforce_p95_ms": percentile_ms(samples, 95),
              "index_recall_at_10": recall_at_k(index, queries, exact),
              "index_nprobe": index.nprobe() if index.kind == "ivf" else None}
    if index.kind == "flat" and len(ids) >= 1_000:
        # What IVF would lose on these (real or random) vectors: the same data forced into an IVF index.
        forced = VectorIndex(index.dimension, index.model, flat_max=0)
        forced.add(ids, matrix)
        result["forced_ivf_recall_at_10"] = recall_at_k(forced, queries, exact)
    return result


def recall_at_k(index: Any, queries: np.ndarray, exact: list[set[int]]) -> float:
    _, found = index.search(queries, K)
    return round(float(np.mean([len(exact[i] & set(found[i].tolist())) / K for i in range(len(queries))])), 3)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated message counts")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--data", type=Path, default=DATA, help="directory with messages.jsonl and queries.jsonl")
    parser.add_argument("--model-max", type=int, default=10_000, help="largest size embedded with the real model")
    parser.add_argument("--queries", type=int, default=100, help="timed searches per size")
    parser.add_argument("--batch-size", type=int, default=256, help="ingest batch size")
    parser.add_argument("--embed-batch", type=int, default=64, help="embedding batch size")
    parser.add_argument("--workdir", type=Path, default=None, help="where the temporary database goes")
    parser.add_argument("--database-url", help="also run each size on PostgreSQL (a scratch database on this server)")
    parser.add_argument("--single", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    if args.single:
        print(json.dumps(asyncio.run(run_size(sizes[0], args))))
        return
    runs = []
    for size in sizes:
        command = [sys.executable, "-m", "bench.scale", "--single", "--sizes", str(size), "--data", str(args.data),
                   "--model-max", str(args.model_max), "--queries", str(args.queries),
                   "--batch-size", str(args.batch_size), "--embed-batch", str(args.embed_batch)]
        if args.workdir is not None:
            command += ["--workdir", str(args.workdir)]
        if args.database_url is not None:
            command += ["--database-url", args.database_url]
        completed = subprocess.run(command, check=True, capture_output=True, text=True)
        runs.append(json.loads(completed.stdout.strip().splitlines()[-1]))
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    report = {"runs": runs}
    print(json.dumps(report, indent=2))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
