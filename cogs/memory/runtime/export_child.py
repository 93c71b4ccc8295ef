"""Runs a model's ONNX export (a reranker's, its int8 quantization, or the query embedder's) in a child process, its
log relayed into this one.

An export is seconds to minutes of Python building a graph and writing every weight: in the bot's process it holds
the GIL long enough to stall the event loop for hundreds of milliseconds at a time (measured under bench.loop while
a first reranker export ran), so it runs in a process of its own. The child writes one JSON line per log record on
stdout; anything else it prints is kept for the error message should it fail.

An export is written into a staging folder beside its final place, synced to disk and renamed into place: it
appears whole or not at all, after a kill or a power cut too. A killed export leaves its staging folder behind; the
next export of the same folder removes it (under a lock on the export root, so never another process's live one)
and writes the export again, and a complete export is reused as it is."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .private_files import PRIVATE_FILE, PRIVATE_FOLDER, make_private_folder

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[3]
RECORD_PREFIX = "\x1erecord "
# The last lines of the child's other output, shown when it fails.
TAIL_LINES = 20
# A staging folder is named ``.{final name}.{random}.partial``, beside its final folder.
STAGING_SUFFIX = ".partial"


class ExportFailed(RuntimeError):
    """The export process exited with an error; the message holds the end of what it printed."""


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(PROJECT_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the child is killed when the thread that started it ends (a killed bot leaves no export running)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def run_export(module: str, args: list[str], logger: logging.Logger) -> None:
    """Run `python -m MODULE ARGS`, relaying its log records to `logger`; raises ExportFailed when it fails."""
    command = [sys.executable, "-m", module, *args]
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          env=_child_env(), text=True, encoding="utf-8", errors="replace",
                          preexec_fn=_die_with_parent if sys.platform == "linux" else None) as child:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith(RECORD_PREFIX):
                record = json.loads(line[len(RECORD_PREFIX):])
                logger.log(record["level"], "%s", record["message"])
            elif line.strip():
                tail.append(line.rstrip())
    if child.returncode != 0:
        raise ExportFailed(f"the ONNX export process exited with {child.returncode}: " + " | ".join(tail))


class RecordPrinter(logging.Handler):
    """In the child: each record as one line on stdout, for `run_export` to relay."""

    def emit(self, record: logging.LogRecord) -> None:
        line = json.dumps({"level": record.levelno, "message": record.getMessage()}, ensure_ascii=True)
        sys.stdout.write(RECORD_PREFIX + line + "\n")
        sys.stdout.flush()


@contextmanager
def exporting_into(root: Path) -> Iterator[None]:
    """Held while an export is written under ``root`` (created if missing): a second process exporting there waits,
    then finds the export done. An advisory lock on the folder itself, so a killed holder lets go (no lock file
    outlives it); where there is no ``fcntl`` (Windows) there is no lock."""
    make_private_folder(root)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    descriptor = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # and the lock with it


def remove_leftovers(root: Path, name: str) -> int:
    """Remove the staging folders that killed exports of ``name`` left under ``root``; call it inside
    ``exporting_into(root)``, where no live export of it is running. Returns how many went."""
    leftovers = sorted(root.glob(f".{name}.*{STAGING_SUFFIX}"))
    for path in leftovers:
        log.info("Removing %s, left by an ONNX export that was stopped before it finished", path)
        shutil.rmtree(path, ignore_errors=True)
    return len(leftovers)


def staging_folder(root: Path, name: str) -> Path:
    """A new, empty staging folder (0700) for the export ``name`` under ``root``."""
    make_private_folder(root)
    return Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=STAGING_SUFFIX, dir=root))


def publish(staging: Path, final: Path) -> None:
    """Sync every file of ``staging`` and the folder itself to disk, then rename it to ``final`` (which must not
    exist) and sync the parent: ``final`` appears whole or not at all. Its files are made 0600 and the folder 0700
    (an exporter writes them with the process's umask)."""
    for path in staging.iterdir():
        if path.is_file():
            if os.name == "posix":
                os.chmod(path, PRIVATE_FILE)
            _fsync(path, os.O_RDONLY)
    if os.name == "posix":
        os.chmod(staging, PRIVATE_FOLDER)
    _fsync_folder(staging)
    os.rename(staging, final)
    _fsync_folder(final.parent)


def _fsync(path: Path, flags: int) -> None:
    descriptor = os.open(path, flags)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _fsync_folder(path: Path) -> None:
    if os.name == "posix":  # Windows cannot open a folder to sync it; its renames are journalled by NTFS
        _fsync(path, os.O_RDONLY)
