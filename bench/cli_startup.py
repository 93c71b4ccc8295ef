"""How long the light terminal's commands take, and how much memory, on a 10k-message store: each command as an admin
runs it (``python -m cogs.memory ...``, a fresh interpreter), wall time and peak RSS, for this tree and for an older
commit checked out beside it (``--before``, a git worktree under the cache folder), alternated in one run.

    python -m bench.cli_startup [--before COMMIT] [--repeats 3] [--cache /tmp/cli_startup]

The store is built once through the real import path (a generated DiscordChatExporter export, embedded with the
default profile) and kept in the cache folder. Prints JSON: per command, before and after, the median wall seconds
and peak RSS in MB, and their ratios. Timings on a loaded machine are inflated; compare within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MESSAGES = 10_000
CHANNELS = (("general", 101), ("help", 102), ("random", 103), ("events", 104))
GUILD = 9001
AUTHORS = (("alice", 11), ("bob", 12), ("carol", 13), ("dan", 14), ("erin", 15), ("frank", 16))
WORDS = ("picnic deploy password rotate monday saturday blanket cake photo server backup restore vote raffle "
         "tournament schedule meeting release bug ticket fixed broken coffee lunch weekend train late early").split()
# The commands the light terminal serves; DEST and the forgotten member touch nothing real.
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("stats",), ("guilds",), ("channels", "--guild", str(GUILD)), ("check",), ("backup", "DEST"),
    ("reapply-erasures",), ("forget", "--guild", str(GUILD), "--member", "999999", "--yes"),
)


def export_file(path: Path, rng: random.Random) -> None:
    """One DiscordChatExporter JSON file per channel, MESSAGES in all."""
    per_channel = MESSAGES // len(CHANNELS)
    for number, (name, channel_id) in enumerate(CHANNELS):
        messages = []
        for index in range(per_channel):
            author, author_id = rng.choice(AUTHORS)
            minute = number * per_channel + index
            messages.append({
                "id": str(10**9 + minute), "type": "Default", "timestamp": f"2024-05-{1 + minute // 1440:02d}T"
                f"{minute // 60 % 24:02d}:{minute % 60:02d}:00+00:00", "timestampEdited": None,
                "content": " ".join(rng.choices(WORDS, k=rng.randint(4, 14))),
                "author": {"id": str(author_id), "name": author, "discriminator": "0", "nickname": None,
                           "isBot": False},
                "attachments": [], "embeds": [],
            })
        (path / f"{name}.json").write_text(json.dumps({
            "guild": {"id": str(GUILD), "name": "Bench Guild"},
            "channel": {"id": str(channel_id), "type": "GuildTextChat", "categoryId": None, "name": name},
            "messages": messages,
        }), encoding="utf-8")


def build_store(cache: Path) -> Path:
    data = cache / "data"
    if (data / "memory.sqlite3").exists():
        return data
    exports = cache / "exports"
    shutil.rmtree(exports, ignore_errors=True)
    exports.mkdir(parents=True)
    export_file(exports, random.Random(7))
    data.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "cogs.memory", "--db", str(data / "memory.sqlite3"), "--index-dir",
                    str(data / "indexes"), "-q", "import", *map(str, sorted(exports.glob("*.json")))],
                   cwd=REPO, check=True, env=environment(), stdout=subprocess.DEVNULL)
    return data


def before_tree(cache: Path, commit: str) -> Path:
    tree = cache / f"before-{commit}"
    if not tree.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit], cwd=REPO, check=True,
                       capture_output=True)
    return tree


def environment() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def measure(tree: Path, data: Path, command: tuple[str, ...], scratch: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one command run from ``tree`` over a copy-free ``data``."""
    argv = [str(scratch / "backup.sqlite3") if part == "DEST" else part for part in command]
    (scratch / "backup.sqlite3").unlink(missing_ok=True)
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "cogs.memory", "--db", str(data / "memory.sqlite3"),
                              "--index-dir", str(data / "indexes"), *argv], cwd=tree, env=environment(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.stderr is not None
    errors = child.stderr.read().decode(errors="replace")
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} in {tree} exited {child.returncode}: {errors[-2000:]}")
    return wall, usage.ru_maxrss / 1024  # kB on Linux


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default="eb6479a", help="the commit to compare with (default: before issue 36)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/cli_startup"))
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    data = build_store(args.cache)
    trees = {"before": before_tree(args.cache, args.before), "after": REPO}
    scratch = args.cache / "scratch"
    scratch.mkdir(exist_ok=True)
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for _ in range(args.repeats):
        for command in COMMANDS:
            for label, tree in trees.items():  # alternated, so load on the machine falls on both alike
                runs.setdefault(command[0], {}).setdefault(label, []).append(measure(tree, data, command, scratch))
    result: dict[str, object] = {"messages": MESSAGES, "repeats": args.repeats, "before": args.before,
                                 "note": "medians of alternated runs; a loaded machine inflates the seconds"}
    for name, labels in runs.items():
        figures = {label: {"wall_s": round(statistics.median(w for w, _ in samples), 2),
                           "peak_rss_mb": round(statistics.median(r for _, r in samples), 1)}
                   for label, samples in labels.items()}
        figures["ratio"] = {key: round(figures["after"][key] / figures["before"][key], 3)
                            for key in ("wall_s", "peak_rss_mb")}
        result[name] = figures
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
