"""Ingest rate, search latency and index recall in one guild at growing sizes, against brute-force numpy.

    python -m bench.scale --sizes 10000,100000,1000000 [--json OUT] [--database-url postgresql://...]
                          [--model NAME_OR_DIR] [--device cpu|cuda] [--dtype float32|bfloat16|float16]

Each size runs in a fresh process (so ``peak_rss_mb`` is that size's own peak) through the real ingest path
and the real SqliteSearchEngine. Up to ``--model-max`` messages are embedded with the real model (``"vectors":
"model"``, and ``embed_only_msgs_per_s`` is the model alone on exactly the texts ingest embedded); above it,
``--vectors realistic`` (the default) stands in each message's real MiniLM vector, perturbed (bench/vectors.py),
and ``--vectors random`` random unit vectors. Message texts are sampled with replacement from a LoCoMo-format
``messages.jsonl``; queries from its ``queries.jsonl``, and searches always embed them with the real model.

Per size: ``search_p95_ms`` (a whole hybrid search, its query's embedding included), ``query_embed_p95_ms``,
``vector_p95_ms`` (the index alone, on query vectors embedded beforehand), ``vector_search_p95_ms`` (a search in
vector mode, embedding included), ``keyword_p95_ms``, ``bruteforce_p95_ms`` (numpy over every vector),
``index_recall_at_10_realistic`` (the guild's index against exact search, queries shaped like its vectors:
perturbed real questions) and ``index_recall_at_10_random`` (a second index of random unit vectors of the same
size, built after ``peak_rss_mb`` is read: the worst case; null above ``--random-max``), ``bytes_per_vector`` (the
saved index file), ``index_build_s`` (time spent adding to the index during ingest) and ``index_load_verify_s``.

``--database-url`` runs each size on the PostgreSQL store as well, in the same process after SQLite: the same
messages, with stand-in vectors drawn the same way, through the real ingest path into a scratch database on that
server (bench/pg.py), then the same searches; its figures are under ``"postgresql"`` (there ``vector_p95_ms`` is
a search in vector mode, its query's embedding included; ``peak_rss_mb`` covers both runs).
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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
import numpy as np
from bench.exact import K, exact_comparison, percentile_ms, random_worst_case
from bench.ingesting import ingest_showing_progress
from bench.vectors import CACHE_DIR, Perturber, RandomEmbedder, RealisticEmbedder, load_real_vectors, message_keys
from cogs.memory.language import keywords as text
from cogs.memory.runtime.config import DTYPES
from cogs.memory.vectors.embedding import DEFAULT_MODEL, EmbeddingService
from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.records import MessageRecord, SearchFilters
from cogs.memory.store.sqlite.search import SqliteSearchEngine
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.registry import IndexRegistry

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo"
GUILD = 1
CHANNELS = 50
START = datetime(2024, 1, 1, tzinfo=UTC)
PROFILE = MemoryProfile(name="bench-scale", vector_candidates=50, keyword_candidates=50)


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


class TimedRegistry(IndexRegistry):
    """An IndexRegistry that adds up the time its adds take (the index build, spread over ingest)."""

    add_seconds = 0.0

    async def add(self, guild_id: int, ids: np.ndarray, vectors: np.ndarray) -> None:
        started = time.perf_counter()
        await super().add(guild_id, ids, vectors)
        self.add_seconds += time.perf_counter() - started


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
    # Queries embed as the bot embeds them: on ONNX Runtime, exported into the run's cache folder once.
    model = EmbeddingService(args.model, args.device, args.dtype, batch_size=args.embed_batch,
                             onnx_dir=args.vector_cache / "onnx")
    await model.start()
    kind = "model" if size <= args.model_max else args.vectors
    embedder, perturber = await stand_in(kind, model, args.data, args.vector_cache)
    result: dict[str, Any] = {"messages": size, "vectors": kind}
    with tempfile.TemporaryDirectory(dir=args.workdir) as workdir:
        store = await SqliteStore.open(Path(workdir) / "scale.sqlite3")
        indexes = TimedRegistry(store, Path(workdir) / "indexes", model.model_name, model.dimension)
        result.update(await ingest_all(store, embedder, indexes, make_records(size, messages, seed=size), model, args,
                                       Path(workdir)))
        result["index_build_s"] = round(indexes.add_seconds, 1)
        if isinstance(embedder, RealisticEmbedder):
            result["realistic_unmatched_texts"] = embedder.unmatched
        await indexes.close()  # saves; the old registry's index goes with it, so the reload is measured alone
        del indexes
        indexes = IndexRegistry(store, Path(workdir) / "indexes", model.model_name, model.dimension)
        started = time.perf_counter()
        await indexes.load_all()
        result["index_load_verify_s"] = round(time.perf_counter() - started, 2)
        index = indexes.get(GUILD)
        result.update(index_kind=index.kind, bytes_per_vector=round(indexes.path_for(GUILD).stat().st_size / size, 1),
                      memory_bytes_per_vector=round(index.memory_bytes() / size, 1))
        result.update(await time_searches(SqliteSearchEngine(store, model, indexes, PROFILE), model, questions))
        # Queries shaped like the stored vectors: the real questions' embeddings, perturbed like the messages.
        queries = await model.embed_queries([text.embedding_query(question) for question in questions])
        if perturber is not None:
            queries = perturber.perturb(queries, np.random.default_rng(size + 1))
        vector = await timed([lambda q=q: indexes.search(GUILD, q, PROFILE.vector_candidates) for q in queries])
        result["vector_p95_ms"] = percentile_ms(vector, 95)
        ids, matrix = await stored_vectors(store, model.model_name)
        result.update(exact_comparison(index, ids, matrix, queries, "random" if kind == "random" else "realistic",
                                       PROFILE.vector_candidates))
        del ids, matrix
        await indexes.close()
        await store.close()
    if args.database_url is not None:
        result["postgresql"] = await run_size_postgres(size, args, model, questions)
    dimension = model.dimension
    await model.close()
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if kind != "random" and size > args.random_max:
        result["index_recall_at_10_random"] = None
        result["random_skipped"] = f"above --random-max {args.random_max}"
    elif kind != "random":
        # The worst case takes a second build: show what is known so far, in case the run is cut short.
        print(json.dumps({"partial": result}), file=sys.stderr, flush=True)
        result.update(random_worst_case(size, dimension, model.model_name, len(questions)))
    return result


async def stand_in(kind: str, model: EmbeddingService, data: Path, cache: Path) -> tuple[Any, Perturber | None]:
    """What ingest embeds with for ``kind``, and the perturbation that shapes queries like its vectors."""
    if kind == "model":
        return RecordingEmbedder(model), None
    if kind == "random":
        return RandomEmbedder(model.model_name, model.dimension, 256), None
    real = await asyncio.to_thread(load_real_vectors, data, model, cache)
    perturber = await asyncio.to_thread(Perturber.fit, real.messages)
    return RealisticEmbedder(model.model_name, real, message_keys(data / "messages.jsonl"), perturber, 256), perturber


async def ingest_all(store: Any, embedder: Any, indexes: Any, records: list[MessageRecord],
                     model: EmbeddingService, args: argparse.Namespace, workdir: Path | None) -> dict[str, Any]:
    """Every record through the real ingest path; its rate (and the model's alone, when the model embeds)."""
    result: dict[str, Any] = {}
    ingest = IngestQueue(store, embedder, indexes, batch_size=args.batch_size, queue_size=4 * args.batch_size)
    ingest.start()
    embed_only: list[float] = []
    if isinstance(embedder, RecordingEmbedder) and workdir is not None:
        # The model's first pass over new text lengths is far slower than later ones (2.7x measured here),
        # so a throw-away ingest of the same messages warms it and yields the exact texts ingest embeds.
        texts = await warm_up(workdir / "warm-up", model, records)
        embed_only.append(await time_embed_only(model, texts))
    started = time.perf_counter()
    await ingest_showing_progress(records, ingest)
    result["ingest_msgs_per_s"] = round(len(records) / (time.perf_counter() - started), 1)
    if embed_only:
        # Timed before and after ingest: the mean cancels other load that drifts during the run.
        embed_only.append(await time_embed_only(model, embedder.texts))
        result["embed_only_msgs_per_s"] = round(float(np.mean(embed_only)), 1)
        result["ingest_vs_embed_only"] = round(result["ingest_msgs_per_s"] / result["embed_only_msgs_per_s"], 3)
    await ingest.close()
    return result


async def time_searches(engine: Any, model: EmbeddingService | None, questions: list[str]) -> dict[str, Any]:
    """p50/p95 of whole searches (hybrid, keyword, vector mode), and of the query's embedding alone."""
    filters = SearchFilters(guild_id=GUILD)
    for question in questions[:5]:  # warm caches (the fts5vocab table, the server's buffers) before timing
        await engine.search(question, filters, K)
    hybrid = await timed([lambda q=q: engine.search(q, filters, K) for q in questions])
    keyword = await timed([lambda q=q: engine.search(q, filters, K, mode="keyword") for q in questions])
    vector_search = await timed([lambda q=q: engine.search(q, filters, K, mode="vector") for q in questions])
    result = {"search_p50_ms": percentile_ms(hybrid, 50), "search_p95_ms": percentile_ms(hybrid, 95),
              "keyword_p95_ms": percentile_ms(keyword, 95)}
    if model is None:
        return result | {"vector_p95_ms": percentile_ms(vector_search, 95)}
    # The query's own embedding is part of every search above; shown apart, since other load moves it most.
    embedding = await timed([lambda q=q: model.embed_queries([text.embedding_query(q)]) for q in questions])
    return result | {"vector_search_p95_ms": percentile_ms(vector_search, 95),
                     "query_embed_p95_ms": percentile_ms(embedding, 95)}


async def stored_vectors(store: SqliteStore, model_name: str) -> tuple[np.ndarray, np.ndarray]:
    """Every vector SQLite holds for the guild, and its row id."""
    parts = [page async for page in store.iter_embeddings(GUILD, model_name)]
    return np.concatenate([ids for ids, _ in parts]), np.concatenate([vectors for _, vectors in parts])


async def run_size_postgres(size: int, args: argparse.Namespace, model: EmbeddingService,
                            questions: list[str]) -> dict[str, Any]:
    """Ingest rate and search latency of the same messages and queries on the PostgreSQL store."""
    from cogs.memory.store.postgres.indexes import DatabaseIndexes
    from cogs.memory.store.postgres.search import PostgresSearchEngine
    from cogs.memory.store.postgres.store import PostgresStore

    from .pg import scratch_database

    # The model is warm from the SQLite run; stand-in vectors are drawn afresh with the same seed.
    kind = "model" if size <= args.model_max else args.vectors
    embedder = model if kind == "model" else (await stand_in(kind, model, args.data, args.vector_cache))[0]
    records = make_records(size, load_jsonl(args.data / "messages.jsonl"), seed=size)
    async with scratch_database(args.database_url, "scale") as url:
        store = await PostgresStore.open(url)
        try:
            indexes = DatabaseIndexes(store, model.model_name, model.dimension)
            result = await ingest_all(store, embedder, indexes, records, model, args, None)
            del records
            result.update(await time_searches(PostgresSearchEngine(store, model, PROFILE), None, questions))
        finally:
            await store.close()
    return result


async def warm_up(directory: Path, model: EmbeddingService, records: list[MessageRecord]) -> list[str]:
    store = await SqliteStore.open(directory / "warm-up.sqlite3")
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


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated message counts")
    parser.add_argument("--json", type=Path, help="also write the result here (after each size)")
    parser.add_argument("--data", type=Path, default=DATA, help="directory with messages.jsonl and queries.jsonl")
    parser.add_argument("--model-max", type=int, default=10_000, help="largest size embedded with the real model")
    parser.add_argument("--vectors", choices=("realistic", "random"), default="realistic",
                        help="what stands in for the model above --model-max")
    parser.add_argument("--vector-cache", type=Path, default=CACHE_DIR,
                        help="where the real vectors of --data are cached (embedded once per model and data)")
    parser.add_argument("--random-max", type=int, default=1_000_000,
                        help="largest size that also builds the random-vector worst case (a second, slow build)")
    parser.add_argument("--queries", type=int, default=100, help="timed searches per size")
    parser.add_argument("--batch-size", type=int, default=256, help="ingest batch size")
    parser.add_argument("--embed-batch", type=int, default=64, help="embedding batch size")
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help="embedding model: a profile's model name, a local directory or a hub id")
    parser.add_argument("--device", default="cpu", help="where the embedding model runs (cpu, cuda)")
    parser.add_argument("--dtype", choices=DTYPES, default="float32", help="the embedding model's dtype")
    parser.add_argument("--workdir", type=Path, default=None, help="where the temporary database goes")
    parser.add_argument("--database-url", help="also run each size on PostgreSQL (a scratch database on this server)")
    parser.add_argument("--single", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def child_command(size: int, args: argparse.Namespace) -> list[str]:
    command = [sys.executable, "-m", "bench.scale", "--single", "--sizes", str(size), "--data", str(args.data),
               "--model-max", str(args.model_max), "--vectors", args.vectors, "--vector-cache",
               str(args.vector_cache), "--random-max", str(args.random_max), "--queries", str(args.queries),
               "--batch-size", str(args.batch_size), "--embed-batch", str(args.embed_batch), "--model", args.model,
               "--device", args.device, "--dtype", args.dtype]
    if args.workdir is not None:
        command += ["--workdir", str(args.workdir)]
    if args.database_url is not None:
        command += ["--database-url", args.database_url]
    return command


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    if args.single:
        print(json.dumps(asyncio.run(run_size(sizes[0], args))))
        return
    runs = []
    for size in sizes:
        # The child's stderr passes through: its partial figures show while its worst case still builds.
        completed = subprocess.run(child_command(size, args), check=True, stdout=subprocess.PIPE, text=True)
        runs.append(json.loads(completed.stdout.strip().splitlines()[-1]))
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
        if args.json is not None:  # after each size, so a run cut short keeps the sizes it finished
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"runs": runs}, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"runs": runs}, indent=2))


if __name__ == "__main__":
    main()
