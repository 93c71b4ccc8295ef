"""Runs a model's ONNX export (a reranker's, its int8 quantization, or the query embedder's) in a child process, its
log relayed into this one.

An export is seconds to minutes of Python building a graph and writing every weight: in the bot's process it holds
the GIL long enough to stall the event loop for hundreds of milliseconds at a time (measured under bench.loop while
a first reranker export ran), so it runs in a process of its own. The child writes one JSON line per log record on
stdout; anything else it prints is kept for the error message should it fail."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections import deque
from pathlib import Path

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[3]
RECORD_PREFIX = "\x1erecord "
# The last lines of the child's other output, shown when it fails.
TAIL_LINES = 20


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
