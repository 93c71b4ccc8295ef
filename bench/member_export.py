"""Does a member's export stream? 200,000 messages of one member exported from SQLite, in a process of its own whose
peak resident memory is measured against what it held before the export began.

    python -m bench.member_export [--json OUT] [--messages 200000] [--part-mib 10]

The database is filled first (keyword rows, no vectors: the export reads none); then a child process opens the
store, notes its resident memory, exports member 100 of guild 1 into parts of at most --part-mib MiB, and reports
its peak (ru_maxrss). The export's text is about 200 bytes a message: held whole, 200,000 would be some 40 MB of text
and several times that as Python objects.
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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.output import report
from cogs.memory.language.keywords import fts_document
from cogs.memory.privacy.member_export import ExportRequest, write_member_export
from cogs.memory.privacy.subject_access import Readable, SubjectAccess
from cogs.memory.records import MessageRecord
from cogs.memory.store.rows import NewRow, WriteBatch
from cogs.memory.store.sqlite.store import SqliteStore

BATCH = 5000
T0 = datetime(2020, 1, 1, tzinfo=UTC)
TEXT = "message {n}: the plan for the lake cabin trip, who brings the tent, and when the train leaves on Saturday"


def rss_mib() -> float:
    """This process's resident memory now (Linux /proc)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


async def fill(db_path: Path, count: int) -> None:
    store = await SqliteStore.open(db_path)
    try:
        for start in range(1, count + 1, BATCH):
            records = [MessageRecord(message_id=n, guild_id=1, channel_id=10 + n % 4, parent_channel_id=None,
                                     author_id=100, author_name="ann", content=TEXT.format(n=n),
                                     created_at=T0 + timedelta(seconds=n), reply_to_id=n - 1 if n % 7 == 0 else None)
                       for n in range(start, min(start + BATCH, count + 1))]
            batch = WriteBatch(guild_ids={1})
            batch.inserts = [NewRow(rowid, record, record.content, fts_document(record.content))
                             for rowid, record in zip(store.allocate_rowids(len(records)), records, strict=True)]
            await store.write(batch)
    finally:
        await store.close()


async def export(db_path: Path, out_dir: Path, part_mib: int) -> dict[str, Any]:
    store = await SqliteStore.open(db_path)
    try:
        before = rss_mib()
        started = time.perf_counter()
        request = ExportRequest(1, "bench", 100, Readable(frozenset({10, 11, 12, 13})),
                                {10: "a", 11: "b", 12: "c", 13: "d"}, False)
        result = await write_member_export(SubjectAccess(store), request, out_dir, part_limit=part_mib * 2**20)
        seconds = time.perf_counter() - started
    finally:
        await store.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    sizes = [part.stat().st_size for part in result.parts]
    return {"messages": result.messages, "parts": len(sizes), "largest_part_mib": round(max(sizes) / 2**20, 2),
            "total_mib": round(sum(sizes) / 2**20, 2), "seconds": round(seconds, 1),
            "rss_before_mib": round(before, 1), "peak_rss_mib": round(peak, 1),
            "peak_added_mib": round(peak - before, 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.member_export", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--part-mib", type=int, default=10)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", nargs=2, type=Path, metavar=("DB", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(asyncio.run(export(*args.child, args.part_mib))))
        return
    with tempfile.TemporaryDirectory() as workdir:
        db_path = Path(workdir) / "memory.sqlite3"
        asyncio.run(fill(db_path, args.messages))
        child = subprocess.run([sys.executable, "-m", "bench.member_export", "--part-mib", str(args.part_mib),
                                "--child", str(db_path), str(Path(workdir) / "out")],
                               check=True, capture_output=True, text=True)
    figures = {"bench": "member_export", "messages_stored": args.messages, **json.loads(child.stdout)}
    report(figures, args.json)


if __name__ == "__main__":
    main()
