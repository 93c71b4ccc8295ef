"""``kill -9`` of a real process while it captures messages (real MiniLM, SQLite and FAISS), at a random moment:
after a restart every acknowledged message is stored, and SQLite, FTS5, the embeddings and FAISS agree."""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.registry import IndexRegistry
from tests.cogs.memory.ingest.queue_checks import consistent_ids
from tests.fixtures.core import fetchall

REPOSITORY = Path(__file__).resolve().parents[4]
# Two runs on one database: the second starts from whatever the first left when it was killed.
FIRST_IDS = (1, 100_001)


async def run_until_killed(db_path: Path, index_dir: Path, first_id: int, rng: random.Random, log: Path) -> set[int]:
    """Start a capturing child, kill it (SIGKILL) after a random number of acknowledged rounds plus a random pause;
    the message ids it acknowledged."""
    with log.open("ab") as stderr:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.fixtures.ingest_child", str(db_path), str(index_dir), str(first_id),
            cwd=REPOSITORY, stdout=asyncio.subprocess.PIPE, stderr=stderr)
    assert child.stdout is not None
    acknowledged: set[int] = set()
    try:
        assert await child.stdout.readline() == b"ready\n", log.read_text()
        for _ in range(rng.randint(1, 4)):
            line = await child.stdout.readline()
            assert line.endswith(b"\n"), log.read_text()
            acknowledged.update(map(int, line.split()))
        await asyncio.sleep(rng.uniform(0.0, 1.0))
        child.kill()
        rest = await child.stdout.read()
        # Lines written before the kill were acknowledged too; a cut-off last line was not.
        acknowledged.update(int(word) for line in rest.split(b"\n")[:-1] for word in line.split())
    finally:
        if child.returncode is None:
            child.kill()
        await child.wait()
    return acknowledged


async def test_every_acknowledged_message_survives_kill_9(
    db_path: Path, index_dir: Path, tmp_path: Path, embedder: EmbeddingService
) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    acknowledged: set[int] = set()
    for first_id in FIRST_IDS:
        acknowledged |= await run_until_killed(db_path, index_dir, first_id, rng, tmp_path / "child.log")
    store = await SqliteStore.open(db_path)
    indexes = IndexRegistry(store, index_dir, embedder.model_name, embedder.dimension)
    await indexes.load_all()
    queue = IngestQueue(store, embedder, indexes)
    queue.start()
    try:
        await queue.flush(vectors=True)  # what the killed run left waiting for its vector
        stored = {row[0] for row in await fetchall(store, "SELECT message_id FROM messages")}
        assert acknowledged and acknowledged <= stored, f"seed {seed}: lost {sorted(acknowledged - stored)}"
        assert await consistent_ids(store, indexes), f"seed {seed}"
    finally:
        await queue.close()
        await indexes.close()
        await store.close()
