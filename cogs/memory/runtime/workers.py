"""The threads models run on: one worker-thread class, and one lock around every model load in the process."""

from __future__ import annotations

import itertools
import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ("MODEL_LOADING", "WorkerThread")

T = TypeVar("T")

# While it builds a model, from_pretrained swaps process-wide torch state: the default dtype, torch.nn.init's
# functions, a meta-device context. Two loads on two threads at once (a live profile switch loading MiniLM while
# the reranker loads) can leave one model with meta or uninitialised weights ("Cannot copy out of meta tensor").
MODEL_LOADING = threading.Lock()

# Sorts after every job, so stopping lets the queued work finish first.
_STOP_PRIORITY = sys.maxsize
_Job = tuple[int, int, Future[Any] | None, Callable[..., Any] | None, tuple[Any, ...]]


class WorkerThread:
    """One thread that runs submitted calls, most urgent (lowest ``priority``) first, then in submission order.

    The model it serves lives on this thread; callers only wait on the futures. ``maxsize`` bounds the queue
    (0: unbounded).
    """

    def __init__(self, name: str, maxsize: int = 0) -> None:
        self._jobs: queue.PriorityQueue[_Job] = queue.PriorityQueue(maxsize)
        self._order = itertools.count()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def depth(self) -> int:
        """Jobs waiting (not counting the one running)."""
        return self._jobs.qsize()

    @property
    def capacity(self) -> int:
        return self._jobs.maxsize

    def submit(self, function: Callable[..., T], *args: Any, priority: int = 0, block: bool = True) -> Future[T]:
        """Queue ``function(*args)``; raises ``queue.Full`` when ``block`` is False and the queue is full."""
        future: Future[T] = Future()
        self._jobs.put((priority, next(self._order), future, function, args), block=block)
        return future

    def stop(self, timeout: float | None = None) -> None:
        """Finish the queued work, then end the thread."""
        self._jobs.put((_STOP_PRIORITY, next(self._order), None, None, ()))
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            _, _, future, function, args = self._jobs.get()
            if future is None or function is None:
                return
            if not future.set_running_or_notify_cancel():
                continue  # its caller was cancelled while it waited
            try:
                future.set_result(function(*args))
            except BaseException as exc:  # handed to the awaiting caller, which re-raises it
                future.set_exception(exc)
