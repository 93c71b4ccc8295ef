"""How much memory and time ``python -m cogs.memory import`` takes for one big DiscordChatExporter export, beside the
whole-file reader it replaced.

    python -m bench.import_stream [--messages 1000000] [--baseline-messages 200000] [--baseline-ref REF]
                                  [--workdir DIR] [--json OUT]

A synthetic export of ``--messages`` tiny messages (one channel, DiscordChatExporter's fields) is written to a
temporary folder, never into the repository, and imported by the real command (``cogs.memory.cli.main``: the
parser, memory, the reader, ingest, SQLite and FTS5) in a child process of its own, whose wall time and peak RSS
(``os.wait4``'s ``ru_maxrss``; this process stays small, as a child's peak starts from its parent's) are reported. The embedding model is left out, as bench/scale.py leaves it out above
its ``--model-max``: a stand-in with no weights takes its place and embeds nothing, so the import stores the messages
and leaves their vectors queued (embedding a million messages with MiniLM takes hours; that is the model's cost, not
the import's). A heartbeat on the command's event loop (a tick every 5 ms while it imports) gives
``max_loop_stall_ms``, the longest the loop was held beyond a tick (on a busy machine, the scheduler's too). The
command's exit status is therefore 1 ("... wait for their vectors"), and ``stored`` is read back
from the database.

The baseline is the same import by the code of ``--baseline-ref`` (the last commit with the whole-file reader),
unpacked with ``git archive`` into the temporary folder, at ``--baseline-messages`` (the old reader needs about 2 KB a
message), and the current code at that size too, so the two compare at one size. ``--baseline-messages 0`` skips it.

The bar (docs/ingest.md): ``peak_rss_mb`` at most 300 at 1,000,000 messages.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# The whole-file reader's last commit (before the import read exports a batch at a time).
BASELINE_REF = "5291e86"
BAR_PEAK_RSS_MB = 300
TICK_S = 0.005
LOOP_LINE = "bench.import_stream: longest event loop stall ms: "
# One message as DiscordChatExporter writes it, with the fields it always writes; tiny content.
MESSAGE = ('{{"id":"{id}","type":"Default","timestamp":"2024-05-01T{hour:02d}:{minute:02d}:{second:02d}.000+00:00",'
           '"timestampEdited":null,"callEndedTimestamp":null,"isPinned":false,"content":"note {n}",'
           '"author":{{"id":"{author}","name":"member{author}","discriminator":"0000","nickname":null,'
           '"isBot":false}},"attachments":[],"embeds":[],"stickers":[],"reactions":[],"mentions":[]}}')
HEADER = ('{"guild":{"id":"1","name":"Bench Guild","iconUrl":""},"channel":{"id":"20","type":"GuildTextChat",'
          '"categoryId":"900","category":"General","name":"general","topic":null},'
          '"dateRange":{"after":null,"before":null},"exportedAt":"2024-05-02T00:00:00+00:00","messages":[')
PROFILE = """\
description = "bench.import_stream: the CPU defaults, no reranker (nothing here searches)"
device = "cpu"
dtype = "float32"

[reranker]
enabled = false
"""


def write_export(path: Path, count: int) -> int:
    """A synthetic export of ``count`` messages; returns its size in bytes."""
    with open(path, "w", encoding="utf-8") as file:
        file.write(HEADER)
        for n in range(count):
            if n:
                file.write(",")
            file.write(MESSAGE.format(id=10**15 + n, n=n, author=5 + n % 7, hour=(n // 3600) % 24,
                                      minute=(n // 60) % 60, second=n % 60))
        file.write(f'],"messageCount":{count}}}')
    return path.stat().st_size


class StandInModel:
    """Stands in for EmbeddingService where nothing is embedded: a name, a dimension, and no weights to load."""

    model_name = "bench-import-stand-in"
    dimension = 384
    display_name = model_name
    device = "cpu"
    batch_size = 64

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def embed(self, texts: object) -> object:
        raise RuntimeError("the import bench embeds nothing")

    async def embed_queries(self, queries: object) -> object:
        raise RuntimeError("the import bench embeds nothing")


async def beating(gaps: list[float]) -> None:
    """Ticks every ``TICK_S`` and keeps the longest wait for a tick beyond it: how long the event loop was held."""
    loop = asyncio.get_running_loop()
    last = loop.time()
    while True:
        await asyncio.sleep(TICK_S)
        now = loop.time()
        gaps[0] = max(gaps[0], now - last - TICK_S)
        last = now


def child(code: Path, argv: list[str]) -> int:
    """Runs the import of the tree at ``code`` (this repository's or the baseline's) with the stand-in model and no
    background embedding, and a heartbeat on its event loop while it imports; the rest is the real command."""
    sys.path.insert(0, str(code))
    import cogs.memory.memory as memory_module
    from cogs.memory.cli import ingest, main

    import_files = ingest.import_files

    async def import_with_heartbeat(*args: Any) -> int:
        gaps = [0.0]
        heart = asyncio.create_task(beating(gaps))
        try:
            return await import_files(*args)
        finally:
            heart.cancel()
            print(f"{LOOP_LINE}{round(gaps[0] * 1000, 1)}", file=sys.stderr)

    ingest.import_files = import_with_heartbeat  # type: ignore[assignment]  # what ``register`` names

    memory_module._embedder_for = lambda *_args, **_kwargs: StandInModel()  # type: ignore[assignment]
    opened = memory_module.Memory.open.__func__  # type: ignore[attr-defined]

    async def open_storing_only(cls: Any, *args: Any, **kwargs: Any) -> Any:
        return await opened(cls, *args, **{**kwargs, "embed_backlog": False})

    memory_module.Memory.open = classmethod(open_storing_only)  # type: ignore[method-assign, assignment]
    return main(argv)


def stored_count(db: Path) -> int:
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(connection.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    finally:
        connection.close()


def run_import(code: Path, export: Path, folder: Path, messages: int) -> dict[str, Any]:
    """One import in a child process of its own: its wall time, peak RSS, exit status and what it stored."""
    folder.mkdir(parents=True)
    (folder / "profile.toml").write_text(PROFILE, encoding="utf-8")
    db = folder / "memory.sqlite3"
    argv = ["--db", str(db), "--index-dir", str(folder / "indexes"), "--profile", str(folder / "profile.toml"),
            "import", str(export)]
    command = [sys.executable, "-m", "bench.import_stream", "--child", str(code), "--", *argv]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with open(folder / "out.txt", "w") as out, open(folder / "err.txt", "w") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=REPO, env=environment, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    summary = (folder / "out.txt").read_text(encoding="utf-8").strip().splitlines()
    errors = (folder / "err.txt").read_text(encoding="utf-8")
    if "Traceback" in errors:
        print(errors, file=sys.stderr)
    stored = stored_count(db) if db.exists() else 0
    stalls = [float(line.removeprefix(LOOP_LINE)) for line in errors.splitlines() if line.startswith(LOOP_LINE)]
    return {"messages": messages, "wall_s": round(wall, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "msgs_per_s": round(stored / wall) if wall else None,
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "max_loop_stall_ms": stalls[0] if stalls else None,
            "exit_status": process.returncode, "stored": stored, "summary": summary[-1] if summary else None}


def baseline_tree(ref: str, into: Path) -> Path | None:
    """The code of ``ref`` (its ``cogs/``), unpacked from git into ``into``; None where there is no git checkout."""
    into.mkdir()
    try:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "cogs", "pyproject.toml"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"no baseline: {error}", file=sys.stderr)
        return None
    return into


def cpu() -> dict[str, Any]:
    """The CPU the figures were measured on."""
    model, flags = platform.processor(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    except OSError:
        pass
    # In a process of its own: torch would make this one big, and a child's peak RSS starts from its parent's.
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                           capture_output=True, text=True)
    capability = probe.stdout.strip() if probe.returncode == 0 else None
    return {"model": model, "cores": os.cpu_count(), "avx512_bf16": "avx512_bf16" in flags,
            "avx512_vnni": "avx512_vnni" in flags, "torch_cpu_capability": capability,
            "load_average": [round(load, 2) for load in os.getloadavg()]}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="messages in the export the bar is for")
    parser.add_argument("--baseline-messages", type=int, default=200_000,
                        help="messages in the export both readers import (0: no baseline)")
    parser.add_argument("--baseline-ref", default=BASELINE_REF, help="the commit whose import is the baseline")
    parser.add_argument("--workdir", type=Path, default=None, help="where the temporary folder goes")
    parser.add_argument("--json", type=Path, help="also write the result here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:  # --child CODE -- the import's own arguments
        raise SystemExit(child(Path(argv[1]), argv[3:]))
    args = parse_args(argv)
    result: dict[str, Any] = {"cpu": cpu(), "bar_peak_rss_mb": BAR_PEAK_RSS_MB}
    with tempfile.TemporaryDirectory(prefix="import-stream-", dir=args.workdir) as scratch:
        root = Path(scratch)
        export = root / "export.json"
        size = write_export(export, args.messages)
        result["streaming"] = {**run_import(REPO, export, root / "streaming", args.messages),
                               "file_mb": round(size / 2**20, 1)}
        result["meets_bar"] = result["streaming"]["peak_rss_mb"] <= BAR_PEAK_RSS_MB
        print(json.dumps(result["streaming"]), file=sys.stderr, flush=True)
        if args.baseline_messages:
            old = baseline_tree(args.baseline_ref, root / "baseline-code")
            small = root / "small.json"
            size = write_export(small, args.baseline_messages)
            result["same_size"] = {"file_mb": round(size / 2**20, 1),
                                   "streaming": run_import(REPO, small, root / "streaming-small",
                                                           args.baseline_messages)}
            print(json.dumps(result["same_size"]), file=sys.stderr, flush=True)
            if old is not None:
                result["same_size"]["whole_file"] = {"ref": args.baseline_ref, **run_import(
                    old, small, root / "whole-file", args.baseline_messages)}
    print(json.dumps(result, indent=2))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
