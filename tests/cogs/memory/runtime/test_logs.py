"""The process's logging: the level ``LOG_LEVEL`` and ``-v``/``-q`` choose, and each library warning printed once."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cogs.memory.runtime.logs import chosen_level

REPO = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize(("setting", "verbose", "quiet", "default", "expected"), [
    (None, 0, 0, logging.INFO, logging.INFO),
    (None, 1, 0, logging.INFO, logging.DEBUG),
    (None, 0, 1, logging.INFO, logging.WARNING),
    (None, 0, 2, logging.INFO, logging.ERROR),
    ("ERROR", 0, 0, logging.INFO, logging.ERROR),
    ("warning", 1, 0, logging.INFO, logging.INFO),
    (None, 5, 0, logging.WARNING, logging.DEBUG),
    ("CRITICAL", 0, 3, logging.INFO, logging.CRITICAL),
])
def test_log_level_is_the_setting_moved_a_step_per_flag(setting: str | None, verbose: int, quiet: int, default: int,
                                                        expected: int) -> None:
    assert chosen_level(setting, verbose, quiet, default) == expected


# A fresh interpreter: the root handler as both entry points set it up, then a Hugging Face hub warning (as each
# offline retry of a model download logs one) and a warnings.warn from a library.
SCRIPT = """
import logging, warnings
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
{route}
from huggingface_hub.utils import logging as hub_logging
hub_logging.get_logger("huggingface_hub.file_download").warning("offline: no cached file")
warnings.warn("a library warning", UserWarning)
"""


def run_script(route: str) -> str:
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(route=route)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_without_routing_the_hub_warning_prints_twice() -> None:
    assert run_script("").count("offline: no cached file") == 2  # what the fix is for


def test_each_library_warning_prints_once_in_the_log_format() -> None:
    printed = run_script("from cogs.memory.runtime.logs import route_library_logs; route_library_logs()")
    assert printed.count("offline: no cached file") == 1
    assert "WARNING huggingface_hub.file_download: offline: no cached file" in printed
    assert printed.count("a library warning") == 1 and "WARNING py.warnings:" in printed


# A fresh interpreter logging at LEVEL, routed as both entry points route it, then what transformers and the hub
# print as a model loads: the same warning three times (as each load of a tokenizer repeats it), and a progress bar.
LIBRARY_SCRIPT = """
import logging
logging.basicConfig(level=logging.{level}, format="%(levelname)s %(name)s: %(message)s")
{route}
from transformers.utils import logging as transformers_logging
from huggingface_hub.utils import logging as hub_logging
for _ in range(3):
    transformers_logging.get_logger("transformers.tokenization_utils_base").warning("a tokenizer warning")
hub_logging.get_logger("huggingface_hub.file_download").warning("a hub warning")
for _ in transformers_logging.tqdm(range(3), desc="Loading weights"):
    pass
"""
ROUTED = "from cogs.memory.runtime.logs import route_library_logs; route_library_logs()"


def run_library_script(level: str, route: str = ROUTED) -> str:
    # Without CI in its environment: transformers lets its records propagate when CI is set (as CI servers set it),
    # so the unrouted case would print twice there for a reason of its own.
    environ = {name: value for name, value in os.environ.items() if name != "CI"}
    done = subprocess.run([sys.executable, "-c", LIBRARY_SCRIPT.format(level=level, route=route)], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=environ)  # stderr is a pipe, not a terminal
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_without_routing_transformers_prints_each_repeat_in_its_own_format_at_any_level() -> None:
    printed = run_library_script("ERROR", route="")
    assert printed.count("a tokenizer warning") == 3 and "WARNING transformers" not in printed  # what the fix is for


def test_a_transformers_warning_prints_once_in_the_log_format() -> None:
    printed = run_library_script("WARNING")
    assert printed.count("a tokenizer warning") == 1
    assert "WARNING transformers.tokenization_utils_base: a tokenizer warning" in printed
    assert printed.count("a hub warning") == 1


def test_a_quieter_level_silences_library_warnings() -> None:
    assert run_library_script("ERROR") == ""


def test_library_progress_bars_stay_out_of_a_log_that_is_not_a_terminal() -> None:
    assert "Loading weights" not in run_library_script("INFO")
    assert "Loading weights" in run_library_script("INFO", route="")  # what the fix is for


def test_other_loggers_repeats_still_print() -> None:
    from cogs.memory.runtime.logs import OncePerMessage

    once = OncePerMessage()
    ours = logging.LogRecord("cogs.memory.ingest", logging.WARNING, __file__, 1, "write failed, retrying", None, None)
    library = logging.LogRecord("transformers.x", logging.WARNING, __file__, 1, "deprecated", None, None)
    assert [once.filter(ours), once.filter(ours), once.filter(library), once.filter(library)] == [
        True, True, True, False]
